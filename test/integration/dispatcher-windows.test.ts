/**
 * Maintenance windows against moto: the claim's condition carries the time. A claim is judged by
 * the clock read right before it is sent (not by the pass's read of the run), against the run's
 * end_time stored on the run item and, in a recurring window, against the window's close. Then the
 * whole path: a run that reaches its end_time with racks left stops claiming, lets the racks in
 * flight finish, pauses with MAINTENANCE_WINDOW, refuses Resume, and Cancel skips the rest.
 *
 * Every clock here is injected (TestClock, or a clock that moves on each read); nothing sleeps to
 * let time pass.
 */

import { QueryCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DynamoStores, TableNames } from "../../src/adapters/dynamodb/index.js";
import { createControls } from "../../src/app/controls.js";
import { createDispatcher } from "../../src/app/dispatcher.js";
import type { ClaimOutcome, RunStore } from "../../src/app/ports.js";
import type { Run, Target } from "../../src/domain/model.js";
import { clockOf } from "../support/clock.js";
import { runWithTargets, uuid } from "../support/dynamodb-fixtures.js";
import { FakeSubmitter, TestClock, waitMs } from "../support/fake-submitter.js";
import { freshStores } from "../support/moto.js";
import { type SeededRandom, testRandom } from "../support/seeded-random.js";
import { testEndpoint } from "../support/test-endpoint.js";

let names: TableNames;
let drop: () => Promise<void>;
let stores: DynamoStores;
let seq = 0;

beforeAll(async () => {
  ({ names, stores, drop } = await freshStores(testEndpoint(), "windows"));
});
afterAll(() => drop());

const T0 = 1_800_000_000_000;
const MIN = 60_000;

/** A stored run whose template ends at `endTime` (and, optionally, starts and recurs). */
async function windowedRun(options: {
  phaseSizes: number[];
  maxConcurrent: number;
  startTime?: number;
  endTime?: number;
  windows?: Run["config"]["maintenanceWindows"];
}): Promise<{ run: Run; targets: Target[] }> {
  const built = runWithTargets(uuid(++seq, "e0000000"), {
    phaseSizes: options.phaseSizes,
    maxConcurrent: options.maxConcurrent,
    createdAt: T0 - MIN,
  });
  const firmware = built.run.config.operation.firmware;
  if (options.startTime !== undefined) firmware.startTime = options.startTime;
  if (options.endTime !== undefined) firmware.endTime = options.endTime;
  if (options.windows !== undefined) built.run.config.maintenanceWindows = options.windows;
  built.run.config.autoAdvance = true;
  await stores.runs.createRun(built.run, built.targets);
  return built;
}

async function targetsOf(runId: string): Promise<Target[]> {
  return (
    (await stores.runs.listTargets(runId, { phaseFrom: 0, phaseTo: 99, page: { offset: 0, limit: 1000 } }))
      ?.targets ?? []
  );
}

