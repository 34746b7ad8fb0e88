/**
 * A property over random interleavings of a run child's execution with an operator's cancel of
 * its task, pauses and resumes of its run, and its BMCs' results (each component's flash succeeds
 * or fails, fast or slow), on moto with the real state machine. Each action fires when the task's
 * execution starts its k-th step (k drawn), concurrently with that step, so the cancel lands in
 * every part of the task, in the middle of its steps' writes too. Whatever the order: the cancel
 * answers the task's final status, the target has exactly that status and message, the run counts
 * it once, no failure gate moves unless a BMC failed, and a task never ends with the TaskEnded
 * of its own cancel. fast-check's seed is FLOW_TEST_SEED's when set, and printed on failure.
 *
 * The property runs in four files, one per slice of the task's steps the cancel lands in
 * (child-task-cancel-races-<slice>.test.ts, slices in CANCEL_SLICES), each with a harness of its
 * own, so the slices run at once; between them they try at least as many interleavings as one
 * file did, in proportion to each slice's steps.
 */

import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/adapters/system-clock.js";
import type { StepEvent } from "../../src/app/child-task/settings.js";
import { taskIdForKey } from "../../src/app/child-task/task-service.js";
import { createControls } from "../../src/app/controls.js";
import { createDispatcher, type Dispatcher } from "../../src/app/dispatcher.js";
import { targetIdempotencyKey } from "../../src/app/ports.js";
import { evaluateGates } from "../../src/domain/gates.js";
import type { Run, Target } from "../../src/domain/model.js";
import type { Task } from "../../src/domain/task.js";
import { uuid } from "../support/dynamodb-fixtures.js";
import { testSeed } from "../support/seeded-random.js";
import { type Harness, rack, runOnRack, startHarness } from "./child-task-harness.js";

const P = "cc000000";
/**
 * Interleavings tried per run of the test (each a run and a rack of its own, 0.5 to 1.5 s on moto),
 * shared by the slices. Before a cancel's ending was decided on the task, 4 in 100 of them ended the
 * task FAILED with its own cancel's TaskEnded: at 60, a run of the test missed that about once in
 * twelve.
 */
const RUNS = 60;
/** The last step (counted from 0) an action is drawn for. */
const LAST_STEP = 16;

type Action = "cancel" | "pause" | "resume";
/** The steps the cancel is drawn from in one slice of the property. */
export type CancelSteps = { min: number; max: number };
const scheduleArb = (cancel: CancelSteps) =>
  fc.record({
    bmcs: fc.array(
      fc.record({
        outcome: fc.constantFrom("succeed" as const, "fail" as const),
        updateMs: fc.integer({ min: 5, max: 120 }),
      }),
      { minLength: 1, maxLength: 3 },
    ),
    // The step (counted from 0) at whose start each action fires; the cancel always comes.
    cancelAt: fc.integer(cancel),
    pauseAt: fc.option(fc.integer({ min: 0, max: LAST_STEP }), { nil: undefined }),
    resumeAt: fc.option(fc.integer({ min: 0, max: LAST_STEP }), { nil: undefined }),
  });
type Schedule = ReturnType<typeof scheduleArb> extends fc.Arbitrary<infer T> ? T : never;

/** The slices of the cancel's steps, one file each; together every step from 0 to LAST_STEP. */
export const CANCEL_SLICES: readonly CancelSteps[] = [
  { min: 0, max: 3 },
  { min: 4, max: 7 },
  { min: 8, max: 11 },
  { min: 12, max: LAST_STEP },
];

/** The case running now: its task, its steps counted, its actions due and fired. */
let current:
  | { taskId: string; steps: number; due: Map<number, Action[]>; fire: (a: Action) => void }
  | undefined;

async function aroundStep(event: StepEvent, run: () => Promise<unknown>): Promise<unknown> {
  const c = current;
  if (c !== undefined && (event as { taskId?: string }).taskId === c.taskId) {
    for (const action of c.due.get(c.steps) ?? []) c.fire(action);
    c.due.delete(c.steps);
    c.steps += 1;
  }
  return run();
}

