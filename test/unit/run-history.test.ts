/**
 * The run history from the reducer's result (src/domain/run-history.ts), as tables: a run as read,
 * one reducer event, the events the write records. Each case runs the real reducer, sets the new
 * version as the use cases do (max(now, updatedAt + 1)), and builds the events from that.
 */
import { describe, expect, it } from "vitest";
import type { Actor } from "../../src/domain/actor.js";
import { followUpWrite } from "../../src/domain/follow-up-runs.js";
import { type RunHistoryEvent, runEventId } from "../../src/domain/history-event.js";
import type { OutcomeCounts, Run, RunConfig } from "../../src/domain/model.js";
import { createdEvent, historyEvents } from "../../src/domain/run-history.js";
import { type RunEvent, reduceRun } from "../../src/domain/run-machine.js";
import { runConfig } from "../support/domain-fixtures.js";

const ID = "11111111-1111-4111-8111-111111111111";
const T0 = 1_000;
const NOW = 5_000;
const zero: OutcomeCounts = { completed: 0, failed: 0, terminated: 0, skipped: 0 };
const ALICE: Actor = { name: "alice", source: "DECLARED", authenticated: false, subjectAltNames: [] };
const OPS: Actor = {
  name: "ops",
  source: "CLIENT_CERTIFICATE",
  authenticated: true,
  subjectAltNames: ["DNS:ops.example.com"],
};

const baseConfig = runConfig({
  selector: { kind: "percentage", percentage: 50, seed: "sel-seed" },
  ordering: { kind: "random", seed: "ord-seed" },
  safetyGates: [{ kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 2 }],
  phasePlan: { kind: "equal", phaseCount: 2 },
});

type RunOverrides = Omit<Partial<Run>, "counters" | "config"> & {
  counters?: Partial<OutcomeCounts>[];
  config?: Partial<RunConfig>;
};

/** A RUNNING two-phase run [4, 4] at phase 0, started at T0, nothing done. */
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
    counters: [0, 1].map((i) => ({ ...zero, ...counters[i] })),
    inFlight: 0,
    createdAt: 0,
    updatedAt: T0,
    startedAt: T0,
    ...rest,
  };
}

/** The reducer's write for `event` at `now`, then its history. */
function written(before: Run, event: RunEvent, now = NOW, actor?: Actor): RunHistoryEvent[] {
  const result = reduceRun(before, event, now);
  if (!result.ok) throw result.error;
  if (!result.write) throw new Error("the reducer wrote nothing");
  const after = { ...result.run, updatedAt: Math.max(now, before.updatedAt + 1) };
  return historyEvents(before, after, event, now, actor);
}

const kinds = (events: RunHistoryEvent[]) => events.map((e) => [e.kind, e.message]);
const evaluate: RunEvent = { type: "evaluate" };

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

