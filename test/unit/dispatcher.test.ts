/**
 * The dispatcher's decisions as tables, on the in-memory RunStore (held to the same contract as the
 * DynamoDB one) and a scripted submitter: the decision order, free slots, the batch claim and its
 * one-by-one fallback, submission outcomes, status messages, concurrent writers, coalesced passes
 * and the tick. Whole runs through the real store stay in test/integration/dispatcher-decisions.
 */

import { describe, expect, it } from "vitest";
import { createControls } from "../../src/app/controls.js";
import { createDispatcher, type PassResult } from "../../src/app/dispatcher.js";
import type { DispatchMetricName, Metrics } from "../../src/app/observability.js";
import type { Run, SafetyGate, Target } from "../../src/domain/model.js";
import { CLAIM_LEASE_MS } from "../../src/domain/target-machine.js";
import { clockOf } from "../support/clock.js";
import { uuid } from "../support/dynamodb-fixtures.js";
import { MemoryRunStore } from "../support/memory-stores.js";
import { type RunState, runInState, T0 } from "../support/run-states.js";
import { ScriptedSubmitter, taskIdFor } from "../support/scripted-submitter.js";

const RUN = uuid(1, "d15a0000");
const HOUR = 3_600_000;
const FAIL_ONE: SafetyGate = { kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 1 };
const key = (t: Target) => `operation-run-target:${t.id}`;

function recordingMetrics() {
  const added: [DispatchMetricName, number][] = [];
  let flushes = 0;
  const sink: Metrics = {
    add: (name, value) => void added.push([name, value]),
    flush: () => void flushes++,
  };
  return { sink, added, flushes: () => flushes };
}

/** One run in `state` in a fresh store, a dispatcher and controls over it; call counts start at 0. */
async function world(state: RunState, options: { store?: MemoryRunStore; at?: number } = {}) {
  const runs = options.store ?? new MemoryRunStore();
  const { run, targets } = runInState(RUN, state);
  await runs.createRun(run, targets);
  const clock = { now: T0 + (options.at ?? 1000) };
  const submitter = new ScriptedSubmitter();
  const logs: string[] = [];
  const metrics = recordingMetrics();
  const deps = {
    runs,
    submitter,
    clock: clockOf(() => clock.now),
    log: (line: string) => void logs.push(line),
  };
  const dispatcher = createDispatcher({ ...deps, metrics: metrics.sink });
  const controls = createControls(deps);
  runs.calls.reset();
  return {
    runs,
    targets,
    clock,
    submitter,
    logs,
    metrics,
    dispatcher,
    controls,
    pass: () => dispatcher.dispatchRun(RUN),
    stored: async () => (await runs.getRun(RUN)) as Run,
    target: async (i: number) => (await runs.getTarget(RUN, targets[i]!.id)) as Target,
    statuses: () => Promise.all(targets.map(async (t) => (await runs.getTarget(RUN, t.id))?.status)),
  };
}

const passResult = (decision: PassResult["decision"], rest: Partial<PassResult> = {}): PassResult => ({
  runId: RUN,
  decision,
  submitted: 0,
  blocked: 0,
  failed: 0,
  ...rest,
});

