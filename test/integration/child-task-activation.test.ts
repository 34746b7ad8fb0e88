/**
 * Activation executed by the real child-task ASL on aws-local-stepfunctions, against moto, the
 * broker, the IoT shim and the simulated fleet, whose BMCs stage every flash until the reset their
 * type needs (fleet `activation: "type"`: COMPUTE and NVSWITCH an AC cycle, POWERSHELF a BMC
 * reset): the built-in default rule activates and reads back every component; a rule that leaves
 * the activation out ends them NotActivated; a rule whose reset is too weak for the firmware ends
 * them NotActivated at its read-back; a BMC that turns unhealthy after its flash fails its
 * component at the rule's CHECK_HEALTH with the BMC's reason.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UNHEALTHY_REASON } from "../../local/bmc-fleet.js";
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
  until,
  upgradeRequest,
  waitForTask,
} from "./child-task-harness.js";

const P = "c5000000";
const racks: InventoryRack[] = [1, 2, 3, 4].map((n) =>
  rack(P, n, [
    { type: "POWERSHELF", count: 1 },
    { type: "NVSWITCH", count: 2 },
    { type: "COMPUTE", count: 3 },
  ]),
);

const step = (action: RuleStep["action"]): RuleStep => ({ action, timeoutSeconds: 0, sleepSeconds: 0 });
const ruleOf = (n: number, steps: RuleStep[]): OperationRule => ({
  id: `c5000000-0000-4000-8000-00000000000${n}`,
  version: 1,
  name: `rule ${n}`,
  description: "",
  stages: [{ name: "all", componentTypes: ["POWERSHELF", "NVSWITCH", "COMPUTE"], maxParallel: 6, steps }],
  readinessTimeoutSeconds: 0,
  createdAt: 1,
});
/** Stage only: the flash, nothing that activates it. */
const STAGE_ONLY = ruleOf(1, [step("UPDATE_FIRMWARE")]);
/** A BMC reset and the bring-up: enough for the power shelf, too weak for trays that need AC. */
const BMC_RESET_ONLY = ruleOf(2, [step("UPDATE_FIRMWARE"), step("RESET_BMC"), step("WAIT_BRING_UP")]);
/** An AC cycle activates every type; then each BMC's own health must be OK. */
const WITH_HEALTH = ruleOf(3, [
  step("UPDATE_FIRMWARE"),
  step("AC_CYCLE"),
  step("WAIT_BRING_UP"),
  step("CHECK_HEALTH"),
]);
/** Rack 4's first switch tray turns unhealthy once flashed. */
const sick = id(P, 4, 2);

let h: Harness;
/** Reset commands as the wrapped publisher saw them: component id → kinds, in order. */
const resets = new Map<string, string[]>();

beforeAll(async () => {
  h = await startHarness({
    label: "cta",
    racks,
    settings: HEALTHY_FLEET_SETTINGS,
    fleet: {
      defaults: { outcome: "succeed", updateMs: 40, activation: "type", resetMs: 30 },
      racks: {},
      components: { [sick]: { unhealthyAfterFlash: true } },
    },
    wrapPublisher: (inner) => ({
      async publish(to: BmcAddress, command: BmcCommand) {
        const { componentId } = to;
        if (command.type === "reset")
          resets.set(componentId, [...(resets.get(componentId) ?? []), command.kind]);
        await inner.publish(to, command);
      },
    }),
  });
  for (const rule of [STAGE_ONLY, BMC_RESET_ONLY, WITH_HEALTH])
    expect(await h.stores.policy.putRuleVersion(rule)).toBe("written");
});
afterAll(async () => {
  await h?.close();
});

async function runOn(n: number, rule?: OperationRule) {
  const { taskIds } = await h.child.tasksApi.upgradeFirmware(
    upgradeRequest([id(P, n, 0)], rule === undefined ? {} : { ruleId: rule.id }),
  );
  return waitForTask(h, taskIds[0]!);
}

const componentsOf = (n: number) => racks[n - 1]!.components;

