/**
 * The periodic tick: one pass for every run that needs one now, found through the sparse due index
 * (RunStore.listDueRuns: one Query, whatever the number of active runs), at most
 * `tickParallelism` at once; per-run failures are logged and counted, never thrown. The first tick
 * of a process, and one every `sweepIntervalMs` after it, passes every active run instead (the
 * sparse index of PENDING and RUNNING runs): a backstop for runs no write has scheduled yet.
 * With `dueLookaheadMs`, the due read reaches that far past now: the runs due by now are passed,
 * and the earliest later one is reported (`nextDueAt`), not passed.
 */
import { errorText } from "../observability.js";
import type { DispatchContext, PassResult } from "./deps.js";

export interface TickResult {
  runs: number;
  failed: number;
  submitted: number;
  /**
   * When the next run in the due index falls due, if one does within `dueLookaheadMs` of this
   * tick's start; absent: none does (or this tick was a sweep, which does not read the index).
   */
  nextDueAt?: number;
}

/** When this process last passed every active run (undefined: never). */
export interface SweepState {
  lastSweepAt?: number;
}

export async function tickPass(
  ctx: DispatchContext,
  queuePass: (runId: string, woken: boolean) => Promise<PassResult>,
  sweeps: SweepState,
): Promise<TickResult> {
  const { runs, clock, logger, metrics } = ctx;
  const started = clock.now();
  const sweep = sweeps.lastSweepAt === undefined || started - sweeps.lastSweepAt >= ctx.sweepIntervalMs;
  let ids: string[];
  let nextDueAt: number | undefined;
  if (sweep) {
    ids = await runs.listActiveRunIds();
    sweeps.lastSweepAt = started;
  } else {
    const due = await runs.listDueRuns(started + ctx.dueLookaheadMs);
    ids = due.filter((r) => r.dueAt <= started).map((r) => r.runId);
    nextDueAt = due.find((r) => r.dueAt > started)?.dueAt;
  }
  const total: TickResult = {
    runs: ids.length,
    failed: 0,
    submitted: 0,
    ...(nextDueAt === undefined ? {} : { nextDueAt }),
  };
  await forEachLimited(ids, ctx.tickParallelism, async (runId) => {
    try {
      const r = await queuePass(runId, false);
      total.submitted += r.submitted;
    } catch (error) {
      total.failed += 1;
      logger.error("dispatch pass failed", { runId, error: errorText(error) });
    }
  });
  // The ticker waits its interval AFTER each pass (infra/constructs/ticker.ts), so the next pass
  // starts as late against its tick as this whole pass took: the TickOverrun alarm fires when
  // that reaches one interval. Wake-ups (dispatchRun alone) are not ticks and emit none.
  metrics.add("TickOverrunMs", Math.max(0, clock.now() - started));
  metrics.flush();
  return total;
}

/** Runs `fn` over `items` with at most `limit` in flight; rejects with the first error after all settle. */
export async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  let firstError: unknown;
  let failed = false;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      try {
        await fn(item);
      } catch (error) {
        if (!failed) firstError = error;
        failed = true;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), items.length) }, worker));
  if (failed) throw firstError;
}