describe("dispatcher: the decision order (finish, conflict timeout, gates, phase boundary, claim)", () => {
  interface Row {
    state: RunState;
    /** Clock offset from T0 (default 1 s). */
    at?: number;
    decision: PassResult["decision"];
    run: Pick<Run, "status" | "reason" | "currentPhaseIndex"> & {
      statusMessage: string | ((t: Target[]) => string);
    };
    submitted?: number;
  }
  const rows: [string, Row][] = [
    [
      "every target has an outcome, none failed → COMPLETED 'operation run completed'",
      {
        state: { phases: [["COMPLETED", "COMPLETED"], ["SKIPPED"]] },
        decision: "finished",
        run: {
          status: "COMPLETED",
          reason: "NONE",
          statusMessage: "operation run completed",
          currentPhaseIndex: 0,
        },
      },
    ],
    [
      "every target has an outcome, one terminated → COMPLETED_WITH_FAILURES",
      {
        state: { phases: [["COMPLETED", "TERMINATED"]] },
        decision: "finished",
        run: {
          status: "COMPLETED_WITH_FAILURES",
          reason: "NONE",
          statusMessage: "operation run completed with failed targets",
          currentPhaseIndex: 0,
        },
      },
    ],
    [
      "every target failed or was terminated → FAILED 'operation run failed'",
      {
        state: { phases: [["FAILED", "TERMINATED"]] },
        decision: "finished",
        run: {
          status: "FAILED",
          reason: "NONE",
          statusMessage: "operation run failed",
          currentPhaseIndex: 0,
        },
      },
    ],
    [
      "finish comes before a tripped gate: the last targets failing together end the run FAILED",
      {
        state: { phases: [["FAILED", "FAILED"]], config: { safetyGates: [FAIL_ONE] } },
        decision: "finished",
        run: {
          status: "FAILED",
          reason: "NONE",
          statusMessage: "operation run failed",
          currentPhaseIndex: 0,
        },
      },
    ],
    [
      "the conflict timeout comes before a tripped gate: blocked for retry_timeout → PAUSED CONFLICT_RETRY_TIMEOUT",
      {
        state: { phases: [["BLOCKED", "FAILED", "PENDING"]], config: { safetyGates: [FAIL_ONE] } },
        at: HOUR,
        decision: "paused",
        run: {
          status: "PAUSED",
          reason: "CONFLICT_RETRY_TIMEOUT",
          statusMessage: (t) => `target ${t[0]!.id} blocked by rack conflict for 1h0m0s`,
          currentPhaseIndex: 0,
        },
      },
    ],
    [
      "1 ms short of retry_timeout the blocked target is due for retry and is claimed with the rest",
      {
        state: { phases: [["BLOCKED", "PENDING"]] },
        at: HOUR - 1,
        decision: "claimed",
        run: {
          status: "RUNNING",
          reason: "NONE",
          statusMessage: "submitted 2 operation run targets",
          currentPhaseIndex: 0,
        },
        submitted: 2,
      },
    ],
    [
      "a tripped gate comes before the phase boundary → PAUSED SAFETY_GATE with the gate's message",
      {
        state: {
          phases: [["FAILED", "COMPLETED"], ["PENDING"]],
          config: { safetyGates: [FAIL_ONE], autoAdvance: false },
        },
        decision: "paused",
        run: {
          status: "PAUSED",
          reason: "SAFETY_GATE",
          statusMessage:
            "failure_count safety gate tripped for current_phase: 1/2 targets failed (threshold 1)",
          currentPhaseIndex: 0,
        },
      },
    ],
    [
      "a complete phase without auto-advance → PAUSED PHASE_GATE 'waiting for phase advance'",
      {
        state: { phases: [["COMPLETED"], ["PENDING"]], config: { autoAdvance: false } },
        decision: "paused",
        run: {
          status: "PAUSED",
          reason: "PHASE_GATE",
          statusMessage: "waiting for phase advance",
          currentPhaseIndex: 0,
        },
      },
    ],
    [
      "a complete phase with auto-advance → the next phase, claimed in the same pass",
      {
        state: { phases: [["COMPLETED"], ["PENDING", "PENDING"]], config: { autoAdvance: true } },
        decision: "claimed",
        run: {
          status: "RUNNING",
          reason: "NONE",
          statusMessage: "submitted 2 operation run targets",
          currentPhaseIndex: 1,
        },
        submitted: 2,
      },
    ],
    [
      "a PENDING run with work → RUNNING and a claim",
      {
        state: { phases: [["PENDING", "PENDING"]], status: "PENDING" },
        decision: "claimed",
        run: {
          status: "RUNNING",
          reason: "NONE",
          statusMessage: "submitted 2 operation run targets",
          currentPhaseIndex: 0,
        },
        submitted: 2,
      },
    ],
    [
      "a current phase with no planned targets (a corrupted plan) → FAILED, the phase counted from 1",
      {
        state: { phases: [[], ["PENDING"]] },
        decision: "finished",
        run: {
          status: "FAILED",
          reason: "NONE",
          statusMessage: "operation run phase 1 has no targets; persisted phase plan is invalid",
          currentPhaseIndex: 0,
        },
      },
    ],
  ];

  it.each(rows)("%s", async (_, row) => {
    const w = await world(row.state, { ...(row.at === undefined ? {} : { at: row.at }) });
    const { statusMessage, ...fields } = row.run;
    const message = typeof statusMessage === "function" ? statusMessage(w.targets) : statusMessage;
    expect(await w.pass()).toEqual(
      passResult(row.decision, { status: row.run.status, submitted: row.submitted ?? 0 }),
    );
    const run = await w.stored();
    expect(run).toMatchObject({ ...fields, statusMessage: message });
    if (row.decision === "finished") expect(run.finishedAt).toBe(w.clock.now);
    if (row.decision !== "claimed") {
      expect(w.submitter.submits).toEqual([]);
      expect(w.runs.calls.of("claimTargets") + w.runs.calls.of("claimTarget")).toBe(0);
    }
  });

  it("a PENDING run's first claim sets startedAt to now; later passes keep it", async () => {
    const w = await world({ phases: [["PENDING", "PENDING"]], status: "PENDING", maxConcurrent: 1 });
    await w.pass();
    const started = w.clock.now;
    expect((await w.stored()).startedAt).toBe(started);
    w.clock.now += 5000;
    await w.pass();
    expect((await w.stored()).startedAt).toBe(started);
  });

  it.each([
    ["PAUSED", "OPERATOR_PAUSED"],
    ["PAUSED", "PHASE_GATE"],
    ["COMPLETED", "NONE"],
    ["CANCELLED", "NONE"],
  ] as const)(
    "a %s (%s) run is not dispatched: 'inactive', nothing read past the run, nothing written",
    async (status, reason) => {
      const w = await world({ phases: [["PENDING"]], status, reason });
      expect(await w.pass()).toEqual(passResult("inactive", { status }));
      expect(w.runs.writes()).toBe(0);
      expect(w.runs.calls.of("listQueuedTargets")).toBe(0);
    },
  );

  it("an unknown run is 'not-found' and nothing is written", async () => {
    const w = await world({ phases: [["PENDING"]] });
    expect(await w.dispatcher.dispatchRun(uuid(2, "d15a0000"))).toEqual({
      ...passResult("not-found"),
      runId: uuid(2, "d15a0000"),
    });
    expect(w.runs.writes()).toBe(0);
  });
});

