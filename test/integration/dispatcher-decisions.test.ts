/**
 * The dispatcher's decision paths against moto: phase gates and advance, safety gates and resume,
 * final statuses, cancel, quota and rack-conflict backoff up to CONFLICT_RETRY_TIMEOUT. Exact
 * statuses, reasons and messages as the reference words them.
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createDynamoStores, type DynamoStores } from "../../src/adapters/dynamodb/index.js";
import { type Controls, createControls } from "../../src/app/controls.js";
import { createDispatcher, type Dispatcher } from "../../src/app/dispatcher.js";
import type { DispatchMetricName, Metrics } from "../../src/app/observability.js";
import type { Run, RunConfig, SafetyGate, Target } from "../../src/domain/model.js";
import { runWithTargets, uuid } from "../support/dynamodb-fixtures.js";
import {
  conflictMessage,
  eventually,
  FakeSubmitter,
  type RackBehaviour,
  TestClock,
  waitMs,
} from "../support/fake-submitter.js";
import { freshTables, testClient } from "../support/moto.js";

let client: DynamoDBClient;
let drop: () => Promise<void>;
let stores: DynamoStores;
let seq = 0;

beforeAll(async () => {
  client = testClient(inject("awsEndpoint"));
  const tables = await freshTables(client, "disp");
  drop = tables.drop;
  stores = createDynamoStores(client, tables.names);
});
afterAll(async () => {
  await drop();
  client.destroy();
});

interface Setup {
  run: Run;
  targets: Target[];
  clock: TestClock;
  submitter: FakeSubmitter;
  dispatcher: Dispatcher;
  controls: Controls;
  /** What the dispatcher's passes added to each metric, summed (the EMF line's figures). */
  metrics: Map<DispatchMetricName, number>;
  /** What the controls logged (lineLogger lines: `level message key=value …`). */
  logged: string[];
  /** Waits for fake tasks that end on their own, then settles their outcome writes. */
  settle: () => Promise<void>;
  get: () => Promise<Run>;
  target: (i: number) => Promise<Target>;
}

async function setup(options: {
  phaseSizes: number[];
  maxConcurrent?: number;
  gates?: SafetyGate[];
  autoAdvance?: boolean;
  conflictRetry?: RunConfig["conflictRetry"];
  behaviour?: (rackIndex: number) => RackBehaviour;
  cancelWaitsFor?: Promise<unknown>;
  cancelBudgetMs?: number;
}): Promise<Setup> {
  const id = uuid(++seq, "d1000000");
  const { run, targets } = runWithTargets(id, {
    phaseSizes: options.phaseSizes,
    maxConcurrent: options.maxConcurrent ?? 3,
  });
  run.config.safetyGates = options.gates ?? [];
  run.config.autoAdvance = options.autoAdvance ?? true;
  if (options.conflictRetry !== undefined) run.config.conflictRetry = options.conflictRetry;
  await stores.runs.createRun(run, targets);
  const rackIndex = new Map(targets.map((t, i) => [t.rackId, i]));
  const clock = new TestClock();
  const submitter = new FakeSubmitter({
    runs: stores.runs,
    clock: clock.read,
    behaviour: (rackId) =>
      options.behaviour?.(rackIndex.get(rackId) ?? -1) ?? { kind: "complete", afterMs: 1 },
    ...(options.cancelWaitsFor === undefined ? {} : { cancelWaitsFor: options.cancelWaitsFor }),
  });
  const metrics = new Map<DispatchMetricName, number>();
  const recording: Metrics = {
    add: (name, value) => metrics.set(name, (metrics.get(name) ?? 0) + value),
    flush: () => {},
  };
  const dispatcher = createDispatcher({
    runs: stores.runs,
    submitter,
    clock: clock.read,
    metrics: recording,
  });
  const logged: string[] = [];
  const controls = createControls({
    runs: stores.runs,
    submitter,
    clock: clock.read,
    log: (line) => logged.push(line),
    dispatch: dispatcher.dispatchRun,
    ...(options.cancelBudgetMs === undefined ? {} : { cancelBudgetMs: options.cancelBudgetMs }),
  });
  return {
    run,
    targets,
    clock,
    submitter,
    dispatcher,
    controls,
    metrics,
    logged,
    settle: async () => {
      await waitMs(20);
      await submitter.settle();
    },
    get: async () => (await stores.runs.getRun(id)) as Run,
    target: async (i) => (await stores.runs.getTarget(id, targets[i]!.id)) as Target,
  };
}

