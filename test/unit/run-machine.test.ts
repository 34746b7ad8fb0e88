import { describe, expect, it } from "vitest";
import { FailedPreconditionError } from "../../src/domain/errors.js";
import type { OutcomeCounts, Run, RunConfig, RunReason, RunStatus } from "../../src/domain/model.js";
import {
  finalStatus,
  freeSlots,
  type RunEvent,
  type RunResult,
  reduceRun,
} from "../../src/domain/run-machine.js";
import { claimStatusMessage } from "../../src/domain/run-messages.js";
import { runConfig } from "../support/domain-fixtures.js";

const ID = "11111111-1111-4111-8111-111111111111";
const T0 = 1_000;
const NOW = 5_000;
const PREFIX = "operation run is not in a valid state for the requested operation: ";

const baseConfig: RunConfig = runConfig({
  safetyGates: [{ kind: "failureRate", scope: "CURRENT_PHASE", thresholdPercent: 50 }],
  phasePlan: { kind: "equal", phaseCount: 2 },
});

const zero: OutcomeCounts = { completed: 0, failed: 0, terminated: 0, skipped: 0 };

type RunOverrides = Omit<Partial<Run>, "counters" | "config"> & {
  counters?: Partial<OutcomeCounts>[];
  config?: Partial<RunConfig>;
};

/** A RUNNING two-phase run [4, 4] at phase 0 with nothing done, started at T0. */
function run(over: RunOverrides = {}): Run {
  const { counters = [], config = {}, ...rest } = over;
  return {
    id: ID,
    name: "rollout",
    description: "",
    config: { ...baseConfig, ...config },
    status: "RUNNING",
    reason: "NONE",
    statusMessage: "submitted 2 operation run targets",
    phaseSizes: [4, 4],
    currentPhaseIndex: 0,
    counters: counters.map((c) => ({ ...zero, ...c })),
    inFlight: 0,
    createdAt: 0,
    updatedAt: T0,
    startedAt: T0,
    ...rest,
  };
}

function ok(result: RunResult): Extract<RunResult, { ok: true }> {
  if (!result.ok) throw result.error;
  return result;
}

function err(result: RunResult): FailedPreconditionError {
  if (result.ok) throw new Error(`expected an error, got ${result.run.status}`);
  expect(result.error).toBeInstanceOf(FailedPreconditionError);
  expect(result.error.code).toBe("FAILED_PRECONDITION");
  return result.error;
}

const TERMINAL: RunStatus[] = ["COMPLETED", "CANCELLED", "FAILED", "COMPLETED_WITH_FAILURES"];
const PAUSE_REASONS: RunReason[] = [
  "OPERATOR_PAUSED",
  "PHASE_GATE",
  "SAFETY_GATE",
  "CONFLICT_RETRY_TIMEOUT",
  "MAINTENANCE_WINDOW",
];

// -------------------------------------------------------------------------------------------------

describe("run machine: pause", () => {
  it.each(["PENDING", "RUNNING"] as const)("%s → PAUSED / OPERATOR_PAUSED, written", (status) => {
    const r = ok(reduceRun(run({ status }), { type: "pause" }, NOW));
    expect(r.write).toBe(true);
    expect(r.effects).toEqual([]);
    expect(r.run).toMatchObject({
      status: "PAUSED",
      reason: "OPERATOR_PAUSED",
      statusMessage: "operation run paused by operator",
      updatedAt: NOW,
    });
  });

  it.each(PAUSE_REASONS)("already PAUSED / %s → unchanged, original reason kept, no write", (reason) => {
    const paused = run({ status: "PAUSED", reason, statusMessage: "original" });
    expect(reduceRun(paused, { type: "pause" }, NOW)).toEqual({
      ok: true,
      run: paused,
      effects: [],
      write: false,
    });
  });

  it.each([
    ["COMPLETED", "completed"],
    ["CANCELLED", "cancelled"],
    ["FAILED", "failed"],
    ["COMPLETED_WITH_FAILURES", "completed_with_failures"],
  ] as const)(
    "terminal %s → FailedPrecondition naming the status as the reference prints it",
    (status, printed) => {
      expect(err(reduceRun(run({ status }), { type: "pause" }, NOW)).message).toBe(
        `${PREFIX}${ID} is in terminal state ${printed}`,
      );
    },
  );
});

