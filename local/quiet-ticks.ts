/**
 * The local stack's ticks, without the ones that have nothing to do. A run needs a pass when its
 * schedule in the due index says so (src/app/dispatch/schedule.ts), and only two things move a
 * schedule: a write of the run (every one marks it due now) and the time a deferral named. So a
 * tick that found no run due, and learnt when the next falls due (`nextDueAt`: the dispatcher
 * reads the index `maxQuietMs` ahead), can skip the ticks until then, unless the runs table is
 * written first. The stack reports every write its own clients make (`wrote`), which ends the
 * quiet at once; a write from anywhere else is found by the first tick after `maxQuietMs`.
 *
 *   tick (nothing due, next at +3 s) → quiet → ticks skipped … → +3 s: tick → passes that run
 *   tick (nothing due, none within 5 s) → quiet → a run is created (wrote) → next tick reads
 *
 * A write made while a tick reads (it may have missed it) leaves no quiet after that tick.
 */
import type { TickResult } from "../src/app/dispatcher.js";

export interface QuietTicks {
  /** The ticker's tick: a dispatcher tick, unless the stack is quiet. */
  tick(): Promise<void>;
  /** The runs table was written (or may have been): the next tick reads. */
  wrote(): void;
  /** Ticks skipped so far (no request made). */
  readonly skipped: number;
}

export function quietTicks(options: {
  tick: () => Promise<TickResult>;
  now: () => number;
  /** The longest quiet: how late a write from outside the stack is found. */
  maxQuietMs: number;
}): QuietTicks {
  let quietUntil = 0;
  let writes = 0;
  let skipped = 0;
  return {
    async tick() {
      const started = options.now();
      if (started < quietUntil) {
        skipped += 1;
        return;
      }
      const writesBefore = writes;
      const result = await options.tick();
      quietUntil =
        result.runs === 0 && writes === writesBefore
          ? Math.min(result.nextDueAt ?? Number.POSITIVE_INFINITY, started + options.maxQuietMs)
          : 0;
    },
    wrote() {
      writes += 1;
      quietUntil = 0;
    },
    get skipped() {
      return skipped;
    },
  };
}