/** Dispatch passes (tasks settle in between) until the run leaves PENDING/RUNNING or `max` passes. */
async function passUntilStopped(s: Setup, max = 30): Promise<Run> {
  for (let i = 0; i < max; i++) {
    await s.dispatcher.dispatchRun(s.run.id);
    await s.settle();
    const run = await s.get();
    if (run.status !== "PENDING" && run.status !== "RUNNING") return run;
    s.clock.advance(1000);
  }
  return s.get();
}

describe("dispatcher: claims and quota", () => {
  it("a pass claims up to max_concurrent_targets in sequence order, submits each, and says so on the run", async () => {
    const s = await setup({ phaseSizes: [5], maxConcurrent: 2, behaviour: () => ({ kind: "hang" }) });
    const result = await s.dispatcher.dispatchRun(s.run.id);
    expect(result).toMatchObject({
      decision: "claimed",
      status: "RUNNING",
      submitted: 2,
      blocked: 0,
      failed: 0,
    });
    const run = await s.get();
    expect(run).toMatchObject({
      status: "RUNNING",
      reason: "NONE",
      statusMessage: "submitted 2 operation run targets",
      inFlight: 2,
    });
    expect(run.startedAt).toBe(s.clock.now);
    expect((await s.target(0)).status).toBe("SUBMITTED");
    expect((await s.target(0)).message).toBe("submitted");
    expect((await s.target(1)).status).toBe("SUBMITTED");
    expect((await s.target(2)).status).toBe("PENDING");
    expect([...s.submitter.starts.keys()]).toEqual([
      `operation-run-target:${s.targets[0]!.id}`,
      `operation-run-target:${s.targets[1]!.id}`,
    ]);
    expect(s.metrics.get("TargetsDispatched")).toBe(2);
    expect(s.metrics.get("RackConflicts")).toBe(0);
    expect(s.metrics.has("DispatchLatencyMs")).toBe(true);
  });

  it("with every slot taken the run says 'waiting for active targets quota'; a finished target frees one", async () => {
    const s = await setup({ phaseSizes: [3], maxConcurrent: 1, behaviour: () => ({ kind: "hang" }) });
    await s.dispatcher.dispatchRun(s.run.id);
    s.clock.advance(10);
    await s.dispatcher.dispatchRun(s.run.id);
    expect((await s.get()).statusMessage).toBe("waiting for active targets quota");
    await s.submitter.finish(s.targets[0]!.id, "COMPLETED");
    s.clock.advance(10);
    await s.dispatcher.dispatchRun(s.run.id);
    const run = await s.get();
    expect(run).toMatchObject({ statusMessage: "submitted 1 operation run target", inFlight: 1 });
    expect(run.counters[0]).toEqual({ completed: 1, failed: 0, terminated: 0, skipped: 0 });
    expect((await s.target(1)).status).toBe("SUBMITTED");
  });

  it("a rejected submission fails the target with the submitter's text and frees the slot", async () => {
    const s = await setup({
      phaseSizes: [2],
      maxConcurrent: 1,
      behaviour: (i) => (i === 0 ? { kind: "reject", message: "rack has no BMC" } : { kind: "hang" }),
    });
    const result = await s.dispatcher.dispatchRun(s.run.id);
    expect(result).toMatchObject({ submitted: 0, failed: 1 });
    expect(await s.target(0)).toMatchObject({ status: "FAILED", message: "rack has no BMC" });
    expect((await s.get()).inFlight).toBe(0);
  });
});