describe("dispatcher: free slots and the batch claim", () => {
  it("max 3 with one SUBMITTED: ONE batch claim of the next two PENDING targets in sequence order, no single claims", async () => {
    const w = await world({ phases: [["SUBMITTED", "PENDING", "PENDING", "PENDING"]], maxConcurrent: 3 });
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 2 }));
    expect(w.runs.calls.of("claimTargets")).toBe(1);
    expect(w.runs.calls.of("claimTarget")).toBe(0);
    expect(w.submitter.submittedTargets()).toEqual([w.targets[1]!.id, w.targets[2]!.id]);
    expect(await w.statuses()).toEqual(["SUBMITTED", "SUBMITTED", "SUBMITTED", "PENDING"]);
    expect((await w.stored()).inFlight).toBe(3);
  });

  it("every slot taken: nothing claimed, 'waiting for active targets quota' written once; the next pass writes nothing", async () => {
    const w = await world({ phases: [["SUBMITTED", "SUBMITTED", "PENDING"]], maxConcurrent: 2 });
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING" }));
    expect((await w.stored()).statusMessage).toBe("waiting for active targets quota");
    expect(w.runs.calls.of("claimTargets") + w.runs.calls.of("claimTarget")).toBe(0);
    w.runs.calls.reset();
    w.clock.now += 1000;
    await w.pass();
    expect(w.runs.writes()).toBe(0);
  });

  it("an expired claim is re-claimed in place with every slot taken, and submitted again under its key (not as a first attempt: its task may exist)", async () => {
    const w = await world({ phases: [["CLAIMED", "PENDING"]], maxConcurrent: 1 }, { at: CLAIM_LEASE_MS });
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 1 }));
    expect(w.submitter.submits.map((r) => [r.idempotencyKey, r.firstAttempt])).toEqual([
      [key(w.targets[0]!), undefined],
    ]);
    expect(await w.statuses()).toEqual(["SUBMITTED", "PENDING"]);
    expect((await w.stored()).inFlight).toBe(1);
  });

  it("a claim under a live lease is left alone (another pass is submitting it)", async () => {
    const w = await world({ phases: [["CLAIMED", "PENDING"]], maxConcurrent: 1 }, { at: CLAIM_LEASE_MS - 1 });
    await w.pass();
    expect(w.submitter.submits).toEqual([]);
    expect(await w.statuses()).toEqual(["CLAIMED", "PENDING"]);
  });

  it("a BLOCKED target whose retry is due goes before later PENDING ones and takes a slot; one not yet due waits and is counted", async () => {
    const w = await world(
      {
        phases: [["BLOCKED", "BLOCKED", "PENDING", "PENDING"]],
        maxConcurrent: 2,
        target: (i) => (i === 1 ? { retryAt: T0 + 10 * 60_000 } : {}),
      },
      { at: 60_000 },
    );
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 2 }));
    expect(w.submitter.submittedTargets()).toEqual([w.targets[0]!.id, w.targets[2]!.id]);
    // Ready were 0, 2 and 3; the batch holds only as many as there are free slots.
    expect(w.runs.calls.of("claimTargets")).toBe(1);
    expect(w.runs.calls.of("claimTarget")).toBe(0);
    expect((await w.stored()).statusMessage).toBe(
      "submitted 2 operation run targets; 1 target waiting on rack conflicts",
    );
  });

  it("100 ready targets and 100 slots: one batch claim of 98, then the last two one by one", async () => {
    const w = await world({
      phases: [Array.from({ length: 100 }, () => "PENDING" as const)],
      maxConcurrent: 100,
    });
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 100 }));
    expect(w.runs.calls.of("claimTargets")).toBe(1);
    expect(w.runs.calls.of("claimTarget")).toBe(2);
    expect(new Set(w.submitter.submittedTargets()).size).toBe(100);
    expect((await w.stored()).inFlight).toBe(100);
  });

  it("the batch lost to a rival's claim ('lost-race') → one by one over the same list: the rival's target skipped", async () => {
    const w = await world({
      phases: [["PENDING", "PENDING", "PENDING", "PENDING", "PENDING"]],
      maxConcurrent: 3,
    });
    w.runs.interleave("claimTargets", () => w.runs.claimTarget(w.targets[1]!, CLAIM_LEASE_MS, w.clock.now));
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 2 }));
    expect(w.submitter.submittedTargets()).toEqual([w.targets[0]!.id, w.targets[2]!.id]);
    expect(await w.statuses()).toEqual(["SUBMITTED", "CLAIMED", "SUBMITTED", "PENDING", "PENDING"]);
    expect((await w.stored()).inFlight).toBe(3);
  });

  it("the batch refused because a rival took a slot ('slots-full') → one by one until the store says the slots are full", async () => {
    // Ready as read: 0, 1, 2 (PENDING up to the 3 free slots) and 4 (BLOCKED, due).
    const w = await world(
      { phases: [["PENDING", "PENDING", "PENDING", "PENDING", "BLOCKED"]], maxConcurrent: 3 },
      { at: 60_000 },
    );
    w.runs.interleave("claimTargets", () => w.runs.claimTarget(w.targets[3]!, CLAIM_LEASE_MS, w.clock.now));
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 2 }));
    expect(w.submitter.submittedTargets()).toEqual([w.targets[0]!.id, w.targets[1]!.id]);
    // The rival's claim, then ours: 0 and 1 claimed, 2 'slots-full', and 4 is not even tried.
    expect(w.runs.calls.of("claimTarget")).toBe(4);
    expect(await w.statuses()).toEqual(["SUBMITTED", "SUBMITTED", "PENDING", "CLAIMED", "BLOCKED"]);
  });

  it("an operator pause between the pass's read and its claim ('run-not-active'): nothing claimed, no one-by-one", async () => {
    const w = await world({ phases: [["PENDING", "PENDING"]] });
    w.runs.interleave("claimTargets", () => w.controls.pause(RUN));
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING" }));
    expect(w.runs.calls.of("claimTarget")).toBe(0);
    expect(w.submitter.submits).toEqual([]);
    expect(await w.stored()).toMatchObject({
      status: "PAUSED",
      reason: "OPERATOR_PAUSED",
      statusMessage: "operation run paused by operator",
      inFlight: 0,
    });
  });
});

