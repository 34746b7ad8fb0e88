/**
 * A cancelled run child ends TERMINATED on its target, whichever step its execution is in and
 * whatever its run's state, on moto with the real state machine: a table over (the run's state ×
 * the step). Each case holds the execution at the entry of its step, cancels the task, and lets the
 * held step run exactly where a racing step does harm: after the cancel has closed the task's
 * command sets and before its final write (the held step, and the state after it, run before the
 * cancel's TERMINATED write is let through). Then the target, the run's counters and stats, its
 * gates and its history must all say TERMINATED, and no failure gate may have moved.
 */

import { AsyncLocalStorage } from "node:async_hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/adapters/system-clock.js";
import type { StepEvent } from "../../src/app/child-task/settings.js";
import { createControls } from "../../src/app/controls.js";
import { createDispatcher, type Dispatcher } from "../../src/app/dispatcher.js";
import type { TaskStore } from "../../src/app/ports.js";
import { evaluateGates } from "../../src/domain/gates.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import type { Run } from "../../src/domain/model.js";
import { computeStats } from "../../src/domain/stats.js";
import type { Task } from "../../src/domain/task.js";
import { uuid } from "../support/dynamodb-fixtures.js";
import { type Harness, rack, runOnRack, startHarness, until } from "./child-task-harness.js";

const P = "cb000000";

type Cursor = { wave: number; step: number };
/**
 * The step that judges (wave, step): the AwaitWave woken with its answers (the wave carries its
 * own cursor: src/app/child-task/wave-judge.ts), or CheckWave where a wait timed out into it.
 */
const judges = (e: StepEvent, wave: number, step: number) => {
  if (e.step === "checkWave") {
    const c = (e.wave as { cursor?: Cursor }).cursor ?? e.cursor;
    return c?.wave === wave && c.step === step;
  }
  if (e.step !== "awaitWave" || e.judge !== true || e.wave.answers === undefined) return false;
  return e.wave.cursor?.wave === wave && e.wave.cursor.step === step;
};

/** Where the task is when it is cancelled: the step invocation held at its entry. */
const STEPS: { name: string; notReady?: boolean; holds: (e: StepEvent) => boolean }[] = [
  { name: "lock", holds: (e) => e.step === "acquireLock" },
  { name: "preflight", holds: (e) => e.step === "checkQueries" },
  {
    name: "readiness wait",
    notReady: true,
    holds: (e) =>
      e.step === "checkQueries" &&
      (e as { preflight?: { readyDeadline?: number } }).preflight?.readyDeadline !== undefined,
  },
  // The preflight's check (above) sends the first wave's update itself; here it is out and its
  // wait is held.
  { name: "first wait", holds: (e) => e.step === "awaitWave" && nthUpdateWait(e, 1) },
  // The first wave's update is out (its check is held, its results in; it starts the activation).
  { name: "a wave", holds: (e) => judges(e, 0, 0) },
  // The first wave's activation check (its last step), its answers in: it starts the second wave.
  { name: "verify", holds: (e) => judges(e, 0, 1) },
  // The second wave's update is out (the check before started it): its wait is held.
  { name: "between waves", holds: (e) => e.step === "awaitWave" && nthUpdateWait(e, 2) },
];

/** Each task's AwaitWave invocations on an update step: the first is the first wave's, the second the second's. */
const updateWaits = new Map<string, number>();
function nthUpdateWait(e: StepEvent, nth: number): boolean {
  if (e.step !== "awaitWave" || e.wave.step !== 0 || e.wave.action !== "UPDATE_FIRMWARE") return false;
  const n = (updateWaits.get(e.taskId) ?? 0) + 1;
  updateWaits.set(e.taskId, n);
  return n === nth;
}

/** The hour of day twelve hours from now: a daily one-hour window that is closed now. */
const closedWindow = () => ({
  cron: `0 ${(new Date().getUTCHours() + 12) % 24} * * *`,
  durationMs: 3_600_000,
});

/**
 * The run's state when the task is cancelled, how to put it there, and what the pass the outcome
 * wakes leaves: the run's status and reason, and the history events it records.
 */
