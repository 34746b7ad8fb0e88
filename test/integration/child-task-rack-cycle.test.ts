/**
 * A whole-rack AC cycle (AC_CYCLE with acScope RACK) executed by the real child-task ASL on
 * aws-local-stepfunctions, against moto, the broker, the IoT shim and the simulated fleet, whose
 * BMCs stage every flash until an AC cycle: ONE reset of kind `rack` goes to the rack's power shelf,
 * the fleet cycles the whole rack on it, and the WAIT_BRING_UP after it reads every component back
 * active; a rack whose inventory has no power shelf fails its task in the preflight (NoPowerShelf),
 * naming it, before anything is flashed; a shelf that does not answer fails the step and every
 * component of its wave with the shelf's error.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BmcCommand } from "../../src/domain/bmc-protocol.js";
import type { BmcAddress } from "../../src/domain/bmc-topics.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import type { OperationRule, RuleStep } from "../../src/domain/operation-rules.js";
import { parseReport } from "../../src/domain/task-report.js";
import {
  type Harness,
  HEALTHY_FLEET_SETTINGS,
  id,
  rack,
  startHarness,
  upgradeRequest,
  waitForTask,
} from "./child-task-harness.js";

const P = "c6000000";
const withShelf = rack(P, 1, [
  { type: "POWERSHELF", count: 1 },
  { type: "NVSWITCH", count: 2 },
  { type: "COMPUTE", count: 3 },
]);
const withoutShelf = rack(P, 2, [
  { type: "NVSWITCH", count: 1 },
  { type: "COMPUTE", count: 2 },
]);
/** Its shelf never answers the rack's cycle (the reset is dropped on the way). */
const silentShelf = rack(P, 3, [
  { type: "POWERSHELF", count: 1 },
  { type: "COMPUTE", count: 2 },
]);
const racks: InventoryRack[] = [withShelf, withoutShelf, silentShelf];

const step = (action: RuleStep["action"], extra: Partial<RuleStep> = {}): RuleStep => ({
  action,
  timeoutSeconds: 0,
  sleepSeconds: 0,
  ...extra,
});
/** Every type flashed in one wave, then the whole rack AC-cycled through its shelf and read back. */
const RACK_CYCLE: OperationRule = {
  id: "c6000000-0000-4000-8000-000000000001",
  version: 1,
  name: "whole rack",
  description: "",
  stages: [
    {
      name: "all",
      componentTypes: ["POWERSHELF", "NVSWITCH", "COMPUTE"],
      maxParallel: 6,
      steps: [step("UPDATE_FIRMWARE"), step("AC_CYCLE", { acScope: "RACK" }), step("WAIT_BRING_UP")],
    },
  ],
  readinessTimeoutSeconds: 0,
  createdAt: 1,
};

/** The same with a 2 s AC cycle: a shelf that does not answer fails the step at its deadline. */
const SHORT_RACK_CYCLE: OperationRule = {
  ...RACK_CYCLE,
  id: "c6000000-0000-4000-8000-000000000002",
  stages: [
    {
      name: "all",
      componentTypes: ["POWERSHELF", "COMPUTE"],
      maxParallel: 3,
      steps: [
        step("UPDATE_FIRMWARE"),
        step("AC_CYCLE", { acScope: "RACK", timeoutSeconds: 2 }),
        step("WAIT_BRING_UP"),
      ],
    },
  ],
};

let h: Harness;
/** Reset commands as the wrapped publisher saw them: [component id, kind], in order. */
const resets: [string, string][] = [];

beforeAll(async () => {
  h = await startHarness({
    label: "ctr",
    racks,
    // Healthy but for the shelf that drops its rack cycle, whose test gives that step its own 2 s.
    settings: HEALTHY_FLEET_SETTINGS,
    fleet: {
      // Every component's flash waits for an AC cycle (of its tray or of the rack).
      defaults: { outcome: "succeed", updateMs: 40, activation: "ac", resetMs: 30 },
      racks: {},
      components: {},
    },
    wrapPublisher: (inner) => ({
      async publish(to: BmcAddress, command: BmcCommand) {
        if (command.type === "reset") resets.push([to.componentId, command.kind]);
        if (command.type === "reset" && to.componentId === id(P, 3, 1)) return;
        await inner.publish(to, command);
      },
    }),
  });
  for (const rule of [RACK_CYCLE, SHORT_RACK_CYCLE])
    expect(await h.stores.policy.putRuleVersion(rule)).toBe("written");
});
afterAll(async () => {
  await h?.close();
});

