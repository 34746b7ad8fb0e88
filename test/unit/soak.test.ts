import { describe, expect, it } from "vitest";
import { FailedPreconditionError } from "../../src/domain/errors.js";
import type { OutcomeCounts, Run, RunConfig } from "../../src/domain/model.js";
import { historyEvents } from "../../src/domain/run-history.js";
import { type RunEvent, type RunResult, reduceRun } from "../../src/domain/run-machine.js";
import { phaseSoakMs, soakingRefusal, soakState } from "../../src/domain/soak.js";
import { runConfig } from "../support/domain-fixtures.js";

const ID = "22222222-2222-4222-8222-222222222222";
/** 2026-12-05T00:00:00Z */
const T0 = Date.UTC(2026, 11, 5);
const SOAK = 30_000;
const PREFIX = "operation run is not in a valid state for the requested operation: ";
const zero: OutcomeCounts = { completed: 0, failed: 0, terminated: 0, skipped: 0 };

const config = (over: Partial<RunConfig> = {}): RunConfig =>
  runConfig({
    safetyGates: [{ kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 1 }],
    phasePlan: { kind: "equal", phaseCount: 2 },
    autoAdvance: true,
    minSoakMs: SOAK,
    ...over,
  });

/** A RUNNING run [2, 2] whose phase 1 (index 0) has just completed both targets. */
function run(over: Omit<Partial<Run>, "counters"> & { counters?: Partial<OutcomeCounts>[] } = {}): Run {
  const { counters = [{ completed: 2 }], ...rest } = over;
  return {
    id: ID,
    name: "soak",
    description: "",
    config: config(),
    status: "RUNNING",
    reason: "NONE",
    statusMessage: "submitted 2 operation run targets",
    phaseSizes: [2, 2],
    currentPhaseIndex: 0,
    counters: counters.map((c) => ({ ...zero, ...c })),
    inFlight: 0,
    createdAt: T0 - 60_000,
    updatedAt: T0 - 1,
    startedAt: T0 - 60_000,
    ...rest,
  };
}

const evaluate: RunEvent = { type: "evaluate" };

function ok(result: RunResult): Extract<RunResult, { ok: true }> {
  if (!result.ok) throw result.error;
  return result;
}

function refused(result: RunResult): string {
  if (result.ok)
    throw new Error(`expected a refusal, got ${result.run.status} "${result.run.statusMessage}"`);
  expect(result.error).toBeInstanceOf(FailedPreconditionError);
  return result.error.message;
}

describe("phaseSoakMs: a phase's own entry, else the uniform soak, else none", () => {
  it.each<[Pick<RunConfig, "minSoakMs" | "phaseMinSoakMs">, number, number]>([
    [{}, 0, 0],
    [{ minSoakMs: SOAK }, 0, SOAK],
    [{ minSoakMs: SOAK }, 5, SOAK],
    [{ minSoakMs: SOAK, phaseMinSoakMs: [0, 3_600_000] }, 0, 0],
    [{ minSoakMs: SOAK, phaseMinSoakMs: [0, 3_600_000] }, 1, 3_600_000],
    [{ minSoakMs: SOAK, phaseMinSoakMs: [0, 3_600_000] }, 2, SOAK],
    [{ phaseMinSoakMs: [10_000] }, 1, 0],
  ])("%j, phase index %i → %i ms", (soaks, phaseIndex, expected) => {
    expect(phaseSoakMs(soaks, phaseIndex)).toBe(expected);
  });
});

describe("soakState", () => {
  it("starts a soak of the phase's length, then counts down, then lets the boundary pass", () => {
    expect(soakState(run(), T0)).toEqual({ kind: "start", endsAt: T0 + SOAK, soakMs: SOAK });
    expect(soakState(run({ soakEndsAt: T0 + SOAK }), T0 + 29_999)).toEqual({
      kind: "soaking",
      endsAt: T0 + SOAK,
      leftMs: 1,
    });
    expect(soakState(run({ soakEndsAt: T0 + SOAK }), T0 + SOAK)).toEqual({ kind: "none" });
    expect(soakState(run({ config: config({ minSoakMs: undefined }) }), T0)).toEqual({ kind: "none" });
  });
});