describe("run machine: resume", () => {
  it.each(["OPERATOR_PAUSED", "SAFETY_GATE"] as const)(
    "PAUSED / %s → RUNNING, reason NONE, 'operation run resumed'",
    (reason) => {
      const r = ok(reduceRun(run({ status: "PAUSED", reason }), { type: "resume" }, NOW));
      expect(r).toMatchObject({ write: true, effects: [] });
      expect(r.run).toMatchObject({
        status: "RUNNING",
        reason: "NONE",
        statusMessage: "operation run resumed",
        updatedAt: NOW,
        startedAt: T0,
      });
    },
  );

  it("resume does not check gates: a still-tripped gate is left to the dispatcher", () => {
    const tripped = run({ status: "PAUSED", reason: "SAFETY_GATE", counters: [{ failed: 4 }] });
    expect(ok(reduceRun(tripped, { type: "resume" }, NOW)).run.status).toBe("RUNNING");
  });

  it("PAUSED / CONFLICT_RETRY_TIMEOUT → RUNNING and restarts the phase's conflict clocks after the write", () => {
    const r = ok(
      reduceRun(
        run({ status: "PAUSED", reason: "CONFLICT_RETRY_TIMEOUT", currentPhaseIndex: 1 }),
        { type: "resume" },
        NOW,
      ),
    );
    expect(r.run.status).toBe("RUNNING");
    expect(r.effects).toEqual([{ type: "restartConflictClocks", phaseIndex: 1 }]);
  });

  it("paused while still PENDING and then resumed keeps no startedAt (the reference's Start rule)", () => {
    const r = ok(
      reduceRun(
        run({ status: "PAUSED", reason: "OPERATOR_PAUSED", startedAt: undefined }),
        { type: "resume" },
        NOW,
      ),
    );
    expect(r.run.startedAt).toBeUndefined();
  });

  it("PAUSED / PHASE_GATE → FailedPrecondition pointing to AdvanceOperationRunPhase", () => {
    expect(
      err(reduceRun(run({ status: "PAUSED", reason: "PHASE_GATE" }), { type: "resume" }, NOW)).message,
    ).toBe(`${PREFIX}${ID} is paused at a phase gate; use AdvanceOperationRunPhase`);
  });

  it.each(["PENDING", "RUNNING", ...TERMINAL] as const)(
    "%s (not paused) → FailedPrecondition 'is not paused'",
    (status) => {
      expect(err(reduceRun(run({ status }), { type: "resume" }, NOW)).message).toBe(
        `${PREFIX}${ID} is not paused`,
      );
    },
  );

  it.each([
    [[{ completed: 4 }, { completed: 4 }], "COMPLETED", "operation run completed"],
    [
      [{ completed: 3, failed: 1 }, { completed: 4 }],
      "COMPLETED_WITH_FAILURES",
      "operation run completed with failed targets",
    ],
    [[{ failed: 2, terminated: 2 }, { terminated: 4 }], "FAILED", "operation run failed"],
  ] as const)("every target already terminal (%o) → finished as %s instead", (counters, status, message) => {
    const r = ok(
      reduceRun(
        run({ status: "PAUSED", reason: "SAFETY_GATE", currentPhaseIndex: 1, counters: [...counters] }),
        { type: "resume" },
        NOW,
      ),
    );
    expect(r).toMatchObject({ write: true, effects: [] });
    expect(r.run).toMatchObject({
      status,
      reason: "NONE",
      statusMessage: message,
      finishedAt: NOW,
      updatedAt: NOW,
    });
  });
});