describe("dispatcher: a wake-up's reads", () => {
  /** The order of the pass's reads: a read's start, its end, and the queue asked for (phase, PENDING limit). */
  function traceReads(w: Awaited<ReturnType<typeof world>>): string[] {
    const reads: string[] = [];
    const getRun = w.runs.getRunForDispatch.bind(w.runs);
    const listQueued = w.runs.listQueuedTargets.bind(w.runs);
    w.runs.getRunForDispatch = async (id) => {
      reads.push("run…");
      const run = await getRun(id);
      reads.push("…run");
      return run;
    };
    w.runs.listQueuedTargets = async (id, phase, limit) => {
      reads.push(`queue(phase ${phase}, ${limit} pending)`);
      return listQueued(id, phase, limit);
    };
    return reads;
  }

  it("a wake-up's pass of a run seen before reads its queue beside the run (phase and limit as last seen); the first pass and a tick's read in turn, for the free slots", async () => {
    const w = await world({ phases: [["SUBMITTED", "PENDING", "PENDING", "PENDING"]], maxConcurrent: 3 });
    const reads = traceReads(w);
    await w.pass();
    expect(reads).toEqual(["run…", "…run", "queue(phase 0, 2 pending)"]);
    await w.runs.recordOutcome(RUN, w.targets[0]!.id, "COMPLETED", "done", w.clock.now);
    reads.length = 0;
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 1 }));
    expect(reads).toEqual(["run…", "queue(phase 0, 3 pending)", "…run"]);
    await w.runs.recordOutcome(RUN, w.targets[1]!.id, "COMPLETED", "done", w.clock.now);
    reads.length = 0;
    await w.dispatcher.tick();
    expect(reads).toEqual(["run…", "…run", "queue(phase 0, 1 pending)"]);
    expect(await w.statuses()).toEqual(["COMPLETED", "COMPLETED", "SUBMITTED", "SUBMITTED"]);
    expect((await w.stored()).inFlight).toBe(2);
  });

  it("a run that moved to another phase since it was seen: the queue guessed is dropped, the new phase's read and claimed", async () => {
    const w = await world({
      phases: [
        ["SUBMITTED", "PENDING"],
        ["PENDING", "PENDING"],
      ],
      maxConcurrent: 2,
    });
    const reads = traceReads(w);
    await w.pass();
    expect(await w.statuses()).toEqual(["SUBMITTED", "SUBMITTED", "PENDING", "PENDING"]);
    // Another process ended phase 0 and opened phase 1.
    for (const t of w.targets.slice(0, 2))
      await w.runs.recordOutcome(RUN, t.id, "COMPLETED", "done", w.clock.now);
    const run = await w.stored();
    expect(
      await w.runs.saveRun({ ...run, currentPhaseIndex: 1, updatedAt: run.updatedAt + 1 }, run.updatedAt),
    ).toBe("saved");
    reads.length = 0;
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 2 }));
    expect(reads).toEqual(["run…", "queue(phase 0, 2 pending)", "…run", "queue(phase 1, 2 pending)"]);
    expect(w.submitter.submittedTargets().slice(-2)).toEqual([w.targets[2]!.id, w.targets[3]!.id]);
  });
});

