/**
 * The run history of the dispatcher's decisions and of a run's maintenance windows
 * (src/domain/run-history.ts), as tables: a run as read, one reducer event, the events recorded.
 */
import { describe, expect, it } from "vitest";
import type { Run, RunConfig } from "../../src/domain/model.js";
import { historyEvents } from "../../src/domain/run-history.js";
import type { RunEvent } from "../../src/domain/run-machine.js";
import { baseConfig, evaluate, kinds, run, written } from "../support/run-history-cases.js";
import { NOW, type RunOverrides, zero } from "../support/run-machine-cases.js";

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