let h: Harness;
let dispatcher: Dispatcher;
let controls: ReturnType<typeof createControls>;
let n = 0;
async function oneInterleaving(schedule: Schedule): Promise<void> {
  n += 1;
  const own = rack(P, n, [{ type: "COMPUTE", count: schedule.bmcs.length }]);
  await h.stores.inventory.upsertRacks([own]);
  h.fleet.addRacks([own]);
  h.fleet.setConfig({
    defaults: { outcome: "succeed", updateMs: 50 },
    racks: {},
    components: Object.fromEntries(
      own.components.map((c, i) => [c.id, schedule.bmcs[i] as Schedule["bmcs"][0]]),
    ),
  });
  const runId = uuid(n, `cc${String(n).padStart(6, "0")}`);
  const target = await runOnRack(h, runId, own);

  const taskId = taskIdForKey(targetIdempotencyKey(target.id));
  const due = new Map<number, Action[]>();
  const plan: [Action, number | undefined][] = [
    ["pause", schedule.pauseAt],
    ["resume", schedule.resumeAt],
    ["cancel", schedule.cancelAt],
  ];
  for (const [action, at] of plan) if (at !== undefined) due.set(at, [...(due.get(at) ?? []), action]);
  const fired: Promise<unknown>[] = [];
  let cancelled: Promise<Task> | undefined;
  const fire = (action: Action) => {
    if (action === "cancel") {
      cancelled = h.child.tasksApi.cancelTask(taskId);
      fired.push(cancelled);
    }
    // An operator's pause or resume the run's state refuses is part of the interleaving too.
    else
      fired.push(
        (action === "pause" ? controls.pause(runId) : controls.resume(runId)).catch(() => undefined),
      );
  };
  current = { taskId, steps: 0, due, fire };
  expect(await dispatcher.dispatchRun(runId)).toMatchObject({ decision: "claimed", submitted: 1 });
  // The execution may end before its k-th step: what is still due fires then, in step order.
  await h.child.idle();
  current = undefined;
  for (const at of [...due.keys()].sort((a, b) => a - b))
    for (const action of due.get(at) ?? []) fire(action);
  await Promise.all(fired);
  await h.child.idle();

  const answer = await (cancelled as Promise<Task>);
  const [task] = await h.child.tasksApi.getTasks([taskId]);
  const stored = (await h.stores.runs.getTarget(runId, target.id)) as Target;
  const after = (await h.stores.runs.getRun(runId)) as Run;
  const status = task?.status;
  expect(status, "the task ended").toMatch(/^(COMPLETED|FAILED|TERMINATED)$/);
  expect(task?.message, "a task never ends with its own cancel's TaskEnded").not.toMatch(/already ended/);
  expect({ status: answer.status, message: answer.message }).toEqual({ status, message: task?.message });
  expect({ status: stored.status, message: stored.message }).toEqual({ status, message: task?.message });
  if (status === "TERMINATED") expect(task?.message).toBe("task cancelled");
  if (status === "FAILED")
    expect(
      schedule.bmcs.some((b) => b.outcome === "fail"),
      "only a BMC fails a task",
    ).toBe(true);
  expect(after.counters[0]).toEqual({
    completed: status === "COMPLETED" ? 1 : 0,
    failed: status === "FAILED" ? 1 : 0,
    terminated: status === "TERMINATED" ? 1 : 0,
    skipped: 0,
  });
  expect(after.inFlight).toBe(0);
  expect(evaluateGates(after).tripped, "the failure gate moves only for a failure").toBe(status === "FAILED");
  const events = (await h.stores.runs.listRunEvents(runId, { offset: 0, limit: 1000 }))?.events ?? [];
  if (status !== "FAILED") expect(events.map((e) => e.kind)).not.toContain("GATE_TRIPPED");
  expect(await h.stores.locks.get(own.id)).toBeUndefined();
}

/** Registers one slice of the property: its harness, and the interleavings whose cancel lands in `cancel`. */
export function describeCancelRaces(cancel: CancelSteps): void {
  const runs = Math.ceil((RUNS * (cancel.max - cancel.min + 1)) / (LAST_STEP + 1));
  beforeAll(async () => {
    h = await startHarness({
      label: "ctcr",
      racks: [],
      fleet: { defaults: { outcome: "succeed", updateMs: 50 }, racks: {}, components: {} },
      settings: { maxParallel: 1, updateTimeoutSeconds: 30 },
      waker: { wake: async (runId) => void (await dispatcher.dispatchRun(runId)) },
      aroundStep,
    });
    dispatcher = createDispatcher({ runs: h.stores.runs, submitter: h.child.submitter, clock: systemClock });
    controls = createControls({ runs: h.stores.runs, submitter: h.child.submitter, clock: systemClock });
  });
  afterAll(async () => {
    await h?.close();
  });
  describe(`cancel (at steps ${cancel.min}-${cancel.max}), pause, resume and BMC results in any order`, () => {
    it("the cancel's answer, the task, its target, the run's counters and its gate agree, and only a BMC's failure fails the task", async () => {
      await fc.assert(fc.asyncProperty(scheduleArb(cancel), oneInterleaving), {
        numRuns: runs,
        seed: testSeed(),
      });
    }, 240_000);
  });
}