describe("dispatcher: submission outcomes", () => {
  it("submitted: the request carries the key, the target's phase, first attempt (it was PENDING), the rack, its components and the frozen template; the target is SUBMITTED", async () => {
    const w = await world({ phases: [["PENDING"]] });
    await w.pass();
    const t = w.targets[0]!;
    const run = await w.stored();
    expect(w.submitter.submits).toEqual([
      {
        idempotencyKey: key(t),
        runId: RUN,
        targetId: t.id,
        phaseIndex: 0,
        firstAttempt: true,
        rackId: t.rackId,
        componentsByType: t.componentsByType,
        template: run.config.operation.firmware,
      },
    ]);
    expect(await w.target(0)).toMatchObject({
      status: "SUBMITTED",
      taskId: taskIdFor(t.id),
      message: "submitted",
    });
    expect(run.inFlight).toBe(1);
  });

  it("conflict: BLOCKED with the submitter's text and the slot released; the delay doubles per attempt up to the max, attempts and first block kept across re-claims", async () => {
    const w = await world({
      phases: [["PENDING"]],
      config: { conflictRetry: { retryTimeoutMs: HOUR, initialRetryDelayMs: 1000, maxRetryDelayMs: 4000 } },
    });
    w.submitter.answer = () => ({ kind: "conflict", message: "rack already has a conflicting task" });
    const firstBlock = w.clock.now;
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 4; attempt++) {
      expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", blocked: 1 }));
      const t = await w.target(0);
      expect(t).toMatchObject({
        status: "BLOCKED",
        message: "rack already has a conflicting task",
        conflictAttempts: attempt,
        firstBlockedAt: firstBlock,
      });
      expect(t.leaseExpiresAt).toBeUndefined();
      delays.push((t.retryAt as number) - w.clock.now);
      expect((await w.stored()).inFlight).toBe(0);
      w.clock.now = t.retryAt as number;
    }
    expect(delays).toEqual([1000, 2000, 4000, 4000]);
    expect((await w.stored()).statusMessage).toBe("1 target waiting on rack conflicts");
  });

  it("rejected: FAILED with the submitter's text, the slot released, the phase's failed counter +1", async () => {
    const w = await world({ phases: [["PENDING", "PENDING"]], maxConcurrent: 1 });
    w.submitter.answer = () => ({ kind: "rejected", message: "rack has no BMC" });
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", failed: 1 }));
    expect(await w.target(0)).toMatchObject({ status: "FAILED", message: "rack has no BMC" });
    const run = await w.stored();
    expect(run.inFlight).toBe(0);
    expect(run.counters[0]).toEqual({ completed: 0, failed: 1, terminated: 0, skipped: 0 });
    expect((await w.target(1)).status).toBe("PENDING");
  });

  it("a submit that throws leaves the target CLAIMED and is logged; once the lease is over a pass re-claims it and submits under the same key", async () => {
    const w = await world({ phases: [["PENDING"]] });
    w.submitter.answer = () => {
      throw new Error("step functions unavailable");
    };
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING" }));
    const t = w.targets[0]!;
    expect(await w.target(0)).toMatchObject({
      status: "CLAIMED",
      leaseExpiresAt: w.clock.now + CLAIM_LEASE_MS,
    });
    expect(w.logs).toContain(
      `warn target submission failed; retried after the claim lease runId=${RUN} targetId=${t.id} error=Error: step functions unavailable`,
    );
    w.submitter.answer = (r) => ({ kind: "submitted", taskId: taskIdFor(r.targetId) });
    const claimedAt = w.clock.now;
    w.clock.now = claimedAt + CLAIM_LEASE_MS - 1;
    await w.pass();
    expect(w.submitter.submits).toHaveLength(1);
    w.clock.now = claimedAt + CLAIM_LEASE_MS;
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 1 }));
    expect(w.submitter.submits.map((r) => [r.idempotencyKey, r.firstAttempt])).toEqual([
      [key(t), true],
      [key(t), undefined],
    ]);
    expect(await w.stored()).toMatchObject({ inFlight: 1 });
    expect((await w.target(0)).status).toBe("SUBMITTED");
  });

  it("recordSubmitted lost to a cancel that skipped the CLAIMED target: the task just started is stopped", async () => {
    const w = await world({ phases: [["PENDING"]] });
    w.submitter.answer = async (r) => {
      await w.controls.cancel(RUN, "window closed");
      return { kind: "submitted", taskId: taskIdFor(r.targetId) };
    };
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 1 }));
    const t = w.targets[0]!;
    expect(w.submitter.cancels).toEqual([
      { taskId: taskIdFor(t.id), reason: "operation run target was skipped before its task was recorded" },
    ]);
    const target = await w.target(0);
    expect(target).toMatchObject({ status: "SKIPPED", message: "not started: operation run cancelled" });
    expect(target.taskId).toBeUndefined();
    expect(await w.stored()).toMatchObject({
      status: "CANCELLED",
      statusMessage: "operation run cancelled: window closed",
    });
  });

  it("recordSubmitted lost to a task that already ended: nothing is stopped and the outcome stands", async () => {
    const w = await world({ phases: [["PENDING"]] });
    w.submitter.answer = async (r) => {
      await w.runs.recordOutcome(RUN, r.targetId, "COMPLETED", "task completed", w.clock.now);
      return { kind: "submitted", taskId: taskIdFor(r.targetId) };
    };
    await w.pass();
    expect(w.submitter.cancels).toEqual([]);
    expect(await w.target(0)).toMatchObject({ status: "COMPLETED", message: "task completed" });
    expect(await w.stored()).toMatchObject({
      inFlight: 0,
      counters: [{ completed: 1, failed: 0, terminated: 0, skipped: 0 }],
    });
  });
});

