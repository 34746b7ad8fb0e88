/**
 * The run reducer and a run's maintenance windows (src/domain/run-machine.ts, steps 4 and 6):
 * waiting for an opening, claims bounded by the close, and the pause once end_time has passed.
 */
import { describe, expect, it } from "vitest";
import type { Run, RunConfig } from "../../src/domain/model.js";
import { reduceRun } from "../../src/domain/run-machine.js";
import {
  baseConfig,
  err,
  ID,
  NOW,
  ok,
  PREFIX,
  type RunOverrides,
  run,
} from "../support/run-machine-cases.js";

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
