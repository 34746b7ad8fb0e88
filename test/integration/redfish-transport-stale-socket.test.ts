/**
 * The Redfish transport and a BMC that drops a kept-alive connection as it is reused (the idle-close
 * race of HTTP/1.1 keep-alive: the BMC closes an idle socket just as the agent sends on it). A GET
 * is sent again on a new connection; a POST never rides a reused connection, and is never sent
 * twice; a request that fails on a new connection is not retried at all. The BMC here is a real HTTP server over loopback that drops the
 * requests it is told to.
 */
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { BmcTransport, RedfishUnreachableError } from "../../src/adapters/redfish/transport.js";

interface Bmc {
  url: string;
  /** Every request that reached it, `METHOD path #n-on-its-connection`. */
  seen: string[];
  connections: number;
  stop(): Promise<void>;
}

/** Answers `{}`; drops (resets, no answer) a request when `drop` says so. */
async function startBmc(drop: (method: string, nthOnConnection: number) => boolean): Promise<Bmc> {
  const seen: string[] = [];
  const perSocket = new Map<Socket, number>();
  let connections = 0;
  const server = http.createServer((req, res) => {
    const n = (perSocket.get(req.socket) ?? 0) + 1;
    perSocket.set(req.socket, n);
    seen.push(`${req.method} ${req.url} #${n}`);
    req.resume();
    if (drop(req.method ?? "", n)) {
      req.socket.resetAndDestroy();
      return;
    }
    res.setHeader("Content-Type", "application/json");
    res.end("{}");
  });
  server.on("connection", () => {
    connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    get connections() {
      return connections;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let bmc: Bmc | undefined;
let transport: BmcTransport | undefined;

afterEach(async () => {
  transport?.close();
  await bmc?.stop();
});

describe("Redfish transport, a kept-alive connection dropped as it is reused", () => {
  it("a GET is sent again on a new connection and answered", async () => {
    bmc = await startBmc((_method, n) => n === 2);
    transport = new BmcTransport(bmc.url, {}, 5_000);
    expect((await transport.send({ method: "GET", path: "/redfish/v1" })).status).toBe(200);
    expect((await transport.send({ method: "GET", path: "/redfish/v1/UpdateService" })).status).toBe(200);
    expect(bmc.seen).toEqual([
      "GET /redfish/v1 #1",
      "GET /redfish/v1/UpdateService #2",
      "GET /redfish/v1/UpdateService #1",
    ]);
    expect(bmc.connections).toBe(2);
  });

  it("a POST never rides a reused connection: on a new one, the BMC's closing an idle one cannot fail it", async () => {
    bmc = await startBmc((_method, n) => n === 2);
    transport = new BmcTransport(bmc.url, {}, 5_000);
    await transport.send({ method: "GET", path: "/redfish/v1" });
    const push = await transport.send({ method: "POST", path: "/redfish/v1/UpdateService/upload", json: {} });
    expect(push.status).toBe(200);
    expect(bmc.seen).toEqual(["GET /redfish/v1 #1", "POST /redfish/v1/UpdateService/upload #1"]);
    expect(bmc.connections).toBe(2);
  });

  it("a POST is not sent twice: dropped, it fails as unreachable", async () => {
    bmc = await startBmc((method) => method === "POST");
    transport = new BmcTransport(bmc.url, {}, 5_000);
    await transport.send({ method: "GET", path: "/redfish/v1" });
    const post = transport.send({ method: "POST", path: "/redfish/v1/SessionService/Sessions", json: {} });
    await expect(post).rejects.toBeInstanceOf(RedfishUnreachableError);
    expect(bmc.seen.filter((line) => line.startsWith("POST"))).toEqual([
      "POST /redfish/v1/SessionService/Sessions #1",
    ]);
  });

  it("a GET dropped on a new connection is not retried: the BMC is unreachable", async () => {
    bmc = await startBmc(() => true);
    transport = new BmcTransport(bmc.url, {}, 5_000);
    await expect(transport.send({ method: "GET", path: "/redfish/v1" })).rejects.toBeInstanceOf(
      RedfishUnreachableError,
    );
    expect(bmc.seen).toEqual(["GET /redfish/v1 #1"]);
  });
});
