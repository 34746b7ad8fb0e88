/**
 * The rack lock as a child task holds it: AcquireLock takes it once, at the start (a QUEUE task
 * waits here while the rack is busy, until its queue timeout), for the whole task at its worst
 * (`lockTtlMs` of all its components); SendWave renews it only when the step it starts could
 * outlast that lease (a task slowed by retries, verify steps or sleeps past the estimate). The ttl
 * is bounded, so a crashed execution's lock frees itself.
 *
 * AcquireLock is also where a plain task's maintenance window is kept: before its start_time it
 * waits (WAITING, the same Wait loop as a queued task), and once its end_time has passed without it
 * having started it fails with MaintenanceWindowClosed. A task that has started runs to its end.
 */

import { rackConflictMessage, StepError } from "../../domain/step-errors.js";
import type { Task } from "../../domain/task.js";
import { taskKeys } from "../observability.js";
import type { StepDeps } from "./deps.js";
import type { AcquireLockResult, ChildTaskSettings, StepEventOf } from "./settings.js";
import { isTerminalTask, loadTask, updateTask } from "./task-item.js";

/**
 * Lock ttl for the coming stretch: the whole group at its worst (every wave times out), plus a
 * margin for polling and recording. Re-asserted at each group, so a crashed execution's lock
 * frees itself within one group's worth of time.
 */
export function lockTtlMs(settings: ChildTaskSettings, components: number): number {
  const waves = Math.max(1, Math.ceil(components / Math.max(1, settings.maxParallel)));
  return (
    (waves * settings.updateTimeoutSeconds +
      settings.preflightTimeoutSeconds +
      settings.maxPollSeconds +
      300) *
    1000
  );
}

/** The longest single Wait before a task's start_time: it checks again (and cancels show) hourly. */
const MAX_START_WAIT_SECONDS = 3600;

export const MSG_WINDOW_CLOSED_BEFORE_START = "maintenance window closed before the task started";

/**
 * The task the execution's input carries (ChildTaskInput.task, as the submitter held it), when
 * AcquireLock can start from it instead of reading the task: only where what it decides from it
 * leads straight to the write pinned on its version (lockAndStart's one transaction), so a task
 * that moved since it was submitted is refused there and read again (updateTask), and everything
 * goes on as it did from a read. Every decision made from the carried task before that write is
 * on fields fixed when the task is made (id, rack, components, start_time, end_time, queue
 * timeout: the same in the task read again) or is its version's. Undefined, and the task is read
 * as before, when:
 * - no task is carried (an older submitter, a task too large to carry), or another task's;
 * - the store has no saveTaskWithLock: the take and the write are two requests, the take not
 *   pinned on the task, so the carried task must not decide it;
 * - it is RUNNING (started already: the retried or re-driven step takes the lock alone, unpinned),
 *   terminal or being ended (which answer with no write: `finished`, TaskEnded);
 * - it is outside its maintenance window (before start_time it waits, past end_time
 *   MaintenanceWindowClosed: no write either). A task is never carried into a branch that returns
 *   or throws without the pinned write: that branch would answer for the task as submitted, not
 *   as it is (a task cancelled while it waited for its start_time would wait on).
 * The lock-wait loop (WaitForLock → AcquireLock) gets the same input each time, and so the same
 * task: each try is the pinned write again, which a cancel since (the task's version moved) turns
 * into a re-read that finds it ended, as a read would have; a rack still held answers 'held' only
 * when the task had not moved (the store checks the task first), so its queue timeout is decided
 * on the task as it is.
 *
 *   carried T WAITING@500, stored T WAITING@500        → [Put T RUNNING if @500 + lock]: acquired, ONE request
 *   carried T WAITING@500, stored T TERMINATED@900     → refused, T read again: finished (no lock), as a read
 *   carried T WAITING@500, start_time in an hour       → not carried: T read, waiting (as before)
 */
function carriedTask(deps: StepDeps, e: StepEventOf<"acquireLock">, now: number): Task | undefined {
  const task = e.input?.task;
  if (task === undefined || task.id !== e.taskId || typeof task.updatedAt !== "number") return undefined;
  if (deps.tasks.saveTaskWithLock === undefined) return undefined;
  if (task.status === "RUNNING" || isTerminalTask(task) || task.ending !== undefined) return undefined;
  if (task.endTime !== undefined && now >= task.endTime) return undefined;
  if (task.startTime !== undefined && now < task.startTime) return undefined;
  return task;
}

