/**
 * The phase soak and late failures end to end: the real gRPC client against the local stack
 * in-process (dispatcher on a 150 ms tick, stream wake-ups, the child-task ASL, the simulated
 * fleet) on a clock the stack is started with (local/clock.ts). It runs at the wall clock's rate;
 * the tests jump it to the soak's end once the run shows it is soaking, never while a target is
 * claimed or flashing, so nothing waits 30 s of wall time.
 *
 * What "does not advance before 30 s" is judged by, exactly: every claim of a second-phase target
 * is recorded from the targets table's stream with the time it was judged by (its `updatedAt`),
 * and none may be before the stored soak deadline, which must be 30 s after the pass that found
 * the first phase complete (the SOAK_STARTED event's time).
 *
 *   30 s soak, restart during it   → SOAK_STARTED once, the same deadline after the restart,
 *                                    Advance refused naming the time left, phase 2 claimed only
 *                                    from the deadline on, COMPLETED
 *   30 s soak, a late failure      → ReportTargetFailure by rack: target FAILED, the failure-count
 *                                    gate trips (PAUSED / SAFETY_GATE) with phase 2 still closed,
 *                                    past the deadline too: resumed, the gate trips again; phase 2
 *                                    never opened, none of its racks claimed
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ShiftableClock, shiftableClock } from "../../local/clock.js";
import {
  OperationRunEventKind,
  OperationRunStatus,
  OperationRunStatusReason,
  OperationRunTargetStatus,
} from "../../src/gen/flow/v1/flow.js";
import { type Claim, type ClaimRecorder, recordClaims } from "../support/claim-recorder.js";
import { FAST_SUCCESS, rackGroup } from "../support/fixtures-inventory.js";
import {
  countGate,
  createRun,
  equalPhases,
  eventually,
  failure,
  getRun,
  listTargets,
  runRequest,
  startTestStack,
  stateOf,
  type TestStack,
  targetReport,
  waitForStatus,
  waitForTerminal,
} from "../support/stack.js";

const S = OperationRunStatus;
const R = OperationRunStatusReason;
const T = OperationRunTargetStatus;
const K = OperationRunEventKind;
const SOAK_MS = 30_000;
const PREFIX = "operation run is not in a valid state for the requested operation: ";

const RESTARTED = rackGroup(160, { name: "soak-restart", count: 2, behaviour: FAST_SUCCESS });
const LATE = rackGroup(161, { name: "soak-late", count: 2, behaviour: FAST_SUCCESS });
const GROUPS = [RESTARTED, LATE];

let s: TestStack;
const clock: ShiftableClock = shiftableClock();
/** Every claim of a target, with the time it was judged by (test/support/claim-recorder.ts). */
const claims: Claim[] = [];
let recorder: ClaimRecorder | undefined;

beforeAll(async () => {
  s = await startTestStack({ label: "soak", groups: GROUPS, clock });
  recorder = await recordClaims(s, claims);
});
afterAll(async () => {
  await recorder?.stop();
  await s?.stop();
});

const THIRTY_SECONDS = { seconds: SOAK_MS / 1000, nanos: 0 };

/** Two phases of one rack each, auto-advancing; `soaks`: the phase policy's soak fields. */
function soakRun(rackIds: readonly string[], gateCount: number, soaks: object) {
  return runRequest({
    rackIds,
    maxConcurrent: 1,
    gates: [countGate(gateCount)],
    phasePolicy: { ...equalPhases(2, true), ...soaks },
  });
}

/** The run once the phase at `phaseIndex` soaks: its stored deadline. */
async function soaking(runId: string, phaseIndex: number): Promise<number> {
  const run = await eventually(
    () => getRun(s.flow, runId),
    (r) =>
      (r.summary?.soakEndsAt !== undefined && r.summary.currentPhaseIndex === phaseIndex) ||
      (stateOf(r).status !== S.OPERATION_RUN_STATUS_RUNNING &&
        stateOf(r).status !== S.OPERATION_RUN_STATUS_PENDING),
    `run ${runId} to start the soak of phase index ${phaseIndex}`,
    60_000,
  );
  expect(stateOf(run), await targetReport(s.flow, runId)).toMatchObject({
    status: S.OPERATION_RUN_STATUS_RUNNING,
    message: expect.stringMatching(
      new RegExp(
        `^phase ${phaseIndex + 1} soaking until \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?Z$`,
      ),
    ),
  });
  return ms(run.summary?.soakEndsAt);
}

