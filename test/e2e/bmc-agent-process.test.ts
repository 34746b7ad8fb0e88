/**
 * `flow-bmc-agent --config FILE` as a process (cli/bin/flow-bmc-agent.js): a bad config exits 2
 * with one line per problem naming the field; a good one serves its BMCs until SIGTERM, then
 * logs out of every BMC it opened a session with and exits 0.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startMqttBroker } from "../../local/mqtt-broker.js";
import { startRedfishEmulator } from "../../local/redfish-emulator.js";
import { encodeBmcMessage } from "../../src/domain/bmc-protocol.js";
import { bmcCmdTopic, RACK_REPORTS_TOPIC_FILTER } from "../../src/domain/bmc-topics.js";
import { until } from "../support/poll.js";

const ROOT = join(import.meta.dirname, "..", "..");
const BIN = join(ROOT, "cli", "bin", "flow-bmc-agent.js");
const dir = mkdtempSync(join(tmpdir(), "bmc-agent-process-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function start(
  args: string[],
  env: Record<string, string> = {},
): { child: ChildProcess; stderr: () => string } {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: dir,
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  return { child, stderr: () => stderr };
}

const exited = (child: ChildProcess): Promise<number> =>
  new Promise((resolve) => child.on("close", (code) => resolve(code ?? -1)));

describe("flow-bmc-agent: configuration", () => {
  it("no --config: exit 2 with the usage", async () => {
    const { child, stderr } = start([]);
    expect(await exited(child)).toBe(2);
    expect(stderr()).toBe("flow-bmc-agent: --config: is required\nusage: flow-bmc-agent --config FILE\n");
  });

  it("every problem of a bad config on its own line, naming the field, exit 2; no secret echoed", async () => {
    const file = join(dir, "bad.json");
    writeFileSync(
      file,
      JSON.stringify({
        mqtt: { url: "tcp://broker" },
        bmcs: [
          {
            componentId: "7e000000-0000-4000-8000-000000000001",
            url: "http://10.0.3.17",
            username: "flow",
            password: "hunter2hunter2",
            passwordFile: "/nope",
          },
          {
            componentId: "not-a-uuid",
            url: "https://10.0.3.18",
            username: "flow",
            passwordEnv: "FLOW_NO_SUCH_VAR",
            fingerprint: "abc",
            retries: 3,
          },
        ],
      }),
    );
    const { child, stderr } = start(["--config", file]);
    expect(await exited(child)).toBe(2);
    expect(stderr()).toBe(
      [
        'flow-bmc-agent: mqtt.url: must be an mqtt://, mqtts://, ws:// or wss:// URL (got "tcp://broker")',
        'flow-bmc-agent: bmcs[0].url: plain http:// is allowed only to a loopback address (got "http://10.0.3.17")',
        "flow-bmc-agent: bmcs[0].passwordFile: give exactly one of passwordFile, passwordEnv and password",
        "flow-bmc-agent: bmcs[1].retries: is not a known field (known: componentId, url, username, password, passwordFile, passwordEnv, caFile, fingerprint, insecure, allowBasicAuth, firmwareMember, subTargets, applyTime)",
        'flow-bmc-agent: bmcs[1].componentId: must be the inventory component\'s id, a UUID (got "not-a-uuid")',
        "flow-bmc-agent: bmcs[1].passwordEnv: the environment variable FLOW_NO_SUCH_VAR is not set",
        "flow-bmc-agent: bmcs[1].fingerprint: must be a SHA-256 fingerprint: 64 hex digits, with or without colons",
        "",
      ].join("\n"),
    );
  });
});

describe("flow-bmc-agent: SIGTERM", () => {
  it("serves a BMC until SIGTERM, then logs out of it and exits 0", async () => {
    const broker = await startMqttBroker();
    const componentId = "7e000000-0000-4000-8000-000000000101";
    const rackId = "7e000000-0000-4000-8000-0000000000a1";
    const emulator = await startRedfishEmulator({
      bmcs: [{ id: componentId }],
      username: "flow",
      password: "pw",
    });
    // Its reports come as its rack's batches (the default reportFlushMs).
    const statuses: string[] = [];
    await broker.subscribe(RACK_REPORTS_TOPIC_FILTER, (_topic, payload) => {
      statuses.push(payload.toString());
    });
    const file = join(dir, "good.json");
    writeFileSync(
      file,
      JSON.stringify({
        rackId,
        mqtt: { url: broker.url },
        stateDir: join(dir, "state"),
        bmcs: [
          { componentId, url: emulator.urlOf(componentId), username: "flow", passwordEnv: "FLOW_TEST_PW" },
        ],
      }),
    );
    const { child, stderr } = start(["--config", file], { FLOW_TEST_PW: "pw" });
    try {
      await until("the agent to serve", () => stderr().includes("serving 1 BMCs"), 30_000);
      await broker.publish(
        bmcCmdTopic({ rackId, componentId }),
        encodeBmcMessage({ v: 1, type: "query", requestId: "q-1" }),
      );
      await until("the status", () => statuses.length > 0, 20_000);
      expect(JSON.parse(statuses[0]!)).toEqual({
        v: 5,
        type: "reports",
        reports: [{ componentId, v: 1, type: "status", requestId: "q-1", version: "1.0.0" }],
      });
      child.kill("SIGTERM");
      expect(await exited(child)).toBe(0);
      expect(emulator.record(componentId)).toMatchObject({ sessionsCreated: 1, sessionsDeleted: 1 });
      expect(stderr()).toContain("flow-bmc-agent: SIGTERM, stopping");
      expect(stderr()).not.toContain("pw\n");
    } finally {
      child.kill("SIGKILL");
      await emulator.stop();
      await broker.stop();
    }
  });
});
