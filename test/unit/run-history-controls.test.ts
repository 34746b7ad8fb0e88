/**
 * The run history of the operator's controls and of an approval (src/domain/run-history.ts), as
 * tables: a run as read, one reducer event, the events the write records.
 */
import { describe, expect, it } from "vitest";
import type { Actor } from "../../src/domain/actor.js";
import { historyEvents } from "../../src/domain/run-history.js";
import { type RunEvent, reduceRun } from "../../src/domain/run-machine.js";
import { ALICE, kinds, OPS, run, written } from "../support/run-history-cases.js";
import { ID, NOW, zero } from "../support/run-machine-cases.js";

describe("run history: the operator's controls", () => {
  it("pause: one PAUSED event with the actor, the run's state after, its stats, numbered 0", () => {
    const events = written(run({ counters: [{ completed: 1 }] }), { type: "pause" }, NOW, OPS);
    expect(events).toEqual([
      {
        runId: ID,
        at: NOW,
        seq: 0,
        kind: "PAUSED",
        runName: "rollout",
        status: "PAUSED",
        reason: "OPERATOR_PAUSED",
        message: "operation run paused by operator",
        phaseIndex: 0,
        totalPhases: 2,
        stats: {
          current: { phaseIndex: 0, selectedTargets: 4, outcomes: { ...zero, completed: 1 } },
          cumulative: { phaseIndex: 0, selectedTargets: 4, outcomes: { ...zero, completed: 1 } },
        },
        actor: OPS,
      },
    ]);
  });

  it("without an actor (an internal caller) the event has none", () => {
    expect(written(run(), { type: "pause" })[0]).not.toHaveProperty("actor");
  });

  it("resume after a safety gate → [RESUMED]; with every target already ended → [RESUMED, FINISHED]", () => {
    const paused = run({ status: "PAUSED", reason: "SAFETY_GATE", counters: [{ failed: 2 }] });
    expect(kinds(written(paused, { type: "resume" }, NOW, ALICE))).toEqual([
      ["RESUMED", "operation run resumed"],
    ]);
    const done = run({
      status: "PAUSED",
      reason: "OPERATOR_PAUSED",
      counters: [{ completed: 4 }, { failed: 4 }],
    });
    const events = written(done, { type: "resume" }, NOW, ALICE);
    expect(kinds(events)).toEqual([
      ["RESUMED", "operation run resumed"],
      ["FINISHED", "operation run completed with failed targets"],
    ]);
    expect(events.map((e) => [e.seq, e.status, e.actor?.name])).toEqual([
      [0, "COMPLETED_WITH_FAILURES", "alice"],
      [1, "COMPLETED_WITH_FAILURES", undefined],
    ]);
  });

  it("advance at a phase gate → [ADVANCED 0 → 1 with the expected phase, PHASE_OPENED(1)], messages counting from 1", () => {
    const gate = run({ status: "PAUSED", reason: "PHASE_GATE", counters: [{ completed: 4 }] });
    const events = written(gate, { type: "advance", expectedPhaseIndex: 1 }, NOW, OPS);
    expect(kinds(events)).toEqual([
      ["ADVANCED", "advanced from phase 1 to phase 2"],
      ["PHASE_OPENED", "phase 2 opened: 4 targets"],
    ]);
    expect(events[0]).toMatchObject({
      actor: OPS,
      detail: { type: "advance", fromPhaseIndex: 0, toPhaseIndex: 1, expectedPhaseIndex: 1 },
    });
    expect(events[1]).not.toHaveProperty("actor");
    expect(events[1]).toMatchObject({ phaseIndex: 1, status: "RUNNING" });
  });

  it("advance without an expected phase (0 or absent) records none", () => {
    const gate = run({ status: "PAUSED", reason: "PHASE_GATE", counters: [{ completed: 4 }] });
    for (const event of [{ type: "advance" }, { type: "advance", expectedPhaseIndex: 0 }] as RunEvent[]) {
      expect(written(gate, event)[0]?.detail).toEqual({
        type: "advance",
        fromPhaseIndex: 0,
        toPhaseIndex: 1,
      });
    }
  });

  it("advance with every target ended finishes the run: [ADVANCED 0 → 0, FINISHED]", () => {
    const gate = run({
      status: "PAUSED",
      reason: "PHASE_GATE",
      counters: [{ completed: 4 }, { completed: 4 }],
    });
    const events = written(gate, { type: "advance" });
    expect(kinds(events)).toEqual([
      ["ADVANCED", "advance: every target already has an outcome; the run is finished"],
      ["FINISHED", "operation run completed"],
    ]);
    expect(events[0]?.detail).toEqual({ type: "advance", fromPhaseIndex: 0, toPhaseIndex: 0 });
  });

  it("cancel → [CANCELLED] alone, with the trimmed reason, the message and the actor (no FINISHED)", () => {
    const events = written(run(), { type: "cancel", reason: "  wrong firmware  " }, NOW, OPS);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      kind: "CANCELLED",
      status: "CANCELLED",
      message: "operation run cancelled: wrong firmware",
      actor: OPS,
      detail: { type: "cancel", reason: "wrong firmware" },
    });
    expect(written(run(), { type: "cancel", reason: "" })[0]?.detail).toEqual({ type: "cancel", reason: "" });
  });
});

describe("run history: APPROVED", () => {
  const held = run({ status: "PAUSED", reason: "AWAITING_APPROVAL", statusMessage: "awaiting approval" });
  const approve: RunEvent = { type: "approve" };
  const approvedBy = (actor?: Actor, approval?: { minRacks: number; racks: number; requestedBy?: Actor }) => {
    const result = reduceRun(held, approve, NOW);
    if (!result.ok || !result.write) throw new Error("the reducer wrote nothing");
    const after = { ...result.run, updatedAt: NOW };
    return historyEvents(held, after, approve, NOW, actor, approval);
  };

  it("names the approver and the creator when both have names; the rule and the racks as its detail", () => {
    const [event] = approvedBy(OPS, { minRacks: 20, racks: 30, requestedBy: ALICE });
    expect(event).toMatchObject({
      kind: "APPROVED",
      message: `operation run approved by ${OPS.name} (created by alice)`,
      actor: OPS,
      detail: { type: "approval", minRacks: 20, racks: 30, requestedBy: ALICE },
    });
  });

  it("without a creator's name, the approver alone; without an approver's name or one at all, the plain message and no detail", () => {
    expect(approvedBy(OPS, { minRacks: 20, racks: 30 })[0]?.message).toBe(
      `operation run approved by ${OPS.name}`,
    );
    expect(approvedBy({ ...OPS, name: "" })[0]?.message).toBe("operation run approved");
    const [anonymous] = approvedBy();
    expect(anonymous?.message).toBe("operation run approved");
    expect(anonymous).not.toHaveProperty("detail");
    expect(anonymous).not.toHaveProperty("actor");
  });
});
