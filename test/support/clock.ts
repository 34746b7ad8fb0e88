/**
 * The `Clock` port (src/app/ports/clock.ts) for tests that read time their own way:
 *
 *   createDispatcher({ runs, submitter, clock: clockOf(() => now) });
 *   createDispatcher({ runs, submitter, clock: clockOf(testClock.read) });
 *
 * `now()` is the given reading; timers are the platform's, looked up at each call, so a test on
 * vitest's fake timers drives them with `vi.advanceTimersByTime` (even with Date left real: unlike
 * systemClock, these timers do not check Date.now() when they fire).
 */
import type { Clock } from "../../src/app/ports.js";

export function clockOf(read: () => number): Clock {
  return {
    now: read,
    after(ms, fire) {
      const timer = setTimeout(fire, Math.max(0, ms));
      timer.unref?.();
      return () => clearTimeout(timer);
    },
  };
}