describe("dispatcher: the run's status message after a claim", () => {
  type Answer = "submitted" | "conflict" | "rejected";
  it.each([
    [["submitted"], "submitted 1 operation run target"],
    [["submitted", "submitted"], "submitted 2 operation run targets"],
    [["submitted", "conflict"], "submitted 1 operation run target; 1 target waiting on rack conflicts"],
    [["conflict", "conflict"], "2 targets waiting on rack conflicts"],
    [["rejected"], "operation run resumed"],
  ] as [Answer[], string][])("answers %j → %j", async (answers, message) => {
    const w = await world({
      phases: [answers.map(() => "PENDING" as const)],
      statusMessage: "operation run resumed",
    });
    const byTarget = new Map(w.targets.map((t, i) => [t.id, answers[i]]));
    w.submitter.answer = (r) => {
      const answer = byTarget.get(r.targetId);
      if (answer === "submitted") return { kind: "submitted", taskId: taskIdFor(r.targetId) };
      return { kind: answer === "conflict" ? "conflict" : "rejected", message: "no" };
    };
    await w.pass();
    expect((await w.stored()).statusMessage).toBe(message);
  });

  it("a control that wrote during the submissions wins: no message is set on the paused run", async () => {
    const w = await world({ phases: [["PENDING"]] });
    w.submitter.answer = async (r) => {
      await w.controls.pause(RUN);
      return { kind: "submitted", taskId: taskIdFor(r.targetId) };
    };
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 1 }));
    expect(await w.stored()).toMatchObject({
      status: "PAUSED",
      reason: "OPERATOR_PAUSED",
      statusMessage: "operation run paused by operator",
    });
  });
});