describe("dispatcher: phases", () => {
  it("a two-phase run pauses at the phase gate, advances, and completes", async () => {
    const s = await setup({ phaseSizes: [2, 2], autoAdvance: false });
    let run = await passUntilStopped(s);
    expect(run).toMatchObject({
      status: "PAUSED",
      reason: "PHASE_GATE",
      statusMessage: "waiting for phase advance",
      currentPhaseIndex: 0,
    });
    expect((await s.target(2)).status).toBe("PENDING");

    await expect(s.controls.advance(s.run.id, 2)).rejects.toThrow(
      "operation run is not in a valid state for the requested operation: expected phase 2, next phase is 1",
    );
    const advanced = await s.controls.advance(s.run.id, 1);
    expect(advanced).toMatchObject({
      status: "RUNNING",
      reason: "NONE",
      statusMessage: "advanced to phase 1",
      currentPhaseIndex: 1,
    });
    // advance triggers a pass at once: phase 1's targets are already submitted.
    expect((await s.target(2)).status).not.toBe("PENDING");

    run = await passUntilStopped(s);
    expect(run).toMatchObject({
      status: "COMPLETED",
      reason: "NONE",
      statusMessage: "operation run completed",
      inFlight: 0,
    });
    expect(run.finishedAt).toBeDefined();
    expect(run.counters).toEqual([
      { completed: 2, failed: 0, terminated: 0, skipped: 0 },
      { completed: 2, failed: 0, terminated: 0, skipped: 0 },
    ]);
    expect(s.submitter.duplicateStarts()).toEqual([]);
    expect(s.submitter.starts.size).toBe(4);
  });

  it("with auto-advance a two-phase run goes through both phases without pausing", async () => {
    const s = await setup({ phaseSizes: [1, 2], autoAdvance: true });
    const seen = new Set<string>();
    for (let i = 0; i < 10; i++) {
      await s.dispatcher.dispatchRun(s.run.id);
      await s.settle();
      const run = await s.get();
      seen.add(`${run.status}/${run.reason}`);
      if (run.status === "COMPLETED") break;
    }
    expect(seen.has("PAUSED/PHASE_GATE")).toBe(false);
    expect(await s.get()).toMatchObject({
      status: "COMPLETED",
      statusMessage: "operation run completed",
      currentPhaseIndex: 1,
    });
  });
});

describe("dispatcher: safety gates and final statuses", () => {
  it("a failure-count gate pauses the run, and resume pauses it again while the gate is still tripped", async () => {
    const gate: SafetyGate = { kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 1 };
    const s = await setup({
      phaseSizes: [4],
      maxConcurrent: 1,
      gates: [gate],
      behaviour: (i) =>
        i === 0 ? { kind: "fail", afterMs: 1, message: "bmc timeout" } : { kind: "complete", afterMs: 1 },
    });
    const message = "failure_count safety gate tripped for current_phase: 1/4 targets failed (threshold 1)";
    const run = await passUntilStopped(s);
    expect(run).toMatchObject({ status: "PAUSED", reason: "SAFETY_GATE", statusMessage: message });
    expect(await s.target(0)).toMatchObject({ status: "FAILED", message: "bmc timeout" });
    expect((await s.target(1)).status).toBe("PENDING");
    expect(s.metrics.get("GateTrips")).toBe(1);

    const resumed = await s.controls.resume(s.run.id);
    expect(resumed).toMatchObject({
      status: "RUNNING",
      reason: "NONE",
      statusMessage: "operation run resumed",
    });
    expect(await s.get()).toMatchObject({ status: "PAUSED", reason: "SAFETY_GATE", statusMessage: message });
    expect((await s.target(1)).status).toBe("PENDING");
    // The resume's own pass tripped it again: each trip that paused the run counts once.
    expect(s.metrics.get("GateTrips")).toBe(2);
  });

  it("a failure-rate gate over the cumulative run uses the reference's message", async () => {
    const gate: SafetyGate = { kind: "failureRate", scope: "CUMULATIVE_RUN", thresholdPercent: 25 };
    const s = await setup({
      phaseSizes: [2, 2],
      maxConcurrent: 1,
      gates: [gate],
      behaviour: (i) =>
        i === 2 ? { kind: "fail", afterMs: 1, message: "x" } : { kind: "complete", afterMs: 1 },
    });
    const run = await passUntilStopped(s);
    // Phase 1's first target fails: 1 failed of the 4 selected through phase 1 = 25%.
    expect(run).toMatchObject({
      status: "PAUSED",
      reason: "SAFETY_GATE",
      currentPhaseIndex: 1,
      statusMessage:
        "failure_rate safety gate tripped for cumulative_run: 1/4 targets failed (25%, threshold 25%)",
    });
  });

  it("when the last targets fail together the run finishes FAILED instead of tripping the gate (finish comes first)", async () => {
    const gate: SafetyGate = { kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 1 };
    const s = await setup({
      phaseSizes: [2],
      maxConcurrent: 2,
      gates: [gate],
      behaviour: () => ({ kind: "fail", afterMs: 1, message: "x" }),
    });
    expect(await passUntilStopped(s)).toMatchObject({
      status: "FAILED",
      statusMessage: "operation run failed",
    });
  });

  it("a run whose targets all fail ends FAILED", async () => {
    const s = await setup({
      phaseSizes: [3],
      behaviour: () => ({ kind: "fail", afterMs: 1, message: "flash failed" }),
    });
    const run = await passUntilStopped(s);
    expect(run).toMatchObject({
      status: "FAILED",
      reason: "NONE",
      statusMessage: "operation run failed",
      inFlight: 0,
    });
    expect(run.counters[0]).toEqual({ completed: 0, failed: 3, terminated: 0, skipped: 0 });
  });

  it("a run where some targets fail ends COMPLETED_WITH_FAILURES", async () => {
    const s = await setup({
      phaseSizes: [2, 1],
      behaviour: (i) =>
        i === 1 ? { kind: "fail", afterMs: 1, message: "flash failed" } : { kind: "complete", afterMs: 1 },
    });
    const run = await passUntilStopped(s);
    expect(run).toMatchObject({
      status: "COMPLETED_WITH_FAILURES",
      reason: "NONE",
      statusMessage: "operation run completed with failed targets",
    });
    expect(run.counters).toEqual([
      { completed: 1, failed: 1, terminated: 0, skipped: 0 },
      { completed: 1, failed: 0, terminated: 0, skipped: 0 },
    ]);
  });
});

