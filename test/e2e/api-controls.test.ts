/**
 * The manual controls end to end: PauseOperationRun, ResumeOperationRun, AdvanceOperationRunPhase
 * and CancelOperationRun, each through gRPC against the local stack, with the reference's exact
 * FailedPrecondition texts for invalid transitions, "operation run ID is required" for bad ids and
 * NotFound for unknown ones.
 *
 * Runs that must stay active use BMCs that hang (their targets stay SUBMITTED); runs that must
 * reach a phase gate or an end use BMCs that succeed or fail in 50 ms.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type OperationRun,
  OperationRunStatus,
  OperationRunStatusReason,
  OperationRunTargetStatus,
} from "../../src/gen/flow/v1/flow.js";
import { FAST_FAILURE, FAST_SUCCESS, rackGroup } from "../support/fixtures-inventory.js";
import {
  countGate,
  createRun,
  equalPhases,
  eventually,
  failure,
  getRun,
  listTargets,
  outcome,
  runRequest,
  startTestStack,
  stateOf,
  type TestStack,
  targetReport,
  waitForStatus,
  waitForTerminal,
} from "../support/stack.js";

const FAST = rackGroup(20, { name: "fast", count: 12, behaviour: FAST_SUCCESS });
const HANG = rackGroup(21, { name: "hang", count: 12 });
const FAIL = rackGroup(22, { name: "fail", count: 4, behaviour: FAST_FAILURE });

const S = OperationRunStatus;
const R = OperationRunStatusReason;
const UNKNOWN_ID = "0badc0de-0000-4000-8000-000000000000";
const NIL_ID = "00000000-0000-0000-0000-000000000000";
const INVALID = "operation run is not in a valid state for the requested operation";

let s: TestStack;
/** Runs that take a while to get where their test needs them: started first, awaited there. */
const runs = { gated: "", tripped: "", toStop: "" };

beforeAll(async () => {
  s = await startTestStack({ label: "controls", groups: [FAST, HANG, FAIL] });
  runs.gated = await createRun(
    s.flow,
    runRequest({ rackIds: FAST.ids.slice(0, 3), phasePolicy: equalPhases(3) }),
  );
  runs.tripped = await createRun(
    s.flow,
    runRequest({ rackIds: FAIL.ids.slice(0, 2), maxConcurrent: 1, gates: [countGate(1)] }),
  );
  runs.toStop = await createRun(s.flow, runRequest({ rackIds: HANG.ids.slice(8, 11), maxConcurrent: 1 }));
});
afterAll(async () => {
  await s?.stop();
});

const pause = (id: string) => s.flow.pauseOperationRun({ id: { id } });
const resume = (id: string) => s.flow.resumeOperationRun({ id: { id } });
const advance = (id: string, expectedPhaseIndex?: number) =>
  s.flow.advanceOperationRunPhase({ id: { id }, expectedPhaseIndex });
const cancel = (id: string, reason = "") => s.flow.cancelOperationRun({ id: { id }, reason });
const precondition = (details: string) => ({ code: "FAILED_PRECONDITION", details });

/** The parts of a run a no-op control must leave exactly as they were. */
const frozen = (run: OperationRun) => ({
  state: run.summary?.state,
  statusMessage: run.summary?.statusMessage,
  updatedAt: run.summary?.updatedAt,
  finishedAt: run.summary?.finishedAt,
  currentPhaseIndex: run.summary?.currentPhaseIndex,
});

