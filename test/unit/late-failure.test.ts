import { describe, expect, it } from "vitest";
import { createControls } from "../../src/app/controls.js";
import { createDispatcher } from "../../src/app/dispatcher.js";
import { createLateFailureReports } from "../../src/app/late-failures.js";
import type { Actor } from "../../src/domain/actor.js";
import { FailedPreconditionError, NotFoundError, ValidationError } from "../../src/domain/errors.js";
import {
  checkLateFailureRequest,
  type LateFailureRequest,
  lateFailureEvent,
  reportLateFailure,
} from "../../src/domain/late-failure.js";
import { clockOf } from "../support/clock.js";
import { uuid } from "../support/dynamodb-fixtures.js";
import { MemoryRunStore } from "../support/memory-stores.js";
import { type RunState, runInState, T0 } from "../support/run-states.js";
import { ScriptedSubmitter } from "../support/scripted-submitter.js";

const RUN = uuid(1, "1a7e0000");
const PREFIX = "operation run is not in a valid state for the requested operation: ";
const NOC: Actor = {
  name: "noc",
  source: "CLIENT_CERTIFICATE",
  authenticated: true,
  subjectAltNames: ["DNS:noc"],
};
const ALL = { offset: 0, limit: 100 };
const SOAK = 30_000;

/** A run [2, 2] whose phase 1 both COMPLETED, with a failure-count gate of 1 and a 30 s soak. */
const soaking: RunState = {
  phases: [
    ["COMPLETED", "COMPLETED"],
    ["PENDING", "PENDING"],
  ],
  config: {
    autoAdvance: true,
    minSoakMs: SOAK,
    safetyGates: [{ kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 1 }],
  },
};

async function world(state: RunState = soaking) {
  const runs = new MemoryRunStore();
  const { run, targets } = runInState(RUN, state);
  await runs.createRun(run, targets);
  const clock = { now: T0 + 1_000 };
  const deps = {
    runs,
    submitter: new ScriptedSubmitter(),
    clock: clockOf(() => clock.now),
    log: () => undefined,
  };
  const dispatcher = createDispatcher(deps);
  const controls = createControls(deps);
  const reports = createLateFailureReports({ ...deps, dispatch: (id) => dispatcher.dispatchRun(id) });
  const history = async () => (await runs.listRunEvents(RUN, ALL))?.events ?? [];
  return { runs, targets, clock, dispatcher, controls, reports, history };
}

const request = (over: Partial<LateFailureRequest>): LateFailureRequest => ({
  runId: RUN,
  reason: "XID 79",
  ...over,
});

describe("checkLateFailureRequest: every violation names its field", () => {
  it.each<[Partial<LateFailureRequest>, [string, string][]]>([
    [{ targetId: uuid(1, "7a000000") }, []],
    [{ rackId: uuid(1, "7a000000"), reason: "  link flaps  " }, []],
    [{ targetId: uuid(1, "7a000000"), reason: "  " }, [["reason", "is required: why the target failed"]]],
    [
      { targetId: uuid(1, "7a000000"), reason: "x".repeat(1025) },
      [["reason", "must be at most 1024 characters (got 1025)"]],
    ],
    [
      { targetId: uuid(1, "7a000000"), reason: "bad\u001b[2J" },
      [["reason", "must not contain control characters (U+001B at character 3)"]],
    ],
    [{}, [["target_id", "one of target_id and rack_id is required"]]],
    [
      { targetId: uuid(1, "7a000000"), rackId: uuid(2, "7a000000") },
      [["target_id", "set either target_id or rack_id, not both"]],
    ],
    [{ targetId: "rack-1" }, [["target_id.id", "must be a UUID"]]],
    [{ rackId: "rack-1" }, [["rack_id.id", "must be a UUID"]]],
  ])("%j → %j", (over, expected) => {
    expect(checkLateFailureRequest(request(over)).map((v) => [v.field, v.rule])).toEqual(expected);
  });
});

describe("reportLateFailure: the decision", () => {
  const { run, targets } = runInState(RUN, soaking);
  const done = targets[0]!;

  it("COMPLETED → FAILED with the trimmed reason and the reporter; the phase's counters move; the status stays", () => {
    const decision = reportLateFailure(run, done, "  XID 79  ", NOC, T0 + 5);
    if (decision.kind !== "report") throw new Error(decision.kind);
    expect(decision.run.counters[0]).toEqual({ completed: 1, failed: 1, terminated: 0, skipped: 0 });
    expect(decision.run).toMatchObject({ status: run.status, updatedAt: T0 + 5 });
    expect(decision.target).toMatchObject({
      status: "FAILED",
      message: "XID 79",
      failureReportedBy: NOC,
      failureReportedAt: T0 + 5,
      updatedAt: T0 + 5,
    });
  });

  it("without a known reporter: no failureReportedBy on the target, no actor on the event", () => {
    const decision = reportLateFailure(run, done, "XID 79", undefined, T0 + 5);
    if (decision.kind !== "report") throw new Error(decision.kind);
    expect(decision.target.failureReportedBy).toBeUndefined();
    expect(lateFailureEvent(decision.run, decision.target).actor).toBeUndefined();
  });

  it("a target already reported: nothing to do; a terminal run and a target not COMPLETED are refused", () => {
    const reported = { ...done, status: "FAILED" as const, failureReportedAt: T0 };
    expect(reportLateFailure(run, reported, "again", NOC, T0 + 5)).toEqual({ kind: "already-reported" });
    const finished = reportLateFailure({ ...run, status: "COMPLETED" }, done, "x", NOC, T0 + 5);
    expect(finished).toEqual({
      kind: "refused",
      error: new FailedPreconditionError(`${PREFIX}${RUN} is in terminal state completed`),
    });
    const pending = reportLateFailure(run, targets[2]!, "x", NOC, T0 + 5);
    expect(pending.kind === "refused" && pending.error.message).toBe(
      `target ${targets[2]!.id} (rack ${targets[2]!.rackExternalId ?? targets[2]!.rackId}) is pending: only a completed target can be reported failed`,
    );
    const failed = reportLateFailure(run, { ...done, status: "FAILED" }, "x", NOC, T0 + 5);
    expect(failed.kind === "refused" && failed.error.message).toContain("is failed: only a completed target");
  });
});

