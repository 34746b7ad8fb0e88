/**
 * The safety gate on a real rollout: the real gRPC client against the local
 * stack in-process — dispatcher, stream wake-ups, the child-task ASL on aws-local-stepfunctions,
 * the MQTT broker and the simulated BMC fleet.
 *
 * 100 one-component racks, three equal phases (34/33/33) with auto advance, 10 targets at a time,
 * one failure_count gate of 3 scoped to the current phase. Five racks' BMCs fail, placed by the
 * plan so the gate must trip in a known phase:
 *
 *   phase 0 (34 racks): 2 failing → the phase ends 32 completed / 2 failed, 2 < 3, auto-advances
 *   phase 1 (33 racks): 3 failing, all in its first batch of 10 → the 3rd failure trips the gate:
 *                       PAUSED / SAFETY_GATE, "… current_phase: 3/33 targets failed (threshold 3)"
 *   phase 2 (33 racks): never claimed; cumulative stats select 34 + 33 = 67
 *
 * The plan is seeded (selection and ordering), so PlanOperationRun shows it before the run exists;
 * the fleet is told which racks fail only then, and the created run must match the plan.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type OperationRun,
  OperationRunSafetyGateScope,
  OperationRunStatus,
  OperationRunStatusReason,
  type OperationRunTarget,
  OperationRunTargetStatus,
} from "../../src/gen/flow/v1/flow.js";
import { FAST_FAILURE, FAST_SUCCESS, fleetOf, rackGroup } from "../support/fixtures-inventory.js";
import {
  countGate,
  createRun,
  equalPhases,
  getRun,
  listTargets,
  type RunSpec,
  runRequest,
  startTestStack,
  stateOf,
  type TestStack,
  targetReport,
  waitForStatus,
} from "../support/stack.js";

const RACKS = rackGroup(50, { name: "gate", count: 100, types: ["COMPUTE"] });
const T = OperationRunTargetStatus;

const SPEC: RunSpec = {
  rackIds: RACKS.ids,
  seed: "rollout-gate-selection",
  orderingSeed: "rollout-gate-order",
  maxConcurrent: 10,
  gates: [countGate(3, OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CURRENT_PHASE)],
  phasePolicy: equalPhases(3, true),
};

/** Positions within each phase's sequence whose racks fail: 2 in phase 0, 3 early in phase 1. */
const FAILING_POSITIONS: Record<number, number[]> = { 0: [3, 17], 1: [0, 4, 8] };

let s: TestStack;
let runId = "";
/** Rack ids in sequence order, per phase, as PlanOperationRun showed them. */
let planned: string[][] = [];
let failing = new Set<string>();
/** The run as first seen PAUSED, and its targets of phases 0..1 read right after. */
let paused: OperationRun;
let atPause: OperationRunTarget[] = [];

const key = (t: OperationRunTarget) => `${t.phaseIndex}/${t.sequenceIndex}/${t.rackId?.id}`;
const count = (targets: readonly OperationRunTarget[], ...statuses: OperationRunTargetStatus[]) =>
  targets.filter((t) => statuses.includes(t.status)).length;

beforeAll(async () => {
  s = await startTestStack({ label: "rollout-gate", groups: [RACKS], defaults: FAST_SUCCESS, tickMs: 150 });

  const plan = await s.flow.planOperationRun(runRequest(SPEC));
  planned = [0, 1, 2].map((phase) =>
    plan.targets
      .filter((t) => t.phaseIndex === phase)
      .sort((a, b) => a.sequenceIndex - b.sequenceIndex)
      .map((t) => t.rackId?.id ?? ""),
  );
  failing = new Set(
    Object.entries(FAILING_POSITIONS).flatMap(([phase, positions]) =>
      positions.map((p) => planned[Number(phase)]?.[p] ?? ""),
    ),
  );
  // Only now does the fleet learn which racks fail; no update has been sent yet.
  s.local.fleet!.setConfig(fleetOf([{ ...RACKS, ids: [...failing], behaviour: FAST_FAILURE }], FAST_SUCCESS));

  runId = await createRun(s.flow, runRequest(SPEC));
  paused = await waitForStatus(s.flow, runId, [OperationRunStatus.OPERATION_RUN_STATUS_PAUSED], 100_000);
  atPause = await listTargets(s.flow, runId);
}, 150_000);

afterAll(async () => {
  await s?.stop();
});

