/**
 * Waiting in tests: the one poll-until helper every suite uses, always with a deadline and always
 * for something observable (never a sleep followed by an assertion that nothing happened).
 *
 *   await until("the first probe", () => probes === 1);                    // a condition
 *   const result = await until("the result", () => results.get(id));       // a value; undefined: not yet
 *   const run = await eventually(() => getRun(id), (r) => r.done, "the run to finish");  // read, judge
 *
 * After `timeoutMs` it throws naming what it waited for and the last value it saw, so a test that
 * waits in vain says what it saw. Between tries it gives the event loop `intervalMs`.
 */

/** Calls `read` until `done(value)`, then returns the value. */
export async function eventually<T>(
  read: () => T | Promise<T>,
  done: (value: T) => boolean,
  what: string,
  timeoutMs = 20_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}; last seen: ${JSON.stringify(value)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Calls `probe` until it returns something other than false or undefined, and returns that. */
export async function until<T>(
  what: string,
  probe: () => T | false | undefined | Promise<T | false | undefined>,
  timeoutMs = 20_000,
  intervalMs = 10,
): Promise<Exclude<T, false | undefined>> {
  const found = await eventually(
    probe,
    (value) => value !== undefined && value !== false,
    what,
    timeoutMs,
    intervalMs,
  );
  return found as Exclude<T, false | undefined>;
}
