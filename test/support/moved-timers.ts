/**
 * Timers on a clock the test moves itself, as the `Clock` port (src/app/ports/clock.ts):
 * nothing fires until `advance`, which fires what is due, in order, synchronously. For time-based
 * behaviour tested without sleeps (a callback state's timeout and heartbeat interval).
 *
 *   const timers = movedTimers();
 *   new LocalStepFunctionsExecutor({ …, callbackClock: timers });
 *   await until("the wait's timers", () => timers.armed().length === 2);
 *   timers.advance(300_000);
 */
import type { Clock } from "../../src/app/ports.js";

export interface MovedTimers extends Clock {
  /** Moves the clock by `ms` and fires every timer now due, earliest first. */
  advance(ms: number): void;
  /** The ms left of each timer still armed (neither fired nor cancelled). */
  armed(): number[];
}

export function movedTimers(): MovedTimers {
  let now = 0;
  const timers: { due: number; fire: () => void; live: boolean }[] = [];
  return {
    /** The moved time: 0 at the start, plus every `advance`. */
    now: () => now,
    after(ms, fire) {
      const timer = { due: now + Math.max(0, ms), fire, live: true };
      timers.push(timer);
      return () => {
        timer.live = false;
      };
    },
    advance(ms) {
      now += ms;
      for (const t of timers.filter((x) => x.live && x.due <= now).sort((a, b) => a.due - b.due)) {
        t.live = false;
        t.fire();
      }
    },
    armed: () => timers.filter((t) => t.live).map((t) => t.due - now),
  };
}
