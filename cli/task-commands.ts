import type { Command } from "commander";
import { parseReport, reportProgress } from "../src/domain/task-report.js";
import * as pb from "../src/gen/flow/v1/flow.js";
import {
  type Act,
  nonNegativeInt,
  pageFooter,
  pagination,
  positiveInt,
  short,
  uuidArg,
} from "./command-args.js";
import { EXIT } from "./errors.js";
import { executorTypes, taskStatuses } from "./names.js";
import { table, time } from "./output.js";

export function registerTaskCommands(program: Command, act: Act): void {
  const task = program.command("task").description("inspect and cancel child firmware tasks (one per rack)");

  task
    .command("get")
    .description("show tasks by ID")
    .argument("<ids...>", "task IDs")
    .action(
      act(async (ctx, ids: string[]) => {
        const resp = await ctx
          .conn()
          .flow.getTasksByIDs({ taskIds: ids.map((id) => ({ id: uuidArg("task ID", id) })) });
        ctx.print({
          data: pb.GetTasksByIDsResponse.toJSON(resp),
          table: () => tasksTable(resp.tasks, { progress: true }),
        });
        return EXIT.OK;
      }),
    );

  task
    .command("list")
    .description("list tasks, optionally of one rack or only active ones")
    .option("--rack <id>", "only this rack's tasks (rack UUID)")
    .option("--active", "only tasks that have not ended")
    .option("--limit <n>", "page size (service default 100)", positiveInt)
    .option("--offset <n>", "skip this many tasks", nonNegativeInt)
    .action(
      act(async (ctx, o: { rack?: string; active?: boolean; limit?: number; offset?: number }) => {
        const resp = await ctx.conn().flow.listTasks({
          rackId: o.rack === undefined ? undefined : { id: uuidArg("--rack", o.rack) },
          activeOnly: o.active === true,
          pagination: pagination(o),
          withReport: false,
        });
        ctx.print({
          data: pb.ListTasksResponse.toJSON(resp),
          table: () =>
            `${tasksTable(resp.tasks)}\n${pageFooter(resp.tasks.length, o.offset ?? 0, resp.total, "tasks")}`,
        });
        return EXIT.OK;
      }),
    );

  task
    .command("cancel")
    .description("cancel a task that has not ended")
    .argument("<id>", "task ID")
    .action(
      act(async (ctx, id: string) => {
        const { task: t } = await ctx.conn().flow.cancelTask({ taskId: { id: uuidArg("task ID", id) } });
        ctx.print({
          data: pb.CancelTaskResponse.toJSON({ task: t }),
          table: () =>
            `task ${t?.id?.id}: ${taskStatuses.name(t?.status ?? 0)}${t?.message ? ` — ${t.message}` : ""}`,
        });
        return EXIT.OK;
      }),
    );
}

/** `task get` adds PROGRESS from each task's report (live while it runs); `task list` has no reports. */
function tasksTable(tasks: readonly pb.Task[], options: { progress?: boolean } = {}): string {
  const progress = options.progress === true;
  return table(
    ["ID", "RACK", "STATUS", ...(progress ? ["PROGRESS"] : []), "EXECUTOR", "CREATED", "FINISHED", "MESSAGE"],
    tasks.map((t) => [
      short(t.id?.id),
      t.rackExternalId || short(t.rackId?.id),
      taskStatuses.name(t.status),
      ...(progress ? [progressText(t.report)] : []),
      t.executorType === 0 ? "" : executorTypes.name(t.executorType),
      time(t.createdAt),
      time(t.finishedAt),
      t.message,
    ]),
  );
}

/** `18/39 done, 8 updating (40%), 1 failed` from a task's report; "" when it has none readable. */
export function progressText(reportText: string): string {
  let p: ReturnType<typeof reportProgress>;
  try {
    p = reportProgress(parseReport(reportText));
  } catch {
    return "";
  }
  const parts = [`${p.done}/${p.total} done`];
  if (p.updating > 0)
    parts.push(`${p.updating} updating${p.meanProgress === undefined ? "" : ` (${p.meanProgress}%)`}`);
  if (p.failed > 0) parts.push(`${p.failed} failed`);
  return parts.join(", ");
}

// ---------------------------------------------------------------------------------------------
// inventory
