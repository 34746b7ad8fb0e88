/** The dispatcher suites' FakeSubmitter (in bench/lib: the dispatch benchmark uses it too), and a harness. */
export {
  conflictMessage,
  FakeSubmitter,
  type FakeSubmitterOptions,
  type FakeTask,
  type RackBehaviour,
} from "../../bench/lib/fake-submitter.js";

import type { RunStore } from "../../src/app/ports.js";
import type { SeededRandom } from "./seeded-random.js";

// ---------------------------------------------------------------------------------------------
// A harness for the dispatcher suites: fresh tables, a controllable clock, run builders.

export class TestClock {
  constructor(public now = 1_800_000_000_000) {}
  readonly read = (): number => this.now;
  advance(ms: number): number {
    this.now += ms;
    return this.now;
  }
}

export function waitMs(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Every RunStore method, with a random 0..maxMs pause before and after the real call (the race suites). */
export function withRandomDelays(runs: RunStore, maxMs: number, random: SeededRandom): RunStore {
  const jitter = () => waitMs(random.int(maxMs));
  return new Proxy(runs, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        await jitter();
        const result = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        await jitter();
        return result;
      };
    },
  });
}
