/**
 * Time, as the use cases see it. Nothing in src/app reads the platform's clock or sets the
 * platform's timers: it is given a `Clock`, so the service runs on the system clock
 * (src/adapters/system-clock.ts), the local stack on one it can be started with, and tests on one
 * they move themselves (window and schedule behaviour without waiting for the wall clock).
 */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
  /**
   * Calls `fire` once, when `ms` of this clock's time have passed (at once for `ms` <= 0, though
   * never synchronously); the returned function cancels it (a no-op once it fired). A pending call
   * does not keep the process alive: these are bounds and back-offs, not work.
   */
  after(ms: number, fire: () => void): () => void;
}