/** A timestamp the service must have set, in epoch ms. */
function ms(date: Date | undefined): number {
  if (date === undefined) throw new Error("expected a timestamp, got none");
  return date.getTime();
}

const events = async (runId: string) =>
  (
    await s.flow.listOperationRunEvents({
      operationRunId: { id: runId },
      pagination: { offset: 0, limit: 100 },
    })
  ).events;

describe("phase soak on the local stack", () => {
  it("a 30 s soak holds phase 2 closed, a restart during it keeps the same deadline, and phase 2 opens only from it", async () => {
    const runId = await createRun(
      s.flow,
      soakRun(
        RESTARTED.racks.map((r) => r.id),
        2,
        { minSoak: THIRTY_SECONDS },
      ),
    );
    const endsAt = await soaking(runId, 0);

    const started = (await events(runId)).filter((e) => e.kind === K.OPERATION_RUN_EVENT_KIND_SOAK_STARTED);
    expect(started).toHaveLength(1);
    const soakDetail = started[0]?.detail;
    expect(soakDetail?.$case === "soak" && soakDetail.value).toEqual({
      phaseIndex: 0,
      minSoak: { seconds: 30, nanos: 0 },
      endsAt: new Date(endsAt),
    });
    // The deadline is 30 s after the pass that found phase 1 complete; its write (the event's time)
    // is that pass's time, or 1 ms past the run's previous version if that was later.
    const sinceEvent = endsAt - ms(started[0]?.time);
    expect(sinceEvent).toBeLessThanOrEqual(SOAK_MS);
    expect(sinceEvent).toBeGreaterThan(SOAK_MS - 1_000);

    // Restart: every process of the stack stops; its tables stay. The new stack finds the soak stored.
    await recorder?.stop();
    const prefix = s.tablePrefix;
    await s.stop();
    s = await startTestStack({ label: "soak", groups: GROUPS, clock, tablePrefix: prefix });
    recorder = await recordClaims(s, claims);

    const after = await getRun(s.flow, runId);
    expect(after.summary?.soakEndsAt?.getTime()).toBe(endsAt);
    expect(stateOf(after).status).toBe(S.OPERATION_RUN_STATUS_RUNNING);
    expect(after.summary?.currentPhaseIndex).toBe(0);
    const refused = await failure(
      s.flow.advanceOperationRunPhase({ id: { id: runId }, expectedPhaseIndex: 0 }),
    );
    expect(refused.code).toBe("FAILED_PRECONDITION");
    expect(refused.details).toMatch(
      new RegExp(
        `^${PREFIX}phase 1 is soaking: (\\d+m)?\\d+s left, until \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?Z$`,
      ),
    );

    clock.advanceTo(endsAt);
    // The last phase soaks too: the run finishes when that soak ends, not when its last rack does.
    const lastEndsAt = await soaking(runId, 1);
    expect(lastEndsAt).toBeGreaterThanOrEqual(endsAt + SOAK_MS);
    clock.advanceTo(lastEndsAt);
    const done = await waitForTerminal(s.flow, runId);
    expect(ms(done.summary?.finishedAt)).toBeGreaterThanOrEqual(lastEndsAt);
    expect(stateOf(done).status, await targetReport(s.flow, runId)).toBe(S.OPERATION_RUN_STATUS_COMPLETED);

    const history = await events(runId);
    expect(history.filter((e) => e.kind === K.OPERATION_RUN_EVENT_KIND_SOAK_STARTED)).toHaveLength(2);
    const opened = history.filter(
      (e) => e.kind === K.OPERATION_RUN_EVENT_KIND_PHASE_OPENED && e.phaseIndex === 1,
    );
    expect(opened).toHaveLength(1);
    expect(ms(opened[0]?.time)).toBeGreaterThanOrEqual(endsAt);
    const phase2 = claims.filter((c) => c.runId === runId && c.phaseIndex === 1);
    expect(phase2.length).toBeGreaterThan(0);
    for (const claim of phase2) expect(claim.at).toBeGreaterThanOrEqual(endsAt);
  });

  it("a late failure reported during the soak trips the failure-count gate and keeps phase 2 closed", async () => {
    // Per phase: phase 1 soaks 30 s, phase 2 not at all.
    const perPhase = { phaseMinSoaks: { minSoaks: [THIRTY_SECONDS, { seconds: 0, nanos: 0 }] } };
    const runId = await createRun(
      s.flow,
      soakRun(
        LATE.racks.map((r) => r.id),
        1,
        perPhase,
      ),
    );
    const endsAt = await soaking(runId, 0);
    const [first] = (await listTargets(s.flow, runId)).filter((t) => t.phaseIndex === 0);
    const rackId = first?.rackId?.id as string;

    // A report without a reason, or naming no target, is refused field by field.
    const bad = await failure(
      s.flow.reportTargetFailure({ id: { id: runId }, rackId: undefined, targetId: undefined, reason: " " }),
    );
    expect(bad.code).toBe("INVALID_ARGUMENT");
    expect(bad.details).toContain("reason: is required: why the target failed");
    expect(bad.details).toContain("target_id: one of target_id and rack_id is required");

    const reported = await s.flow.reportTargetFailure({
      id: { id: runId },
      rackId: { id: rackId },
      targetId: undefined,
      reason: "XID 79: GPU fell off the bus",
    });
    expect(reported.summary?.id?.id).toBe(runId);

    const paused = await waitForStatus(s.flow, runId, [S.OPERATION_RUN_STATUS_PAUSED]);
    expect(stateOf(paused)).toEqual({
      status: S.OPERATION_RUN_STATUS_PAUSED,
      reason: R.OPERATION_RUN_STATUS_REASON_SAFETY_GATE,
      message: "failure_count safety gate tripped for current_phase: 1/1 targets failed (threshold 1)",
    });
    expect(paused.summary?.currentPhaseIndex).toBe(0);
    const target = (await listTargets(s.flow, runId)).find((t) => t.rackId?.id === rackId);
    expect(target).toMatchObject({
      status: T.OPERATION_RUN_TARGET_STATUS_FAILED,
      message: "XID 79: GPU fell off the bus",
    });
    expect(target?.failureReportedAt).toBeInstanceOf(Date);
    expect(target?.failureReportedBy).toBeDefined();
    const kinds = (await events(runId)).map((e) => e.kind);
    expect(kinds.slice(-3)).toEqual([
      K.OPERATION_RUN_EVENT_KIND_SOAK_STARTED,
      K.OPERATION_RUN_EVENT_KIND_TARGET_FAILURE_REPORTED,
      K.OPERATION_RUN_EVENT_KIND_GATE_TRIPPED,
    ]);

    // Past the deadline the gate still holds it: Advance refused, phase 2's targets never claimed.
    clock.advanceTo(endsAt + 1_000);
    const refused = await failure(
      s.flow.advanceOperationRunPhase({ id: { id: runId }, expectedPhaseIndex: 0 }),
    );
    expect(refused).toEqual({
      code: "FAILED_PRECONDITION",
      details: `${PREFIX}${runId} is not paused at a phase gate`,
    });
    expect((await getRun(s.flow, runId)).summary?.currentPhaseIndex).toBe(0);

    // Resumed past the deadline, the next pass counts the late failure again: the gate trips again
    // (a second GATE_TRIPPED after RESUMED), and phase 2 was never opened nor claimed.
    await s.flow.resumeOperationRun({ id: { id: runId } });
    const again = await eventually(
      () => events(runId),
      (list) =>
        list.at(-1)?.kind === K.OPERATION_RUN_EVENT_KIND_GATE_TRIPPED &&
        list.at(-2)?.kind === K.OPERATION_RUN_EVENT_KIND_RESUMED,
      `run ${runId} to trip its gate again after the resume`,
    );
    expect(ms(again.at(-1)?.time)).toBeGreaterThan(endsAt);
    expect(again.some((e) => e.kind === K.OPERATION_RUN_EVENT_KIND_PHASE_OPENED && e.phaseIndex === 1)).toBe(
      false,
    );
    expect(claims.filter((c) => c.runId === runId && c.phaseIndex === 1)).toEqual([]);
    expect((await getRun(s.flow, runId)).summary?.currentPhaseIndex).toBe(0);
  });
});
