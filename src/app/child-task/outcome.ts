/**
 * How a child task ends: the one outcome recorder that every ending takes (the last state, RecordSuccess/RecordFailure; a
 * stopped, failed or timed-out execution, reconciled; CancelTask, through the task service).
 */

import { type CommandSet, updateParts } from "../../domain/command-sets.js";
import { StoreUnavailableError } from "../../domain/errors.js";
import { newlyVerified } from "../../domain/live-report.js";
import { causeText } from "../../domain/step-errors.js";
import { type Task, TERMINAL_TASK_STATUSES } from "../../domain/task.js";
import {
  completionMessage,
  finishReport,
  parseReport,
  type TaskOutcomeStatus,
} from "../../domain/task-report.js";
import { errorText, type Metrics, taskKeys } from "../observability.js";
import type {
  CommandSetStore,
  RunChildOutcome,
  RunStore,
  SaveTaskOutcome,
  TaskStore,
  VersionAt,
} from "../ports.js";
import type { StepDeps, TaskStepsDeps } from "./deps.js";
import type { StepEventOf } from "./settings.js";
import { foldedTask, isTerminalTask, loadTask, updateTask } from "./task-item.js";

/**
 * The versions `ended`'s report verified that `before` (the report the ending replaced; undefined:
 * a repeat, every verified one: the recorder writes only what differs) did not have; none when
 * either report cannot be read.
 */
function verifiedVersions(
  ended: Task,
  before: string | undefined,
): { componentId: string; version: string }[] {
  try {
    const final = parseReport(ended.report);
    return newlyVerified(before === undefined ? { ...final, components: [] } : parseReport(before), final);
  } catch {
    return [];
  }
}

/**
 * Each version with its component's index in the rack's inventory item, when `at` names every
 * one (and there is one); else undefined: the recorder reads the rack for the others.
 *   [c@2.0.0, p@2.0.0], { c: 5, p: 2 } → [c@2.0.0 at 5, p@2.0.0 at 2]
 *   [c@2.0.0, p@2.0.0], { c: 5 }       → undefined
 */
function versionsAt(
  versions: readonly { componentId: string; version: string }[],
  at: Readonly<Record<string, number>> | undefined,
): VersionAt[] | undefined {
  if (at === undefined || versions.length === 0) return undefined;
  const out: VersionAt[] = [];
  for (const v of versions) {
    const i = at[v.componentId];
    if (i === undefined) return undefined;
    out.push({ ...v, at: i });
  }
  return out;
}

/**
 * Records these versions on inventory; logs a failure. `at`: where the preflight saw each
 * component in the rack's inventory (the recorder then writes without reading the rack first).
 */
async function recordVerified(
  deps: OutcomeDeps,
  ended: Task,
  versions: readonly { componentId: string; version: string }[],
  at: Readonly<Record<string, number>> | undefined,
): Promise<void> {
  if (versions.length === 0) return;
  try {
    await deps.firmware.record(ended.rackId, versions, at);
  } catch (error) {
    deps.logger?.error("could not record verified firmware versions on inventory", {
      ...taskKeys(ended),
      rackId: ended.rackId,
      components: versions.length,
      error: errorText(error),
    });
  }
}

/** What ending a task needs: the task, its update set, its target's run, the rack lock, inventory, and who to tell. */
export type OutcomeDeps = Pick<
  TaskStepsDeps,
  "tasks" | "locks" | "clock" | "waker" | "logger" | "firmware"
> & {
  commands: Pick<CommandSetStore, "get" | "getUpdates" | "close" | "getWithTask">;
  runs: Pick<RunStore, "recordOutcome">;
  /** Targets by outcome and BMC failures, counted once per recorded target transition. */
  metrics?: Metrics;
};

const OUTCOME_METRIC = {
  COMPLETED: "TargetsCompleted",
  FAILED: "TargetsFailed",
  TERMINATED: "TargetsTerminated",
  SKIPPED: undefined,
} as const;