describe("run history: the dispatcher's decisions", () => {
  it.each<[string, Run, [string, string][]]>([
    [
      "a PENDING run's first claim → [STARTED, PHASE_OPENED(0)]",
      run({ status: "PENDING", statusMessage: "", startedAt: undefined }),
      [
        ["STARTED", "operation run started"],
        ["PHASE_OPENED", "phase 1 opened: 4 targets"],
      ],
    ],
    [
      "phase index 0 complete, auto advance → [PHASE_OPENED(1)] 'phase 2 opened'",
      run({ counters: [{ completed: 4 }], config: { autoAdvance: true } }),
      [["PHASE_OPENED", "phase 2 opened: 4 targets"]],
    ],
    [
      "phase index 0 complete, no auto advance → [PHASE_GATE_REACHED] 'phase 1 complete'",
      run({ counters: [{ completed: 3, failed: 1 }] }),
      [["PHASE_GATE_REACHED", "phase 1 complete: waiting for phase advance"]],
    ],
    [
      "the gate trips → [GATE_TRIPPED] with the gate's message",
      run({ counters: [{ failed: 2 }] }),
      [
        [
          "GATE_TRIPPED",
          "failure_count safety gate tripped for current_phase: 2/4 targets failed (threshold 2)",
        ],
      ],
    ],
    [
      "every target has an outcome → [FINISHED]",
      run({ currentPhaseIndex: 1, counters: [{ completed: 4 }, { completed: 4 }] }),
      [["FINISHED", "operation run completed"]],
    ],
    [
      "a phase with no targets (corrupted plan) → [FINISHED] FAILED",
      run({ phaseSizes: [0, 4] }),
      [["FINISHED", "operation run phase 1 has no targets; persisted phase plan is invalid"]],
    ],
    ["only the message moves (every slot taken) → []", run({ inFlight: 2 }), []],
  ])("%s", (_name, before, expected) => {
    expect(kinds(written(before, evaluate))).toEqual(expected);
  });

  it("GATE_TRIPPED carries the verdict: which gate, its scope and threshold, failed and selected", () => {
    const gates: RunConfig["safetyGates"] = [
      { kind: "failureRate", scope: "CURRENT_PHASE", thresholdPercent: 90 },
      { kind: "failureCount", scope: "CUMULATIVE_RUN", thresholdCount: 3 },
    ];
    const before = run({
      currentPhaseIndex: 1,
      counters: [{ completed: 2, failed: 2 }, { failed: 1 }],
      config: { safetyGates: gates },
    });
    const [tripped] = written(before, evaluate);
    expect(tripped).toMatchObject({
      kind: "GATE_TRIPPED",
      status: "PAUSED",
      reason: "SAFETY_GATE",
      message: "failure_count safety gate tripped for cumulative_run: 3/8 targets failed (threshold 3)",
      detail: { type: "gate", gateIndex: 1, gate: gates[1], failed: 3, selected: 8 },
      stats: { cumulative: { selectedTargets: 8, outcomes: { ...zero, completed: 2, failed: 3 } } },
    });
  });

  it("CONFLICT_TIMEOUT carries the target and how long it was blocked", () => {
    const event: RunEvent = {
      type: "evaluate",
      conflictTimeout: { targetId: "t-7", blockedForMs: 3_700_000 },
    };
    const [timeout] = written(run(), event);
    expect(timeout).toMatchObject({
      kind: "CONFLICT_TIMEOUT",
      reason: "CONFLICT_RETRY_TIMEOUT",
      message: "target t-7 blocked by rack conflict for 1h0m0s",
      detail: { type: "conflict", targetId: "t-7", blockedForMs: 3_700_000 },
    });
  });

  it("a write that is not the reducer's (same state, new message) records nothing", () => {
    const before = run();
    const after = { ...before, statusMessage: "submitted 1 operation run target", updatedAt: NOW };
    expect(historyEvents(before, after, evaluate, NOW)).toEqual([]);
  });
});

