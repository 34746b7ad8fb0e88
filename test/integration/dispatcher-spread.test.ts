/**
 * The failure-domain spread under racing dispatchers (4 to 6) against moto, with random delays
 * injected before and after every storage call (seeded: a failure prints the seed to replay).
 *
 * The racks of one row come in runs in the seeded order (rows A, A, A, A, B, B, …), so a pass that
 * did not skip a full row would wait on it, and the concurrency limit could not be reached.
 * Checked at every observed instant: per row, the targets CLAIMED + SUBMITTED (one query of the
 * run's partition) and the run item's per-row counter never exceed the spread; on the (fake)
 * hardware, the tasks running per row neither. At the end: more racks were in flight than one row
 * allows (the skipping was exercised), every target started exactly once, every counter back at 0.
 */

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DynamoStores, TableNames } from "../../src/adapters/dynamodb/index.js";
import type { ChildTaskRequest } from "../../src/app/ports.js";
import { raceDispatchers } from "../support/dispatcher-race.js";
import { runWithTargets, uuid } from "../support/dynamodb-fixtures.js";
import { FakeSubmitter, withRandomDelays } from "../support/fake-submitter.js";
import { freshStores } from "../support/moto.js";
import { testRandom } from "../support/seeded-random.js";
import { testEndpoint } from "../support/test-endpoint.js";

let names: TableNames;
let drop: () => Promise<void>;
let stores: DynamoStores;

beforeAll(async () => {
  ({ names, stores, drop } = await freshStores(testEndpoint(), "spread"));
});
afterAll(() => drop());

const max = (counts: Iterable<number>) => Math.max(0, ...counts);

async function race(options: {
  dispatchers: number;
  /** Row of each target, in sequence order. */
  rows: string[];
  maxConcurrent: number;
  perRow: number;
  /** Racks (by sequence index) whose first submission meets a rack conflict (then completes at once). */
  conflicting?: number[];
  seq: number;
}) {
  const random = testRandom();
  const id = uuid(options.seq, "b0000000");
  const { run, targets } = runWithTargets(id, {
    phaseSizes: [options.rows.length],
    maxConcurrent: options.maxConcurrent,
  });
  run.config.failureDomainSpread = { kind: "ROW", maxInFlight: options.perRow };
  targets.forEach((t, i) => {
    t.failureDomain = options.rows[i] as string;
  });
  const rowOfRack = new Map(targets.map((t) => [t.rackId, t.failureDomain as string]));
  const conflicting = new Set((options.conflicting ?? []).map((i) => targets[i]?.rackId));
  await stores.runs.createRun(run, targets);

  const submitter = new FakeSubmitter({
    runs: withRandomDelays(stores.runs, 8, random),
    clock: Date.now,
    behaviour: (rackId) =>
      conflicting.has(rackId)
        ? { kind: "conflict", times: 1 }
        : { kind: "complete", afterMs: 300 + random.int(300) },
  });
  // Tasks running per row, each time a task starts (a task runs inside its target's claim).
  let maxRunningPerRow = 0;
  const submit = submitter.submit.bind(submitter);
  submitter.submit = async (request: ChildTaskRequest, now: number) => {
    const outcome = await submit(request, now);
    const perRow = new Map<string, number>();
    for (const task of submitter.tasks.values()) {
      if (task.status !== "RUNNING") continue;
      const row = rowOfRack.get(task.rackId) as string;
      perRow.set(row, (perRow.get(row) ?? 0) + 1);
    }
    maxRunningPerRow = Math.max(maxRunningPerRow, max(perRow.values()));
    return outcome;
  };

  let maxTargetsPerRow = 0;
  let maxCounterPerRow = 0;
  let maxInFlight = 0;
  const { observations } = await raceDispatchers({
    stores,
    names,
    submitter,
    random,
    runId: id,
    dispatchers: options.dispatchers,
    budgetMs: 60_000,
    observe: (inFlight, stored) => {
      const perRow = new Map<string, number>();
      for (const item of inFlight) {
        const row = item.failureDomain as string;
        perRow.set(row, (perRow.get(row) ?? 0) + 1);
      }
      maxTargetsPerRow = Math.max(maxTargetsPerRow, max(perRow.values()));
      maxInFlight = Math.max(maxInFlight, inFlight.length);
      maxCounterPerRow = Math.max(maxCounterPerRow, max(Object.values(stored?.domainInFlight ?? {})));
    },
  });
  return {
    id,
    targets,
    submitter,
    observations,
    maxTargetsPerRow,
    maxCounterPerRow,
    maxRunningPerRow,
    maxInFlight: Math.max(maxInFlight, submitter.maxRunning),
  };
}

describe("failure-domain spread under racing dispatchers", () => {
  it("5 dispatchers, 15 racks in rows A×4 B×4 C×4 D×3 (clustered), limit 3, 1 per row: never two of a row in flight", async () => {
    const rows = [..."AAAABBBBCCCCDDD"];
    const r = await race({ dispatchers: 5, rows, maxConcurrent: 3, perRow: 1, seq: 1 });
    expect(r.observations).toBeGreaterThan(20);
    expect(r.maxTargetsPerRow).toBe(1);
    expect(r.maxCounterPerRow).toBe(1);
    expect(r.maxRunningPerRow).toBe(1);
    // Three rows in flight at once: only possible by skipping the clustered racks of a full row.
    expect(r.maxInFlight).toBe(3);
    expect(r.submitter.duplicateStarts()).toEqual([]);
    expect(r.submitter.starts.size).toBe(15);
    const run = await stores.runs.getRun(r.id);
    expect(run).toMatchObject({ status: "COMPLETED", inFlight: 0 });
    expect(run?.domainInFlight).toEqual({ A: 0, B: 0, C: 0, D: 0 });
    expect(run?.counters).toEqual([{ completed: 15, failed: 0, terminated: 0, skipped: 0 }]);
  });

  it("4 and 6 dispatchers, 2 per row, limit 5, rack conflicts releasing rows: never three of a row in flight", async () => {
    for (const [dispatchers, seq] of [
      [4, 2],
      [6, 3],
    ] as const) {
      const rows = [..."AAAAAABBBBBBCCC"];
      const r = await race({ dispatchers, rows, maxConcurrent: 5, perRow: 2, conflicting: [0, 6, 7], seq });
      expect(r.maxTargetsPerRow).toBeLessThanOrEqual(2);
      expect(Math.max(r.maxTargetsPerRow, r.maxRunningPerRow)).toBe(2);
      expect(r.maxCounterPerRow).toBeLessThanOrEqual(2);
      expect(r.maxRunningPerRow).toBeLessThanOrEqual(2);
      // More than one row's worth in flight (row A's 6 racks come first): B's and C's were taken
      // past A's waiting racks; never over the limit.
      expect(r.maxInFlight).toBeGreaterThan(2);
      expect(r.maxInFlight).toBeLessThanOrEqual(5);
      expect(r.submitter.duplicateStarts()).toEqual([]);
      expect(r.submitter.starts.size).toBe(15);
      expect(r.submitter.conflictsByRack.size).toBe(3);
      const run = await stores.runs.getRun(r.id);
      expect(run).toMatchObject({ status: "COMPLETED", inFlight: 0 });
      expect(run?.domainInFlight).toEqual({ A: 0, B: 0, C: 0 });
    }
  });
});