const STATES: {
  name: string;
  enter: (runId: string) => Promise<void>;
  after: Pick<Run, "status" | "reason">;
  events: string[];
}[] = [
  {
    name: "running",
    enter: async () => {},
    // Phase 0's one target ended: the run stops at its phase gate (no auto-advance), not at the gate.
    after: { status: "PAUSED", reason: "PHASE_GATE" },
    events: ["PHASE_GATE_REACHED"],
  },
  {
    name: "paused by the operator",
    enter: async (runId) => void (await controls.pause(runId)),
    after: { status: "PAUSED", reason: "OPERATOR_PAUSED" },
    events: [],
  },
  {
    name: "paused by a gate",
    enter: (runId) => setRun(runId, { status: "PAUSED", reason: "SAFETY_GATE" }),
    after: { status: "PAUSED", reason: "SAFETY_GATE" },
    events: [],
  },
  {
    name: "at a phase gate",
    enter: (runId) => setRun(runId, { status: "PAUSED", reason: "PHASE_GATE" }),
    after: { status: "PAUSED", reason: "PHASE_GATE" },
    events: [],
  },
  {
    name: "outside its maintenance window",
    enter: async (runId) => {
      const run = (await h.stores.runs.getRun(runId)) as Run;
      await setRun(runId, { config: { ...run.config, maintenanceWindows: [closedWindow()] } });
    },
    after: { status: "PAUSED", reason: "PHASE_GATE" },
    events: ["PHASE_GATE_REACHED"],
  },
];

async function setRun(runId: string, change: Partial<Run>): Promise<void> {
  const run = (await h.stores.runs.getRun(runId)) as Run;
  const next = { ...run, ...change, updatedAt: run.updatedAt + 1 };
  expect(await h.stores.runs.saveRun(next, run.updatedAt, [])).toBe("saved");
}

