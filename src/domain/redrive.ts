/**
 * A child task run again from the top after its execution was lost: the local stack keeps its
 * Step Functions executions in memory, so a restart forgets them while the store still says the
 * task is running (AWS's executions outlive any process and never need this). What the new
 * execution must redo is decided from what the store recorded, and everything it sends goes out
 * under the same request ids, which the BMCs deduplicate:
 *   - components the lost execution had already judged FAILED end the task as its FinishWave
 *     would have (the verdict was recorded; flashing on would defeat the group order);
 *   - components it left UPDATING go back to PENDING, so the preflight hands them to a wave again,
 *     whose records already hold whatever the BMC reported (its result decides at once);
 *   - a command without its answer (an update without a result, a query without a status) is
 *     sent again, because the lost stack's broker may have dropped the command or the answer;
 *     its clock restarts, since the stack was down, not the BMC.
 */
import type { BmcRequestRecord } from "./component-verdict.js";
import type { TaskReport } from "./task-report.js";

export type RedrivePlan =
  /** Start the execution again on `report` (`reopened`: the components set back to PENDING). */
  | { kind: "redrive"; report: TaskReport; reopened: string[] }
  /** The task failed already; `message` is what its FinishWave would have thrown. */
  | { kind: "failed"; message: string };

export function planRedrive(report: TaskReport): RedrivePlan {
  const failed = report.components.filter((c) => c.status === "FAILED");
  const first = failed[0];
  if (first !== undefined) {
    // Only FinishWave marks a component FAILED, and it then ends the task: every FAILED one of a
    // task that has not ended belongs to its last wave, one group, so one type.
    const more = failed.length > 1 ? `; ${failed.length - 1} more ${first.type} component(s) failed` : "";
    return { kind: "failed", message: `${first.error?.message ?? `component ${first.id} failed`}${more}` };
  }
  const next = structuredClone(report);
  const reopened: string[] = [];
  for (const c of next.components) {
    if (c.status !== "UPDATING") continue;
    c.status = "PENDING";
    reopened.push(c.id);
  }
  return { kind: "redrive", report: next, reopened };
}

/** A record whose command must be sent again: it has no answer yet. */
export function awaitsAnswer(record: Pick<BmcRequestRecord, "kind" | "result" | "status">): boolean {
  return record.kind === "update" ? record.result === undefined : record.status === undefined;
}

/** The clock of a command sent again at `now`: as long as its first one, from now. */
export function resentWindow(
  record: Pick<BmcRequestRecord, "sentAt" | "deadline">,
  now: number,
): { sentAt: number; deadline: number } {
  return { sentAt: now, deadline: now + Math.max(0, record.deadline - record.sentAt) };
}