/**
 * Ends a task. THE one path every ending takes: the last state (RecordSuccess/RecordFailure), the
 * stop of an execution (local abort path, the AWS execution-status rule) and CancelTask.
 *   −. an ending from outside the execution (`fromOutside`: every caller but the last state) first
 *      stores itself on the task (`Task.ending`; one already there stays), then closes the task's
 *      update and verify sets, so a wave step still in flight sends nothing (commands.ts; the
 *      steps do not read the task) and none is sent once the lock is released; a step that finds
 *      them closed fails with TaskEnded, and its RecordFailure records the ending found on the
 *      task, so the first ending decided is the task's, whichever write lands first;
 *   0. the update set folded into the report (live-report.ts), read with the task;
 *   1. the task: status, message (a function of the folded task, for a completion message; the
 *      task's decided ending's, when it has one), finishedAt, and the report's unfinished
 *      components (UPDATING → TERMINATED or FAILED, PENDING → NOT_ATTEMPTED); a task already
 *      terminal keeps its first outcome (the first recorder wins, later ones only finish steps 2
 *      to 4);
 *   2. a run child's target: RunStore.recordOutcome with the task's final status as stored
 *      (exactly once), so a target's outcome is exactly its task's;
 *   3. the rack lock, released if this task holds it, beside the run's wake-up;
 *   4. the versions the task verified, on inventory (a fact about the hardware however the task
 *      ends; best effort: a failure is logged and keeps nothing from ending). Where the store can
 *      and the preflight saw where each is in the rack's item (`inventoryAt`), they go in the
 *      same transaction as 1 to 3 (one request, not two); else beside 3, after the end, not
 *      before it, so the freed slot does not wait for them: the call that ended the task writes
 *      them, and so does the execution's own step finding it ended (a retry of a call that
 *      crashed in between: the recorder writes only what inventory lacks).
 * Every step is idempotent, so a retried or repeated call finishes what a crashed one started.
 * The call that ends the task (1) logs it, once: "task cancelled" for TERMINATED (an operator's
 * cancel, a run's cancel, a stopped execution), else "task finished" (a warning when FAILED).
 * `read`: the task as the caller just read it (no second read; a stale copy only costs a retry),
 * and `readUpdates` its update set read with it (the last wave's check); else both are read here,
 * in one request.
 */