describe("run machine: advance", () => {
  const atGate = (over: RunOverrides = {}) =>
    run({
      status: "PAUSED",
      reason: "PHASE_GATE",
      statusMessage: "waiting for phase advance",
      phaseSizes: [2, 3, 4],
      counters: [{ completed: 1, failed: 1 }],
      ...over,
    });

  it.each([undefined, 0, -3, 1] as const)(
    "expected phase %s → phase + 1, RUNNING, 'advanced to phase 1'",
    (expectedPhaseIndex) => {
      const r = ok(reduceRun(atGate(), { type: "advance", expectedPhaseIndex }, NOW));
      expect(r).toMatchObject({ write: true, effects: [] });
      expect(r.run).toMatchObject({
        status: "RUNNING",
        reason: "NONE",
        currentPhaseIndex: 1,
        statusMessage: "advanced to phase 1",
        updatedAt: NOW,
        startedAt: T0,
      });
    },
  );

  it("expected phase other than current + 1 → 'expected phase 2, next phase is 1'", () => {
    expect(err(reduceRun(atGate(), { type: "advance", expectedPhaseIndex: 2 }, NOW)).message).toBe(
      `${PREFIX}expected phase 2, next phase is 1`,
    );
  });

  it("current phase not complete → 'phase 0 is not complete'", () => {
    expect(err(reduceRun(atGate({ counters: [{ completed: 1 }] }), { type: "advance" }, NOW)).message).toBe(
      `${PREFIX}phase 0 is not complete`,
    );
  });

  it("the not-complete check comes before the expected-phase check", () => {
    expect(
      err(
        reduceRun(atGate({ counters: [{ completed: 1 }] }), { type: "advance", expectedPhaseIndex: 5 }, NOW),
      ).message,
    ).toBe(`${PREFIX}phase 0 is not complete`);
  });

  it("the last phase complete with a target elsewhere unfinished → 'phase 2 is the final phase'", () => {
    // Only corrupted counters get here (an earlier phase unfinished while the last one is done).
    const r = atGate({
      currentPhaseIndex: 2,
      counters: [{ completed: 1 }, { completed: 3 }, { completed: 4 }],
    });
    expect(err(reduceRun(r, { type: "advance" }, NOW)).message).toBe(`${PREFIX}phase 2 is the final phase`);
  });

  it("every target terminal → finished instead of advancing (no error even at the final phase)", () => {
    const r = ok(
      reduceRun(
        atGate({
          currentPhaseIndex: 2,
          counters: [{ completed: 2 }, { completed: 3 }, { completed: 3, failed: 1 }],
        }),
        { type: "advance", expectedPhaseIndex: 9 },
        NOW,
      ),
    );
    expect(r.run).toMatchObject({
      status: "COMPLETED_WITH_FAILURES",
      reason: "NONE",
      currentPhaseIndex: 2,
      statusMessage: "operation run completed with failed targets",
      finishedAt: NOW,
    });
  });

  it.each([
    ["RUNNING", "NONE"],
    ["PENDING", "NONE"],
    ["PAUSED", "OPERATOR_PAUSED"],
    ["PAUSED", "SAFETY_GATE"],
    ["PAUSED", "CONFLICT_RETRY_TIMEOUT"],
    ["COMPLETED", "NONE"],
    ["CANCELLED", "NONE"],
  ] as const)("%s / %s → 'is not paused at a phase gate'", (status, reason) => {
    expect(err(reduceRun(atGate({ status, reason }), { type: "advance" }, NOW)).message).toBe(
      `${PREFIX}${ID} is not paused at a phase gate`,
    );
  });
});

describe("run machine: cancel", () => {
  it.each([
    ["", "operation run cancelled"],
    ["   ", "operation run cancelled"],
    ["  bad firmware build \n", "operation run cancelled: bad firmware build"],
  ])("reason %j → message %j", (reason, message) => {
    const r = ok(reduceRun(run({ currentPhaseIndex: 1 }), { type: "cancel", reason }, NOW));
    expect(r.write).toBe(true);
    expect(r.run).toMatchObject({
      status: "CANCELLED",
      reason: "NONE",
      statusMessage: message,
      finishedAt: NOW,
      updatedAt: NOW,
    });
    expect(r.effects).toEqual([
      { type: "cancelChildTasks", phaseIndex: 1, skipMessage: "not started: operation run cancelled" },
    ]);
  });

  it.each([
    ["PENDING", "NONE"],
    ["PAUSED", "PHASE_GATE"],
    ["PAUSED", "SAFETY_GATE"],
  ] as const)("%s / %s → CANCELLED with reason NONE", (status, reason) => {
    expect(ok(reduceRun(run({ status, reason }), { type: "cancel", reason: "" }, NOW)).run).toMatchObject({
      status: "CANCELLED",
      reason: "NONE",
    });
  });

  it.each(TERMINAL)("terminal %s → returned unchanged, no write, no effects", (status) => {
    const done = run({ status, finishedAt: 3 });
    expect(reduceRun(done, { type: "cancel", reason: "x" }, NOW)).toEqual({
      ok: true,
      run: done,
      effects: [],
      write: false,
    });
  });
});

// -------------------------------------------------------------------------------------------------

