/**
 * The periodic tick: one pass for every active run (found through the sparse index of PENDING and
 * RUNNING runs), at most `tickParallelism` at once; per-run failures are logged and counted, never
 * thrown.
 */
import { errorText } from "../observability.js";
import type { DispatchContext, PassResult } from "./deps.js";

export interface TickResult {
  runs: number;
  failed: number;
  submitted: number;
}

export async function tickPass(
  ctx: DispatchContext,
  queuePass: (runId: string, woken: boolean) => Promise<PassResult>,
): Promise<TickResult> {
  const { runs, clock, logger, metrics } = ctx;
  const started = clock.now();
  const ids = await runs.listActiveRunIds();
  const total: TickResult = { runs: ids.length, failed: 0, submitted: 0 };
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