describe("controls: cancel and pause", () => {
  it("cancel ends CANCELLED: running child tasks are stopped (TERMINATED), targets that never got one are SKIPPED", async () => {
    const s = await setup({ phaseSizes: [4, 2], maxConcurrent: 2, behaviour: () => ({ kind: "hang" }) });
    await s.dispatcher.dispatchRun(s.run.id);
    expect((await s.get()).inFlight).toBe(2);
    const cancelled = await s.controls.cancel(s.run.id, "  window closed  ");
    expect(cancelled).toMatchObject({
      status: "CANCELLED",
      reason: "NONE",
      statusMessage: "operation run cancelled: window closed",
    });
    expect(cancelled.finishedAt).toBe(s.clock.now);
    await s.submitter.settle();
    expect(s.submitter.cancels).toHaveLength(2);
    for (const i of [0, 1]) {
      expect(await s.target(i)).toMatchObject({
        status: "TERMINATED",
        message: "task cancelled: operation run cancelled: window closed",
      });
    }
    for (const i of [2, 3]) {
      expect(await s.target(i)).toMatchObject({
        status: "SKIPPED",
        message: "not started: operation run cancelled",
      });
    }
    // Future phases are not touched (stats never count them).
    expect((await s.target(4)).status).toBe("PENDING");
    const run = await s.get();
    expect(run).toMatchObject({ status: "CANCELLED", inFlight: 0 });
    expect(run.counters[0]).toEqual({ completed: 0, failed: 0, terminated: 2, skipped: 2 });
    // A cancelled run is not dispatched again, and cancelling it again changes nothing.
    expect((await s.dispatcher.dispatchRun(s.run.id)).decision).toBe("inactive");
    expect(await s.controls.cancel(s.run.id, "again")).toEqual(run);
  });

  it("cancel returns when its budget runs out even if child tasks never confirm they stopped", async () => {
    let confirm = () => {};
    const stopped = new Promise<void>((resolve) => {
      confirm = resolve;
    });
    const s = await setup({
      phaseSizes: [2],
      maxConcurrent: 2,
      behaviour: () => ({ kind: "hang" }),
      cancelWaitsFor: stopped,
      cancelBudgetMs: 200,
    });
    await s.dispatcher.dispatchRun(s.run.id);
    const cancelled = await s.controls.cancel(s.run.id, "");
    expect(cancelled.statusMessage).toBe("operation run cancelled");
    // It came back with both stops asked for and neither confirmed: the budget ended the wait.
    expect(s.submitter.cancels).toHaveLength(2);
    expect([...s.submitter.tasks.values()].map((t) => t.status)).toEqual(["RUNNING", "RUNNING"]);
    expect(s.logged).toContain(
      `warn cancel budget ran out before every child task confirmed it stopped runId=${s.run.id} tasks=2`,
    );
    confirm();
    await eventually(
      async () => ((await s.target(0)).status === "TERMINATED" ? true : undefined),
      10_000,
      "the late stop to be recorded",
    );
  });

  it("pause stops claiming; a paused run's outcomes still count; unknown runs are NotFound", async () => {
    const s = await setup({ phaseSizes: [3], maxConcurrent: 1, behaviour: () => ({ kind: "hang" }) });
    await s.dispatcher.dispatchRun(s.run.id);
    const paused = await s.controls.pause(s.run.id);
    expect(paused).toMatchObject({
      status: "PAUSED",
      reason: "OPERATOR_PAUSED",
      statusMessage: "operation run paused by operator",
    });
    await s.submitter.finish(s.targets[0]!.id, "COMPLETED");
    expect((await s.dispatcher.dispatchRun(s.run.id)).decision).toBe("inactive");
    const run = await s.get();
    expect(run.counters[0]?.completed).toBe(1);
    expect((await s.target(1)).status).toBe("PENDING");
    const missing = uuid(999, "d9999999");
    await expect(s.controls.pause(missing)).rejects.toMatchObject({
      code: "NOT_FOUND",
      message: `operation run not found: ${missing}`,
    });
  });
});