describe("run machine: evaluate (the dispatcher's decision order)", () => {
  const evaluate: RunEvent = { type: "evaluate" };
  const timeout: RunEvent = {
    type: "evaluate",
    conflictTimeout: { targetId: "aaaaaaaa-0000-4000-8000-000000000009", blockedForMs: 3_700_000 },
  };

  it.each(["PAUSED", ...TERMINAL] as const)(
    "%s runs are not dispatched: unchanged, no write, no effects",
    (status) => {
      const r = run({
        status,
        reason: status === "PAUSED" ? "SAFETY_GATE" : "NONE",
        counters: [{ failed: 4 }, { failed: 4 }],
      });
      expect(reduceRun(r, timeout, NOW)).toEqual({ ok: true, run: r, effects: [], write: false });
    },
  );

  describe("1. every target terminal → finish", () => {
    it.each([
      [[{ completed: 4 }, { completed: 3, skipped: 1 }], "COMPLETED", "operation run completed"],
      [
        [{ completed: 4 }, { completed: 3, failed: 1 }],
        "COMPLETED_WITH_FAILURES",
        "operation run completed with failed targets",
      ],
      [
        [{ completed: 4 }, { completed: 3, terminated: 1 }],
        "COMPLETED_WITH_FAILURES",
        "operation run completed with failed targets",
      ],
      [[{ failed: 4 }, { failed: 1, terminated: 3 }], "FAILED", "operation run failed"],
      [
        [{ failed: 4 }, { failed: 3, skipped: 1 }],
        "COMPLETED_WITH_FAILURES",
        "operation run completed with failed targets",
      ],
    ] as const)("%o → %s %j", (counters, status, message) => {
      const r = ok(
        reduceRun(run({ currentPhaseIndex: 1, inFlight: 0, counters: [...counters] }), evaluate, NOW),
      );
      expect(r).toMatchObject({ write: true, effects: [] });
      expect(r.run).toMatchObject({
        status,
        reason: "NONE",
        statusMessage: message,
        finishedAt: NOW,
        updatedAt: NOW,
      });
    });

    it("finishing wins over a conflict timeout and a tripped gate", () => {
      const r = ok(
        reduceRun(run({ currentPhaseIndex: 1, counters: [{ failed: 4 }, { failed: 4 }] }), timeout, NOW),
      );
      expect(r.run.status).toBe("FAILED");
    });

    it("a PENDING run with nothing planned fails: 'operation run has no targets'", () => {
      const r = ok(reduceRun(run({ status: "PENDING", phaseSizes: [] }), evaluate, NOW));
      expect(r.run).toMatchObject({
        status: "FAILED",
        statusMessage: "operation run has no targets",
        finishedAt: NOW,
      });
    });

    it("a current phase with no planned targets fails as an invalid persisted plan, naming it counted from 1", () => {
      const r = ok(
        reduceRun(
          run({ phaseSizes: [4, 0], currentPhaseIndex: 1, counters: [{ completed: 4 }] }),
          evaluate,
          NOW,
        ),
      );
      expect(r.run).toMatchObject({
        status: "FAILED",
        reason: "NONE",
        statusMessage: "operation run phase 2 has no targets; persisted phase plan is invalid",
        finishedAt: NOW,
      });
    });
  });

  describe("2. conflict timeout → PAUSED / CONFLICT_RETRY_TIMEOUT", () => {
    it("message names the target and the configured timeout as a Go duration", () => {
      const r = ok(reduceRun(run(), timeout, NOW));
      expect(r).toMatchObject({ write: true, effects: [] });
      expect(r.run).toMatchObject({
        status: "PAUSED",
        reason: "CONFLICT_RETRY_TIMEOUT",
        statusMessage: "target aaaaaaaa-0000-4000-8000-000000000009 blocked by rack conflict for 1h0m0s",
        updatedAt: NOW,
      });
      expect(r.run.finishedAt).toBeUndefined();
    });

    it("wins over a tripped safety gate", () => {
      expect(ok(reduceRun(run({ counters: [{ failed: 3 }] }), timeout, NOW)).run.reason).toBe(
        "CONFLICT_RETRY_TIMEOUT",
      );
    });
  });

  describe("3. safety gates → PAUSED / SAFETY_GATE with the verdict's message", () => {
    it("2 of 4 failed at 50% pauses with the rate message", () => {
      const r = ok(reduceRun(run({ counters: [{ failed: 2 }] }), evaluate, NOW));
      expect(r.run).toMatchObject({
        status: "PAUSED",
        reason: "SAFETY_GATE",
        statusMessage:
          "failure_rate safety gate tripped for current_phase: 2/4 targets failed (50%, threshold 50%)",
        updatedAt: NOW,
      });
      expect(r.effects).toEqual([]);
    });

    it("terminated targets do not trip a gate: 2 terminated of 4 at 50% keeps claiming", () => {
      const r = ok(reduceRun(run({ counters: [{ terminated: 2 }] }), evaluate, NOW));
      expect(r.run.status).toBe("RUNNING");
      expect(r.effects).toEqual([{ type: "claim", phaseIndex: 0, slots: 2 }]);
    });

    it("a tripped gate wins over the phase boundary (a failed phase does not auto-advance)", () => {
      const r = ok(
        reduceRun(
          run({ config: { autoAdvance: true }, counters: [{ completed: 2, failed: 2 }] }),
          evaluate,
          NOW,
        ),
      );
      expect(r.run).toMatchObject({ status: "PAUSED", reason: "SAFETY_GATE", currentPhaseIndex: 0 });
    });

    it("a PENDING run can be paused by a gate (startedAt stays unset)", () => {
      const r = ok(
        reduceRun(run({ status: "PENDING", startedAt: undefined, counters: [{ failed: 2 }] }), evaluate, NOW),
      );
      expect(r.run).toMatchObject({ status: "PAUSED", reason: "SAFETY_GATE" });
      expect(r.run.startedAt).toBeUndefined();
    });
  });

  describe("4. phase boundary", () => {
    it("manual advance → PAUSED / PHASE_GATE 'waiting for phase advance', no claim", () => {
      const r = ok(reduceRun(run({ counters: [{ completed: 3, failed: 1 }] }), evaluate, NOW));
      expect(r).toMatchObject({ write: true, effects: [] });
      expect(r.run).toMatchObject({
        status: "PAUSED",
        reason: "PHASE_GATE",
        statusMessage: "waiting for phase advance",
        currentPhaseIndex: 0,
        updatedAt: NOW,
      });
    });

    it("auto-advance → next phase, RUNNING 'advanced to next phase', and claims in the new phase at once", () => {
      const r = ok(
        reduceRun(run({ config: { autoAdvance: true }, counters: [{ completed: 4 }] }), evaluate, NOW),
      );
      expect(r.write).toBe(true);
      expect(r.run).toMatchObject({
        status: "RUNNING",
        reason: "NONE",
        currentPhaseIndex: 1,
        statusMessage: "advanced to next phase",
        updatedAt: NOW,
      });
      expect(r.effects).toEqual([{ type: "claim", phaseIndex: 1, slots: 2 }]);
    });

    it("the current phase incomplete → no boundary, claim", () => {
      const r = ok(reduceRun(run({ counters: [{ completed: 3 }] }), evaluate, NOW));
      expect(r.effects).toEqual([{ type: "claim", phaseIndex: 0, slots: 2 }]);
    });
  });

  describe("5. claim", () => {
    it("a RUNNING run with free slots → claim effect, no write", () => {
      const r = run({ inFlight: 1, config: { maxConcurrentTargets: 3 } });
      expect(reduceRun(r, evaluate, NOW)).toEqual({
        ok: true,
        run: r,
        effects: [{ type: "claim", phaseIndex: 0, slots: 2 }],
        write: false,
      });
    });

    it("PENDING → RUNNING on the first dispatch: startedAt = now, message kept, written", () => {
      const r = ok(
        reduceRun(run({ status: "PENDING", startedAt: undefined, statusMessage: "" }), evaluate, NOW),
      );
      expect(r.write).toBe(true);
      expect(r.run).toMatchObject({
        status: "RUNNING",
        reason: "NONE",
        startedAt: NOW,
        statusMessage: "",
        updatedAt: NOW,
      });
      expect(r.effects).toEqual([{ type: "claim", phaseIndex: 0, slots: 2 }]);
    });

    it("every slot taken → message 'waiting for active targets quota', written once, claim with 0 slots (expired leases)", () => {
      const first = ok(reduceRun(run({ inFlight: 2 }), evaluate, NOW));
      expect(first.write).toBe(true);
      expect(first.run).toMatchObject({
        status: "RUNNING",
        statusMessage: "waiting for active targets quota",
        updatedAt: NOW,
      });
      expect(first.effects).toEqual([{ type: "claim", phaseIndex: 0, slots: 0 }]);

      const second = ok(reduceRun(first.run, evaluate, NOW + 10_000));
      expect(second.write).toBe(false);
      expect(second.run).toBe(first.run);
    });

    it("more in flight than the limit (limit lowered by hand) counts as 0 free slots, not negative", () => {
      expect(ok(reduceRun(run({ inFlight: 5 }), evaluate, NOW)).effects).toEqual([
        { type: "claim", phaseIndex: 0, slots: 0 },
      ]);
    });
  });

  it("does not mutate its input", () => {
    const input = run({ status: "PENDING", startedAt: undefined });
    const copy = structuredClone(input);
    reduceRun(input, evaluate, NOW);
    reduceRun(input, { type: "cancel", reason: "x" }, NOW);
    expect(input).toEqual(copy);
  });
});

