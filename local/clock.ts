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
  const fireOnce = (entry: PendingTimer) => {
    clearTimeout(entry.timer);
    if (pending.delete(entry)) entry.fire();
  };
  return {
    now,
    after(ms, fire) {
      const entry: PendingTimer = { due: now() + Math.max(0, ms), fire };
      entry.timer = setTimeout(() => fireOnce(entry), Math.max(0, ms));
      entry.timer.unref?.();
      pending.add(entry);
      return () => {
        clearTimeout(entry.timer);
        pending.delete(entry);
      };
    },
    advanceTo(at) {
      const ahead = at - now();
      if (ahead <= 0) return;
      offset += ahead;
      for (const entry of [...pending]) {
        clearTimeout(entry.timer);
        const left = entry.due - now();
        if (left <= 0) {
          // Asynchronously, as a timer would: the caller's own code runs on before any of them.
          setImmediate(() => fireOnce(entry));
        } else {
          // Not passed by the jump: due that much later on the wall clock now, not at its old time.
          entry.timer = setTimeout(() => fireOnce(entry), left);
          entry.timer.unref?.();
        }
      }
    },
  };
}
