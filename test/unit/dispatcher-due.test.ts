/**
 * The tick reads only the runs that need a pass (the due index: src/app/dispatch/schedule.ts,
 * src/domain/dispatch-due.ts), on the in-memory RunStore held to the DynamoDB one's contract
 * (test/support/contracts/run-schedule.ts), every request counted by the store. Time is the
 * test's clock.
 */
import { describe, expect, it } from "vitest";
import { createDispatcher } from "../../src/app/dispatcher.js";
import type { Run } from "../../src/domain/model.js";
import { clockOf } from "../support/clock.js";
import { uuid } from "../support/dynamodb-fixtures.js";
import { MemoryRunStore } from "../support/memory-stores.js";
import { type RunState, runInState, T0 } from "../support/run-states.js";
import { ScriptedSubmitter } from "../support/scripted-submitter.js";

const HOUR = 3_600_000;

/** `n` runs in `state` in one store, a dispatcher over them; the clock starts at T0 + 1 s. */
async function fleet(
  n: number,
  state: (i: number) => RunState,
  options: { sweepIntervalMs?: number; dueLookaheadMs?: number } = {},
) {
  const runs = new MemoryRunStore();
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = uuid(i + 1, "f1ee0000");
    const { run, targets } = runInState(id, state(i));
    await runs.createRun(run, targets);
    ids.push(id);
  }
  const clock = { now: T0 + 1000 };
  const submitter = new ScriptedSubmitter();
  const dispatcher = createDispatcher({ runs, submitter, clock: clockOf(() => clock.now), ...options });
  /** One tick; what it cost the store and which runs it submitted for. */
  const tick = async () => {
    runs.calls.reset();
    const before = submitter.submits.length;
    const result = await dispatcher.tick();
    return {
      result,
      requests: runs.calls.all(),
      byName: runs.calls.byName(),
      submittedFor: submitter.submits.slice(before).map((r) => r.runId),
    };
  };
  const target = async (runIndex: number, targetIndex: number) => {
    const listed = await runs.listTargets(ids[runIndex]!, {
      phaseFrom: 0,
      phaseTo: 9,
      page: { offset: 0, limit: 100 },
    });
    return listed!.targets[targetIndex]!;
  };
  return { runs, ids, clock, submitter, dispatcher, tick, target };
}

/** A PENDING run of two PENDING targets whose firmware operation starts at `start`. */
const startingAt = (start: number): RunState => {
  const { config } = runInState("template", { phases: [[]] }).run;
  const firmware = { ...config.operation.firmware, startTime: start };
  return {
    phases: [["PENDING", "PENDING"]],
    status: "PENDING",
    config: { operation: { ...config.operation, firmware } },
  };
};

/** Every slot taken by a flashing target, the rest PENDING: nothing to do until one ends. */
const busy = (): RunState => ({ phases: [["SUBMITTED", "SUBMITTED", "SUBMITTED", "PENDING", "PENDING"]] });

