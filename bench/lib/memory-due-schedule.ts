/**
 * The in-memory RunStore's due schedule (bench/lib/memory-run-store.ts): per run, the adapter's
 * dueMark and dueAt, and the due index they make. A marking write (a claim, a transition, a run
 * write) moves the mark and makes the run due now, or takes it out when the run has ended; a
 * deferral only moves dueAt, and only on the mark its caller read, so a marking write in between
 * wins.
 */
import type { DeferOutcome, DispatchSchedule, DueRun } from "../../src/app/ports.js";

export class MemoryDueSchedule {
  /** runId → its dispatch schedule. */
  private readonly schedules = new Map<string, DispatchSchedule>();

  /** A new run's schedule: due now when it may have work, else out of the index. */
  start(runId: string, active: boolean): void {
    this.schedules.set(runId, active ? { mark: 0, dueAt: 0 } : { mark: 0 });
  }

  /** A copy of the run's schedule (a run never scheduled reads mark 0, not due). */
  of(runId: string): DispatchSchedule {
    return { ...(this.schedules.get(runId) ?? { mark: 0 }) };
  }

  /** The runs due at `until`, the earliest dueAt first, ties by run id. */
  due(until: number): DueRun[] {
    return [...this.schedules.entries()]
      .filter(([, schedule]) => schedule.dueAt !== undefined && schedule.dueAt <= until)
      .sort(([a, x], [b, y]) => (x.dueAt as number) - (y.dueAt as number) || (a < b ? -1 : a > b ? 1 : 0))
      .map(([runId, schedule]) => ({ runId, dueAt: schedule.dueAt as number }));
  }

  /** Moves dueAt (absent: out of the index) if the mark is still `expectedMark`. */
  defer(runId: string, expectedMark: number, dueAt: number | undefined): DeferOutcome {
    const schedule = this.schedules.get(runId);
    if (schedule === undefined || schedule.mark !== expectedMark) return "moved";
    if (dueAt === undefined) delete schedule.dueAt;
    else schedule.dueAt = dueAt;
    return "deferred";
  }

  /** A marking write: the run may have work, so it is due now; `leaves` takes it out instead. */
  mark(runId: string, leaves = false): void {
    const schedule = this.schedules.get(runId) ?? { mark: 0 };
    schedule.mark += 1;
    if (leaves) delete schedule.dueAt;
    else schedule.dueAt = 0;
    this.schedules.set(runId, schedule);
  }
}
