/**
 * What every part of the RunStore contract (run-store.ts) shares: the store under test, fresh ids,
 * and the helpers that make and read back runs and targets.
 */
import { beforeAll } from "vitest";
import type { RunStore } from "../../../src/app/ports.js";
import type { Run, Target } from "../../../src/domain/model.js";
import { runWithTargets, uuid } from "../dynamodb-fixtures.js";

export const T = 1_700_000_100_000;
export const LEASE = 30_000;
export const ALL = { offset: 0, limit: 100 };
export const ZERO = { completed: 0, failed: 0, terminated: 0, skipped: 0 };

export interface RunStoreCase {
  /** The store under test, once the suite's setup has run (read it in a test, not at collection). */
  readonly runs: RunStore;
  /** The next number for an id (no two cases share one), and the last one given. */
  nextSeq(): number;
  lastSeq(): number;
  /** A committed run with PENDING targets in sequence order (phase sizes as given). */
  created(
    options?: { phaseSizes?: number[]; maxConcurrent?: number; name?: string; createdAt?: number },
    id?: string,
  ): Promise<{ run: Run; targets: Target[] }>;
  target(t: Target): Promise<Target>;
  run(r: Run): Promise<Run>;
  statuses(targets: Target[]): Promise<Target["status"][]>;
  ids(targets: Target[]): string[];
  /** saveRun with the next version, as the use cases write it. */
  save(r: Run, changes: Partial<Run>): ReturnType<RunStore["saveRun"]>;
}

/** Registers the setup (a beforeAll of the enclosing describe) and returns the shared helpers. */
export function runStoreCase(setup: () => Promise<{ runs: RunStore }>): RunStoreCase {
  let runs: RunStore | undefined;
  let seq = 0;
  beforeAll(async () => {
    ({ runs } = await setup());
  });
  const store = (): RunStore => {
    if (runs === undefined) throw new Error("the RunStore contract's setup has not run");
    return runs;
  };
  const target = async (t: Target) => (await store().getTarget(t.runId, t.id)) as Target;
  const run = async (r: Run) => (await store().getRun(r.id)) as Run;
  return {
    get runs() {
      return store();
    },
    nextSeq: () => ++seq,
    lastSeq: () => seq,
    async created(options = {}, id = uuid(++seq, "c0ffee00")) {
      const made = runWithTargets(id, { phaseSizes: [3], ...options });
      await store().createRun(made.run, made.targets);
      return made;
    },
    target,
    run,
    statuses: (targets) => Promise.all(targets.map(async (t) => (await target(t)).status)),
    ids: (targets) => targets.map((t) => t.id),
    save: async (r, changes) => {
      const current = await run(r);
      return store().saveRun({ ...current, ...changes, updatedAt: current.updatedAt + 1 }, current.updatedAt);
    },
  };
}