describe("dispatcher: concurrent writers and coalesced passes", () => {
  it("an operator pause between the pass's read and its write: 'stale', read again, and the pass ends 'inactive'", async () => {
    const w = await world({ phases: [["PENDING"]], status: "PENDING" });
    w.runs.interleave("saveRun", () => w.controls.pause(RUN));
    expect(await w.pass()).toEqual(passResult("inactive", { status: "PAUSED" }));
    expect(w.submitter.submits).toEqual([]);
  });

  it.each([
    [
      "5 stale writes in a row: the sixth try saves and the pass claims",
      5,
      passResult("claimed", { status: "RUNNING", submitted: 1 }),
    ],
    ["6 stale writes in a row: the pass gives up 'contended' and logs it", 6, passResult("contended")],
  ])("%s", async (_, stale, result) => {
    const w = await world({ phases: [["PENDING"]], status: "PENDING" });
    const rival = async () => {
      const run = (await w.runs.getRun(RUN)) as Run;
      await w.runs.saveRun({ ...run, statusMessage: "rival", updatedAt: run.updatedAt + 1 }, run.updatedAt);
    };
    for (let i = 0; i < stale; i++) w.runs.interleave("saveRun", rival);
    expect(await w.pass()).toEqual(result);
    const giveUp = `warn dispatch pass gave up after repeated concurrent writes runId=${RUN}`;
    if (result.decision === "contended") {
      // Six tries of its own (each beaten by a rival's), then it stops.
      expect(w.runs.calls.of("saveRun")).toBe(12);
      expect(w.logs).toContain(giveUp);
      expect(w.submitter.submits).toEqual([]);
    } else {
      expect(w.logs).not.toContain(giveUp);
    }
  });

  it("calls made while a pass runs share ONE queued pass: three calls, two passes", async () => {
    const w = await world({ phases: [["PENDING", "PENDING", "PENDING"]], maxConcurrent: 1 });
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered = () => {};
    const inside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    w.runs.interleave("getRunForDispatch", async () => {
      entered();
      await gate;
    });
    const first = w.pass();
    await inside;
    const second = w.pass();
    const third = w.pass();
    expect(third).toBe(second);
    expect(second).not.toBe(first);
    release();
    await Promise.all([first, second, third]);
    expect(w.runs.calls.of("getRunForDispatch")).toBe(2);
  });
});

describe("dispatcher: tick", () => {
  class FailingRunStore extends MemoryRunStore {
    constructor(private readonly broken: string) {
      super();
    }
    override async getRunForDispatch(runId: string) {
      if (runId === this.broken) throw new Error("connection reset");
      return super.getRunForDispatch(runId);
    }
  }

  it("passes every PENDING and RUNNING run, skips paused and finished ones, and counts a failing pass without stopping the others", async () => {
    const ids = [1, 2, 3, 4, 5].map((n) => uuid(n, "71c00000"));
    const store = new FailingRunStore(ids[2]!);
    const states: RunState[] = [
      { phases: [["PENDING", "PENDING"]], status: "PENDING" },
      { phases: [["SUBMITTED", "PENDING"]] },
      { phases: [["PENDING"]] },
      { phases: [["PENDING"]], status: "PAUSED", reason: "OPERATOR_PAUSED" },
      { phases: [["COMPLETED"]], status: "COMPLETED" },
    ];
    for (const [i, state] of states.entries()) {
      const { run, targets } = runInState(ids[i]!, state);
      await store.createRun(run, targets);
    }
    const logs: string[] = [];
    const submitter = new ScriptedSubmitter();
    const dispatcher = createDispatcher({
      runs: store,
      submitter,
      clock: clockOf(() => T0),
      log: (l) => void logs.push(l),
    });
    expect(await dispatcher.tick()).toEqual({ runs: 3, failed: 1, submitted: 3 });
    expect(new Set(submitter.submits.map((r) => r.runId))).toEqual(new Set([ids[0], ids[1]]));
    expect(logs).toContain(`error dispatch pass failed runId=${ids[2]} error=Error: connection reset`);
  });
});

