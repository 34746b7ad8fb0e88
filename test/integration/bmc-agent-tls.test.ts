/**
 * The BMC agent's TLS to BMCs, against the emulator's HTTPS with certificates made by openssl:
 * a CA file verifies, a SHA-256 pin accepts the pinned certificate whatever signed it, a wrong pin
 * or an unknown CA is refused before any request (no session reaches the BMC), and
 * `insecure: true` works only with a warning naming the BMC. Also: an unreachable BMC.
 */
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentHarness, startAgentHarness } from "../support/redfish-agent.js";

const id = (n: number): string => `7d000000-0000-4000-8000-0000000004${String(n).padStart(2, "0")}`;
const C = { pinned: id(1), wrongPin: id(2), noCa: id(3), insecure: id(4), unreachable: id(5) };

let h: AgentHarness;

function fingerprintOf(certFile: string): string {
  const out = execFileSync("openssl", ["x509", "-in", certFile, "-noout", "-fingerprint", "-sha256"], {
    encoding: "utf8",
  });
  return out.trim().split("=")[1]!;
}

beforeAll(async () => {
  h = await startAgentHarness(
    Object.values(C).map((c) => ({ id: c })),
    {
      // The pin is the emulator's own server certificate, made for this run.
      bmcConfig: (certs) => ({
        [C.pinned]: { caFile: undefined, fingerprint: fingerprintOf(certs.file("server.crt")) },
        [C.wrongPin]: { caFile: undefined, fingerprint: "00".repeat(32) },
        [C.noCa]: { caFile: undefined },
        [C.insecure]: { caFile: undefined, insecure: true },
        [C.unreachable]: { url: "https://127.0.0.1:1" },
      }),
    },
  );
});

afterAll(async () => {
  await h?.stop();
});

describe("bmc agent: TLS to BMCs", () => {
  it("a pinned SHA-256 fingerprint is accepted without a CA", async () => {
    await h.send(C.pinned, { v: 1, type: "query", requestId: "q-pin" });
    expect(await h.eventsUntilResult(C.pinned, "q-pin")).toEqual([
      { v: 1, type: "status", requestId: "q-pin", version: "1.0.0" },
    ]);
  });

  it("a wrong pin is refused before any request: not ready, and the BMC saw no session", async () => {
    await h.send(C.wrongPin, { v: 1, type: "query", requestId: "q-wrong" });
    const [status] = await h.eventsUntilResult(C.wrongPin, "q-wrong");
    expect(status).toMatchObject({ type: "status", version: "unknown", ready: false });
    expect((status as { reason: string }).reason).toMatch(
      /^certificate fingerprint [0-9A-F]{64} is not the pinned one$/,
    );
    expect(h.emulator.record(C.wrongPin)).toMatchObject({ sessionsCreated: 0, sessionsRefused: 0 });
  });

  it("no CA and no pin: the self-signed chain is refused (TLS), no session", async () => {
    await h.send(C.noCa, { v: 1, type: "query", requestId: "q-noca" });
    const [status] = await h.eventsUntilResult(C.noCa, "q-noca");
    expect(status).toMatchObject({ type: "status", version: "unknown", ready: false });
    expect((status as { reason: string }).reason).toMatch(/^TLS to 127\.0\.0\.1:\d+ failed: /);
    expect(h.emulator.record(C.noCa).sessionsCreated).toBe(0);
  });

  it("insecure: true works, and the agent warned at start naming that BMC", async () => {
    await h.send(C.insecure, { v: 1, type: "query", requestId: "q-insecure" });
    expect(await h.eventsUntilResult(C.insecure, "q-insecure")).toEqual([
      { v: 1, type: "status", requestId: "q-insecure", version: "1.0.0" },
    ]);
    expect(h.logs.filter((l) => l.includes("insecure: true"))).toEqual([
      `flow-bmc-agent: WARNING: bmcs[3] (${C.insecure}): insecure: true, the BMC's certificate is NOT verified; pin it with fingerprint or give its caFile`,
    ]);
  });

  it("an unreachable BMC: the query says not ready with the reason", async () => {
    await h.send(C.unreachable, { v: 1, type: "query", requestId: "q-down" });
    const [status] = await h.eventsUntilResult(C.unreachable, "q-down");
    expect(status).toMatchObject({ type: "status", version: "unknown", ready: false });
    expect((status as { reason: string }).reason).toMatch(
      /^GET \/redfish\/v1\/: connect ECONNREFUSED 127\.0\.0\.1:1$/,
    );
  });
});
