/**
 * The run reducer's dispatch pass (src/domain/run-machine.ts `evaluate`), step by step in its
 * decision order, and the helpers the shell uses around it (free slots, final status, claim message).
 */
import { describe, expect, it } from "vitest";
import type { RunStatus } from "../../src/domain/model.js";
import { finalStatus, freeSlots, type RunEvent, reduceRun } from "../../src/domain/run-machine.js";
import { claimStatusMessage } from "../../src/domain/run-messages.js";
import { NOW, ok, run, TERMINAL } from "../support/run-machine-cases.js";

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
