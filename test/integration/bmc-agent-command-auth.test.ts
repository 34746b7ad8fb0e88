/**
 * The agent opens an update command's `auth` blob (KMS on moto) and logs in to the BMC with it:
 * a BMC whose password only the blob knows is flashed; a blob sealed for another rack is refused
 * by KMS (its context names that rack) and the update fails AUTH_UNAVAILABLE with nothing pushed.
 * And the IoT credentials provider is asked with the agent's certificate (mutual TLS), the thing
 * name header and the role alias, its credentials reused until near their expiry.
 */
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import { CreateKeyCommand, KMSClient } from "@aws-sdk/client-kms";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { iotCredentials } from "../../src/adapters/bmc-agent/command-auth.js";
import { KmsEnvelopeCipher } from "../../src/adapters/kms/kms-cipher.js";
import { CipherBmcAuthSealer } from "../../src/adapters/stepfunctions/bmc-auth.js";
import { makeCertificates } from "../support/certificates.js";
import {
  type AgentHarness,
  ack,
  failed,
  type ImageRef,
  ok,
  PASSWORD,
  progress,
  startAgentHarness,
  TEST_RACK_ID,
} from "../support/redfish-agent.js";
import { testEndpoint } from "../support/test-endpoint.js";

const C1 = "7b000000-0000-4000-8000-000000000401";
const C2 = "7b000000-0000-4000-8000-000000000402";
const OTHER_RACK = "7b000000-0000-4000-8000-0000000004a2";
const endpoint = testEndpoint();

let h: AgentHarness;
let image: ImageRef;
let sealer: CipherBmcAuthSealer;

beforeAll(async () => {
  const kms = new KMSClient({
    endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "t", secretAccessKey: "t" },
  });
  const key = await kms.send(new CreateKeyCommand({ Description: "bmc agent command auth test" }));
  const keyArn = key.KeyMetadata?.Arn as string;
  sealer = new CipherBmcAuthSealer(new KmsEnvelopeCipher(kms, keyArn), keyArn);
  // Both BMCs' configs carry a wrong password: only the command's credentials open a session.
  const wrong = { password: "not-the-password", passwordEnv: undefined };
  h = await startAgentHarness([{ id: C1 }, { id: C2 }], {
    bmcConfig: { [C1]: wrong, [C2]: wrong },
    agentConfig: { commandAuth: { credentials: "environment", region: "us-east-1", kmsEndpoint: endpoint } },
  });
  image = h.images.add("3.1.0");
});
afterAll(async () => {
  await h?.stop();
});

describe("bmc agent: the update command's credentials", () => {
  it("the blob sealed for this rack, component and request opens, and the BMC is flashed logged in with it", async () => {
    const command = h.update("u-auth", "3.1.0", image);
    command.auth = await sealer.seal(PASSWORD, { rackId: TEST_RACK_ID, componentId: C1 }, "u-auth");
    await h.send(C1, command);
    expect(await h.eventsUntilResult(C1, "u-auth")).toEqual([
      ack("u-auth"),
      progress("u-auth", 25),
      progress("u-auth", 50),
      progress("u-auth", 75),
      ok("u-auth", "3.1.0"),
    ]);
    expect(h.emulator.record(C1)).toMatchObject({ sessionsCreated: 1 });
    expect(h.logs.join("\n")).not.toContain(PASSWORD);
  });

  it("a blob sealed for another rack is refused: AUTH_UNAVAILABLE, no session, nothing pushed", async () => {
    const command = h.update("u-other-rack", "3.1.0", image);
    command.auth = await sealer.seal(PASSWORD, { rackId: OTHER_RACK, componentId: C2 }, "u-other-rack");
    await h.send(C2, command);
    const events = await h.eventsUntilResult(C2, "u-other-rack");
    expect(events.slice(0, 1)).toEqual([ack("u-other-rack")]);
    expect(events[1]).toMatchObject(
      failed("u-other-rack", "unknown", "AUTH_UNAVAILABLE", expect.stringContaining("could not be opened")),
    );
    expect(h.emulator.record(C2)).toMatchObject({ sessionsCreated: 0 });
    expect(h.emulator.record(C2)).toMatchObject({ pushes: {}, imageBytes: 0 });
  });
});

describe("the IoT credentials provider", () => {
  it("is asked over mutual TLS with the thing name and role alias; its credentials are reused until five minutes before expiry", async () => {
    const certs = makeCertificates({ clients: { agent: { cn: "agent" } } });
    const asked: { path?: string; thing?: string; client?: string }[] = [];
    let now = Date.UTC(2026, 11, 5, 3);
    const server = createServer(
      {
        key: certs.pem("server.key"),
        cert: certs.pem("server.crt"),
        ca: certs.pem("ca.crt"),
        requestCert: true,
        rejectUnauthorized: true,
      },
      (req, res) => {
        const peer = (req.socket as TLSSocket).getPeerCertificate();
        asked.push({
          path: req.url,
          thing: req.headers["x-amzn-iot-thingname"] as string,
          client: String(peer.subject?.CN),
        });
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            credentials: {
              accessKeyId: `AKIA${asked.length}`,
              secretAccessKey: "s",
              sessionToken: "t",
              expiration: new Date(now + 3_600_000).toISOString(),
            },
          }),
        );
      },
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const credentials = iotCredentials({
        endpoint: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
        roleAlias: "Flow_test_bmc_agent",
        thingName: TEST_RACK_ID,
        cert: Buffer.from(certs.pem("agent.crt")),
        key: Buffer.from(certs.pem("agent.key")),
        ca: Buffer.from(certs.pem("ca.crt")),
        now: () => now,
      });
      expect(await credentials()).toMatchObject({
        accessKeyId: "AKIA1",
        secretAccessKey: "s",
        sessionToken: "t",
      });
      now += 50 * 60_000; // 10 minutes left: still reused
      expect((await credentials()).accessKeyId).toBe("AKIA1");
      now += 6 * 60_000; // 4 minutes left: renewed
      expect((await credentials()).accessKeyId).toBe("AKIA2");
      expect(asked).toEqual([
        { path: "/role-aliases/Flow_test_bmc_agent/credentials", thing: TEST_RACK_ID, client: "agent" },
        { path: "/role-aliases/Flow_test_bmc_agent/credentials", thing: TEST_RACK_ID, client: "agent" },
      ]);
    } finally {
      server.close();
      certs.remove();
    }
  });
});