/**
 * AcquireLock's work (preflight.ts `acquireLockAndAsk` is the step): the lock taken and the task
 * RUNNING (one transaction: lockAndStart), then `onceLocked` (the preflight's first ask; made, not
 * sent, by the definition as it is: no request), with the task as it stands once locked. Where
 * the take and the write are two requests (a retried step, a store without the transaction),
 * `onceLocked` runs beside the write: neither needs the other (a query changes nothing on a BMC,
 * and a retried step asks again under the same request ids). The task is the one the execution's
 * input carries where it can be (carriedTask: then the step is that one transaction), else read.
 */
export async function takeLock<T>(
  deps: StepDeps,
  e: StepEventOf<"acquireLock">,
  onceLocked: (task: Task) => Promise<T>,
): Promise<{ result: AcquireLockResult; locked?: T }> {
  // One instant for every decision, the carried task's included: one taken past its end_time
  // between two clock reads would fail here with no write.
  const now = deps.clock();
  const task = carriedTask(deps, e, now) ?? (await loadTask(deps, e.taskId));
  const as = (result: AcquireLockResult) => ({ result });
  if (isTerminalTask(task)) return as({ status: "finished" });
  // Being ended from outside (a cancel between its decision and its end): no lock taken, nothing
  // asked; RecordFailure ends the task with that ending.
  if (task.ending !== undefined)
    throw new StepError("TaskEnded", `task ${task.id} is being ended (${task.ending.status})`);
  const started = task.status === "RUNNING";
  if (!started && task.endTime !== undefined && now >= task.endTime) {
    throw new StepError("MaintenanceWindowClosed", MSG_WINDOW_CLOSED_BEFORE_START);
  }
  if (!started && task.startTime !== undefined && now < task.startTime) {
    const left = Math.ceil((task.startTime - now) / 1000);
    return as({ status: "waiting", waitSeconds: Math.max(1, Math.min(MAX_START_WAIT_SECONDS, left)) });
  }
  const ttl = lockTtlMs(e.settings, task.componentIds.length);
  const start = await lockAndStart(deps, task, ttl, now);
  if (start.status === "finished") return as(start);
  if (start.status === "held") {
    if (task.queueExpiresAt !== undefined && now < task.queueExpiresAt) {
      const left = Math.ceil((task.queueExpiresAt - now) / 1000);
      return as({
        status: "waiting",
        waitSeconds: Math.max(1, Math.min(e.settings.queuePollSeconds, left)),
      });
    }
    if (task.queueExpiresAt !== undefined) {
      throw new StepError(
        "QueueTimeout",
        `rack ${task.rackId} stayed busy with another task until the queue timeout expired`,
      );
    }
    throw new StepError("RackLockHeld", rackConflictMessage(task.rackId));
  }
  const [changed, locked] = await Promise.all([start.written, onceLocked(start.task)]);
  // Once per task: a retried AcquireLock finds it RUNNING and changes nothing.
  if (changed) deps.logger.info("task started", { ...taskKeys(task), rackId: task.rackId });
  return { result: { status: "acquired" }, locked };
}

/** The task as it starts: RUNNING, its start recorded once; undefined if it already runs. */
function running(t: Task, at: number): Task | undefined {
  if (t.status === "RUNNING") return undefined;
  t.status = "RUNNING";
  t.startedAt ??= at;
  t.message = "";
  return t;
}

type Start =
  | { status: "held" }
  | { status: "finished" }
  /**
   * `written`: whether this call wrote the task RUNNING (settled once it is written); `task`: the
   * task as written, or as read again after a refused write (a carried one may be older).
   */
  | { status: "acquired"; written: Promise<boolean>; task: Task };

