/** The platform's clock, as the `Clock` port (src/app/ports/clock.ts): what every deployable runs on. */
import type { Clock } from "../app/ports.js";

export const systemClock: Clock = {
  now: () => Date.now(),
  after(ms, fire) {
    const timer = setTimeout(fire, Math.max(0, ms));
    timer.unref?.();
    return () => clearTimeout(timer);
  },
};