describe("dispatcher tick: the due index", () => {
  it("1,000 active runs with every slot taken: after the first tick, a tick with nothing to do costs 1 request", async () => {
    const f = await fleet(1000, busy);
    const first = await f.tick();
    // The first tick of a process passes every active run (the sweep) and schedules each: the
    // active list, then per run its read, its claim queue, its "waiting for active targets quota"
    // and the deferral that takes it out of the due index.
    expect(first.result).toEqual({ runs: 1000, failed: 0, submitted: 0 });
    expect(first.byName).toEqual({
      listActiveRunIds: 1,
      getRunForDispatch: 1000,
      listQueuedTargets: 1000,
      saveRun: 1000,
      deferRun: 1000,
    });
    for (const at of [1000, 10_000, HOUR / 2]) {
      f.clock.now = T0 + at;
      const idle = await f.tick();
      expect(idle.result, `at +${at} ms`).toEqual({ runs: 0, failed: 0, submitted: 0 });
      expect(idle.requests, JSON.stringify(idle.byName)).toBeLessThanOrEqual(10);
      expect(idle.byName).toEqual({ listDueRuns: 1 });
    }
  });

  it("an outcome makes its run due: the next tick passes that run alone and refills its slot", async () => {
    const f = await fleet(50, busy);
    await f.tick();
    const ended = await f.target(7, 0);
    await f.runs.recordOutcome(f.ids[7]!, ended.id, "COMPLETED", "done", f.clock.now);
    const next = await f.tick();
    expect(next.result).toEqual({ runs: 1, failed: 0, submitted: 1 });
    expect(next.submittedFor).toEqual([f.ids[7]]);
    expect((await f.target(7, 3)).status).toBe("SUBMITTED");
    // And it is scheduled again: the tick after has nothing to do.
    expect((await f.tick()).byName).toEqual({ listDueRuns: 1 });
  });

  it("a rack conflict's retry: not passed before its retryAt, passed and claimed at it", async () => {
    const f = await fleet(3, () => ({ phases: [["SUBMITTED", "SUBMITTED", "PENDING", "PENDING"]] }));
    f.submitter.answer = () => ({ kind: "conflict", message: "rack busy" });
    await f.tick();
    // Each run blocked its third target; the retry is due after the policy's first delay.
    const blocked = await f.target(1, 2);
    expect(blocked.status).toBe("BLOCKED");
    const retryAt = blocked.retryAt as number;
    f.submitter.answer = (request) => ({ kind: "submitted", taskId: `task-${request.targetId}` });
    f.clock.now = retryAt - 1;
    const early = await f.tick();
    expect(early.byName).toEqual({ listDueRuns: 1 });
    f.clock.now = retryAt;
    const due = await f.tick();
    expect(due.result).toEqual({ runs: 3, failed: 0, submitted: 3 });
    expect((await f.target(1, 2)).status).toBe("SUBMITTED");
  });

  it("a pass that dies after its claim: the run is passed again when the lease ends, and the target re-claimed", async () => {
    const f = await fleet(2, () => ({ phases: [["SUBMITTED", "SUBMITTED", "PENDING"]] }));
    f.submitter.answer = () => {
      throw new Error("connection reset");
    };
    await f.tick();
    const claimed = await f.target(0, 2);
    expect(claimed.status).toBe("CLAIMED");
    f.submitter.answer = (request) => ({ kind: "submitted", taskId: `task-${request.targetId}` });
    f.clock.now = (claimed.leaseExpiresAt as number) - 1;
    expect((await f.tick()).byName).toEqual({ listDueRuns: 1 });
    f.clock.now = claimed.leaseExpiresAt as number;
    const due = await f.tick();
    expect(due.result).toEqual({ runs: 2, failed: 0, submitted: 2 });
    expect((await f.target(0, 2)).status).toBe("SUBMITTED");
  });

  it("a run waiting for its start_time is passed when it comes, not before", async () => {
    const start = T0 + HOUR;
    const f = await fleet(4, () => startingAt(start));
    const first = await f.tick();
    expect(first.result).toEqual({ runs: 4, failed: 0, submitted: 0 });
    f.clock.now = start - 1;
    expect((await f.tick()).byName).toEqual({ listDueRuns: 1 });
    f.clock.now = start;
    expect((await f.tick()).result).toEqual({ runs: 4, failed: 0, submitted: 8 });
  });

  it("with dueLookaheadMs, a tick with nothing due says when the next run falls due within it (one request), and passes no run before then", async () => {
    const start = T0 + HOUR;
    const f = await fleet(2, () => startingAt(start), { dueLookaheadMs: 60_000 });
    // The first tick is the sweep: it reads the active runs, not the due index.
    expect((await f.tick()).result).toEqual({ runs: 2, failed: 0, submitted: 0 });
    f.clock.now = start - 60_001;
    expect((await f.tick()).result).toEqual({ runs: 0, failed: 0, submitted: 0 });
    for (const at of [start - 60_000, start - 1]) {
      f.clock.now = at;
      const early = await f.tick();
      expect(early.result, `at start - ${start - at} ms`).toEqual({
        runs: 0,
        failed: 0,
        submitted: 0,
        nextDueAt: start,
      });
      expect(early.byName).toEqual({ listDueRuns: 1 });
    }
    f.clock.now = start;
    expect((await f.tick()).result).toEqual({ runs: 2, failed: 0, submitted: 4 });
    // Both runs wait for their flashes now: out of the index, nothing falls due.
    expect((await f.tick()).result).toEqual({ runs: 0, failed: 0, submitted: 0 });
  });

  it("a write between a pass's read and its deferral leaves the run due: the next tick passes it", async () => {
    const f = await fleet(1, busy);
    const first = await f.target(0, 0);
    // Right before the first tick's deferral, the first flash ends.
    f.runs.interleave("deferRun", () =>
      f.runs.recordOutcome(f.ids[0]!, first.id, "COMPLETED", "done", f.clock.now),
    );
    await f.tick();
    const next = await f.tick();
    expect(next.result).toEqual({ runs: 1, failed: 0, submitted: 1 });
    expect((await f.target(0, 3)).status).toBe("SUBMITTED");
  });

  it("every sweepIntervalMs a tick passes every active run again, scheduled or not", async () => {
    const f = await fleet(20, busy, { sweepIntervalMs: 10 * 60_000 });
    await f.tick();
    f.clock.now += 10 * 60_000 - 1;
    expect((await f.tick()).byName).toEqual({ listDueRuns: 1 });
    f.clock.now += 1;
    const sweep = await f.tick();
    expect(sweep.result.runs).toBe(20);
    expect(sweep.byName.listActiveRunIds).toBe(1);
    expect(sweep.byName.getRunForDispatch).toBe(20);
  });

  it("paused and finished runs are not passed; a resume makes its run due", async () => {
    const f = await fleet(3, (i) =>
      i === 0
        ? { phases: [["PENDING"]], status: "PAUSED", reason: "OPERATOR_PAUSED" }
        : i === 1
          ? { phases: [["COMPLETED"]], status: "COMPLETED" }
          : busy(),
    );
    const first = await f.tick();
    expect(first.result.runs).toBe(1);
    const paused = (await f.runs.getRun(f.ids[0]!)) as Run;
    const resumed = {
      ...paused,
      status: "RUNNING" as const,
      reason: "NONE" as const,
      updatedAt: paused.updatedAt + 1,
    };
    expect(await f.runs.saveRun(resumed, paused.updatedAt)).toBe("saved");
    const next = await f.tick();
    expect(next.result).toEqual({ runs: 1, failed: 0, submitted: 1 });
    expect(next.submittedFor).toEqual([f.ids[0]]);
  });
});
