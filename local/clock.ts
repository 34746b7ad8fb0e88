/**
 * A clock the local stack can be started with (`LocalStackOptions.clock`): the system clock moved
 * forward by an offset that only grows. It runs at the wall clock's rate, so leases, flashes and
 * timeouts behave as usual; `advanceTo` jumps it ahead, so a test of a maintenance window or a
 * schedule reaches the instant it is about at once instead of waiting for the wall clock (a
 * recurring window every minute, a start time ahead). Timers set on it (`after`) fire when their
 * time comes by either way: by the wall clock passing, or by a jump.
 */
import type { Clock } from "../src/app/ports.js";

export interface ShiftableClock extends Clock {
  /** Jumps ahead to `at` (epoch ms); a time not ahead of now changes nothing (never backwards). */
  advanceTo(at: number): void;
}

interface PendingTimer {
  due: number;
  fire: () => void;
  timer?: NodeJS.Timeout;
}

export function shiftableClock(): ShiftableClock {
  let offset = 0;
  const now = () => Date.now() + offset;
  const pending = new Set<PendingTimer>();
  /** Arms the platform timer for what is left of the entry's time on this clock. */
  const arm = (entry: PendingTimer) => {
    clearTimeout(entry.timer);
    entry.timer = setTimeout(() => fireOnce(entry), Math.max(0, entry.due - now()));
    entry.timer.unref?.();
  };
  /**
   * Fires the entry once its time on this clock has come; a platform timer that fires early (Node's
   * may, by a millisecond of Date.now) is armed again for the rest, so a timer never fires before
   * its time.
   */
  const fireOnce = (entry: PendingTimer) => {
    if (!pending.has(entry)) return;
    if (now() < entry.due) return arm(entry);
    clearTimeout(entry.timer);
    pending.delete(entry);
    entry.fire();
  };
  return {
    now,
    after(ms, fire) {
      const entry: PendingTimer = { due: now() + Math.max(0, ms), fire };
      pending.add(entry);
      arm(entry);
      return () => {
        clearTimeout(entry.timer);
        pending.delete(entry);
      };
    },
    advanceTo(at) {
      const ahead = at - now();
      if (ahead <= 0) return;
      offset += ahead;
      // Every timer re-armed for what is left of it now: one the jump passed fires at once (after
      // the caller's own code, as a timer would), one it stopped short of that much later, not at
      // its old wall time.
      for (const entry of pending) arm(entry);
    },
  };
}
