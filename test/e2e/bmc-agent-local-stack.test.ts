/**
 * The local stack with `noFleet` (`npm start -- --no-fleet`): no simulated BMCs; a BMC agent
 * connected to the stack's broker drives emulated Redfish BMCs for a rack's components. A firmware
 * run goes image catalog → child task → MQTT → agent → Redfish and back: the preflight's queries
 * are answered from the BMCs' FirmwareInventory; each update's image (the catalog's, seeded by the
 * stack, presigned on moto's S3) is downloaded once by the agent, checked against its digest, pushed
 * once to each BMC, and reported done when the BMC's inventory reads the version back.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedfishEmulator, startRedfishEmulator } from "../../local/redfish-emulator.js";
import { OperationRunStatus, OperationRunTargetStatus } from "../../src/gen/flow/v1/flow.js";
import { type BmcAgent, startBmcAgent } from "../../src/service/bmc-agent/agent.js";
import { parseAgentConfig } from "../../src/service/bmc-agent/config.js";
import { rackGroup } from "../support/fixtures-inventory.js";
import {
  createRun,
  listTargets,
  runRequest,
  startTestStack,
  type TestStack,
  targetReport,
  waitForTerminal,
} from "../support/stack.js";

const group = rackGroup(61, { name: "redfish", count: 1, types: ["COMPUTE", "NVSWITCH"] });
const components = group.racks[0]!.components.map((c) => c.id);

let s: TestStack;
let emulator: RedfishEmulator;
let agent: BmcAgent;
let stateDir: string;

beforeAll(async () => {
  s = await startTestStack({ label: "bmc-agent", groups: [group], noFleet: true });
  emulator = await startRedfishEmulator({
    bmcs: components.map((id) => ({ id })),
    username: "flow",
    password: "pw",
  });
  stateDir = mkdtempSync(join(tmpdir(), "bmc-agent-stack-"));
  agent = await startBmcAgent(
    parseAgentConfig(
      {
        rackId: group.racks[0]!.id,
        mqtt: { url: s.local.mqttUrl, clientId: "e2e-agent" },
        stateDir,
        timings: { pollIntervalMs: 20 },
        bmcs: components.map((componentId) => ({
          componentId,
          url: emulator.urlOf(componentId),
          username: "flow",
          passwordEnv: "PW",
        })),
      },
      { baseDir: stateDir, env: { PW: "pw" } },
    ),
    { log: () => {} },
  );
});

afterAll(async () => {
  await agent?.stop();
  await emulator?.stop();
  await s?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

describe("local stack without a fleet, a BMC agent on its broker", () => {
  it("the run completes through the agent: one push and one AC cycle per BMC, a session before and one after it, the version read back from its inventory", async () => {
    expect(s.local.fleet).toBeUndefined();
    const id = await createRun(s.flow, runRequest({ rackIds: group.ids }));
    const run = await waitForTerminal(s.flow, id);
    const report = await targetReport(s.flow, id);
    expect(run.summary?.state?.status, report).toBe(OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED);
    const [target] = await listTargets(s.flow, id);
    expect(target?.status, report).toBe(OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_COMPLETED);
    for (const c of components) {
      // The preflight's query and the update were served by one session; the image pushed once;
      // the default rule's activation of COMPUTE and NVSWITCH trays is a Chassis power cycle,
      // which the BMC does not survive with its sessions: the bring-up's query logs in again.
      expect(emulator.record(c)).toMatchObject({
        sessionsCreated: 2,
        pushes: { BMC: 1 },
        resets: ["Chassis.Reset PowerCycle"],
      });
      // runRequest flashes 2.0.0 (the emulated BMCs start at 1.0.0).
      expect(emulator.versionOf(c, "BMC")).toBe("2.0.0");
    }
  });
});
