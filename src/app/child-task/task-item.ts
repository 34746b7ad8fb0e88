/**
 * The task item as the child task's steps read and write it: the reads (the task alone, or with its
 * command sets in one request), the guarded read-modify-write every step writes through, and the
 * task's report as its update set says it stands. How a task ends is outcome.ts's.
 */

import { type CommandFamily, type CommandSet, updateParts } from "../../domain/command-sets.js";
import { activatedLaterOf, foldUpdates, updateRetriesOf } from "../../domain/live-report.js";
import { StepError } from "../../domain/step-errors.js";
import { type Task, TERMINAL_TASK_STATUSES } from "../../domain/task.js";
import { parseReport, serializeReport, type TaskReport } from "../../domain/task-report.js";
import type { CommandSetStore, SaveTaskOutcome } from "../ports.js";
import type { TaskStepsDeps } from "./deps.js";

export const isTerminalTask = (t: Task): boolean => TERMINAL_TASK_STATUSES.has(t.status);

export async function loadTask(deps: Pick<TaskStepsDeps, "tasks">, taskId: string): Promise<Task> {
  const [task] = await deps.tasks.getTasks([taskId]);
  if (task === undefined) throw new StepError("TaskNotFound", `task ${taskId} not found`);
  return task;
}

/**
 * The task and its command sets of these families (the update set with these `parts` merged in),
 * in one request where the store can (CommandSetStore.getWithTask), else two at once.
 */
export async function loadTaskWith(
  deps: Pick<TaskStepsDeps, "tasks"> & {
    commands: Pick<CommandSetStore, "get" | "getUpdates" | "getWithTask">;
  },
  taskId: string,
  families: readonly CommandFamily[],
  parts: readonly number[] = [],
): Promise<{ task: Task; sets: Partial<Record<CommandFamily, CommandSet>> }> {
  const { commands } = deps;
  const read =
    commands.getWithTask !== undefined
      ? await commands.getWithTask(taskId, families, parts)
      : await Promise.all([
          deps.tasks.getTasks([taskId]),
          Promise.all([
            ...families.filter((f) => f !== "u" || parts.length === 0).map((f) => commands.get(taskId, f)),
            ...(parts.length > 0 ? [commands.getUpdates(taskId, parts)] : []),
          ]),
        ]).then(([[task], found]) => ({
          task,
          sets: Object.fromEntries(
            found.flatMap((set) => (set === undefined ? [] : [[set.family, set]])),
          ) as Partial<Record<CommandFamily, CommandSet>>,
        }));
  if (read.task === undefined) throw new StepError("TaskNotFound", `task ${taskId} not found`);
  return { task: read.task, sets: read.sets };
}

/**
 * Read-modify-write of one task under optimistic concurrency (saveTask pins updatedAt). `mutate`
 * returns the new task or undefined to write nothing; a terminal task is never changed. Returns the
 * task as stored afterwards. `read`: the task as the caller just read it, used for the first
 * attempt instead of reading it again (a stale copy only costs a retry: the save is pinned).
 * `save` may refuse with an answer of its own (`R`, e.g. a lock another task holds): nothing
 * written, no retry, the answer returned as `refused`.
 */
export async function updateTask<R extends string = never>(
  deps: Pick<TaskStepsDeps, "tasks" | "clock">,
  taskId: string,
  mutate: (task: Task, now: number) => Task | undefined,
  read?: Task,
  save: (next: Task, expectedUpdatedAt: number) => Promise<SaveTaskOutcome | R> = (next, expected) =>
    deps.tasks.saveTask(next, expected),
): Promise<{ task: Task; changed: boolean; refused?: R }> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const [task] = attempt === 0 && read !== undefined ? [read] : await deps.tasks.getTasks([taskId]);
    if (task === undefined) throw new StepError("TaskNotFound", `task ${taskId} not found`);
    if (isTerminalTask(task)) return { task, changed: false };
    const now = deps.clock();
    const next = mutate(structuredClone(task), now);
    if (next === undefined) return { task, changed: false };
    next.updatedAt = Math.max(now, task.updatedAt + 1);
    const saved = await save(next, task.updatedAt);
    if (saved === "saved") return { task: next, changed: true };
    if (saved === "not-found") throw new StepError("TaskNotFound", `task ${taskId} not found`);
    if (saved !== "stale") return { task, changed: false, refused: saved };
  }
  throw new Error(`task ${taskId}: too many concurrent updates`);
}

/** `task` with `updates` folded into its report at `now` (src/domain/live-report.ts); an ended task as it is. */
export function foldedTask(task: Task, updates: CommandSet | undefined, now: number): Task {
  if (updates === undefined || isTerminalTask(task)) return task;
  let report: TaskReport;
  try {
    report = parseReport(task.report);
  } catch {
    return task;
  }
  const live = foldUpdates(
    report,
    task.id,
    updates,
    now,
    updateRetriesOf(task.rule),
    activatedLaterOf(task.rule),
  );
  return { ...task, report: serializeReport(live) };
}

/**
 * The task with its report as its update set says it stands: for a task still running, one more
 * read; an ended task's report is final and is returned as it is.
 */
export async function withLiveReport(
  deps: Pick<TaskStepsDeps, "clock"> & { commands: Pick<CommandSetStore, "getUpdates"> },
  task: Task,
): Promise<Task> {
  if (isTerminalTask(task)) return task;
  return foldedTask(task, await deps.commands.getUpdates(task.id, updateParts(task.rule)), deps.clock());
}