describe("evaluate: a complete phase soaks before its boundary is passed", () => {
  it("the first pass stores the deadline, says so, claims nothing and records SOAK_STARTED", () => {
    const before = run();
    const r = ok(reduceRun(before, evaluate, T0));
    expect(r.write).toBe(true);
    expect(r.effects).toEqual([]);
    expect(r.run).toMatchObject({
      status: "RUNNING",
      reason: "NONE",
      currentPhaseIndex: 0,
      soakEndsAt: T0 + SOAK,
      statusMessage: "phase 1 soaking until 2026-12-05T00:00:30Z",
    });
    const events = historyEvents(before, r.run, evaluate, T0);
    expect(events.map((e) => [e.kind, e.message, e.detail])).toEqual([
      [
        "SOAK_STARTED",
        "phase 1 complete: phase 1 soaking until 2026-12-05T00:00:30Z",
        { type: "soak", phaseIndex: 0, minSoakMs: SOAK, endsAt: T0 + SOAK },
      ],
    ]);
  });

  it("a pass during the soak, even 1 ms before its end, writes nothing and does not advance", () => {
    const soaking = ok(reduceRun(run(), evaluate, T0)).run;
    for (const at of [T0 + 1, T0 + 15_000, T0 + SOAK - 1]) {
      const r = ok(reduceRun(soaking, evaluate, at));
      expect(r).toMatchObject({ write: false, effects: [] });
      expect(r.run).toBe(soaking);
    }
  });

  it("the pass at the deadline auto-advances, claims in the next phase and drops the deadline", () => {
    const soaking = ok(reduceRun(run(), evaluate, T0)).run;
    const r = ok(reduceRun(soaking, evaluate, T0 + SOAK));
    expect(r.run).toMatchObject({ currentPhaseIndex: 1, statusMessage: "advanced to next phase" });
    expect(r.run.soakEndsAt).toBeUndefined();
    expect(r.effects).toEqual([{ type: "claim", phaseIndex: 1, slots: r.run.config.maxConcurrentTargets }]);
    expect(historyEvents(soaking, r.run, evaluate, T0 + SOAK).map((e) => e.kind)).toEqual(["PHASE_OPENED"]);
  });

  it("without auto-advance the run reaches its phase gate only when the soak is over", () => {
    const manual = run({ config: config({ autoAdvance: false }) });
    const soaking = ok(reduceRun(manual, evaluate, T0)).run;
    expect(soaking.status).toBe("RUNNING");
    const r = ok(reduceRun(soaking, evaluate, T0 + SOAK));
    expect(r.run).toMatchObject({ status: "PAUSED", reason: "PHASE_GATE", soakEndsAt: T0 + SOAK });
  });

  it("a failure counted during the soak trips the gate: PAUSED / SAFETY_GATE, the next phase stays closed", () => {
    const soaking = ok(reduceRun(run(), evaluate, T0)).run;
    const late: Run = { ...soaking, counters: [{ ...zero, completed: 1, failed: 1 }, { ...zero }] };
    const r = ok(reduceRun(late, evaluate, T0 + 10_000));
    expect(r.run).toMatchObject({
      status: "PAUSED",
      reason: "SAFETY_GATE",
      currentPhaseIndex: 0,
      statusMessage: "failure_count safety gate tripped for current_phase: 1/2 targets failed (threshold 1)",
    });
    expect(r.effects).toEqual([]);
    // Paused runs are not dispatched, so the deadline passing changes nothing.
    expect(ok(reduceRun(r.run, evaluate, T0 + SOAK + 1)).write).toBe(false);
  });

  it("a resumed run whose soak is over advances; one still soaking goes on soaking", () => {
    const soaking = ok(reduceRun(run(), evaluate, T0)).run;
    const pausedRun = ok(reduceRun(soaking, { type: "pause" }, T0 + 1)).run;
    const resumed = ok(reduceRun(pausedRun, { type: "resume" }, T0 + 2)).run;
    expect(resumed.soakEndsAt).toBe(T0 + SOAK);
    const again = ok(reduceRun(resumed, evaluate, T0 + 3));
    expect(again.run).toMatchObject({
      currentPhaseIndex: 0,
      statusMessage: "phase 1 soaking until 2026-12-05T00:00:30Z",
    });
    expect(ok(reduceRun(resumed, evaluate, T0 + SOAK)).run.currentPhaseIndex).toBe(1);
  });

  it("the last phase soaks too: the run finishes when its soak ends, not when its last target does", () => {
    const last = run({ currentPhaseIndex: 1, counters: [{ completed: 2 }, { completed: 2 }] });
    const soaking = ok(reduceRun(last, evaluate, T0)).run;
    expect(soaking).toMatchObject({
      status: "RUNNING",
      statusMessage: "phase 2 soaking until 2026-12-05T00:00:30Z",
    });
    expect(ok(reduceRun(soaking, evaluate, T0 + SOAK - 1)).write).toBe(false);
    // A resume during it does not finish the run early either.
    const pausedRun = ok(reduceRun(soaking, { type: "pause" }, T0 + 1)).run;
    expect(ok(reduceRun(pausedRun, { type: "resume" }, T0 + 2)).run.status).toBe("RUNNING");
    const done = ok(reduceRun(soaking, evaluate, T0 + SOAK)).run;
    expect(done).toMatchObject({ status: "COMPLETED", statusMessage: "operation run completed" });
    expect(done.soakEndsAt).toBeUndefined();
  });

  it("a phase with a 0 entry does not soak, whatever the uniform soak", () => {
    const r = ok(reduceRun(run({ config: config({ phaseMinSoakMs: [0] }) }), evaluate, T0));
    expect(r.run.currentPhaseIndex).toBe(1);
  });

  it("a run without soaks passes the boundary at once, as before", () => {
    const r = ok(reduceRun(run({ config: config({ minSoakMs: undefined }) }), evaluate, T0));
    expect(r.run.currentPhaseIndex).toBe(1);
    expect(r.run.soakEndsAt).toBeUndefined();
  });

  it("a phase still working has no soak", () => {
    const r = ok(reduceRun(run({ counters: [{ completed: 1 }] }), evaluate, T0));
    expect(r.run.soakEndsAt).toBeUndefined();
    expect(r.effects).toEqual([{ type: "claim", phaseIndex: 0, slots: r.run.config.maxConcurrentTargets }]);
  });
});

