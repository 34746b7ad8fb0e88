/**
 * The agent's Redfish client (src/adapters/redfish/client.ts) against documents in the shape of
 * DMTF's public-rackmount1 mockup (test/fixtures/redfish/, served at their @odata.id paths on
 * loopback HTTP), with a session service that behaves as DSP0266 says: discovery from the service
 * root, the UpdateService and its ActionInfo, the FirmwareInventory as its Members list says (the
 * mockup's wrong count and unlisted member included), one session reused, a new one after a 401,
 * and a logout at close.
 */
import { readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedfishAuthError, RedfishClient } from "../../src/adapters/redfish/client.js";

const DIR = join(import.meta.dirname, "..", "fixtures", "redfish");
const paths = JSON.parse(readFileSync(join(DIR, "paths.json"), "utf8")) as Record<string, string>;

const seen = { sessionsCreated: 0, sessionsDeleted: 0, refusedPasswords: 0, gets: [] as string[] };
const tokens = new Set<string>();
let server: http.Server;
let url: string;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const path = req.url ?? "/";
    const json = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
      res.writeHead(status, { "Content-Type": "application/json", ...headers }).end(JSON.stringify(body));
    };
    if (req.method === "POST" && path === "/redfish/v1/SessionService/Sessions") {
      let text = "";
      req.on("data", (d: Buffer) => {
        text += d.toString();
      });
      req.on("end", () => {
        const body = JSON.parse(text) as { UserName: string; Password: string };
        if (body.Password !== "pw") {
          seen.refusedPasswords += 1;
          json(401, { error: { code: "Base.1.8.NoValidSession", message: "bad credentials" } });
          return;
        }
        seen.sessionsCreated += 1;
        const token = `t${seen.sessionsCreated}`;
        tokens.add(token);
        json(
          201,
          { "@odata.id": `/redfish/v1/SessionService/Sessions/${token}` },
          {
            "X-Auth-Token": token,
            Location: `/redfish/v1/SessionService/Sessions/${token}`,
          },
        );
      });
      return;
    }
    const authorized = path === "/redfish/v1/" || tokens.has(String(req.headers["x-auth-token"]));
    if (!authorized) return json(401, { error: { code: "Base.1.8.NoValidSession", message: "no session" } });
    if (req.method === "DELETE" && path.startsWith("/redfish/v1/SessionService/Sessions/")) {
      seen.sessionsDeleted += 1;
      tokens.delete(path.slice(path.lastIndexOf("/") + 1));
      res.writeHead(204).end();
      return;
    }
    const file = paths[path];
    if (req.method !== "GET" || file === undefined)
      return json(404, { error: { code: "Base.1.8.ResourceNotFound", message: path } });
    seen.gets.push(path);
    res.writeHead(200, { "Content-Type": "application/json" }).end(readFileSync(join(DIR, file)));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const client = (password = "pw") =>
  new RedfishClient({
    url,
    username: "flow",
    password: () => password,
    tls: {},
    allowBasicAuth: false,
    requestTimeoutMs: 5_000,
  });

describe("redfish client: the mockup's documents", () => {
  it("UpdateService found from the service root; SimpleUpdate's TransferProtocol values read from its ActionInfo", async () => {
    const c = client();
    try {
      expect(await c.updateService()).toEqual({
        uri: "/redfish/v1/UpdateService",
        enabled: true,
        pushBusy: false,
        firmwareInventory: "/redfish/v1/UpdateService/FirmwareInventory",
        httpPushUri: "/FWUpdate",
        simpleUpdate: {
          target: "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate",
          actionInfo: "/redfish/v1/UpdateService/SimpleUpdateActionInfo",
          transferProtocols: ["FTP", "SFTP", "HTTP", "HTTPS", "SCP", "TFTP"],
        },
      });
    } finally {
      await c.close();
    }
  });

  it("FirmwareInventory: the three listed members despite Members@odata.count 2; the unlisted AC-RoT0 is not read", async () => {
    const c = client();
    try {
      const members = await c.firmwareInventory();
      expect(members.map((m) => [m.id, m.version, m.updateable])).toEqual([
        ["BMC", "1.45.455b66-rev4", true],
        ["SS", "2.50", true],
        ["BIOS", "P79 v1.45", true],
      ]);
      expect(seen.gets).not.toContain("/redfish/v1/UpdateService/FirmwareInventory/AC-RoT0");
    } finally {
      await c.close();
    }
  });
});

describe("redfish client: sessions", () => {
  it("one session for many requests; a new one after the BMC forgets it (401); DELETE at close", async () => {
    const before = { ...seen };
    const c = client();
    await c.firmwareInventory();
    await c.firmwareMember("/redfish/v1/UpdateService/FirmwareInventory/BIOS");
    expect(seen.sessionsCreated - before.sessionsCreated).toBe(1);
    tokens.clear(); // the BMC rebooted
    expect((await c.firmwareMember("/redfish/v1/UpdateService/FirmwareInventory/BMC")).version).toBe(
      "1.45.455b66-rev4",
    );
    expect(seen.sessionsCreated - before.sessionsCreated).toBe(2);
    await c.close();
    expect(seen.sessionsDeleted - before.sessionsDeleted).toBe(1);
    expect(c.sessions).toBe(2);
  });

  it("refused credentials without a Basic fallback: RedfishAuthError naming the user and the BMC's words, not the password", async () => {
    const c = client("wrong-password");
    try {
      const err = await c.firmwareInventory().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RedfishAuthError);
      expect((err as Error).message).toBe("the BMC refused a session for flow (401: bad credentials)");
    } finally {
      await c.close();
    }
  });
});