describe("PauseOperationRun and ResumeOperationRun on an active run", () => {
  let id: string;
  beforeAll(async () => {
    id = await createRun(s.flow, runRequest({ rackIds: HANG.ids.slice(0, 3), maxConcurrent: 1 }));
  });

  it("a run that is not paused cannot be resumed", async () => {
    expect(await failure(resume(id))).toEqual(precondition(`${INVALID}: ${id} is not paused`));
  });

  it("a run that is not at a phase gate cannot be advanced", async () => {
    expect(await failure(advance(id))).toEqual(
      precondition(`${INVALID}: ${id} is not paused at a phase gate`),
    );
  });

  it("pause (pending or running) → PAUSED / OPERATOR_PAUSED, returned without stats, configuration included", async () => {
    const paused = await pause(id);
    expect(stateOf(paused)).toEqual({
      status: S.OPERATION_RUN_STATUS_PAUSED,
      reason: R.OPERATION_RUN_STATUS_REASON_OPERATOR_PAUSED,
      message: "operation run paused by operator",
    });
    expect(paused.stats).toBeUndefined();
    expect(paused.configuration?.options?.maxConcurrentTargets).toBe(1);
    expect(frozen(await getRun(s.flow, id))).toEqual(frozen(paused));
  });

  it("pausing a paused run changes nothing", async () => {
    const before = await getRun(s.flow, id);
    const again = await pause(id);
    expect(frozen(again)).toEqual(frozen(before));
    expect(frozen(await getRun(s.flow, id))).toEqual(frozen(before));
  });

  it("an operator-paused run is not at a phase gate either", async () => {
    expect(await failure(advance(id, 1))).toEqual(
      precondition(`${INVALID}: ${id} is not paused at a phase gate`),
    );
  });

  it("resume → RUNNING 'operation run resumed', reason NONE", async () => {
    const resumed = await resume(id);
    expect(stateOf(resumed)).toEqual({
      status: S.OPERATION_RUN_STATUS_RUNNING,
      reason: R.OPERATION_RUN_STATUS_REASON_NONE,
      message: "operation run resumed",
    });
    expect(resumed.stats).toBeUndefined();
  });
});

describe("CancelOperationRun", () => {
  it("cancels an active run with the trimmed reason, then leaves it unchanged and refuses the other controls", async () => {
    const id = await createRun(s.flow, runRequest({ rackIds: HANG.ids.slice(3, 5) }));
    const cancelled = await cancel(id, "  maintenance window closed  ");
    expect(stateOf(cancelled)).toEqual({
      status: S.OPERATION_RUN_STATUS_CANCELLED,
      reason: R.OPERATION_RUN_STATUS_REASON_NONE,
      message: "operation run cancelled: maintenance window closed",
    });
    expect(cancelled.summary?.finishedAt).toBeInstanceOf(Date);
    expect(cancelled.stats).toBeUndefined();

    const again = await cancel(id, "another reason");
    expect(frozen(again)).toEqual(frozen(cancelled));
    expect(frozen(await getRun(s.flow, id))).toEqual(frozen(cancelled));

    expect(await failure(pause(id))).toEqual(
      precondition(`${INVALID}: ${id} is in terminal state cancelled`),
    );
    expect(await failure(resume(id))).toEqual(precondition(`${INVALID}: ${id} is not paused`));
    expect(await failure(advance(id))).toEqual(
      precondition(`${INVALID}: ${id} is not paused at a phase gate`),
    );
  });

  it.each([
    ["no reason", "", HANG.ids[5]!],
    ["a blank reason", "   ", HANG.ids[6]!],
  ])("with %s the message is just 'operation run cancelled'", async (_title, reason, rack) => {
    const id = await createRun(s.flow, runRequest({ rackIds: [rack] }));
    expect(stateOf(await cancel(id, reason)).message).toBe("operation run cancelled");
  });

  it("a paused run can be cancelled", async () => {
    const id = await createRun(s.flow, runRequest({ rackIds: [HANG.ids[7]!] }));
    await pause(id);
    expect(stateOf(await cancel(id)).status).toBe(S.OPERATION_RUN_STATUS_CANCELLED);
  });

  it("tells racks apart: the one in flight ends TERMINATED, the two never started end SKIPPED, stats to match", async () => {
    const T = OperationRunTargetStatus;
    const id = runs.toStop;
    // One slot: one rack flashing (its BMCs hang), two waiting for the slot.
    const before = await eventually(
      () => listTargets(s.flow, id),
      (ts) => ts.some((t) => t.status === T.OPERATION_RUN_TARGET_STATUS_SUBMITTED),
      "one target to be SUBMITTED",
    );
    const inFlight = before.find((t) => t.status === T.OPERATION_RUN_TARGET_STATUS_SUBMITTED)!;
    await cancel(id);
    const targets = await eventually(
      () => listTargets(s.flow, id),
      (ts) =>
        ts.every(
          (t) =>
            t.status === T.OPERATION_RUN_TARGET_STATUS_TERMINATED ||
            t.status === T.OPERATION_RUN_TARGET_STATUS_SKIPPED,
        ),
      "every target TERMINATED or SKIPPED",
    );
    expect(
      targets.map((t) => ({ status: T[t.status], hasTask: t.taskId !== undefined, message: t.message })),
    ).toEqual(
      targets.map((t) =>
        t.id?.id === inFlight.id?.id
          ? {
              status: "OPERATION_RUN_TARGET_STATUS_TERMINATED",
              hasTask: true,
              message: "operation run cancelled",
            }
          : {
              status: "OPERATION_RUN_TARGET_STATUS_SKIPPED",
              hasTask: false,
              message: "not started: operation run cancelled",
            },
      ),
    );
    expect(targets).toHaveLength(3);
    // The stack's log has one line per task the cancel stopped, naming the task, its run and rack.
    const stopped = targets.filter((t) => t.taskId?.id);
    expect(stopped.length).toBeGreaterThan(0);
    for (const t of stopped) {
      expect(
        s.logs.filter((l) => l.includes(`taskId=${t.taskId?.id}`) && / task (cancelled|finished) /.test(l)),
      ).toEqual([
        expect.stringMatching(
          new RegExp(
            `^info task cancelled taskId=${t.taskId?.id} runId=${id} rackId=${t.rackId?.id} status=TERMINATED taskMessage=\\S`,
          ),
        ),
      ]);
    }
    const run = await getRun(s.flow, id, true);
    expect(run.stats?.cumulativePhaseStats?.outcomeCounts).toEqual({
      completed: 0,
      failed: 0,
      terminated: 1,
      skipped: 2,
    });
    expect(stateOf(run).status).toBe(S.OPERATION_RUN_STATUS_CANCELLED);
  });
});

