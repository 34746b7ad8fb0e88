/**
 * Ticks that cost nothing while no run can be due: the local stack ticks fast (tests: every
 * 150 ms) so that a run due at a time gets its pass soon after, but an idle pass is still one
 * Query of the due index per tick. A tick is left out ("quiet") when that Query would find
 * nothing, which the stack can tell from what it saw itself:
 *
 * - the last pass found no run due (and none failed), at `startedAt`;
 * - nothing was written to the runs table since that pass started (every write of a run marks it
 *   due now; `wrote()` hears of each write the stack's clients make, local/write-nudges.ts);
 * - no run the stack knows of is due by now: each run's `dueAt` is learned from every read of its
 *   schedule (`getRunForDispatch`, which every pass starts with) and every deferral it writes
 *   (`deferRun`), so a run deferred to a window's opening or a lease's end gets its pass at the
 *   first tick at or after that time, as without this;
 * - less than `backstopMs` has passed since the last pass: what the stack cannot see (a write by
 *   another process or client, an index that lags) is found by a pass at least that often.
 *
 * The first tick is always a pass (a sweep of every active run, whose schedules it learns).
 */
import type { TickResult } from "../src/app/dispatcher.js";
import type { Clock, RunStore } from "../src/app/ports.js";

export interface QuietTicksOptions {
  clock: Pick<Clock, "now">;
  /** A pass at least this often, whatever the stack saw. */
  backstopMs: number;
}

export interface QuietTicks {
  /** `runs` as the dispatcher should use it: every schedule read or deferred is noted. */
  watch(runs: RunStore): RunStore;
  /** Something was written to the runs table (after the write was answered). */
  wrote(): void;
  /** Runs `pass` unless the tick is quiet (then resolves undefined without calling it). */
  tick(pass: () => Promise<TickResult>): Promise<TickResult | undefined>;
  readonly stats: { passes: number; quiet: number };
}

export function quietTicks(options: QuietTicksOptions): QuietTicks {
  const { clock, backstopMs } = options;
  const stats = { passes: 0, quiet: 0 };
  /** Each run's last known `dueAt` (epoch ms on `clock`; 0: now); absent: not in the due index. */
  const dueAt = new Map<string, number>();
  let writes = 0;
  let last: { startedAt: number; writes: number; foundRuns: boolean } | undefined;
  const learn = (runId: string, at: number | undefined) => {
    if (at === undefined) dueAt.delete(runId);
    else dueAt.set(runId, at);
  };
  const anyDue = (now: number) => {
    for (const at of dueAt.values()) if (at <= now) return true;
    return false;
  };
  const quiet = (now: number) =>
    last !== undefined &&
    !last.foundRuns &&
    writes === last.writes &&
    now - last.startedAt < backstopMs &&
    !anyDue(now);

  return {
    stats,
    watch(runs) {
      const getRunForDispatch: RunStore["getRunForDispatch"] = async (runId) => {
        const read = await runs.getRunForDispatch(runId);
        learn(runId, read?.schedule.dueAt);
        return read;
      };
      const deferRun: RunStore["deferRun"] = async (runId, expectedMark, at) => {
        const outcome = await runs.deferRun(runId, expectedMark, at);
        // 'moved': a write came first, and was heard of (`wrote`): the next tick passes.
        if (outcome === "deferred") learn(runId, at);
        return outcome;
      };
      return new Proxy(runs, {
        get(target, property) {
          if (property === "getRunForDispatch") return getRunForDispatch;
          if (property === "deferRun") return deferRun;
          const value = Reflect.get(target, property, target) as unknown;
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    },
    wrote() {
      writes += 1;
    },
    async tick(pass) {
      const startedAt = clock.now();
      if (quiet(startedAt)) {
        stats.quiet += 1;
        return undefined;
      }
      const writesBefore = writes;
      last = undefined;
      stats.passes += 1;
      const result = await pass();
      last = { startedAt, writes: writesBefore, foundRuns: result.runs > 0 || result.failed > 0 };
      return result;
    },
  };
}