describe("advance during a soak: FailedPrecondition naming the time left", () => {
  it.each([
    [T0 + 5_000, "25s left"],
    [T0 + 29_001, "1s left"],
  ])("at %i: %s", (at, left) => {
    const soaking = ok(reduceRun(run({ config: config({ autoAdvance: false }) }), evaluate, T0)).run;
    expect(refused(reduceRun(soaking, { type: "advance" }, at))).toBe(
      `${PREFIX}phase 1 is soaking: ${left}, until 2026-12-05T00:00:30Z`,
    );
  });

  it("refused while paused by a gate during the soak too; at the gate after it, the advance opens phase 2", () => {
    const soaking = ok(reduceRun(run({ config: config({ autoAdvance: false }) }), evaluate, T0)).run;
    const gated: Run = { ...soaking, status: "PAUSED", reason: "SAFETY_GATE" };
    expect(refused(reduceRun(gated, { type: "advance" }, T0 + 1))).toContain("phase 1 is soaking: 30s left");
    const atGate = ok(reduceRun(soaking, evaluate, T0 + SOAK)).run;
    const advanced = ok(reduceRun(atGate, { type: "advance" }, T0 + SOAK + 1)).run;
    expect(advanced).toMatchObject({
      status: "RUNNING",
      currentPhaseIndex: 1,
      statusMessage: "advanced to phase 1",
    });
    expect(advanced.soakEndsAt).toBeUndefined();
  });

  it("soakingRefusal rounds up to whole seconds and prints hours Go's way", () => {
    expect(soakingRefusal(2, 3_599_001, T0)).toBe(
      "phase 3 is soaking: 1h0m0s left, until 2026-12-05T00:00:00Z",
    );
  });
});
