/**
 * Operation rules executed by the real child-task ASL on aws-local-stepfunctions, against moto,
 * the broker, the IoT shim and the simulated fleet, through the task service's UpgradeFirmware
 * with a stored rule pinned: a stage of two types in waves of max_parallel with pre and post
 * actions (verify-reachability, update, verify-version, sleep); a failed update retried with its
 * backoff until it succeeds; retries used up, which fails the task.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BmcCommand, updateRequestId } from "../../src/domain/bmc-protocol.js";
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

const P = "c4000000";
const racks: InventoryRack[] = [1, 2, 3].map((n) =>
  rack(P, n, [
    { type: "COMPUTE", count: 3 },
    { type: "NVSWITCH", count: 2 },
  ]),
);
/** Rack 2's first COMPUTE fails its first flash (then the test lets it succeed); rack 3's always. */
const flaky = id(P, 2, 1);
const broken = id(P, 3, 1);

const step = (action: RuleStep["action"], extra: Partial<RuleStep> = {}): RuleStep => ({
  action,
  timeoutSeconds: 0,
  sleepSeconds: 0,
  ...extra,
});
const ruleOf = (n: number, steps: RuleStep[], maxParallel = 0): OperationRule => ({
  id: `${P.slice(0, 4)}0000-0000-4000-8000-00000000000${n}`,
  version: 1,
  name: `rule ${n}`,
  description: "",
  stages: [{ name: "all", componentTypes: ["NVSWITCH", "COMPUTE"], maxParallel, steps }],
  readinessTimeoutSeconds: 0,
  createdAt: 1,
});
const PIPELINE = ruleOf(
  1,
  [
    step("VERIFY_REACHABILITY"),
    step("UPDATE_FIRMWARE"),
    step("VERIFY_VERSION"),
    step("SLEEP", { sleepSeconds: 1 }),
  ],
  2,
);
const RETRIED = ruleOf(2, [
  step("UPDATE_FIRMWARE", { retry: { maxRetries: 2, intervalSeconds: 1, backoffRate: 2 } }),
]);

let h: Harness;
/** The states each task's execution entered, in order. */
const states = new Map<string, string[]>();
/** AwaitWave calls that judged the step they were woken for (wave-judge.ts), by task. */
const judged = new Map<string, number>();
/** Update commands as the wrapped publisher saw them, in order. */
const updates: { componentId: string; requestId: string }[] = [];

beforeAll(async () => {
  h = await startHarness({
    label: "ctr",
    racks,
    settings: HEALTHY_FLEET_SETTINGS,
    onStateEntered: (taskId, state) => states.set(taskId, [...(states.get(taskId) ?? []), state.name]),
    aroundStep: (event, run) => {
      const e = event as { step: string; taskId: string; judge?: boolean; wave?: { answers?: unknown } };
      if (e.step === "awaitWave" && e.judge === true && e.wave?.answers !== undefined)
        judged.set(e.taskId, (judged.get(e.taskId) ?? 0) + 1);
      return run();
    },
    fleet: {
      defaults: { outcome: "succeed", updateMs: 40 },
      racks: {},
      components: { [flaky]: { outcome: "fail" }, [broken]: { outcome: "fail" } },
    },
    // The flaky tray's first retry (attempt 1) is what makes it succeed: the fleet learns so just
    // before that command reaches it, so the first attempt surely fails and the retry surely passes.
    wrapPublisher: (inner) => ({
      async publish(to: BmcAddress, command: BmcCommand) {
        const { componentId } = to;
        if (command.type === "update") {
          updates.push({ componentId, requestId: command.requestId });
          if (componentId === flaky && command.requestId === updateRequestId(command.taskId, flaky, 1, 0)) {
            h.fleet.setConfig({
              defaults: { outcome: "succeed", updateMs: 40 },
              racks: {},
              components: { [broken]: { outcome: "fail" } },
            });
          }
        }
        await inner.publish(to, command);
      },
    }),
  });
  for (const rule of [PIPELINE, RETRIED]) expect(await h.stores.policy.putRuleVersion(rule)).toBe("written");
});
afterAll(async () => {
  await h?.close();
});

async function runOn(n: number, rule: OperationRule) {
  const { taskIds } = await h.child.tasksApi.upgradeFirmware(
    upgradeRequest([id(P, n, 0)], { ruleId: rule.id }),
  );
  return waitForTask(h, taskIds[0]!);
}