describe("a failure_count gate of 3 (current phase) on 100 racks in 3 auto-advancing phases", () => {
  it("the plan has 34/33/33 racks and the five failing racks are distinct", () => {
    expect(planned.map((p) => p.length)).toEqual([34, 33, 33]);
    expect(new Set(planned.flat()).size).toBe(100);
    expect(failing.size).toBe(5);
  });

  it("pauses with SAFETY_GATE at the 3rd failure of phase 1: 3/33 targets failed (threshold 3)", async () => {
    expect(stateOf(paused), await targetReport(s.flow, runId)).toEqual({
      status: OperationRunStatus.OPERATION_RUN_STATUS_PAUSED,
      reason: OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_SAFETY_GATE,
      message: "failure_count safety gate tripped for current_phase: 3/33 targets failed (threshold 3)",
    });
    expect(paused.summary?.currentPhaseIndex).toBe(1);
  });

  it("the created run follows the plan, and phase 0 finished 32 completed / 2 failed before advancing", () => {
    const byPhase = (phase: number) =>
      atPause
        .filter((t) => t.phaseIndex === phase)
        .sort((a, b) => a.sequenceIndex - b.sequenceIndex)
        .map((t) => t.rackId?.id);
    expect(byPhase(0)).toEqual(planned[0]);
    expect(byPhase(1)).toEqual(planned[1]);
    expect(atPause.every((t) => t.phaseIndex <= 1)).toBe(true);

    const phase0 = atPause.filter((t) => t.phaseIndex === 0);
    expect({
      completed: count(phase0, T.OPERATION_RUN_TARGET_STATUS_COMPLETED),
      failed: count(phase0, T.OPERATION_RUN_TARGET_STATUS_FAILED),
    }).toEqual({ completed: 32, failed: 2 });
    const failedRacks = atPause
      .filter((t) => t.status === T.OPERATION_RUN_TARGET_STATUS_FAILED)
      .map((t) => t.rackId?.id);
    expect(new Set(failedRacks)).toEqual(failing);
  });

  it("stats agree: current phase 1 selects 33 with 3 failed, cumulative selects 67 with 2 + 3 failed", () => {
    const current = paused.stats?.currentPhaseStats;
    const cumulative = paused.stats?.cumulativePhaseStats;
    expect({
      phase: current?.phaseIndex,
      selected: current?.selectedTargets,
      failed: current?.outcomeCounts?.failed,
    }).toEqual({ phase: 1, selected: 33, failed: 3 });
    expect({
      phase: cumulative?.phaseIndex,
      selected: cumulative?.selectedTargets,
      failed: cumulative?.outcomeCounts?.failed,
    }).toEqual({ phase: 1, selected: 67, failed: 5 });
    expect(cumulative?.outcomeCounts?.completed).toBeGreaterThanOrEqual(32);
  });

  it("after the pause no target is submitted: the children in flight end, PENDING ones stay PENDING, phase 2 untouched", async () => {
    const pendingAtPause = new Set(
      atPause.filter((t) => t.status === T.OPERATION_RUN_TARGET_STATUS_PENDING).map(key),
    );
    // Phase 1 had 33 targets and at most 10 run at once; the pause caught most of it unclaimed.
    expect(pendingAtPause.size).toBeGreaterThan(0);

    // Past the point where a claim could still happen. Passes of one run are coalesced, so a pass
    // asked for now runs after any still running: first after one still submitting what it
    // claimed before the pause; then, once every child task has ended and recorded its outcome
    // (each waking the run), after those wake-up passes, and it finds the run not dispatchable.
    // Ticks never see it: a paused run is not in the active-runs index.
    await s.local.dispatcher.dispatchRun(runId);
    await s.local.childTasks.idle();
    expect(await s.local.dispatcher.dispatchRun(runId)).toMatchObject({
      decision: "inactive",
      status: "PAUSED",
      submitted: 0,
    });
    expect(await s.local.stores.runs.listActiveRunIds()).not.toContain(runId);

    const targets = await listTargets(s.flow, runId);
    expect(
      count(targets, T.OPERATION_RUN_TARGET_STATUS_SUBMITTED, T.OPERATION_RUN_TARGET_STATUS_CLAIMED),
    ).toBe(0);
    const stillPending = new Set(
      targets.filter((t) => t.status === T.OPERATION_RUN_TARGET_STATUS_PENDING).map(key),
    );
    expect(stillPending).toEqual(pendingAtPause);
    // Those in flight at the pause ended; none of them started anew.
    const endedSincePause = atPause.filter(
      (t) =>
        t.status === T.OPERATION_RUN_TARGET_STATUS_SUBMITTED ||
        t.status === T.OPERATION_RUN_TARGET_STATUS_CLAIMED,
    );
    for (const t of endedSincePause) {
      expect(targets.find((x) => key(x) === key(t))?.status, key(t)).toBeOneOf([
        T.OPERATION_RUN_TARGET_STATUS_COMPLETED,
        T.OPERATION_RUN_TARGET_STATUS_FAILED,
      ]);
    }

    const after = await getRun(s.flow, runId, true);
    expect(stateOf(after)).toEqual(stateOf(paused));
    expect(after.stats?.cumulativePhaseStats?.selectedTargets).toBe(67);

    // ListOperationRunTargets never shows a phase beyond the current one; read phase 2 from the store.
    const phase2 = await s.local.stores.runs.listTargets(runId, {
      phaseFrom: 2,
      phaseTo: 2,
      page: { offset: 0, limit: 1000 },
    });
    expect(phase2?.targets.map((t) => t.rackId)).toEqual(planned[2]);
    expect(phase2?.targets.filter((t) => t.status !== "PENDING" || t.taskId !== undefined)).toEqual([]);
  });
});