/**
 * The rack's lock taken for the task and the task written RUNNING. A task not yet running, on a
 * store that can (TaskStore.saveTaskWithLock): both in one transaction, both or neither, pinned
 * on the version of `read` (as read, or as the execution's input carried it), so the start costs
 * one request, not two; the lock's `now` is the task's startedAt, which knownLeaseEnd counts
 * from. The task moved meanwhile (or since its submission): read again (an ended one takes no
 * lock); held by another task: nothing written, the task stays as it was (WAITING, PENDING), and
 * it was as stored (the store answers 'held' only for a task that had not moved). A task already
 * RUNNING (a retried AcquireLock), or a store without it: the take, then the RUNNING write (none
 * for a running task), the write left running beside the caller's `onceLocked`.
 */
async function lockAndStart(deps: StepDeps, read: Task, ttl: number, now: number): Promise<Start> {
  let task = read;
  const saveWithLock = deps.tasks.saveTaskWithLock;
  if (saveWithLock !== undefined && task.status !== "RUNNING") {
    const start = await updateTask(
      deps,
      task.id,
      (t) => {
        if (t.ending !== undefined)
          throw new StepError("TaskEnded", `task ${t.id} is being ended (${t.ending.status})`);
        return running(t, now);
      },
      task,
      (next, expected) => saveWithLock.call(deps.tasks, next, expected, ttl, now),
    );
    if (start.refused === "held") return { status: "held" };
    if (start.changed) return { status: "acquired", written: Promise.resolve(true), task: start.task };
    if (isTerminalTask(start.task)) return { status: "finished" };
    // Started meanwhile (RUNNING): the take alone, below.
    task = start.task;
  }
  if ((await deps.locks.acquire(task.rackId, task.id, ttl, now)) === "held") return { status: "held" };
  return {
    status: "acquired",
    written: updateTask(deps, task.id, running, task).then(({ changed }) => changed),
    task,
  };
}

/**
 * What AcquireLock's grant is known to cover, with no read of the lock: until
 * startedAt + lockTtlMs(all components), less the few ms between the take and the task's
 * RUNNING write (startedAt). Every take since keeps the lock at least that long: a retried or
 * re-driven AcquireLock takes the same ttl later, and a renewal (below) only when it ends later
 * still. Undefined (never started, or a task from before this rule): not known, renew.
 */
const GRANT_SLACK_MS = 60_000;

export function knownLeaseEnd(task: Task, settings: ChildTaskSettings): number | undefined {
  if (task.startedAt === undefined) return undefined;
  return task.startedAt + lockTtlMs(settings, task.componentIds.length) - GRANT_SLACK_MS;
}

/**
 * Before a step of `components` that may take `stepTimeoutSeconds`: renews (extends) the task's
 * lock, for that step at its worst, only when the step could outlast the lease it is known to
 * hold (`leaseEnd`: knownLeaseEnd, frozen in the plan); held by another → RackLockHeld. Returns
 * whether it renewed (one conditional write).
 */
export async function renewLockIfNeeded(
  deps: StepDeps,
  holder: { taskId: string; rackId: string; leaseEnd: number | undefined },
  settings: ChildTaskSettings,
  step: { components: number; timeoutSeconds: number },
  now: number,
): Promise<boolean> {
  // The lock covers this step at its worst, whatever its own timeout.
  const stepSettings = {
    ...settings,
    updateTimeoutSeconds: Math.max(settings.updateTimeoutSeconds, step.timeoutSeconds),
  };
  const ttl = lockTtlMs(stepSettings, step.components);
  const { leaseEnd } = holder;
  if (leaseEnd !== undefined && now + ttl <= leaseEnd) return false;
  if ((await deps.locks.acquire(holder.rackId, holder.taskId, ttl, now)) === "held") {
    throw new StepError("RackLockHeld", rackConflictMessage(holder.rackId));
  }
  // A cancel may have ended the task and released its lock while this step ran: taken again now,
  // the rack would stay locked until the lease ran out. The cancel writes the ending before it
  // releases, so a take after the release sees the ending here (a take before it, the release
  // removes): only a task still running keeps the lock.
  const task = await loadTask(deps, holder.taskId);
  if (isTerminalTask(task) || task.ending !== undefined) {
    await deps.locks.release(holder.rackId, holder.taskId);
    throw new StepError("TaskEnded", `task ${task.id} already ended`);
  }
  return true;
}