describe("AdvanceOperationRunPhase at a phase gate", () => {
  it("pause keeps PHASE_GATE, resume is refused, a wrong expected phase is refused, 0 skips the check", async () => {
    const id = runs.gated;
    const gate = await waitForStatus(s.flow, id, [S.OPERATION_RUN_STATUS_PAUSED]);
    expect(stateOf(gate), await targetReport(s.flow, id)).toEqual({
      status: S.OPERATION_RUN_STATUS_PAUSED,
      reason: R.OPERATION_RUN_STATUS_REASON_PHASE_GATE,
      message: "waiting for phase advance",
    });
    expect(gate.summary?.currentPhaseIndex).toBe(0);

    expect(frozen(await pause(id))).toEqual(frozen(gate));
    expect(await failure(resume(id))).toEqual(
      precondition(`${INVALID}: ${id} is paused at a phase gate; use AdvanceOperationRunPhase`),
    );
    expect(await failure(advance(id, 2))).toEqual(
      precondition(`${INVALID}: expected phase 2, next phase is 1`),
    );
    expect(frozen(await getRun(s.flow, id))).toEqual(frozen(gate));

    // 0 skips the check (the next phase is 1); the positive match is in api-queries.
    const advanced = await advance(id, 0);
    expect(stateOf(advanced)).toEqual({
      status: S.OPERATION_RUN_STATUS_RUNNING,
      reason: R.OPERATION_RUN_STATUS_REASON_NONE,
      message: "advanced to phase 1",
    });
    expect(advanced.summary?.currentPhaseIndex).toBe(1);
    expect(advanced.stats).toBeUndefined();
  });

  it("an omitted expected_phase_index skips the check too", async () => {
    const id = runs.gated;
    const gate = await waitForStatus(s.flow, id, [S.OPERATION_RUN_STATUS_PAUSED]);
    expect(stateOf(gate).reason, await targetReport(s.flow, id)).toBe(
      R.OPERATION_RUN_STATUS_REASON_PHASE_GATE,
    );
    expect(gate.summary?.currentPhaseIndex).toBe(1);
    expect(await failure(advance(id, 3))).toEqual(
      precondition(`${INVALID}: expected phase 3, next phase is 2`),
    );
    const advanced = await advance(id);
    expect(stateOf(advanced).message).toBe("advanced to phase 2");
    expect(advanced.summary?.currentPhaseIndex).toBe(2);
  });

  it("a completed run: pause refused as terminal, advance refused, cancel returns it unchanged", async () => {
    const id = runs.gated;
    const done = await waitForTerminal(s.flow, id);
    expect(stateOf(done), await targetReport(s.flow, id)).toEqual({
      status: S.OPERATION_RUN_STATUS_COMPLETED,
      reason: R.OPERATION_RUN_STATUS_REASON_NONE,
      message: "operation run completed",
    });
    expect(await failure(pause(id))).toEqual(
      precondition(`${INVALID}: ${id} is in terminal state completed`),
    );
    expect(await failure(resume(id))).toEqual(precondition(`${INVALID}: ${id} is not paused`));
    expect(await failure(advance(id))).toEqual(
      precondition(`${INVALID}: ${id} is not paused at a phase gate`),
    );
    expect(frozen(await cancel(id, "too late"))).toEqual(frozen(done));
  });
});