// -------------------------------------------------------------------------------------------------

describe("run machine: maintenance windows", () => {
  const H = 3_600_000;
  const DAY0 = Date.parse("2026-11-20T00:00:00Z");
  const START = DAY0 + 8 * H; // 08:00
  const END = DAY0 + 12 * H; // 12:00
  /** A run whose template has the given times and windows (two phases [4, 4], auto advance). */
  const windowed = (
    times: { startTime?: number; endTime?: number },
    over: RunOverrides = {},
    windows?: RunConfig["maintenanceWindows"],
  ) => {
    const config: RunConfig = {
      ...baseConfig,
      autoAdvance: true,
      operation: { kind: "upgradeFirmware", firmware: { ...baseConfig.operation.firmware, ...times } },
      ...(windows === undefined ? {} : { maintenanceWindows: windows }),
    };
    return run({ ...over, config });
  };
  const evaluate = (r: Run, now: number) => ok(reduceRun(r, { type: "evaluate" }, now));
  const nine = [{ cron: "0 9 * * *", durationMs: H }]; // 09:00-10:00 daily

  it("before start_time: PENDING 'waiting for maintenance window: opens at <start>', no claim; again → no write", () => {
    const pending = windowed(
      { startTime: START },
      { status: "PENDING", statusMessage: "", startedAt: undefined },
    );
    const first = evaluate(pending, START - 1);
    expect(first).toMatchObject({ write: true, effects: [] });
    expect(first.run).toMatchObject({
      status: "PENDING",
      reason: "NONE",
      statusMessage: "waiting for maintenance window: opens at 2026-11-20T08:00:00Z",
    });
    expect(first.run.startedAt).toBeUndefined();
    expect(evaluate(first.run, START - 1)).toEqual({ ok: true, run: first.run, effects: [], write: false });
  });

  it("a run resumed before its start goes back to PENDING (nothing has started)", () => {
    const resumed = windowed(
      { startTime: START },
      { status: "RUNNING", statusMessage: "operation run resumed" },
    );
    expect(evaluate(resumed, START - H).run).toMatchObject({
      status: "PENDING",
      statusMessage: "waiting for maintenance window: opens at 2026-11-20T08:00:00Z",
    });
  });

  it("at start_time the waiting message is cleared and the claim starts: RUNNING, startedAt = now", () => {
    const waiting = windowed(
      { startTime: START },
      {
        status: "PENDING",
        statusMessage: "waiting for maintenance window: opens at 2026-11-20T08:00:00Z",
        startedAt: undefined,
      },
    );
    const r = evaluate(waiting, START);
    expect(r.run).toMatchObject({ status: "RUNNING", statusMessage: "", startedAt: START });
    expect(r.effects).toEqual([{ type: "claim", phaseIndex: 0, slots: 2 }]);
  });

  it("with end_time the claim is bounded by it (until = end_time)", () => {
    const r = evaluate(windowed({ endTime: END }), END - 1);
    expect(r).toMatchObject({
      write: false,
      effects: [{ type: "claim", phaseIndex: 0, slots: 2, until: END }],
    });
  });

  it("from end_time with targets in flight: no claim, RUNNING 'maintenance window closed at …: waiting for 2 targets in flight'", () => {
    const r = evaluate(windowed({ endTime: END }, { inFlight: 2, counters: [{ completed: 1 }] }), END);
    expect(r).toMatchObject({ write: true, effects: [] });
    expect(r.run).toMatchObject({
      status: "RUNNING",
      reason: "NONE",
      statusMessage: "maintenance window closed at 2026-11-20T12:00:00Z: waiting for 2 targets in flight",
    });
    expect(evaluate(r.run, END + 1).write).toBe(false);
    expect(evaluate(windowed({ endTime: END }, { inFlight: 1 }), END).run.statusMessage).toBe(
      "maintenance window closed at 2026-11-20T12:00:00Z: waiting for 1 target in flight",
    );
  });

  it("once nothing is in flight: PAUSED / MAINTENANCE_WINDOW with the targets never started, every phase counted", () => {
    const r = evaluate(windowed({ endTime: END }, { counters: [{ completed: 2, failed: 1 }] }), END + H);
    expect(r).toMatchObject({ write: true, effects: [] });
    expect(r.run).toMatchObject({
      status: "PAUSED",
      reason: "MAINTENANCE_WINDOW",
      statusMessage: "maintenance window closed at 2026-11-20T12:00:00Z: 5 targets not started",
      updatedAt: END + H,
    });
    expect(r.run.finishedAt).toBeUndefined();
    const one = windowed({ endTime: END }, { phaseSizes: [2], counters: [{ completed: 1 }] });
    expect(evaluate(one, END).run.statusMessage).toBe(
      "maintenance window closed at 2026-11-20T12:00:00Z: 1 target not started",
    );
  });

  it("after end_time a claim whose lease ran out (its pass died) never holds the run: it pauses, the claim not started", () => {
    const stuck = windowed({ endTime: END }, { inFlight: 2, counters: [{ completed: 1 }] });
    const oneFlashing = ok(reduceRun(stuck, { type: "evaluate", expiredClaims: 1 }, END));
    expect(oneFlashing.run.statusMessage).toBe(
      "maintenance window closed at 2026-11-20T12:00:00Z: waiting for 1 target in flight",
    );
    const none = ok(reduceRun(stuck, { type: "evaluate", expiredClaims: 2 }, END));
    expect(none.run).toMatchObject({
      status: "PAUSED",
      reason: "MAINTENANCE_WINDOW",
      statusMessage: "maintenance window closed at 2026-11-20T12:00:00Z: 7 targets not started",
    });
    // Before the close an expired claim is simply re-claimed: it changes nothing here.
    expect(ok(reduceRun(stuck, { type: "evaluate", expiredClaims: 2 }, END - 1)).effects).toEqual([
      { type: "claim", phaseIndex: 0, slots: 0, until: END },
    ]);
  });

  it("after end_time: a run whose targets all ended finishes as usual, and a tripped gate pauses first", () => {
    const done = windowed({ endTime: END }, { counters: [{ completed: 4 }, { completed: 4 }] });
    expect(evaluate(done, END + H).run).toMatchObject({
      status: "COMPLETED",
      statusMessage: "operation run completed",
    });
    const tripped = windowed({ endTime: END }, { counters: [{ failed: 2 }] });
    expect(evaluate(tripped, END + H).run).toMatchObject({ status: "PAUSED", reason: "SAFETY_GATE" });
  });

  it("after end_time at a phase boundary: MAINTENANCE_WINDOW, not an advance into a phase that cannot start", () => {
    const boundary = windowed({ endTime: END }, { counters: [{ completed: 4 }] });
    expect(evaluate(boundary, END).run).toMatchObject({
      status: "PAUSED",
      reason: "MAINTENANCE_WINDOW",
      currentPhaseIndex: 0,
      statusMessage: "maintenance window closed at 2026-11-20T12:00:00Z: 4 targets not started",
    });
  });

  it("recurring windows: inside one, the claim is bounded by its close; outside, a started run stays RUNNING", () => {
    const inside = evaluate(windowed({}, {}, nine), DAY0 + 9.5 * H);
    expect(inside.effects).toEqual([{ type: "claim", phaseIndex: 0, slots: 2, until: DAY0 + 10 * H }]);
    const bounded = evaluate(windowed({ endTime: DAY0 + 9.75 * H }, {}, nine), DAY0 + 9.5 * H);
    expect(bounded.effects).toEqual([{ type: "claim", phaseIndex: 0, slots: 2, until: DAY0 + 9.75 * H }]);

    const outside = evaluate(windowed({}, { inFlight: 1 }, nine), DAY0 + 10 * H);
    expect(outside).toMatchObject({ write: true, effects: [] });
    expect(outside.run).toMatchObject({
      status: "RUNNING",
      statusMessage: "outside maintenance window: next opens at 2026-11-21T09:00:00Z",
    });
    // The window opens again: the waiting message goes, the claim starts.
    const reopened = evaluate(outside.run, DAY0 + 33 * H);
    expect(reopened.run.statusMessage).toBe("");
    expect(reopened.effects).toEqual([{ type: "claim", phaseIndex: 0, slots: 1, until: DAY0 + 34 * H }]);
  });

  it("recurring windows: a run that never started waits PENDING; with no window left before end_time it says so", () => {
    const fresh = windowed({}, { status: "PENDING", statusMessage: "", startedAt: undefined }, nine);
    expect(evaluate(fresh, DAY0 + 7 * H).run).toMatchObject({
      status: "PENDING",
      statusMessage: "waiting for maintenance window: opens at 2026-11-20T09:00:00Z",
    });
    const late = evaluate(windowed({ endTime: END }, {}, nine), DAY0 + 10.5 * H);
    expect(late.run.statusMessage).toBe("outside maintenance window: no window opens before end_time");
    const never = windowed(
      { startTime: DAY0 + 10.5 * H, endTime: END },
      { status: "PENDING", statusMessage: "", startedAt: undefined },
      nine,
    );
    expect(evaluate(never, START).run.statusMessage).toBe(
      "waiting for maintenance window: no window opens before end_time",
    );
  });

  it("between windows a phase gate still pauses at once; auto advance moves on but claims only when a window opens", () => {
    const gated = windowed({}, { counters: [{ completed: 4 }] }, nine);
    gated.config.autoAdvance = false;
    expect(evaluate(gated, DAY0 + 11 * H).run).toMatchObject({ status: "PAUSED", reason: "PHASE_GATE" });

    const auto = evaluate(windowed({}, { counters: [{ completed: 4 }] }, nine), DAY0 + 11 * H);
    expect(auto).toMatchObject({ write: true, effects: [] });
    expect(auto.run).toMatchObject({
      status: "RUNNING",
      currentPhaseIndex: 1,
      statusMessage: "outside maintenance window: next opens at 2026-11-21T09:00:00Z",
    });
    const inside = evaluate(windowed({}, { counters: [{ completed: 4 }] }, nine), DAY0 + 9 * H);
    expect(inside.run).toMatchObject({ currentPhaseIndex: 1, statusMessage: "advanced to next phase" });
    expect(inside.effects).toEqual([{ type: "claim", phaseIndex: 1, slots: 2, until: DAY0 + 10 * H }]);
  });

  it("resume of a run paused by its closed window is FailedPrecondition: maintenance window closed", () => {
    const closed = windowed({ endTime: END }, { status: "PAUSED", reason: "MAINTENANCE_WINDOW" });
    expect(err(reduceRun(closed, { type: "resume" }, END + H)).message).toBe(
      `${PREFIX}${ID} cannot resume: maintenance window closed at 2026-11-20T12:00:00Z; cancel it or create a new run`,
    );
    // Only corrupted data pauses for a window with no end; the refusal still says why.
    const noEnd = run({ status: "PAUSED", reason: "MAINTENANCE_WINDOW" });
    expect(err(reduceRun(noEnd, { type: "resume" }, NOW)).message).toBe(
      `${PREFIX}${ID} cannot resume: maintenance window closed; cancel it or create a new run`,
    );
    // Advance is refused as for any run not at a phase gate.
    expect(err(reduceRun(closed, { type: "advance" }, END + H)).message).toBe(
      `${PREFIX}${ID} is not paused at a phase gate`,
    );
  });

  it("cancel: unstarted targets are skipped as 'operation run cancelled', or 'maintenance window closed' once it has", () => {
    const skipOf = (r: Run, now: number) => {
      const effect = ok(reduceRun(r, { type: "cancel", reason: "" }, now)).effects[0];
      return effect?.type === "cancelChildTasks" ? effect.skipMessage : undefined;
    };
    expect(skipOf(windowed({ endTime: END }), END - 1)).toBe("not started: operation run cancelled");
    expect(
      skipOf(windowed({ endTime: END }, { status: "PAUSED", reason: "MAINTENANCE_WINDOW" }), END + 1),
    ).toBe("not started: maintenance window closed");
    expect(skipOf(windowed({ endTime: END }, { inFlight: 1 }), END)).toBe(
      "not started: maintenance window closed",
    );
    expect(skipOf(run({ status: "PAUSED", reason: "MAINTENANCE_WINDOW" }), NOW)).toBe(
      "not started: maintenance window closed",
    );
  });
});