describe("child task: an operation rule's stages, waves and steps", () => {
  it("pre and post actions run wave by wave, max_parallel at a time, in the stage's type order", async () => {
    h.fleet.resetStats();
    h.child.executor.resetStats();
    const task = await runOn(1, PIPELINE);
    expect([task.status, task.message]).toEqual(["COMPLETED", "upgraded 5 components to 2.0.0"]);
    expect(task.appliedRuleId).toBe(PIPELINE.id);
    const report = parseReport(task.report);
    expect(report.rule).toEqual({ id: PIPELINE.id, version: 1, name: "rule 1" });
    expect(report.components.map((c) => [c.type, c.status])).toEqual([
      ["NVSWITCH", "COMPLETED"],
      ["NVSWITCH", "COMPLETED"],
      ["COMPUTE", "COMPLETED"],
      ["COMPUTE", "COMPLETED"],
      ["COMPUTE", "COMPLETED"],
    ]);
    // Three waves (2 + 2 + 1), four steps each; queries: the preflight's 5, then 5 per verify step.
    const byStep = h.child.executor.stats().byStep;
    // The preflight's check starts the first step and each step is judged in the wait that sends
    // the next, or in CheckWave: no SendWave nor FinishWave state runs, and every step is judged
    // (12 checks at least). A sleep takes CheckWave's path: CheckWave makes it (the verify step's
    // judge hands it over, or that step's wait timed out into CheckWave), and its wait's timeout
    // ends in CheckWave (2 a wave at least, whatever this file's 40-ms waits do).
    expect([byStep.sendWave ?? 0, byStep.finishWave ?? 0]).toEqual([0, 0]);
    expect((judged.get(task.id) ?? 0) + (byStep.checkWave ?? 0)).toBeGreaterThanOrEqual(12);
    expect(byStep.checkWave).toBeGreaterThanOrEqual(6);
    const stats = h.fleet.stats();
    expect([stats.flashes, stats.queryCommands]).toEqual([5, 15]);
    // Switches first (the stage's first type), two at a time.
    const order = updates
      .filter((u) => u.componentId.includes(`-${String(1).padStart(4, "0")}`))
      .map((u) => u.componentId);
    expect(order).toEqual([id(P, 1, 4), id(P, 1, 5), id(P, 1, 1), id(P, 1, 2), id(P, 1, 3)]);
  });

  it("a failed update is retried, for the failed component only, until it succeeds", async () => {
    const task = await runOn(2, RETRIED);
    expect(task.status).toBe("COMPLETED");
    expect(h.fleet.stats().flashesByComponent[flaky]).toBe(2);
    expect(updates.filter((u) => u.componentId === flaky).map((u) => u.requestId)).toEqual([
      updateRequestId(task.id, flaky, 0, 0),
      updateRequestId(task.id, flaky, 1, 0),
    ]);
    const report = parseReport(task.report);
    const tray = report.components.find((c) => c.id === flaky);
    expect([tray?.status, tray?.requestId, tray?.error]).toEqual([
      "COMPLETED",
      updateRequestId(task.id, flaky, 1, 0),
      undefined,
    ]);
    // The others flashed once.
    expect(updates.filter((u) => u.componentId === id(P, 2, 2)).length).toBe(1);
    // The retry takes CheckWave's path: a judging wait hands the failed step to it (a retry is not
    // sent by a wait; or the wait timed out into it), whose cursor names the retry, and the
    // retry's backoff and SendWave follow.
    const path = (states.get(task.id) ?? []).join(" → ");
    expect(path).toContain("CheckWave → WaveDone? → WaitBeforeRetry → SendWave → AwaitWave");
  });

  it("retries used up: the component FAILED, the task failed naming it", async () => {
    const task = await runOn(3, RETRIED);
    expect(task.status).toBe("FAILED");
    expect(task.message).toBe(
      `component ${broken} (COMPUTE): BMC reported FLASH_FAILED: flashing 2.0.0 failed; still on 1.0.0 (running 1.0.0)`,
    );
    expect(h.fleet.stats().flashesByComponent[broken]).toBe(3);
    const tray = parseReport(task.report).components.find((c) => c.id === broken);
    expect([tray?.status, tray?.error?.name]).toEqual(["FAILED", "BmcUpdateFailed"]);
    // The last attempt's failure ends the task from the state that judged it (its ComponentsFailed
    // caught into RecordFailure): AwaitWave or AwaitNextWave when its wait was woken, CheckWave
    // when it timed out (this file's waits are the 40-ms polls'); child-task-judge pins the woken one.
    await h.child.idle();
    const path = states.get(task.id) ?? [];
    expect(path.slice(-3)).toEqual(["RecordFailure", "Failed?", "TaskFailed"]);
    expect(["AwaitWave", "AwaitNextWave", "CheckWave"]).toContain(path.at(-4));
  });
});
