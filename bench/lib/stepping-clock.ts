/**
 * A BMC agent clock (src/app/ports/bmc-agent.ts AgentClock) on which every wait is over at once:
 * `sleep(ms)` moves the reading on by `ms` and resolves on the next turn of the event loop, so
 * the agent's minutes of task-monitor reads run in as many turns, and what it decides by time
 * (pacing, timeouts) is decided on this reading. One clock serves one BMC's worker: workers
 * sleeping on a shared one would each move it on.
 *
 *   const clock = steppingClock(); await clock.sleep(6_000); clock.now() → 6000
 */
import type { AgentClock } from "../../src/app/ports/bmc-agent.js";

export function steppingClock(start = 0): AgentClock {
  let now = start;
  return {
    now: () => now,
    sleep: (ms, signal) =>
      new Promise<void>((resolve, reject) => {
        if (signal?.aborted) return reject(new Error("stopping"));
        now += Math.max(0, ms);
        setImmediate(resolve);
      }),
  };
}
