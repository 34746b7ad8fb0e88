/**
 * The run reducer's manual controls (src/domain/run-machine.ts): pause, resume, advance and cancel,
 * with the reference's messages for the transitions a run's state does not allow.
 */
import { describe, expect, it } from "vitest";
import type { RunReason } from "../../src/domain/model.js";
import { reduceRun } from "../../src/domain/run-machine.js";
import {
  err,
  ID,
  NOW,
  ok,
  PREFIX,
  type RunOverrides,
  run,
  T0,
  TERMINAL,
} from "../support/run-machine-cases.js";

const PAUSE_REASONS: RunReason[] = [
  "OPERATOR_PAUSED",
  "PHASE_GATE",
  "SAFETY_GATE",
  "CONFLICT_RETRY_TIMEOUT",
  "MAINTENANCE_WINDOW",
];

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
