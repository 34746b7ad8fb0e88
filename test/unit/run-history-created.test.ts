/**
 * The run history of a created run (src/domain/run-history.ts): its events' ids, data the reducer
 * never produces, and a follow-up run recorded on the run it follows.
 */
import { describe, expect, it } from "vitest";
import { followUpWrite } from "../../src/domain/follow-up-runs.js";
import { runEventId } from "../../src/domain/history-event.js";
import { createdEvent, historyEvents } from "../../src/domain/run-history.js";
import { ALICE, evaluate, OPS, run, written } from "../support/run-history-cases.js";
import { ID, NOW } from "../support/run-machine-cases.js";

describe("run history: created, ids, and data the reducer never produces", () => {
  it("CREATED: the plan's size, phases and seeds, the actor, at createdAt", () => {
    const created = run({
      status: "PENDING",
      statusMessage: "",
      startedAt: undefined,
      phaseSizes: [2, 3, 5],
      createdAt: 700,
      updatedAt: 700,
    });
    expect(createdEvent(created, ALICE)).toMatchObject({
      runId: ID,
      at: 700,
      seq: 0,
      kind: "CREATED",
      status: "PENDING",
      message: "operation run created: 10 targets in 3 phases",
      totalPhases: 3,
      actor: ALICE,
      detail: {
        type: "plan",
        targets: 10,
        phaseSizes: [2, 3, 5],
        selectionSeed: "sel-seed",
        orderingSeed: "ord-seed",
      },
    });
    const one = createdEvent(run({ phaseSizes: [1] }));
    expect(one.message).toBe("operation run created: 1 target in 1 phase");
    expect(one).not.toHaveProperty("actor");
  });

  it("runEventId: run id, version in 15 digits, position in 2: sorts like the history", () => {
    expect(runEventId({ runId: ID, at: 1_800_000_000_123, seq: 1 })).toBe(`${ID}/001800000000123.01`);
    const ids = [
      { runId: ID, at: 9_999, seq: 0 },
      { runId: ID, at: 10_000, seq: 0 },
      { runId: ID, at: 10_000, seq: 1 },
    ].map(runEventId);
    expect([...ids].sort()).toEqual(ids);
  });

  it("a SAFETY_GATE pause whose counters no longer trip it (corrupted data) still records GATE_TRIPPED, without a verdict", () => {
    const before = run();
    const after = {
      ...before,
      status: "PAUSED",
      reason: "SAFETY_GATE",
      statusMessage: "x",
      updatedAt: NOW,
    } as const;
    expect(historyEvents(before, after, evaluate, NOW)).toMatchObject([
      { kind: "GATE_TRIPPED", message: "x" },
    ]);
    expect(historyEvents(before, after, evaluate, NOW)[0]).not.toHaveProperty("detail");
  });

  it("a CONFLICT_RETRY_TIMEOUT pause not caused by a pass has no target; a MAINTENANCE_WINDOW pause without end_time no closing time", () => {
    const before = run();
    const timeout = {
      ...before,
      status: "PAUSED",
      reason: "CONFLICT_RETRY_TIMEOUT",
      updatedAt: NOW,
    } as const;
    expect(historyEvents(before, timeout, { type: "pause" }, NOW).map((e) => [e.kind, e.detail])).toEqual([
      ["PAUSED", undefined],
      ["CONFLICT_TIMEOUT", undefined],
    ]);
    const window = { ...before, status: "PAUSED", reason: "MAINTENANCE_WINDOW", updatedAt: NOW } as const;
    expect(historyEvents(before, window, evaluate, NOW)[0]?.detail).toEqual({ type: "window" });
    const unexplained = { ...before, status: "PAUSED", reason: "NONE", updatedAt: NOW } as const;
    expect(historyEvents(before, unexplained, evaluate, NOW)).toEqual([]);
  });

  it("does not mutate its inputs", () => {
    const before = run({ status: "PAUSED", reason: "PHASE_GATE", counters: [{ completed: 4 }] });
    const copy = structuredClone(before);
    const events = written(before, { type: "advance" }, NOW, OPS);
    expect(before).toEqual(copy);
    events[0]!.stats.current.outcomes.completed = 99;
    expect(before).toEqual(copy);
  });
});

describe("run history: a follow-up run recorded on the run it follows", () => {
  it("ROLLED_BACK with no caller: the run's new version, its follow-ups, no actor; RETRIED with its caller", () => {
    const source = run({ status: "COMPLETED" });
    const { run: written, event } = followUpWrite(source, { kind: "rollback", runId: "r2" }, 3, NOW);
    expect(written).toMatchObject({ updatedAt: NOW, followUps: [{ kind: "rollback", runId: "r2" }] });
    expect(event).toMatchObject({
      kind: "ROLLED_BACK",
      message: "rolled back by run r2: 3 targets",
      detail: { type: "followUp", runId: "r2", targets: 3 },
    });
    expect(event).not.toHaveProperty("actor");
    const asked = followUpWrite(source, { kind: "retry", runId: "r3" }, 1, NOW, ALICE).event;
    expect(asked).toMatchObject({ kind: "RETRIED", message: "retried by run r3: 1 target", actor: ALICE });
  });
});