describe("a safety gate pause", () => {
  it("is kept by pause; resume reopens the run and the still-tripped gate pauses it again", async () => {
    const id = runs.tripped;
    const tripped = await waitForStatus(s.flow, id, [S.OPERATION_RUN_STATUS_PAUSED]);
    const trippedState = {
      status: S.OPERATION_RUN_STATUS_PAUSED,
      reason: R.OPERATION_RUN_STATUS_REASON_SAFETY_GATE,
      message: "failure_count safety gate tripped for current_phase: 1/2 targets failed (threshold 1)",
    };
    expect(stateOf(tripped)).toEqual(trippedState);
    expect(frozen(await pause(id))).toEqual(frozen(tripped));
    expect(await failure(advance(id))).toEqual(
      precondition(`${INVALID}: ${id} is not paused at a phase gate`),
    );

    const resumed = await resume(id);
    expect(stateOf(resumed)).toEqual({
      status: S.OPERATION_RUN_STATUS_RUNNING,
      reason: R.OPERATION_RUN_STATUS_REASON_NONE,
      message: "operation run resumed",
    });
    const again = await waitForStatus(s.flow, id, [S.OPERATION_RUN_STATUS_PAUSED]);
    expect(stateOf(again)).toEqual(trippedState);
  });
});

describe("lifecycle calls: id rules", () => {
  const calls: [string, (id: { id: string } | undefined) => Promise<unknown>][] = [
    ["PauseOperationRun", (id) => s.flow.pauseOperationRun({ id })],
    ["ResumeOperationRun", (id) => s.flow.resumeOperationRun({ id })],
    ["AdvanceOperationRunPhase", (id) => s.flow.advanceOperationRunPhase({ id, expectedPhaseIndex: 1 })],
    ["CancelOperationRun", (id) => s.flow.cancelOperationRun({ id, reason: "x" })],
  ];
  const bad: [string, { id: string } | undefined][] = [
    ["absent", undefined],
    ["empty", { id: "" }],
    ["malformed", { id: "zz-not-a-uuid" }],
    ["nil", { id: NIL_ID }],
  ];

  it.each(calls.flatMap(([rpc, call]) => bad.map(([what, id]) => [rpc, what, call, id] as const)))(
    "%s with an %s id → InvalidArgument 'operation run ID is required'",
    async (_rpc, _what, call, id) => {
      expect(await failure(call(id))).toEqual({
        code: "INVALID_ARGUMENT",
        details: "operation run ID is required",
      });
    },
  );

  it.each(calls)("%s with an unknown id → NotFound", async (_rpc, call) => {
    expect(await failure(call({ id: UNKNOWN_ID }))).toEqual({
      code: "NOT_FOUND",
      details: `operation run not found: ${UNKNOWN_ID}`,
    });
  });

  it.each(calls)("%s accepts an upper-case id", async (rpc, call) => {
    const id = await createRun(s.flow, runRequest({ rackIds: [HANG.ids[11]!] }));
    const result = await outcome(call({ id: id.toUpperCase() }));
    // Whatever the transition's verdict, the run was found and the id accepted.
    expect(
      result.ok || !["NOT_FOUND", "INVALID_ARGUMENT"].includes(result.code),
      `${rpc}: ${JSON.stringify(result)}`,
    ).toBe(true);
  });
});
