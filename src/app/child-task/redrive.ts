/**
 * Re-driving a child task whose execution was lost (src/domain/redrive.ts says when and why):
 * prepares the task and its command sets so that a new execution of the same state machine,
 * started from the top under the same task id, finishes what the lost one started and repeats
 * nothing a BMC already did. The local stack calls it for every active task when it starts on a
 * data directory (local/child-tasks.ts `resume`).
 *
 *   prepared = await prepareRedrive(deps, task)   'redrive' → executor.start(task)
 *                                                 'ended'   → nothing to start (ended already, or
 *                                                             now: a decided ending, a failure)
 *   await finishLostOutcomes(deps)                targets whose task ended unrecorded
 */
import { type CommandFamily, kindOfFamily, updateParts } from "../../domain/command-sets.js";
import type { Target } from "../../domain/model.js";
import { awaitsAnswer, planRedrive, resentWindow } from "../../domain/redrive.js";
import type { Task } from "../../domain/task.js";
import {
  completionMessage,
  parseReport,
  serializeReport,
  type TaskOutcomeStatus,
} from "../../domain/task-report.js";
import { type CommandSetStore, type RunStore, targetIdempotencyKey } from "../ports.js";
import { type OutcomeDeps, recordTaskOutcome } from "./outcome.js";
import { isTerminalTask, updateTask } from "./task-item.js";
import { taskIdForKey } from "./task-service.js";

export type RedriveDeps = OutcomeDeps & { commands: CommandSetStore };

export interface RedriveResult {
  /** 'ended': the task was or is now terminal, and needs no execution. */
  status: "redrive" | "ended";
  /** Components set back from UPDATING to PENDING. */
  reopened: number;
  /** Commands that will be sent again (records without their answer). */
  resent: number;
}

export async function prepareRedrive(deps: RedriveDeps, task: Task): Promise<RedriveResult> {
  if (isTerminalTask(task)) return { status: "ended", reopened: 0, resent: 0 };
  // Its ending was decided (a cancel whose process died before it ended the task): it ends so now.
  const { ending } = task;
  if (ending !== undefined) {
    await recordTaskOutcome(deps, task.id, {
      status: ending.status,
      message: ending.message ?? completionMessage,
    });
    return { status: "ended", reopened: 0, resent: 0 };
  }
  let reopened = 0;
  let failed: string | undefined;
  const { task: current } = await updateTask(deps, task.id, (t) => {
    let plan: ReturnType<typeof planRedrive>;
    try {
      plan = planRedrive(parseReport(t.report));
    } catch {
      // An unreadable report: the execution's own preflight fails the task with its reason.
      return undefined;
    }
    if (plan.kind === "failed") {
      failed = plan.message;
      return undefined;
    }
    reopened = plan.reopened.length;
    if (reopened === 0) return undefined;
    t.report = serializeReport(plan.report);
    return t;
  });
  if (failed !== undefined) {
    await recordTaskOutcome(deps, task.id, { status: "FAILED", message: failed });
    return { status: "ended", reopened: 0, resent: 0 };
  }
  if (isTerminalTask(current)) return { status: "ended", reopened: 0, resent: 0 };

  let components: { id: string }[] = [];
  try {
    components = parseReport(current.report).components;
  } catch {
    // As above: nothing was sent for a task without a readable report.
  }
  const now = deps.clock();
  let resent = 0;
  // Nothing was sent for a task without a readable report (and so no command set exists).
  const families: CommandFamily[] = components.length === 0 ? [] : ["q", "u", "v"];
  for (const family of families) {
    const set =
      family === "u"
        ? await deps.commands.getUpdates(current.id, updateParts(current.rule))
        : await deps.commands.get(current.id, family);
    // By the record that holds them: the update set's first record (undefined) or a part.
    const windows = new Map<number | undefined, Record<string, { sentAt: number; deadline: number }>>();
    for (const [key, entry] of Object.entries(set?.entries ?? {})) {
      if (!awaitsAnswer({ kind: kindOfFamily(family), ...entry })) continue;
      const record = windows.get(entry.part) ?? {};
      record[key] = resentWindow(entry, now);
      windows.set(entry.part, record);
    }
    for (const [part, record] of windows) {
      await deps.commands.reopen(current.id, family, record, part);
      resent += Object.keys(record).length;
    }
  }
  return { status: "redrive", reopened, resent };
}

export type LostOutcomeDeps = OutcomeDeps & {
  runs: Pick<RunStore, "recordOutcome" | "listActiveRunIds" | "getRun" | "listTargets">;
};

/**
 * The other half of a lost execution: a task that ended, but whose process died between storing
 * its end and recording it on its run target (recordTaskOutcome's steps 2 and 3), leaves the target
 * CLAIMED or SUBMITTED, holding a slot, with no execution left to finish the job. For every such
 * target of an active run, the outcome is recorded from the task (the same idempotent recorder, so
 * a target already recorded is left as it is). Returns how many were recorded now.
 */
export async function finishLostOutcomes(deps: LostOutcomeDeps): Promise<number> {
  let finished = 0;
  for (const runId of await deps.runs.listActiveRunIds()) {
    const run = await deps.runs.getRun(runId);
    if (run === undefined) continue;
    const inFlight: Target[] = [];
    for (const status of ["CLAIMED", "SUBMITTED"] as const) {
      const listed = await deps.runs.listTargets(runId, {
        phaseFrom: 0,
        phaseTo: run.currentPhaseIndex,
        status,
        page: { offset: 0, limit: 1000 },
        knownCommitted: true,
      });
      inFlight.push(...(listed?.targets ?? []));
    }
    if (inFlight.length === 0) continue;
    // A CLAIMED target has no task id yet, but its task's id derives from the target.
    const taskIds = inFlight.map((t) => t.taskId ?? taskIdForKey(targetIdempotencyKey(t.id)));
    for (const task of await deps.tasks.getTasks(taskIds)) {
      if (!isTerminalTask(task)) continue;
      // Given as read: an ended task, whose command sets need no closing.
      await recordTaskOutcome(
        deps,
        task.id,
        { status: task.status as TaskOutcomeStatus, message: task.message },
        task,
      );
      finished += 1;
    }
  }
  return finished;
}
