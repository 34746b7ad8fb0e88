/** The platform's clock, as the `Clock` port (src/app/ports/clock.ts): what every deployable runs on. */
import type { Clock } from "../app/ports.js";

export const systemClock: Clock = {
  now: () => Date.now(),
  after(ms, fire) {
    // Node's timers run on a monotonic clock and may fire a millisecond before Date.now() shows the
    // time has passed: such a firing is armed again for the rest, so `fire` never runs early.
    const due = Date.now() + Math.max(0, ms);
    let timer: ReturnType<typeof setTimeout>;
    const arm = (wait: number) => {
      timer = setTimeout(() => {
        const left = due - Date.now();
        if (left > 0) arm(left);
        else fire();
      }, wait);
      timer.unref?.();
    };
    arm(Math.max(0, ms));
    return () => clearTimeout(timer);
  },
};