describe("child task: activation", () => {
  it("the default rule resets each type as it needs and ends with every component active", async () => {
    const task = await runOn(1);
    expect([task.status, task.message]).toEqual(["COMPLETED", "upgraded 6 components to 2.0.0"]);
    const report = parseReport(task.report);
    expect(report.components.map((c) => [c.type, c.status, c.versionAfter])).toEqual([
      ["POWERSHELF", "COMPLETED", "2.0.0"],
      ["NVSWITCH", "COMPLETED", "2.0.0"],
      ["NVSWITCH", "COMPLETED", "2.0.0"],
      ["COMPUTE", "COMPLETED", "2.0.0"],
      ["COMPUTE", "COMPLETED", "2.0.0"],
      ["COMPUTE", "COMPLETED", "2.0.0"],
    ]);
    // Each BMC got the reset its type needs, once, and runs the new version now.
    for (const c of componentsOf(1)) {
      expect(resets.get(c.id)).toEqual([c.type === "POWERSHELF" ? "bmc" : "ac"]);
      expect(h.fleet.versionOf(c.id)).toBe("2.0.0");
    }
    // The inventory records the versions read back (beside the task's end, not before it).
    await until("inventory to record the active versions", async () => {
      const [stored] = await h.stores.inventory.getRacksByIds([id(P, 1, 0)]);
      return stored?.components.every((c) => c.firmwareVersion === "2.0.0");
    });
  });

  it("a rule without activation: every staged component ends NotActivated, with the version seen and the pending one", async () => {
    const task = await runOn(2, STAGE_ONLY);
    expect(task.status).toBe("FAILED");
    const first = id(P, 2, 1);
    expect(task.message).toBe(
      `component ${first} (POWERSHELF): BMC runs 1.0.0 with 2.0.0 pending: flashed but not active (no activation step follows); 5 more component(s) failed`,
    );
    const report = parseReport(task.report);
    expect(report.components.map((c) => [c.status, c.error?.name])).toEqual(
      Array(6).fill(["FAILED", "NotActivated"]),
    );
    for (const c of componentsOf(2)) expect(h.fleet.versionOf(c.id)).toBe("1.0.0");
    const [stored] = await h.stores.inventory.getRacksByIds([id(P, 2, 0)]);
    expect(stored?.components.map((c) => c.firmwareVersion)).toEqual(Array(6).fill("1.0.0"));
  });

  it("a reset too weak for the firmware: the read-back fails those components NotActivated", async () => {
    const task = await runOn(3, BMC_RESET_ONLY);
    expect(task.status).toBe("FAILED");
    const switchTray = id(P, 3, 2);
    expect(task.message).toBe(
      `component ${switchTray} (NVSWITCH): wait-bring-up: BMC runs 1.0.0 with 2.0.0 pending: flashed but not active; 4 more component(s) failed`,
    );
    const report = parseReport(task.report);
    expect(report.components.map((c) => [c.type, c.status, c.error?.name])).toEqual([
      ["POWERSHELF", "COMPLETED", undefined],
      ["NVSWITCH", "FAILED", "NotActivated"],
      ["NVSWITCH", "FAILED", "NotActivated"],
      ["COMPUTE", "FAILED", "NotActivated"],
      ["COMPUTE", "FAILED", "NotActivated"],
      ["COMPUTE", "FAILED", "NotActivated"],
    ]);
    expect(h.fleet.versionOf(id(P, 3, 1))).toBe("2.0.0");
    expect(h.fleet.versionOf(switchTray)).toBe("1.0.0");
  });

  it("a BMC that turns unhealthy after its flash fails its component at CHECK_HEALTH with the BMC's reason", async () => {
    const task = await runOn(4, WITH_HEALTH);
    expect(task.status).toBe("FAILED");
    expect(task.message).toBe(
      `component ${sick} (NVSWITCH): check-health: BMC reports health Critical: ${UNHEALTHY_REASON}`,
    );
    const report = parseReport(task.report);
    expect(report.components.map((c) => [c.id === sick, c.status, c.error?.name])).toEqual([
      [false, "COMPLETED", undefined],
      [true, "FAILED", "HealthCheckFailed"],
      [false, "COMPLETED", undefined],
      [false, "COMPLETED", undefined],
      [false, "COMPLETED", undefined],
      [false, "COMPLETED", undefined],
    ]);
    // Flashed and active: the failure is its health, not its version.
    expect(h.fleet.versionOf(sick)).toBe("2.0.0");
  });
});