export async function recordTaskOutcome(
  deps: OutcomeDeps,
  taskId: string,
  outcome: {
    status: TaskOutcomeStatus;
    message: string | ((task: Task) => string);
    /** False only from the execution's own last state, after which no step runs. */
    fromOutside?: boolean;
    /** Where the preflight saw each component in the rack's inventory (the plan's, for the recorder). */
    inventoryAt?: Readonly<Record<string, number>>;
  },
  read?: Task,
  readUpdates?: { set: CommandSet | undefined },
): Promise<Task> {
  const fromOutside = outcome.fromOutside ?? true;
  let known = read;
  if (fromOutside && !(known !== undefined && isTerminalTask(known))) {
    // The ending is decided on the task first (the first one decided stays), THEN the sets are
    // closed: a step that finds them closed (TaskEnded) and records the outcome itself finds this
    // ending on the task and records it, not a failure of its own.
    known = await decideEnding(deps, taskId, outcome, known);
    // Closed before the update set is read: nothing can be added to it after the read. The task's
    // rule says which parts the set may have.
    if (!isTerminalTask(known)) await deps.commands.close(taskId, deps.clock(), updateParts(known.rule));
  }
  const { task: first, updates } = await readForOutcome(deps, taskId, known, readUpdates);
  // A run child still in flight ends with its target and its lock in ONE write where the store
  // can (1, 2 and 3 together), and with the versions it verified (4) where the store can that too
  // and the plan says where each is; otherwise (the target not in flight, the lock another task's)
  // in turn as below. An inventory that refuses them (an import moved the components, the rack's
  // item is gone) never keeps the ending from being written: it is written without them, and
  // they are recorded after it as without the fold (the rack read first).
  let recordedWithTask = false;
  // What the ending verified, computed again at each attempt from the report it replaces (a save
  // that found the task moved reads it again), and whether it went in with the ending.
  let replaced: string | undefined;
  let verified: { componentId: string; version: string }[] = [];
  let verifiedWithTask = false;
  let inventoryRefused = false;
  const { saveTaskWithOutcome, saveTaskWithOutcomeAndVersions } = deps.tasks;
  const save = async (next: Task, expectedUpdatedAt: number): Promise<SaveTaskOutcome> => {
    verified = verifiedVersions(next, replaced);
    if (
      saveTaskWithOutcome !== undefined &&
      next.runId !== undefined &&
      next.targetId !== undefined &&
      next.targetPhaseIndex !== undefined
    ) {
      const ending: RunChildOutcome = {
        runId: next.runId,
        targetId: next.targetId,
        phaseIndex: next.targetPhaseIndex,
        status: next.status as TaskOutcomeStatus,
        message: next.message,
        now: deps.clock(),
      };
      const versions = inventoryRefused ? undefined : versionsAt(verified, outcome.inventoryAt);
      let saved: SaveTaskOutcome | "separately" | "inventory-moved" | undefined;
      if (versions !== undefined && saveTaskWithOutcomeAndVersions !== undefined) {
        saved = await saveWithVersions(deps, next, expectedUpdatedAt, ending, versions);
        verifiedWithTask = saved === "saved";
        inventoryRefused = saved === "inventory-moved";
      }
      if (saved === undefined || saved === "inventory-moved")
        saved = await saveTaskWithOutcome.call(deps.tasks, next, expectedUpdatedAt, ending);
      if (saved !== "separately") {
        recordedWithTask = saved === "saved";
        return saved;
      }
    }
    return deps.tasks.saveTask(next, expectedUpdatedAt);
  };
  const { task, changed } = await updateTask(
    deps,
    taskId,
    (t, now) => {
      replaced = t.report;
      const live = foldedTask(t, updates, now);
      // An ending decided from outside before this call wins over this call's own.
      const decided = t.ending;
      t.status = decided?.status ?? outcome.status;
      t.message =
        decided?.message ?? (typeof outcome.message === "function" ? outcome.message(live) : outcome.message);
      t.finishedAt = now;
      t.startedAt ??= now;
      t.report = finishReport(live.report, t.status, now);
      delete t.ending;
      return t;
    },
    first,
    save,
  );
  if (changed) {
    const fields = { ...taskKeys(task), rackId: task.rackId, status: task.status, taskMessage: task.message };
    if (task.status === "TERMINATED") deps.logger?.info("task cancelled", fields);
    else if (task.status === "FAILED") deps.logger?.warn("task finished", fields);
    else deps.logger?.info("task finished", fields);
  }
  let recorded = recordedWithTask;
  if (!recorded && task.runId !== undefined && task.targetId !== undefined && isTerminalTask(task)) {
    const result = await deps.runs.recordOutcome(
      task.runId,
      task.targetId,
      task.status as TaskOutcomeStatus,
      task.message,
      deps.clock(),
      task.targetPhaseIndex,
    );
    recorded = result === "recorded";
  }
  if (recorded) {
    // Emitted after the transition is persisted, and only by the call that recorded it.
    const metric = OUTCOME_METRIC[task.status as TaskOutcomeStatus];
    if (metric && deps.metrics) {
      deps.metrics.add(metric, 1);
      if (task.status === "FAILED") deps.metrics.add("BmcFailures", 1);
      deps.metrics.flush();
    }
  }
  // The slot this target held refills now, not at the stream's pace: the wake-up goes out beside
  // the lock's release, not after it, because the targets that take the slot are other racks
  // (a run holds one target per rack) and so do not wait for this lock.
  const runId = recorded ? task.runId : undefined;
  await Promise.all([
    recordedWithTask ? undefined : deps.locks.release(task.rackId, task.id),
    runId === undefined ? undefined : deps.waker?.wake(runId),
    verifiedWithTask
      ? undefined // written with the ending
      : changed
        ? // Where the preflight saw them, unless the inventory refused them there in the ending.
          recordVerified(deps, task, verified, inventoryRefused ? undefined : outcome.inventoryAt)
        : fromOutside
          ? undefined
          : // A repeat reads first: it writes only what is not recorded yet (usually nothing).
            recordVerified(deps, task, verifiedVersions(task, undefined), undefined),
  ]);
  return task;
}

/**
 * TaskStore.saveTaskWithOutcomeAndVersions; an error it raises about the request itself (not an
 * unavailable store: that fails the step, as the ending alone would) is logged and answered
 * 'inventory-moved', so the ending is written without the versions and the recorder has them.
 */
async function saveWithVersions(
  deps: OutcomeDeps,
  next: Task,
  expectedUpdatedAt: number,
  ending: RunChildOutcome,
  versions: readonly VersionAt[],
): Promise<SaveTaskOutcome | "separately" | "inventory-moved"> {
  const save = deps.tasks.saveTaskWithOutcomeAndVersions as NonNullable<
    TaskStore["saveTaskWithOutcomeAndVersions"]
  >;
  try {
    return await save.call(deps.tasks, next, expectedUpdatedAt, ending, versions);
  } catch (error) {
    if (error instanceof StoreUnavailableError) throw error;
    deps.logger?.error("could not end the task with its verified versions; ending it without them", {
      ...taskKeys(next),
      rackId: next.rackId,
      components: versions.length,
      error: errorText(error),
    });
    return "inventory-moved";
  }
}