describe("the claim's condition carries the time", () => {
  it("claimTarget and claimTargets commit before end_time and are refused ('window-closed') from it, writing nothing", async () => {
    const END = T0 + 10 * MIN;
    const { run, targets } = await windowedRun({ phaseSizes: [4], maxConcurrent: 4, endTime: END });
    const [a, b, c, d] = targets as [Target, Target, Target, Target];
    expect(await stores.runs.claimTarget(a, 30_000, END - 1)).toBe("claimed");
    expect(await stores.runs.claimTarget(b, 30_000, END)).toBe("window-closed");
    expect(await stores.runs.claimTargets([b, c], 30_000, END + 1)).toEqual({
      outcome: "window-closed",
      claimed: [],
    });
    // A claim judged by a time before the end still commits, whenever the pass read the run.
    expect((await stores.runs.claimTargets([b, c], 30_000, END - 1)).outcome).toBe("claimed");
    expect((await stores.runs.getRun(run.id))?.inFlight).toBe(3);
    expect((await stores.runs.getTarget(run.id, d.id))?.status).toBe("PENDING");
    // Re-claiming an expired lease (no new slot, a ConditionCheck on the run) is bound the same way.
    const expired = (await stores.runs.getTarget(run.id, a.id)) as Target;
    expect(await stores.runs.claimTarget(expired, 30_000, END + 60_000)).toBe("window-closed");
    expect((await stores.runs.getTarget(run.id, a.id))?.updatedAt).toBe(END - 1);
  });

  it("`until` (a recurring window's close) refuses a claim at or after it without sending one", async () => {
    const { run, targets } = await windowedRun({ phaseSizes: [2], maxConcurrent: 2 });
    const [a, b] = targets as [Target, Target];
    const CLOSE = T0 + 5 * MIN;
    expect(await stores.runs.claimTarget(a, 30_000, CLOSE, CLOSE)).toBe("window-closed");
    expect(await stores.runs.claimTargets([a, b], 30_000, CLOSE + 1, CLOSE)).toEqual({
      outcome: "window-closed",
      claimed: [],
    });
    expect(await stores.runs.claimTarget(a, 30_000, CLOSE - 1, CLOSE)).toBe("claimed");
    expect((await stores.runs.getRun(run.id))?.inFlight).toBe(1);
  });

  it("a pass that reads the run while its window is open and claims after it closed claims nothing", async () => {
    const END = T0 + 10 * MIN;
    const { run } = await windowedRun({ phaseSizes: [3], maxConcurrent: 3, endTime: END });
    // The pass's own reads of the clock: the decision at END - 1 (open), the claim at END.
    const reads = [END - 1, END - 1, END];
    const clock = () => reads.shift() ?? END + 1;
    const submitter = new FakeSubmitter({ runs: stores.runs, clock, behaviour: () => ({ kind: "hang" }) });
    const dispatcher = createDispatcher({ runs: stores.runs, submitter, clock: clockOf(clock) });
    expect(await dispatcher.dispatchRun(run.id)).toMatchObject({ decision: "claimed", submitted: 0 });
    expect(submitter.starts.size).toBe(0);
    expect((await stores.runs.getRun(run.id))?.inFlight).toBe(0);
    expect((await targetsOf(run.id)).map((t) => t.status)).toEqual(["PENDING", "PENDING", "PENDING"]);
    // The next pass sees the window closed with nothing in flight: it pauses.
    expect(await dispatcher.dispatchRun(run.id)).toMatchObject({ decision: "paused", status: "PAUSED" });
    expect(await stores.runs.getRun(run.id)).toMatchObject({
      reason: "MAINTENANCE_WINDOW",
      statusMessage: "maintenance window closed at 2027-01-15T08:10:00Z: 3 targets not started",
    });
  });

  it("the same for a recurring window: decided inside it, claimed at its close → nothing claimed", async () => {
    // "*/10 * * * *" for 5 minutes: T0 (08:00) is an opening, so the window closes at 08:05.
    const { run } = await windowedRun({
      phaseSizes: [2],
      maxConcurrent: 2,
      windows: [{ cron: "*/10 * * * *", durationMs: 5 * MIN }],
    });
    const CLOSE = T0 + 5 * MIN;
    const reads = [CLOSE - 1, CLOSE - 1, CLOSE];
    const clock = () => reads.shift() ?? CLOSE + 1;
    const submitter = new FakeSubmitter({ runs: stores.runs, clock, behaviour: () => ({ kind: "hang" }) });
    const dispatcher = createDispatcher({ runs: stores.runs, submitter, clock: clockOf(clock) });
    expect(await dispatcher.dispatchRun(run.id)).toMatchObject({ decision: "claimed", submitted: 0 });
    expect((await stores.runs.getRun(run.id))?.inFlight).toBe(0);
    expect(await dispatcher.dispatchRun(run.id)).toMatchObject({ decision: "claimed", status: "RUNNING" });
    expect((await stores.runs.getRun(run.id))?.statusMessage).toBe(
      "outside maintenance window: next opens at 2027-01-15T08:10:00Z",
    );
  });
});