async function runOn(r: InventoryRack, rule = RACK_CYCLE) {
  const { taskIds } = await h.child.tasksApi.upgradeFirmware(upgradeRequest([r.id], { ruleId: rule.id }));
  return waitForTask(h, taskIds[0]!);
}

describe("child task: a whole-rack AC cycle", () => {
  it("sends one rack reset, to the power shelf, and ends with every component of the rack active", async () => {
    resets.length = 0;
    const before = h.fleet.stats();
    const [rackResets, activations] = [before.resetsByKind.rack ?? 0, before.activations];
    const task = await runOn(withShelf);
    expect([task.status, task.message]).toEqual(["COMPLETED", "upgraded 6 components to 2.0.0"]);
    const shelf = id(P, 1, 1);
    expect(resets).toEqual([[shelf, "rack"]]);
    const report = parseReport(task.report);
    expect(report.components.map((c) => [c.type, c.status, c.versionAfter])).toEqual([
      ["POWERSHELF", "COMPLETED", "2.0.0"],
      ["NVSWITCH", "COMPLETED", "2.0.0"],
      ["NVSWITCH", "COMPLETED", "2.0.0"],
      ["COMPUTE", "COMPLETED", "2.0.0"],
      ["COMPUTE", "COMPLETED", "2.0.0"],
      ["COMPUTE", "COMPLETED", "2.0.0"],
    ]);
    for (const c of withShelf.components) expect([c.id, h.fleet.versionOf(c.id)]).toEqual([c.id, "2.0.0"]);
    // The fleet performed one reset, of kind rack, and activated all six with it.
    const after = h.fleet.stats();
    expect([after.resetsByKind.rack, after.activations]).toEqual([rackResets + 1, activations + 6]);
  });

  it("a rack without a power shelf fails the task before anything is flashed, naming the rack", async () => {
    resets.length = 0;
    const task = await runOn(withoutShelf);
    expect([task.status, task.message]).toEqual([
      "FAILED",
      `rack ${withoutShelf.id} has no POWERSHELF component: a whole-rack AC cycle (ac_scope RACK) goes through the rack's power shelf`,
    ]);
    expect(resets).toEqual([]);
    // Refused by the preflight, before the first wave: nothing flashed, nothing staged.
    const { updatesByComponent } = h.fleet.stats();
    for (const c of withoutShelf.components)
      expect([c.id, h.fleet.versionOf(c.id), updatesByComponent[c.id] ?? 0]).toEqual([c.id, "1.0.0", 0]);
  });

  it("a shelf that does not answer the rack's cycle fails it, and every component of the wave with it, never COMPLETED staged", async () => {
    resets.length = 0;
    const task = await runOn(silentShelf, SHORT_RACK_CYCLE);
    const shelf = id(P, 3, 1);
    expect(resets).toEqual([[shelf, "rack"]]);
    expect(task.status).toBe("FAILED");
    const why = `component ${shelf} (POWERSHELF): ac-cycle: BMC did not answer within 2 s (unreachable)`;
    expect(task.message).toBe(why);
    const report = parseReport(task.report);
    // The shelf's own verdict, and each tray of the wave with it: flashed, staged, never activated.
    expect(report.components.map((c) => [c.type, c.status, c.error?.name, c.error?.message])).toEqual([
      ["POWERSHELF", "FAILED", "BmcUnreachable", why],
      ["COMPUTE", "FAILED", "BmcUnreachable", why],
      ["COMPUTE", "FAILED", "BmcUnreachable", why],
    ]);
    for (const c of silentShelf.components) expect([c.id, h.fleet.versionOf(c.id)]).toEqual([c.id, "1.0.0"]);
  });
});
