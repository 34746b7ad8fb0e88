/**
 * A wave ends when its results are in, not at a poll: AwaitWave's task token on the wave's command
 * set, sent back by the receiver when it stores the wave's last result (or by the step, when they
 * were in before it); the preflight likewise, AwaitPreflight's token on the query set. Here every
 * wait's net (the preflight's timeout, AwaitWave's heartbeat and its timeout, the step's deadline)
 * is at least the test's own timeout, far past a 60-ms flash, so the test ends in time only if
 * each wait was woken; the executor counts how each wait ended, and the states entered: the
 * preflight starts the first step and a check that ends a step the next, and an execution of the
 * definition before that (a SendWave per step) still completes on today's steps.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { definitionFor } from "../../bench/lib/rollout-paths.js";
import { loadChildTaskDefinition } from "../../src/adapters/stepfunctions/asl.js";
import { parseReport } from "../../src/domain/task-report.js";
import {
  type Harness,
  HEALTHY_FLEET_SETTINGS,
  id,
  rack,
  SMALL_RACK,
  SUCCEEDING_FLEET,
  startHarness,
  upgradeRequest,
  waitForTask,
} from "./child-task-harness.js";

const P = "c3000000";
const racks = [rack(P, 1, SMALL_RACK)];
const PB = "c3100000";
const racksBefore = [rack(PB, 1, SMALL_RACK)];
/**
 * The states of the rack's execution: AcquireLock, LockAcquired?; AwaitPreflight, CheckPreflight
 * (which makes the first step), PreflightDone?; AwaitWave, which sends it; per step the wait
 * (AwaitNextWave and AwaitWave in turn) woken to judge it and send the next (9 steps); the last
 * step's judge records the task: AlreadyFinished.
 */
const NEW_PATH_TRANSITIONS = 2 + 3 + 1 + 9 + 1;
const fleet = SUCCEEDING_FLEET;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    label: "ctw",
    racks,
    fleet,
    settings: HEALTHY_FLEET_SETTINGS,
    awaitTimeoutOverrideMs: 600_000,
  });
});
afterAll(async () => {
  await h?.close();
});

describe("child task: waves woken by their results", () => {
  it("every wave's wait ends with its wake-up, none with its timeout; each step judged in the wait that sends the next: 1 state and 1 invocation a step", async () => {
    h.child.executor.resetStats();
    const { taskIds } = await h.child.tasksApi.upgradeFirmware(upgradeRequest([id(P, 1, 0)]));
    const task = await waitForTask(h, taskIds[0]!);
    await h.child.idle();
    expect(task.status).toBe("COMPLETED");
    expect(parseReport(task.report).components.every((c) => c.status === "COMPLETED")).toBe(true);
    const stats = h.child.executor.stats();
    // The preflight's answers, then three groups (POWERSHELF, NVSWITCH, COMPUTE), one wave each at
    // maxParallel 4, of the default rule's three steps (the update, the type's activation, the
    // bring-up).
    // Each step's wait is woken to judge it; the last judge's ends itself (OutcomeRecorded).
    expect(stats.callbacks).toEqual({ woken: 1 + 9, timedOut: 0, failed: 1 });
    expect(stats.byStep.awaitWave).toBe(9 + 1);
    // No CheckWave: every step was judged in the wait that sent the next.
    expect(stats.byStep.checkWave).toBeUndefined();
    expect(stats.byStep.awaitQueries).toBe(1);
    expect(stats.byStep.checkQueries).toBe(1);
    // The preflight starts the first step and each check that ends a step the next: no SendWave.
    expect(stats.byStep.sendWave).toBeUndefined();
    expect(stats.stateTransitions).toBe(NEW_PATH_TRANSITIONS);
  });

  it("an execution of the definition before (MoreWaves? and SendWave per step, the first too) completes as it did on today's steps", async () => {
    const before = await startHarness({
      label: "ctwb",
      racks: racksBefore,
      fleet,
      settings: HEALTHY_FLEET_SETTINGS,
      awaitTimeoutOverrideMs: 600_000,
      definition: definitionFor("before", loadChildTaskDefinition()),
    });
    try {
      const { taskIds } = await before.child.tasksApi.upgradeFirmware(upgradeRequest([id(PB, 1, 0)]));
      const task = await waitForTask(before, taskIds[0]!);
      await before.child.idle();
      expect(task.status).toBe("COMPLETED");
      expect(parseReport(task.report).components.every((c) => c.status === "COMPLETED")).toBe(true);
      expect(before.fleet.stats().flashes).toBe(6);
      const stats = before.child.executor.stats();
      expect(stats.callbacks).toEqual({ woken: 10, timedOut: 0, failed: 0 });
      expect([stats.byStep.sendWave, stats.byStep.awaitWave, stats.byStep.checkWave]).toEqual([9, 9, 9]);
      // Its waits store no resume (no `judge`): each wake-up brings the answers alone, on the wave,
      // and CheckWave judges every step; per step AwaitWave, CheckWave, WaveDone?, MoreWaves?, SendWave.
      expect(stats.stateTransitions).toBe(2 + 3 + 9 * 5 + 1);
    } finally {
      await before.close();
    }
  });

  it("an execution of the definition whose WaveDone? routes a woken wave (no AwaitNextWave) completes as it did: the judge wakes its wait with the marks that Choice reads", async () => {
    const PC = "c3200000";
    const choice = await startHarness({
      label: "ctwc",
      racks: [rack(PC, 1, SMALL_RACK)],
      fleet,
      settings: HEALTHY_FLEET_SETTINGS,
      awaitTimeoutOverrideMs: 600_000,
      definition: definitionFor("choice", loadChildTaskDefinition()),
    });
    try {
      const { taskIds } = await choice.child.tasksApi.upgradeFirmware(upgradeRequest([id(PC, 1, 0)]));
      const task = await waitForTask(choice, taskIds[0]!);
      await choice.child.idle();
      expect(task.status).toBe("COMPLETED");
      expect(choice.fleet.stats().flashes).toBe(6);
      const stats = choice.child.executor.stats();
      // The last judge wakes its own wait with `ended` (no error): WaveDone? → AlreadyFinished.
      expect(stats.callbacks).toEqual({ woken: 1 + 9 + 1, timedOut: 0, failed: 0 });
      expect([stats.byStep.awaitWave, stats.byStep.checkWave]).toEqual([9 + 1, undefined]);
      // A WaveDone? after every wait: the first step's and each judge's.
      expect(stats.stateTransitions).toBe(2 + 3 + 2 + 9 * 2 + 1);
    } finally {
      await choice.close();
    }
  });
});