describe("race: several dispatchers claiming while the window closes", () => {
  /**
   * One race: 6 dispatchers over one run of 40 targets (limit 4) whose end_time falls inside the
   * race. One shared clock that every read moves on 1-4 ms; each dispatcher's reads held up 0-7 ms,
   * so between a pass's decision (window open) and its claim the others move the clock on.
   * Returns every claim call with the time it carried and the store's answer.
   */
  async function raceToTheClose(random: SeededRandom) {
    const END = T0 + 500;
    const { run, targets } = await windowedRun({ phaseSizes: [40], maxConcurrent: 4, endTime: END });
    let now = T0;
    const clock = () => {
      now += 1 + random.int(4);
      return now;
    };
    const claims: { now: number; outcome: ClaimOutcome }[] = [];
    const instrumented = (runs: RunStore): RunStore =>
      new Proxy(runs, {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver);
          if (prop === "claimTarget") {
            return async (expected: Target, leaseMs: number, at: number, until?: number) => {
              const outcome = await target.claimTarget(expected, leaseMs, at, until);
              claims.push({ now: at, outcome });
              return outcome;
            };
          }
          if (prop === "claimTargets") {
            return async (expected: Target[], leaseMs: number, at: number, until?: number) => {
              const result = await target.claimTargets(expected, leaseMs, at, until);
              claims.push({ now: at, outcome: result.outcome });
              return result;
            };
          }
          if (prop === "getRun" || prop === "listQueuedTargets") {
            return async (...args: unknown[]) => {
              const result = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
              await waitMs(random.int(8));
              return result;
            };
          }
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    const submitter = new FakeSubmitter({
      runs: stores.runs,
      clock,
      behaviour: () => ({ kind: "complete", afterMs: 1 + random.int(5) }),
    });
    const workers = Array.from({ length: 6 }, async () => {
      const dispatcher = createDispatcher({
        runs: instrumented(stores.runs),
        submitter,
        clock: clockOf(clock),
      });
      for (let pass = 0; pass < 1000; pass++) {
        const { decision } = await dispatcher.dispatchRun(run.id);
        if (decision !== "claimed" && decision !== "contended") return;
      }
    });
    await Promise.all(workers);
    await submitter.settle();
    // The last outcomes may land after every worker's last pass; in the product each wakes the
    // run (stream, direct wake-up). One more pass stands for that wake-up.
    await createDispatcher({ runs: stores.runs, submitter, clock: clockOf(clock) }).dispatchRun(run.id);
    return { END, run, targets, claims, submitter };
  }

  it("6 dispatchers, a clock that moves on every read: no claim ever commits at or after end_time", async () => {
    const random = testRandom();
    let refusedAtTheClose = 0;
    // Rounds until the edge was hit: a claim decided while open and refused at the close (one
    // round hits it about nine times in ten); the invariants are checked in every round.
    for (let round = 0; round < 5 && refusedAtTheClose === 0; round++) {
      const { END, run, targets, claims, submitter } = await raceToTheClose(random);
      const committed = claims.filter((c) => c.outcome === "claimed");
      const refused = claims.filter((c) => c.outcome === "window-closed");
      refusedAtTheClose += refused.length;
      expect(committed.length, "claims committed before the close").toBeGreaterThan(0);
      expect(committed.filter((c) => c.now >= END)).toEqual([]);
      expect(refused.filter((c) => c.now < END)).toEqual([]);
      // What the table holds agrees: every target that left PENDING got its one task.
      const out = await stores.doc.send(
        new QueryCommand({
          TableName: names.targets,
          KeyConditionExpression: "runId = :r",
          ExpressionAttributeValues: { ":r": run.id },
          ConsistentRead: true,
        }),
      );
      const started = (out.Items ?? []).filter((i) => i.status !== "PENDING");
      expect(started.length).toBe(submitter.starts.size);
      expect(started.every((i) => Number(i.updatedAt) >= T0)).toBe(true);
      expect(submitter.duplicateStarts()).toEqual([]);
      // After the close the last pass paused the run with the rest not started.
      const notStarted = targets.length - submitter.starts.size;
      expect(notStarted).toBeGreaterThan(0);
      expect(await stores.runs.getRun(run.id)).toMatchObject({
        status: "PAUSED",
        reason: "MAINTENANCE_WINDOW",
        inFlight: 0,
        statusMessage: `maintenance window closed at 2027-01-15T08:00:00.500Z: ${notStarted} target${notStarted === 1 ? "" : "s"} not started`,
      });
    }
    expect(refusedAtTheClose, "claims decided before the close and refused at it").toBeGreaterThan(0);
  });
});

describe("end_time while racks are in flight", () => {
  it("stops claiming, lets the flashes finish, pauses with MAINTENANCE_WINDOW, refuses Resume; Cancel skips the rest", async () => {
    const END = T0 + 10 * MIN;
    const { run, targets } = await windowedRun({ phaseSizes: [5], maxConcurrent: 2, endTime: END });
    const clock = new TestClock(T0);
    const submitter = new FakeSubmitter({
      runs: stores.runs,
      clock: clock.read,
      behaviour: () => ({ kind: "hang" }),
    });
    const dispatcher = createDispatcher({ runs: stores.runs, submitter, clock: clockOf(clock.read) });
    const controls = createControls({ runs: stores.runs, submitter, clock: clockOf(clock.read), dispatcher });

    expect(await dispatcher.dispatchRun(run.id)).toMatchObject({ submitted: 2 });
    clock.now = END;
    expect(await dispatcher.dispatchRun(run.id)).toMatchObject({ decision: "claimed", submitted: 0 });
    expect(await stores.runs.getRun(run.id)).toMatchObject({
      status: "RUNNING",
      inFlight: 2,
      statusMessage: "maintenance window closed at 2027-01-15T08:10:00Z: waiting for 2 targets in flight",
    });
    // The flashes in flight finish after the close and record their outcome.
    for (const task of [...submitter.tasks.values()]) await submitter.finish(task.targetId, "COMPLETED");
    await submitter.settle();
    expect(await dispatcher.dispatchRun(run.id)).toMatchObject({ decision: "paused" });
    const paused = (await stores.runs.getRun(run.id)) as Run;
    expect(paused).toMatchObject({
      status: "PAUSED",
      reason: "MAINTENANCE_WINDOW",
      statusMessage: "maintenance window closed at 2027-01-15T08:10:00Z: 3 targets not started",
    });
    expect(paused.counters[0]).toEqual({ completed: 2, failed: 0, terminated: 0, skipped: 0 });

    await expect(controls.resume(run.id)).rejects.toMatchObject({
      code: "FAILED_PRECONDITION",
      message: `operation run is not in a valid state for the requested operation: ${run.id} cannot resume: maintenance window closed at 2027-01-15T08:10:00Z; cancel it or create a new run`,
    });
    const cancelled = await controls.cancel(run.id, "");
    expect(cancelled).toMatchObject({ status: "CANCELLED", statusMessage: "operation run cancelled" });
    const after = await targetsOf(run.id);
    expect(after.map((t) => [t.id, t.status, t.message])).toEqual(
      targets.map((t, i) =>
        i < 2
          ? [t.id, "COMPLETED", "task completed"]
          : [t.id, "SKIPPED", "not started: maintenance window closed"],
      ),
    );
    expect((await stores.runs.getRun(run.id))?.counters[0]).toEqual({
      completed: 2,
      failed: 0,
      terminated: 0,
      skipped: 3,
    });
  });

  it("a claim left behind by a dead pass does not hold the run after end_time: it pauses, and Cancel skips the claim too", async () => {
    const END = T0 + 10 * MIN;
    const { run, targets } = await windowedRun({ phaseSizes: [2], maxConcurrent: 2, endTime: END });
    // A pass claimed the first target a second before the end and died before submitting it.
    expect(await stores.runs.claimTarget(targets[0]!, 30_000, END - 1_000)).toBe("claimed");
    const clock = new TestClock(END + 60_000);
    const submitter = new FakeSubmitter({ runs: stores.runs, clock: clock.read });
    const dispatcher = createDispatcher({ runs: stores.runs, submitter, clock: clockOf(clock.read) });
    expect(await dispatcher.dispatchRun(run.id)).toMatchObject({ decision: "paused", submitted: 0 });
    expect(await stores.runs.getRun(run.id)).toMatchObject({
      status: "PAUSED",
      reason: "MAINTENANCE_WINDOW",
      inFlight: 1,
      statusMessage: "maintenance window closed at 2027-01-15T08:10:00Z: 2 targets not started",
    });
    expect(submitter.starts.size).toBe(0);
    const controls = createControls({ runs: stores.runs, submitter, clock: clockOf(clock.read) });
    await controls.cancel(run.id, "");
    expect((await targetsOf(run.id)).map((t) => [t.status, t.message])).toEqual([
      ["SKIPPED", "not started: maintenance window closed"],
      ["SKIPPED", "not started: maintenance window closed"],
    ]);
    expect((await stores.runs.getRun(run.id))?.inFlight).toBe(0);
  });
});