describe("dispatcher: metrics", () => {
  it("each pass flushes once: TargetsDispatched, RackConflicts and DispatchLatencyMs; GateTrips when a gate pauses the run", async () => {
    const w = await world({ phases: [["PENDING", "PENDING", "PENDING"]] });
    w.submitter.answer = (r) =>
      r.targetId === w.targets[2]!.id
        ? { kind: "conflict", message: "busy" }
        : { kind: "submitted", taskId: taskIdFor(r.targetId) };
    await w.pass();
    expect(w.metrics.added).toEqual([
      ["TargetsDispatched", 2],
      ["RackConflicts", 1],
      ["DispatchLatencyMs", 0],
    ]);
    expect(w.metrics.flushes()).toBe(1);

    const gated = await world({ phases: [["FAILED", "PENDING"]], config: { safetyGates: [FAIL_ONE] } });
    await gated.pass();
    expect(gated.metrics.added).toEqual([
      ["GateTrips", 1],
      ["DispatchLatencyMs", 0],
    ]);
    expect(gated.logs).toContain(
      `info operation run state changed runId=${RUN} status=PAUSED reason=SAFETY_GATE statusMessage=failure_count safety gate tripped for current_phase: 1/2 targets failed (threshold 1)`,
    );
  });
});

describe("dispatcher: the failure-domain spread (1 per row)", () => {
  const ROWS = ["A", "A", "A", "B"];
  const state: RunState = {
    phases: [["SUBMITTED", "PENDING", "PENDING", "PENDING"]],
    maxConcurrent: 3,
    config: { failureDomainSpread: { kind: "ROW", maxInFlight: 1 } },
    target: (i) => ({ failureDomain: ROWS[i] as string }),
  };

  async function spreadWorld(stale: boolean) {
    const store = new MemoryRunStore();
    const w = await world(state, { store });
    // The store's run holds row A (target 0 in flight), as a claim of it would have left it.
    const { run, targets } = runInState(RUN, state);
    run.domainInFlight = { A: 1 };
    const fresh = new MemoryRunStore();
    await fresh.createRun(run, targets);
    const getRun = fresh.getRun.bind(fresh);
    // A stale read: the pass decides as if row A were free; only the claim's condition knows.
    if (stale) {
      const getRunForDispatch = fresh.getRunForDispatch.bind(fresh);
      fresh.getRunForDispatch = async (id: string) => {
        const read = await getRunForDispatch(id);
        if (read !== undefined) delete read.run.domainInFlight;
        return read;
      };
    }
    const dispatcher = createDispatcher({
      runs: fresh,
      submitter: w.submitter,
      clock: clockOf(() => w.clock.now),
    });
    fresh.calls.reset();
    return { ...w, fresh, getRun, pass: () => dispatcher.dispatchRun(RUN) };
  }

  it("row A full as read: the pass skips A's racks and claims B's, in one batch", async () => {
    const w = await spreadWorld(false);
    expect(await w.pass()).toMatchObject({ decision: "claimed", submitted: 1 });
    expect(w.submitter.submittedTargets()).toEqual([w.targets[3]?.id]);
    expect(w.fresh.calls.of("claimTargets")).toBe(1);
    expect(w.fresh.calls.of("claimTarget")).toBe(0);
    expect((await w.getRun(RUN))?.domainInFlight).toEqual({ A: 1, B: 1 });
  });

  it("row A full but read free: the batch is refused, one by one A's rack meets domain-full, the rest of A waits, B is claimed", async () => {
    const w = await spreadWorld(true);
    expect(await w.pass()).toMatchObject({ decision: "claimed", submitted: 1 });
    expect(w.submitter.submittedTargets()).toEqual([w.targets[3]?.id]);
    // The batch [A1, B] refused; then A1 refused for its row and A2 not tried; then B claimed.
    expect(w.fresh.calls.of("claimTargets")).toBe(1);
    expect(w.fresh.calls.of("claimTarget")).toBe(2);
    const statuses = await Promise.all(
      w.targets.map(async (t) => (await w.fresh.getTarget(RUN, t.id))?.status),
    );
    expect(statuses).toEqual(["SUBMITTED", "PENDING", "PENDING", "SUBMITTED"]);
    expect((await w.getRun(RUN))?.domainInFlight).toEqual({ A: 1, B: 1 });
  });
});