// -------------------------------------------------------------------------------------------------

describe("run machine: helpers", () => {
  it("freeSlots = max_concurrent_targets - inFlight, floored at 0", () => {
    expect(freeSlots(run({ inFlight: 0 }))).toBe(2);
    expect(freeSlots(run({ inFlight: 1 }))).toBe(1);
    expect(freeSlots(run({ inFlight: 3 }))).toBe(0);
  });

  it("finalStatus: skipped targets are neither success nor failure for FAILED", () => {
    expect(finalStatus(run({ phaseSizes: [2], counters: [{ skipped: 2 }] }))).toEqual({
      status: "COMPLETED",
      message: "operation run completed",
    });
  });

  it.each([
    [0, 0, ""],
    [1, 0, "submitted 1 operation run target"],
    [2, 0, "submitted 2 operation run targets"],
    [0, 1, "1 target waiting on rack conflicts"],
    [0, 3, "3 targets waiting on rack conflicts"],
    [1, 1, "submitted 1 operation run target; 1 target waiting on rack conflicts"],
    [2, 2, "submitted 2 operation run targets; 2 targets waiting on rack conflicts"],
  ])("claimStatusMessage(%d submitted, %d blocked) → %j", (submitted, blocked, message) => {
    expect(claimStatusMessage(submitted, blocked)).toBe(message);
  });

  it("corrupted input (unknown event or status) throws instead of being guessed at", () => {
    expect(() => reduceRun(run(), { type: "explode" } as unknown as RunEvent, NOW)).toThrow("unreachable");
    expect(() => reduceRun(run({ status: "ZOMBIE" as RunStatus }), { type: "evaluate" }, NOW)).toThrow(
      "unreachable",
    );
  });
});
