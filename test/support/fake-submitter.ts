/** The dispatcher suites' FakeSubmitter (in bench/lib: the dispatch benchmark uses it too), and a harness. */
export {
  conflictMessage,
  FakeSubmitter,
  type FakeSubmitterOptions,
  type FakeTask,
  type RackBehaviour,
} from "../../bench/lib/fake-submitter.js";

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