describe("dispatcher: rack conflicts", () => {
  it("a blocked rack backs off with growing delays kept across re-claims, then pauses with CONFLICT_RETRY_TIMEOUT", async () => {
    const s = await setup({
      phaseSizes: [2],
      maxConcurrent: 2,
      conflictRetry: { retryTimeoutMs: 60_000, initialRetryDelayMs: 1_000, maxRetryDelayMs: 4_000 },
      behaviour: (i) => (i === 0 ? { kind: "conflict", times: Number.POSITIVE_INFINITY } : { kind: "hang" }),
    });
    const t0 = s.clock.now;
    const first = await s.dispatcher.dispatchRun(s.run.id);
    expect(first).toMatchObject({ submitted: 1, blocked: 1 });
    expect(s.metrics.get("RackConflicts")).toBe(1);
    expect(s.metrics.get("TargetsDispatched")).toBe(1);
    expect(await s.target(0)).toMatchObject({
      status: "BLOCKED",
      message: conflictMessage(s.targets[0]!.rackId),
      conflictAttempts: 1,
      firstBlockedAt: t0,
      retryAt: t0 + 1_000,
    });
    expect((await s.get()).statusMessage).toBe(
      "submitted 1 operation run target; 1 target waiting on rack conflicts",
    );

    // Not ready before its retry time: nothing is claimed, the message counts it as waiting.
    s.clock.advance(500);
    await s.dispatcher.dispatchRun(s.run.id);
    expect((await s.target(0)).conflictAttempts).toBe(1);

    const delays: number[] = [];
    for (let i = 0; i < 6; i++) {
      const target = await s.target(0);
      s.clock.now = target.retryAt as number;
      await s.dispatcher.dispatchRun(s.run.id);
      const after = await s.target(0);
      delays.push((after.retryAt as number) - s.clock.now);
      expect(after.firstBlockedAt).toBe(t0);
    }
    expect(delays).toEqual([2_000, 4_000, 4_000, 4_000, 4_000, 4_000]);
    expect((await s.target(0)).conflictAttempts).toBe(7);
    expect((await s.get()).status).toBe("RUNNING");

    s.clock.now = t0 + 60_000;
    await s.dispatcher.dispatchRun(s.run.id);
    expect(await s.get()).toMatchObject({
      status: "PAUSED",
      reason: "CONFLICT_RETRY_TIMEOUT",
      statusMessage: `target ${s.targets[0]!.id} blocked by rack conflict for 1m0s`,
    });
    expect(s.submitter.submissions.get(`operation-run-target:${s.targets[0]!.id}`)).toBe(7);
  });

  it("resuming a run paused with CONFLICT_RETRY_TIMEOUT restarts the blocked targets' conflict clocks, so it does not pause again at once", async () => {
    const s = await setup({
      phaseSizes: [2],
      maxConcurrent: 2,
      conflictRetry: { retryTimeoutMs: 10_000, initialRetryDelayMs: 60_000, maxRetryDelayMs: 60_000 },
      behaviour: (i) => (i === 0 ? { kind: "conflict", times: Number.POSITIVE_INFINITY } : { kind: "hang" }),
    });
    await s.dispatcher.dispatchRun(s.run.id);
    s.clock.advance(10_000);
    await s.dispatcher.dispatchRun(s.run.id);
    expect((await s.get()).reason).toBe("CONFLICT_RETRY_TIMEOUT");
    s.clock.advance(5);
    const resumed = await s.controls.resume(s.run.id);
    expect(resumed).toMatchObject({ status: "RUNNING", statusMessage: "operation run resumed" });
    const target = await s.target(0);
    expect(target).toMatchObject({ status: "BLOCKED", firstBlockedAt: s.clock.now, conflictAttempts: 1 });
    // The resume's own dispatch pass ran; the run is still running, and times out only 10 s later.
    expect((await s.get()).status).toBe("RUNNING");
    s.clock.advance(9_999);
    await s.dispatcher.dispatchRun(s.run.id);
    expect((await s.get()).status).toBe("RUNNING");
    s.clock.advance(1);
    await s.dispatcher.dispatchRun(s.run.id);
    expect((await s.get()).reason).toBe("CONFLICT_RETRY_TIMEOUT");
  });
});
