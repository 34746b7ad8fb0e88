/**
 * Whole runs through the dispatcher and the controls on DynamoDB (moto): every kind of write the
 * use cases make (batch claims, submissions, outcomes from child tasks, terminations, control
 * saves) lands on the real store in the order a run makes them, and the counters, inFlight and
 * statuses come out exact. The decisions themselves (order, slots, fallbacks, messages, 'stale'
 * retries, the cancel budget) are tables on the in-memory store: test/unit/dispatcher-*.test.ts and
 * test/unit/controls-*.test.ts; the store's own rules are the contract in
 * test/integration/store-contracts.test.ts.
 */

import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDynamoStores, type DynamoStores } from "../../src/adapters/dynamodb/index.js";
import { createControls } from "../../src/app/controls.js";
import { createDispatcher } from "../../src/app/dispatcher.js";
import type { Run, Target } from "../../src/domain/model.js";
import { clockOf } from "../support/clock.js";
import { runWithTargets, uuid } from "../support/dynamodb-fixtures.js";
import { FakeSubmitter, TestClock } from "../support/fake-submitter.js";
import { freshTables, testClient } from "../support/moto.js";
import { testEndpoint } from "../support/test-endpoint.js";

let client: DynamoDBClient;
let drop: () => Promise<void>;
let stores: DynamoStores;
let seq = 0;

beforeAll(async () => {
  client = testClient(testEndpoint());
  const tables = await freshTables(client, "disp");
  drop = tables.drop;
  stores = createDynamoStores(client, tables.names);
});
afterAll(async () => {
  await drop();
  client.destroy();
});

/** A run on the store with child tasks that run until the test ends them (no timers). */
async function setup(options: { phaseSizes: number[]; maxConcurrent: number; autoAdvance: boolean }) {
  const id = uuid(++seq, "d1000000");
  const { run, targets } = runWithTargets(id, options);
  run.config.autoAdvance = options.autoAdvance;
  await stores.runs.createRun(run, targets);
  const clock = new TestClock();
  const submitter = new FakeSubmitter({
    runs: stores.runs,
    clock: clock.read,
    behaviour: () => ({ kind: "hang" }),
  });
  const dispatcher = createDispatcher({ runs: stores.runs, submitter, clock: clockOf(clock.read) });
  const controls = createControls({
    runs: stores.runs,
    submitter,
    clock: clockOf(clock.read),
    dispatch: dispatcher.dispatchRun,
  });
  return {
    id,
    targets,
    clock,
    submitter,
    dispatcher,
    controls,
    get: async () => (await stores.runs.getRun(id)) as Run,
    statuses: () =>
      Promise.all(targets.map(async (t) => ((await stores.runs.getTarget(id, t.id)) as Target).status)),
    /** Ends the running child tasks of these targets, each outcome recorded before it returns. */
    finish: async (indexes: number[], status: "COMPLETED" | "FAILED") => {
      for (const i of indexes) await submitter.finish(targets[i]!.id, status);
    },
  };
}

describe("whole runs on DynamoDB", () => {
  it("two phases: claimed and submitted in order, paused at the phase gate, advanced, completed with exact counters and one task per rack", async () => {
    const s = await setup({ phaseSizes: [2, 2], maxConcurrent: 3, autoAdvance: false });
    expect(await s.dispatcher.dispatchRun(s.id)).toMatchObject({ decision: "claimed", submitted: 2 });
    expect(await s.statuses()).toEqual(["SUBMITTED", "SUBMITTED", "PENDING", "PENDING"]);
    expect(await s.get()).toMatchObject({ status: "RUNNING", inFlight: 2 });

    s.clock.advance(1000);
    await s.finish([0], "COMPLETED");
    await s.finish([1], "FAILED");
    await s.dispatcher.dispatchRun(s.id);
    expect(await s.get()).toMatchObject({
      status: "PAUSED",
      reason: "PHASE_GATE",
      statusMessage: "waiting for phase advance",
      inFlight: 0,
    });

    await expect(s.controls.advance(s.id, 2)).rejects.toThrow("expected phase 2, next phase is 1");
    s.clock.advance(1000);
    // advance dispatches at once: phase 1's targets are submitted before it returns.
    expect(await s.controls.advance(s.id, 1)).toMatchObject({ status: "RUNNING", currentPhaseIndex: 1 });
    expect(await s.statuses()).toEqual(["COMPLETED", "FAILED", "SUBMITTED", "SUBMITTED"]);

    s.clock.advance(1000);
    await s.finish([2, 3], "COMPLETED");
    await s.dispatcher.dispatchRun(s.id);
    const run = await s.get();
    expect(run).toMatchObject({
      status: "COMPLETED_WITH_FAILURES",
      statusMessage: "operation run completed with failed targets",
      inFlight: 0,
      finishedAt: s.clock.now,
    });
    expect(run.counters).toEqual([
      { completed: 1, failed: 1, terminated: 0, skipped: 0 },
      { completed: 2, failed: 0, terminated: 0, skipped: 0 },
    ]);
    expect(s.submitter.duplicateStarts()).toEqual([]);
    expect(s.submitter.starts.size).toBe(4);
  });

  it("cancel: the running child tasks stop and end TERMINATED, the never-started ones SKIPPED, each counted once, the next phase untouched", async () => {
    const s = await setup({ phaseSizes: [4, 2], maxConcurrent: 2, autoAdvance: true });
    await s.dispatcher.dispatchRun(s.id);
    expect((await s.get()).inFlight).toBe(2);
    const cancelled = await s.controls.cancel(s.id, "  window closed  ");
    expect(cancelled).toMatchObject({
      status: "CANCELLED",
      statusMessage: "operation run cancelled: window closed",
    });
    await s.submitter.settle();
    expect(s.submitter.cancels).toHaveLength(2);
    expect(await s.statuses()).toEqual([
      "TERMINATED",
      "TERMINATED",
      "SKIPPED",
      "SKIPPED",
      "PENDING",
      "PENDING",
    ]);
    const run = await s.get();
    expect(run).toMatchObject({ status: "CANCELLED", inFlight: 0 });
    expect(run.counters[0]).toEqual({ completed: 0, failed: 0, terminated: 2, skipped: 2 });
    expect((await s.dispatcher.dispatchRun(s.id)).decision).toBe("inactive");
    expect(await s.controls.cancel(s.id, "again")).toEqual(run);
  });
});
