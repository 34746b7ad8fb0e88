/**
 * The end of a pass: write when the run next needs one (nextDispatchAt, src/domain/dispatch-due.ts)
 * into its dispatch schedule, so the tick reads only due runs. Conditional on the schedule's mark
 * being the one the pass read plus its own writes (RunStore.deferRun): any write the pass did not
 * see leaves the run due, and the next tick passes it again. Nothing is written when the schedule
 * already says so.
 */

import { nextDispatchAt } from "../../domain/dispatch-due.js";
import type { Run, Target } from "../../domain/model.js";
import type { DispatchSchedule } from "../ports.js";
import type { DispatchContext, PassWrites } from "./deps.js";

export async function deferUntilNeeded(
  ctx: DispatchContext,
  runId: string,
  read: DispatchSchedule,
  writes: PassWrites,
  left: { run: Run; held: readonly Target[] } | undefined,
): Promise<void> {
  if (writes.unknown) return;
  const next = left === undefined ? undefined : nextDispatchAt(left.run, left.held, ctx.clock.now());
  if (writes.marks === 0 && read.dueAt === next) return;
  await ctx.runs.deferRun(runId, read.mark + writes.marks, next);
}