describe("ReportTargetFailure during a soak: the gate trips and the next phase stays closed", () => {
  it("soak started, a late failure reported by rack: target FAILED, run PAUSED / SAFETY_GATE in phase 1, history says who", async () => {
    const w = await world();
    await w.dispatcher.dispatchRun(RUN);
    expect(await w.runs.getRun(RUN)).toMatchObject({ status: "RUNNING", soakEndsAt: T0 + 1_000 + SOAK });

    w.clock.now += 10_000;
    const returned = await w.reports.reportTargetFailure(
      request({ rackId: w.targets[1]!.rackId, reason: "XID 79" }),
      NOC,
    );
    expect(returned.counters[0]).toEqual({ completed: 1, failed: 1, terminated: 0, skipped: 0 });

    const run = await w.runs.getRun(RUN);
    expect(run).toMatchObject({
      status: "PAUSED",
      reason: "SAFETY_GATE",
      currentPhaseIndex: 0,
      statusMessage: "failure_count safety gate tripped for current_phase: 1/2 targets failed (threshold 1)",
    });
    expect(await w.runs.getTarget(RUN, w.targets[1]!.id)).toMatchObject({
      status: "FAILED",
      message: "XID 79",
      failureReportedBy: NOC,
    });
    const events = await w.history();
    expect(events.map((e) => e.kind)).toEqual(["SOAK_STARTED", "TARGET_FAILURE_REPORTED", "GATE_TRIPPED"]);
    const reported = events[1]!;
    expect(reported).toMatchObject({
      actor: NOC,
      message: `rack ${w.targets[1]!.rackExternalId ?? w.targets[1]!.rackId} (phase 1) reported failed: XID 79`,
      detail: {
        type: "lateFailure",
        targetId: w.targets[1]!.id,
        rackId: w.targets[1]!.rackId,
        targetPhaseIndex: 0,
        reason: "XID 79",
      },
    });

    // Past the soak's end the paused run still does not advance: the gate holds it.
    w.clock.now += SOAK;
    await w.dispatcher.dispatchRun(RUN);
    expect(await w.runs.getRun(RUN)).toMatchObject({ status: "PAUSED", currentPhaseIndex: 0 });
    expect(
      (await w.runs.listTargets(RUN, { phaseFrom: 1, phaseTo: 1, page: ALL }))?.targets.map((t) => t.status),
    ).toEqual(["PENDING", "PENDING"]);
  });

  it("a repeated report changes nothing and answers the run as it is; the counter moved once", async () => {
    const w = await world();
    const by = request({ targetId: w.targets[0]!.id });
    await w.reports.reportTargetFailure(by, NOC);
    const writes = w.runs.writes();
    const again = await w.reports.reportTargetFailure(by, NOC);
    expect(w.runs.writes()).toBe(writes);
    expect(again.counters[0]).toEqual({ completed: 1, failed: 1, terminated: 0, skipped: 0 });
    expect((await w.history()).filter((e) => e.kind === "TARGET_FAILURE_REPORTED")).toHaveLength(1);
  });

  it("refusals: InvalidArgument by field, NotFound for an unknown run, target or rack, FailedPrecondition when finished", async () => {
    const w = await world();
    await expect(
      w.reports.reportTargetFailure(request({ targetId: w.targets[0]!.id, reason: "" })),
    ).rejects.toEqual(new ValidationError([{ field: "reason", rule: "is required: why the target failed" }]));
    const unknown = uuid(99, "1a7e0000");
    await expect(
      w.reports.reportTargetFailure({ runId: unknown, reason: "x", rackId: unknown }),
    ).rejects.toEqual(new NotFoundError(`operation run not found: ${unknown}`));
    await expect(w.reports.reportTargetFailure(request({ targetId: unknown }))).rejects.toEqual(
      new NotFoundError(`operation run target not found: ${unknown} in operation run ${RUN}`),
    );
    await expect(w.reports.reportTargetFailure(request({ rackId: unknown }))).rejects.toEqual(
      new NotFoundError(`operation run ${RUN} has no target on rack ${unknown}`),
    );
    await w.controls.cancel(RUN, "done");
    await expect(w.reports.reportTargetFailure(request({ targetId: w.targets[0]!.id }))).rejects.toEqual(
      new FailedPreconditionError(`${PREFIX}${RUN} is in terminal state cancelled`),
    );
  });

  it("a report racing a dispatch pass is decided again on the run as it is now, and counted once", async () => {
    const w = await world();
    w.runs.interleave("recordLateFailure", () => w.dispatcher.dispatchRun(RUN));
    await w.reports.reportTargetFailure(request({ targetId: w.targets[0]!.id }), NOC);
    const run = await w.runs.getRun(RUN);
    expect(run?.counters[0]).toEqual({ completed: 1, failed: 1, terminated: 0, skipped: 0 });
    expect(run).toMatchObject({ status: "PAUSED", reason: "SAFETY_GATE" });
  });
});
