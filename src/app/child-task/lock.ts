/**
 * The rack lock as a child task holds it: AcquireLock takes it at the start (a QUEUE task waits
 * here while the rack is busy, until its queue timeout), and SendWave re-asserts it before each
 * wave. The ttl covers the coming stretch only, so a crashed execution's lock frees itself.
 *
 * AcquireLock is also where a plain task's maintenance window is kept: before its start_time it
 * waits (WAITING, the same Wait loop as a queued task), and once its end_time has passed without it
 * having started it fails with MaintenanceWindowClosed. A task that has started runs to its end.
 */

import type { Task } from "../../domain/model.js";
import { rackConflictMessage, StepError } from "../../domain/step-errors.js";
import { taskKeys } from "../observability.js";
import type { StepDeps } from "./deps.js";
import { isTerminalTask, loadTask, updateTask } from "./outcome.js";
import type { AcquireLockResult, ChildTaskSettings, StepEventOf } from "./settings.js";

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

export async function acquireLock(deps: StepDeps, e: StepEventOf<"acquireLock">): Promise<AcquireLockResult> {
  const task = await loadTask(deps, e.taskId);
  if (isTerminalTask(task)) return { status: "finished" };
  const now = deps.clock();
  const started = task.status === "RUNNING";
  if (!started && task.endTime !== undefined && now >= task.endTime) {
    throw new StepError("MaintenanceWindowClosed", MSG_WINDOW_CLOSED_BEFORE_START);
  }
  if (!started && task.startTime !== undefined && now < task.startTime) {
    const left = Math.ceil((task.startTime - now) / 1000);
    return { status: "waiting", waitSeconds: Math.max(1, Math.min(MAX_START_WAIT_SECONDS, left)) };
  }
  const outcome = await deps.locks.acquire(
    task.rackId,
    task.id,
    lockTtlMs(e.settings, task.componentIds.length),
    now,
  );
  if (outcome === "held") {
    if (task.queueExpiresAt !== undefined && now < task.queueExpiresAt) {
      const left = Math.ceil((task.queueExpiresAt - now) / 1000);
      return { status: "waiting", waitSeconds: Math.max(1, Math.min(e.settings.queuePollSeconds, left)) };
    }
    if (task.queueExpiresAt !== undefined) {
      throw new StepError(
        "QueueTimeout",
        `rack ${task.rackId} stayed busy with another task until the queue timeout expired`,
      );
    }
    throw new StepError("RackLockHeld", rackConflictMessage(task.rackId));
  }
  const { changed } = await updateTask(deps, task.id, (t, at) => {
    if (t.status === "RUNNING") return undefined;
    t.status = "RUNNING";
    t.startedAt ??= at;
    t.message = "";
    return t;
  });
  // Once per task: a retried AcquireLock finds it RUNNING and changes nothing.
  if (changed) deps.logger.info("task started", { ...taskKeys(task), rackId: task.rackId });
  return { status: "acquired" };
}

/** Re-asserts (extends) the task's lock for a wave of `components`; held by another → RackLockHeld. */
export async function reassertLock(
  deps: StepDeps,
  task: Task,
  settings: ChildTaskSettings,
  components: number,
  now: number,
): Promise<void> {
  if ((await deps.locks.acquire(task.rackId, task.id, lockTtlMs(settings, components), now)) === "held") {
    throw new StepError("RackLockHeld", rackConflictMessage(task.rackId));
  }
}