describe("run history: maintenance windows", () => {
  const H = 3_600_000;
  const DAY0 = Date.parse("2026-11-20T00:00:00Z");
  const START = DAY0 + 8 * H;
  const END = DAY0 + 12 * H;
  const nine = [{ cron: "0 9 * * *", durationMs: H }]; // 09:00-10:00 daily
  const windowed = (
    times: { startTime?: number; endTime?: number },
    over: RunOverrides = {},
    windows?: RunConfig["maintenanceWindows"],
  ): Run =>
    run({
      ...over,
      config: {
        operation: { kind: "upgradeFirmware", firmware: { ...baseConfig.operation.firmware, ...times } },
        ...(windows === undefined ? {} : { maintenanceWindows: windows }),
        ...over.config,
      },
    });
  const fresh = {
    status: "PENDING",
    statusMessage: "",
    startedAt: undefined,
    createdAt: DAY0,
    updatedAt: DAY0,
  } as const;

  it("created before start_time: waiting writes record nothing; the first claim → [WINDOW_OPENED, STARTED, PHASE_OPENED(0)]", () => {
    const pending = windowed({ startTime: START, endTime: END }, fresh);
    expect(written(pending, evaluate, START - 1)).toEqual([]);
    const events = written(pending, evaluate, START + 5);
    expect(kinds(events)).toEqual([
      ["WINDOW_OPENED", "maintenance window opened: closes at 2026-11-20T12:00:00Z"],
      ["STARTED", "operation run started"],
      ["PHASE_OPENED", "phase 1 opened: 4 targets"],
    ]);
    expect(events[0]?.detail).toEqual({ type: "window", closesAt: END });
  });

  it("a window that never closes (start_time only) opens without a closing time", () => {
    const events = written(windowed({ startTime: START }, fresh), evaluate, START + 5);
    expect(events[0]).toMatchObject({
      kind: "WINDOW_OPENED",
      message: "maintenance window opened",
      detail: { type: "window" },
    });
  });

  it("a claiming run outside its recurring window → [WINDOW_CLOSED] with the next opening; back inside → [WINDOW_OPENED]", () => {
    const claiming = windowed({}, { updatedAt: DAY0 + 9.5 * H }, nine);
    const closed = written(claiming, evaluate, DAY0 + 10 * H);
    expect(kinds(closed)).toEqual([
      ["WINDOW_CLOSED", "maintenance window closed: next opens at 2026-11-21T09:00:00Z"],
    ]);
    expect(closed[0]?.detail).toEqual({ type: "window", opensAt: DAY0 + 33 * H });

    const waiting = {
      ...claiming,
      statusMessage: "outside maintenance window: next opens at 2026-11-21T09:00:00Z",
      updatedAt: DAY0 + 10 * H,
    };
    const opened = written(waiting, evaluate, DAY0 + 33 * H);
    expect(kinds(opened)).toEqual([
      ["WINDOW_OPENED", "maintenance window opened: closes at 2026-11-21T10:00:00Z"],
    ]);
  });

  it("with no opening left before end_time, WINDOW_CLOSED says so", () => {
    const claiming = windowed({ endTime: END }, { updatedAt: DAY0 + 9.5 * H }, nine);
    const [closed] = written(claiming, evaluate, DAY0 + 10.5 * H);
    expect(closed).toMatchObject({
      kind: "WINDOW_CLOSED",
      message: "maintenance window closed: no window opens before end_time",
      detail: { type: "window" },
    });
  });

  it("pausing, or cancelling, a run that waits for its window records the control alone", () => {
    const waiting = windowed({ startTime: START, endTime: END }, fresh);
    expect(written(waiting, { type: "pause" }, START + 5).map((e) => e.kind)).toEqual(["PAUSED"]);
    expect(written(waiting, { type: "cancel", reason: "" }, END + 5).map((e) => e.kind)).toEqual([
      "CANCELLED",
    ]);
  });

  it("a PENDING run that has not started is waiting, not closed: its first waiting write records nothing", () => {
    const pending = windowed({}, { ...fresh, updatedAt: DAY0 + 9.5 * H }, nine);
    expect(written(pending, evaluate, DAY0 + 10 * H)).toEqual([]);
  });

  it("end_time passes with flashes in flight → [WINDOW_CLOSED at end_time]; when they end → [WINDOW_PAUSED]", () => {
    const claiming = windowed({ endTime: END }, { inFlight: 2, updatedAt: END - H });
    const closing = written(claiming, evaluate, END + 1);
    expect(kinds(closing)).toEqual([["WINDOW_CLOSED", "maintenance window closed at 2026-11-20T12:00:00Z"]]);
    expect(closing[0]?.detail).toEqual({ type: "window", closedAt: END });

    const waitingForFlashes = {
      ...claiming,
      statusMessage: "maintenance window closed at 2026-11-20T12:00:00Z: waiting for 2 targets in flight",
      updatedAt: END + 1,
    };
    const fewer = { ...waitingForFlashes, inFlight: 1, counters: [{ ...zero, completed: 1 }, zero] };
    expect(written(fewer, evaluate, END + 2)).toEqual([]);
    const done = { ...waitingForFlashes, inFlight: 0, counters: [{ ...zero, completed: 2 }, zero] };
    const paused = written(done, evaluate, END + 3);
    expect(kinds(paused)).toEqual([
      ["WINDOW_PAUSED", "maintenance window closed at 2026-11-20T12:00:00Z: 6 targets not started"],
    ]);
    expect(paused[0]).toMatchObject({
      status: "PAUSED",
      reason: "MAINTENANCE_WINDOW",
      detail: { type: "window", closedAt: END },
    });
  });

  it("end_time passes with nothing in flight → [WINDOW_CLOSED, WINDOW_PAUSED] in one write", () => {
    const claiming = windowed({ endTime: END }, { updatedAt: END - H });
    expect(written(claiming, evaluate, END).map((e) => [e.kind, e.seq])).toEqual([
      ["WINDOW_CLOSED", 0],
      ["WINDOW_PAUSED", 1],
    ]);
  });

  it("end_time passes on a run still waiting for its window → [WINDOW_CLOSED, WINDOW_PAUSED]", () => {
    const waiting = windowed({ startTime: START, endTime: END }, fresh);
    expect(written(waiting, evaluate, END).map((e) => e.kind)).toEqual(["WINDOW_CLOSED", "WINDOW_PAUSED"]);
  });

  it("auto advance while outside the window → [PHASE_OPENED(1), WINDOW_CLOSED]", () => {
    const claiming = windowed(
      {},
      { updatedAt: DAY0 + 9.5 * H, counters: [{ completed: 4 }], config: { autoAdvance: true } },
      nine,
    );
    expect(written(claiming, evaluate, DAY0 + 10 * H).map((e) => [e.kind, e.phaseIndex])).toEqual([
      ["PHASE_OPENED", 1],
      ["WINDOW_CLOSED", 1],
    ]);
  });
});

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
