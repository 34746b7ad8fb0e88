/**
 * The task report as the task's update commands say it stands. The child task writes its report
 * at the preflight, on a verify step's failure and at its end, not at every wave: while it runs,
 * each component's update lives in its entry of the task's update set (command-sets.ts), where
 * the BMC reports land. Readers fold the set into the stored report, so GetTask and ListTasks show
 * every component's update live (UPDATING with its progress, COMPLETED or FAILED as soon as its
 * result is in), and the task's end folds it in for good (src/app/child-task/outcome.ts).
 *
 * The fold judges each entry with the same `verdict` the wave's check uses, and a result counts
 * only if it was stored by the command's deadline, so the fold and the check agree whenever either
 * runs: what the report says of a component is what the task acted on.
 */
import {
  type CommandEntry,
  type CommandSet,
  commandRecord,
  commandRequestId,
  entryKey,
  updateAddress,
} from "./command-sets.js";
import { verdict } from "./component-verdict.js";
import type { ComponentType } from "./model.js";
import { activatedAfterUpdate, DEFAULT_RULE, type RuleDefinition } from "./operation-rules.js";
import { type CaughtError, causeText } from "./step-errors.js";
import { type TaskReport, targetOf } from "./task-report.js";

/** How many retries a component's update step has under `rule` (its type's stage's first update step). */
export function updateRetriesOf(rule: Pick<RuleDefinition, "stages"> = DEFAULT_RULE) {
  return (type: ComponentType): number => {
    const stage = rule.stages.find((s) => s.componentTypes.includes(type));
    return stage?.steps.find((s) => s.action === "UPDATE_FIRMWARE")?.retry?.maxRetries ?? 0;
  };
}

/**
 * Whether a component's staged flash is activated and read back later in its type's stage: then
 * its update passes staged (the read-back step fails it NotActivated if it never activates).
 */
export function activatedLaterOf(rule: Pick<RuleDefinition, "stages"> = DEFAULT_RULE) {
  return (type: ComponentType): boolean => {
    const stage = rule.stages.find((s) => s.componentTypes.includes(type));
    return stage !== undefined && activatedAfterUpdate(stage.steps);
  };
}

/** A component's latest update: attempts go 0, 1, … (a retry only follows a stored attempt). */
function latestUpdate(
  updates: CommandSet,
  taskId: string,
  componentId: string,
): { attempt: number; entry: CommandEntry } | undefined {
  let latest: { attempt: number; entry: CommandEntry } | undefined;
  for (let attempt = 0; ; attempt++) {
    const entry = updates.entries[entryKey(updateAddress(taskId, attempt), componentId)];
    if (entry === undefined) return latest;
    latest = { attempt, entry };
  }
}

/**
 * `report` with every PENDING or UPDATING component's latest update folded in, judged at `now`:
 *   no entry                    → as stored
 *   pending (no verdict yet)    → UPDATING, with startedAt, requestId and progress
 *   passed                      → COMPLETED with versionAfter
 *   failed, retries left        → PENDING with the error (the retry sends it again)
 *   failed, no retry left       → FAILED with the error
 * Components the task already settled (SKIPPED, COMPLETED, FAILED, …) are kept as stored: a
 * verify step's failure, written by its FinishWave, stands over the update that preceded it.
 */
export function foldUpdates(
  report: TaskReport,
  taskId: string,
  updates: CommandSet | undefined,
  now: number,
  retriesOf: (type: ComponentType) => number = updateRetriesOf(),
  activatedLater: (type: ComponentType) => boolean = activatedLaterOf(),
): TaskReport {
  if (updates === undefined) return report;
  const next = structuredClone(report);
  for (const c of next.components) {
    if (c.status !== "PENDING" && c.status !== "UPDATING") continue;
    const latest = latestUpdate(updates, taskId, c.id);
    if (latest === undefined) continue;
    const { attempt, entry } = latest;
    const address = updateAddress(taskId, attempt, entry.part);
    const record = commandRecord(updates, address, c.id);
    c.requestId = commandRequestId(address, c.id);
    const timeoutSeconds = Math.round((entry.deadline - entry.sentAt) / 1000);
    const judged = verdict(
      c.id,
      c.type,
      record,
      targetOf(report, c),
      { updateTimeoutSeconds: timeoutSeconds },
      entry.deadline,
      now,
      c.subTargets,
      activatedLater(c.type),
    );
    c.startedAt = entry.sentAt;
    delete c.progress;
    if (judged === "pending") {
      c.status = "UPDATING";
      if (entry.progress !== undefined) c.progress = entry.progress;
      delete c.finishedAt;
      continue;
    }
    // Its result's time, or the deadline it passed without one (a late result does not count).
    const finishedAt = Math.min(entry.resultAt ?? entry.deadline, entry.deadline);
    if (judged.ok) {
      c.status = "COMPLETED";
      c.finishedAt = finishedAt;
      // An update's pass always carries the version its BMC reported.
      c.versionAfter = judged.version as string;
      delete c.error;
      continue;
    }
    // …and its failure always the error that names the component and the cause.
    const error = judged.error as CaughtError;
    c.error = { name: error.Error as string, message: causeText(error) };
    if (attempt < retriesOf(c.type)) {
      c.status = "PENDING";
      delete c.finishedAt;
    } else {
      c.status = "FAILED";
      c.finishedAt = finishedAt;
    }
  }
  return next;
}

/** The components `folded` completed that `stored` had not: their verified versions, for inventory. */
export function newlyVerified(
  stored: TaskReport,
  folded: TaskReport,
): { componentId: string; version: string }[] {
  const before = new Map(stored.components.map((c) => [c.id, c.status]));
  return folded.components
    .filter(
      (c) => c.status === "COMPLETED" && before.get(c.id) !== "COMPLETED" && c.versionAfter !== undefined,
    )
    .map((c) => ({ componentId: c.id, version: c.versionAfter as string }));
}