/**
 * Stores the ending decided from outside on the task (an ending already there stays: the first one
 * decided wins), and returns the task as stored: terminal already, or with its ending.
 */
async function decideEnding(
  deps: OutcomeDeps,
  taskId: string,
  outcome: { status: TaskOutcomeStatus; message: string | ((task: Task) => string) },
  read: Task | undefined,
): Promise<Task> {
  const { task } = await updateTask(
    deps,
    taskId,
    (t, now) => {
      if (t.ending !== undefined) return undefined;
      // A message made from the task waits for the task as folded at its end.
      t.ending = {
        status: outcome.status,
        ...(typeof outcome.message === "string" ? { message: outcome.message } : {}),
        at: now,
      };
      return t;
    },
    read,
  );
  return task;
}

/**
 * The task and its whole update set as an ending needs them: as the caller read them, else the
 * task, then the set's records its rule says it may have (an ended task's set is not needed).
 */
async function readForOutcome(
  deps: OutcomeDeps,
  taskId: string,
  read: Task | undefined,
  readUpdates: { set: CommandSet | undefined } | undefined,
): Promise<{ task: Task; updates: CommandSet | undefined }> {
  const task = read ?? (await loadTask(deps, taskId));
  if (read !== undefined && readUpdates !== undefined) return { task, updates: readUpdates.set };
  if (isTerminalTask(task)) return { task, updates: undefined };
  return { task, updates: await deps.commands.getUpdates(taskId, updateParts(task.rule)) };
}

/** RecordSuccess / RecordFailure: the last state records the outcome (a caught error → FAILED). */
export async function recordOutcome(
  deps: StepDeps,
  e: StepEventOf<"recordOutcome">,
): Promise<{ status: string }> {
  // Success: the completion message counts what the task did, from its report as folded at its end.
  const outcome =
    e.error === undefined
      ? { status: "COMPLETED" as const, message: completionMessage, fromOutside: false }
      : { status: "FAILED" as const, message: causeText(e.error), fromOutside: false };
  const task = await recordTaskOutcome(deps, e.taskId, outcome);
  return { status: task.status };
}

/** The end of an execution as Step Functions reports it (EventBridge detail, or the local runner). */
export interface ExecutionEnding {
  /** The execution name: the task id. */
  taskId: string;
  status: "SUCCEEDED" | "FAILED" | "TIMED_OUT" | "ABORTED";
  error?: string;
  cause?: string;
}

/**
 * Makes sure a finished execution left its task finished. Normally the last state already recorded
 * the outcome and this changes nothing (recordTaskOutcome keeps the first outcome). It matters when
 * the machine could not record: stopped (ABORTED → TERMINATED), timed out (→ FAILED: a rack that
 * took too long is a failure for the gates, not an operator's stop), or failed inside
 * RecordFailure itself (→ FAILED with the execution's error).
 */
export async function reconcileExecutionEnd(
  deps: OutcomeDeps,
  ending: ExecutionEnding,
): Promise<Task | undefined> {
  const [task] = await deps.tasks.getTasks([ending.taskId]);
  if (task === undefined) return undefined;
  switch (ending.status) {
    case "ABORTED":
      return recordTaskOutcome(
        deps,
        task.id,
        {
          status: "TERMINATED",
          message: ending.cause ? `task execution stopped: ${ending.cause}` : "task execution stopped",
        },
        task,
      );
    case "TIMED_OUT":
      return recordTaskOutcome(
        deps,
        task.id,
        { status: "FAILED", message: "task execution timed out" },
        task,
      );
    case "FAILED":
      return recordTaskOutcome(
        deps,
        task.id,
        {
          status: "FAILED",
          message: `task execution failed: ${causeText({ Error: ending.error ?? "Error", Cause: ending.cause })}`,
        },
        task,
      );
    case "SUCCEEDED":
      // The machine only succeeds through RecordSuccess or AlreadyFinished; both leave the task
      // terminal. Anything else would be a bug: record it rather than leave the rack locked.
      if (TERMINAL_TASK_STATUSES.has(task.status))
        return recordTaskOutcome(deps, task.id, { status: "COMPLETED", message: task.message }, task);
      return recordTaskOutcome(
        deps,
        task.id,
        { status: "FAILED", message: "task execution ended without recording an outcome" },
        task,
      );
  }
}