interface Signal {
  promise: Promise<void>;
  resolve: () => void;
}
function signal(): Signal {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** The step held for the case running now; the cancel's TERMINATED write waits for it. */
interface Hold {
  holds: (e: StepEvent) => boolean;
  taskId?: string;
  reached: Signal;
  release: Signal;
  heldDone: boolean;
  /** Step invocations of the task started after the held one returned, and finished. */
  stepsAfter: number;
  opened: boolean;
}
let hold: Hold | undefined;
/** Set around the cancel: its writes, not the execution's, are the ones held. */
const cancelling = new AsyncLocalStorage<true>();

async function aroundStep(event: StepEvent, run: () => Promise<unknown>): Promise<unknown> {
  const current = hold;
  const taskId = (event as { taskId?: string }).taskId;
  if (current === undefined || (current.taskId !== undefined && current.taskId !== taskId)) return run();
  if (current.taskId === undefined && current.holds(event)) {
    current.taskId = taskId;
    current.reached.resolve();
    await current.release.promise;
    try {
      return await run();
    } finally {
      current.heldDone = true;
    }
  }
  const after = current.heldDone;
  try {
    return await run();
  } finally {
    if (after) current.stepsAfter += 1;
  }
}

/** Before the cancel's TERMINATED write: the held step runs, and the state after it (or the end). */
async function beforeCancelEnds(task: Task): Promise<void> {
  const current = hold;
  if (current === undefined || cancelling.getStore() !== true || task.status !== "TERMINATED") return;
  if (current.opened) return;
  current.opened = true;
  current.release.resolve();
  await until(
    "the held step and the state after it to run",
    () => current.heldDone && (current.stepsAfter > 0 || h.child.executor.stats().running === 0),
  );
}

function heldTasks(inner: TaskStore): TaskStore {
  return {
    createTask: (t) => inner.createTask(t),
    createTaskWithLock: (t, ttl, now) =>
      (inner.createTaskWithLock as NonNullable<TaskStore["createTaskWithLock"]>).call(inner, t, ttl, now),
    getTasks: (ids) => inner.getTasks(ids),
    getTaskByIdempotencyKey: (key) => inner.getTaskByIdempotencyKey(key),
    listTasks: (options) => inner.listTasks(options),
    saveTask: async (t, expected) => {
      await beforeCancelEnds(t);
      return inner.saveTask(t, expected);
    },
    saveTaskWithOutcome: async (t, expected, outcome) => {
      await beforeCancelEnds(t);
      return (inner.saveTaskWithOutcome as NonNullable<TaskStore["saveTaskWithOutcome"]>).call(
        inner,
        t,
        expected,
        outcome,
      );
    },
  };
}

const racks: InventoryRack[] = STEPS.flatMap((step, s) =>
  STATES.map((_, r) => {
    const built = rack(P, s * STATES.length + r + 1, [{ type: "COMPUTE", count: 2 }]);
    if (step.notReady) {
      const first = built.components[0] as InventoryRack["components"][number];
      first.readiness = { state: "NOT_READY", reason: "coolant loop drained" };
    }
    return built;
  }),
);

/** The states each task's execution entered, in order. */
const entered = new Map<string, string[]>();
let h: Harness;
let dispatcher: Dispatcher;
let controls: ReturnType<typeof createControls>;
beforeAll(async () => {
  h = await startHarness({
    label: "ctcs",
    racks,
    fleet: { defaults: { outcome: "succeed", updateMs: 50 }, racks: {}, components: {} },
    settings: { maxParallel: 1, updateTimeoutSeconds: 30, readinessTimeoutSeconds: 120 },
    // The outcome wakes the run (a dispatch pass), as the deployed recorder does.
    waker: { wake: async (runId) => void (await dispatcher.dispatchRun(runId)) },
    aroundStep,
    onStateEntered: (taskId, state) =>
      void (entered.get(taskId) ?? entered.set(taskId, []).get(taskId))?.push(state.name),
    wrapTasks: heldTasks,
  });
  dispatcher = createDispatcher({ runs: h.stores.runs, submitter: h.child.submitter, clock: systemClock });
  controls = createControls({ runs: h.stores.runs, submitter: h.child.submitter, clock: systemClock });
});
afterAll(async () => {
  hold?.release.resolve();
  await h?.close();
});

describe("a cancelled run child ends TERMINATED (the run's state × the step it is in)", () => {
  STEPS.forEach((step, s) => {
    STATES.forEach((state, r) => {
      const n = s * STATES.length + r + 1;
      it(`${step.name}, run ${state.name}`, async () => {
        hold = {
          holds: step.holds,
          reached: signal(),
          release: signal(),
          heldDone: false,
          stepsAfter: 0,
          opened: false,
        };
        const runId = uuid(n, `cb${String(n).padStart(6, "0")}`);
        const own = racks[n - 1] as InventoryRack;
        const target = await runOnRack(h, runId, own);
        expect(await dispatcher.dispatchRun(runId)).toMatchObject({ decision: "claimed", submitted: 1 });
        await hold.reached.promise;
        const taskId = hold.taskId as string;
        await state.enter(runId);
        const before = (await h.stores.runs.listRunEvents(runId, { offset: 0, limit: 1000 }))?.total ?? 0;

        const cancelled = await cancelling.run(true, () => h.child.tasksApi.cancelTask(taskId));
        await h.child.idle();

        expect(cancelled).toMatchObject({ status: "TERMINATED", message: "task cancelled" });
        expect((await h.child.tasksApi.getTasks([taskId]))[0]).toMatchObject({
          status: "TERMINATED",
          message: "task cancelled",
        });
        expect(await h.stores.runs.getTarget(runId, target.id)).toMatchObject({
          status: "TERMINATED",
          message: "task cancelled",
        });
        const after = (await h.stores.runs.getRun(runId)) as Run;
        expect(after.counters[0]).toEqual({ completed: 0, failed: 0, terminated: 1, skipped: 0 });
        expect(after.inFlight).toBe(0);
        expect(computeStats(after).cumulative.outcomes).toMatchObject({ terminated: 1, failed: 0 });
        expect(evaluateGates(after).tripped).toBe(false);
        expect({ status: after.status, reason: after.reason }).toEqual(state.after);
        const events = (await h.stores.runs.listRunEvents(runId, { offset: 0, limit: 1000 }))?.events ?? [];
        expect(events.slice(before).map((e) => e.kind)).toEqual(state.events);
        expect(await h.stores.locks.get(own.id)).toBeUndefined();
        // A step that ran into the cancel did not fail the execution: it ended as finished (or stopped).
        expect(entered.get(taskId)).not.toContain("TaskFailed");
      });
    });
  });
});
