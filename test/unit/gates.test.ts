import { describe, expect, it } from "vitest";
import {
  evaluateGates,
  gateKindName,
  gateTrippedMessage,
  isGateTripped,
  scopeCounts,
} from "../../src/domain/gates.js";
import type { OutcomeCounts, Run, RunConfig, SafetyGate } from "../../src/domain/model.js";
import { runConfig } from "../support/domain-fixtures.js";

const baseConfig: RunConfig = runConfig();

const zero: OutcomeCounts = { completed: 0, failed: 0, terminated: 0, skipped: 0 };

function run(
  gates: SafetyGate[],
  phaseSizes: number[],
  current: number,
  counters: Partial<OutcomeCounts>[],
): Run {
  return {
    id: "11111111-1111-4111-8111-111111111111",
    name: "r",
    description: "",
    config: { ...baseConfig, safetyGates: gates },
    status: "RUNNING",
    reason: "NONE",
    statusMessage: "",
    phaseSizes,
    currentPhaseIndex: current,
    counters: counters.map((c) => ({ ...zero, ...c })),
    inFlight: 0,
    createdAt: 0,
    updatedAt: 0,
  };
}

const rate = (thresholdPercent: number, scope: SafetyGate["scope"] = "CURRENT_PHASE"): SafetyGate => ({
  kind: "failureRate",
  scope,
  thresholdPercent,
});
const observed = (
  thresholdPercent: number,
  minFinished: number,
  scope: SafetyGate["scope"] = "CURRENT_PHASE",
): SafetyGate => ({ kind: "observedFailureRate", scope, thresholdPercent, minFinished });
const count = (thresholdCount: number, scope: SafetyGate["scope"] = "CURRENT_PHASE"): SafetyGate => ({
  kind: "failureCount",
  scope,
  thresholdCount,
});

describe("gates: trip arithmetic at the boundaries", () => {
  it.each([
    // gate, failed, selected, tripped
    [rate(50), 1, 2, true], // 100 >= 100
    [rate(50), 0, 2, false],
    [rate(51), 1, 2, false], // 100 >= 102 fails
    [rate(34), 1, 3, false], // 100 >= 102 fails
    [rate(33), 1, 3, true], // 100 >= 99
    [rate(100), 2, 2, true],
    [rate(100), 1, 2, false],
    [rate(1), 1, 100, true],
    [rate(1), 0, 100, false],
    [rate(1), 0, 0, false], // nothing planned in scope never trips
    [count(1), 0, 2, false],
    [count(1), 1, 2, true],
    [count(3), 2, 10, false],
    [count(3), 3, 10, true],
    [count(3), 4, 10, true],
  ])("%o with %d failed of %d → tripped %s", (gate, failed, selected, tripped) => {
    expect(isGateTripped(gate, { failed, selected, finished: failed })).toBe(tripped);
  });
});

describe("gates: the observed failure rate at the boundaries (min_finished and threshold ± 1)", () => {
  // 50%, min 5, in a scope of 100 planned: judged from the 5th finished target on.
  it.each([
    // gate, failed, finished, selected, tripped
    [observed(50, 5), 4, 4, 100, false], // min_finished − 1: 4 of 4 failed is not judged yet
    [observed(50, 5), 5, 5, 100, true], // min_finished: 5 of 5 → 500 >= 250
    [observed(50, 5), 3, 5, 100, true], // 300 >= 250
    [observed(50, 5), 2, 5, 100, false], // 200 >= 250 fails
    [observed(60, 5), 3, 5, 100, true], // threshold exactly: 300 >= 300
    [observed(61, 5), 3, 5, 100, false], // threshold + 1: 300 >= 305 fails
    [observed(59, 5), 3, 5, 100, true], // threshold − 1: 300 >= 295
    [observed(50, 5), 3, 6, 100, true], // 300 >= 300
    [observed(50, 1), 1, 1, 100, true], // min 1: the first failure trips a 50% gate
    [observed(50, 1), 0, 1, 100, false],
    [observed(100, 5), 5, 6, 100, false], // 500 >= 600 fails
    [observed(1, 5), 0, 0, 100, false], // nothing finished never trips
    [observed(50, 5), 2, 2, 2, true], // scope smaller than min: judged when all of it finished
    [observed(50, 5), 1, 1, 2, false], // … and not before
    [observed(50, 5), 0, 0, 0, false], // empty scope never trips
  ])(
    "%o with %d failed of %d finished (%d planned) → tripped %s",
    (gate, failed, finished, selected, tripped) => {
      expect(isGateTripped(gate, { failed, selected, finished })).toBe(tripped);
    },
  );
});

describe("gates: scope counts", () => {
  const r = run([], [2, 3, 4], 1, [{ failed: 1, completed: 1 }, { failed: 2, terminated: 1 }, { failed: 4 }]);

  it("CURRENT_PHASE → the current phase's failed and planned size only", () => {
    expect(scopeCounts(r, "CURRENT_PHASE")).toEqual({ failed: 2, selected: 3, finished: 3 });
  });

  it("CUMULATIVE_RUN → phases 0..current; the future phase's size and failures never count", () => {
    expect(scopeCounts(r, "CUMULATIVE_RUN")).toEqual({ failed: 3, selected: 5, finished: 5 });
  });

  it("finished counts COMPLETED, FAILED and TERMINATED, never SKIPPED (never started)", () => {
    const skipped = run([], [10], 0, [{ completed: 1, failed: 2, terminated: 3, skipped: 4 }]);
    expect(scopeCounts(skipped, "CURRENT_PHASE")).toEqual({ failed: 2, selected: 10, finished: 6 });
  });
});

describe("gates: evaluateGates verdicts", () => {
  it("the brief's example: 1 failed of 2 with a count-1 gate trips with the exact reference message", () => {
    const gate = count(1);
    expect(evaluateGates(run([gate], [2], 0, [{ failed: 1 }]))).toEqual({
      tripped: true,
      gateIndex: 0,
      gate,
      scope: "CURRENT_PHASE",
      failed: 1,
      selected: 2,
      finished: 1,
      message: "failure_count safety gate tripped for current_phase: 1/2 targets failed (threshold 1)",
    });
  });

  it("observed rate: the first 5 of 100 failing trips a 50% gate while a 10% failed/planned gate holds", () => {
    const gate = observed(50, 5);
    expect(evaluateGates(run([rate(10), gate], [100], 0, [{ failed: 5 }]))).toEqual({
      tripped: true,
      gateIndex: 1,
      gate,
      scope: "CURRENT_PHASE",
      failed: 5,
      selected: 100,
      finished: 5,
      message:
        "observed_failure_rate safety gate tripped for current_phase: 5/5 finished targets failed (100%, threshold 50%, min finished 5)",
    });
  });

  it("observed rate over the cumulative run counts earlier phases' finished targets", () => {
    const gate = observed(40, 5, "CUMULATIVE_RUN");
    const v = evaluateGates(run([gate], [4, 10, 10], 1, [{ completed: 2, failed: 2 }, { failed: 1 }]));
    expect(v).toMatchObject({
      tripped: true,
      failed: 3,
      finished: 5,
      selected: 14,
      message:
        "observed_failure_rate safety gate tripped for cumulative_run: 3/5 finished targets failed (60%, threshold 40%, min finished 5)",
    });
    // The same counts over the current phase alone: 1 finished of min 5 → not judged.
    expect(
      evaluateGates(run([observed(40, 5)], [4, 10, 10], 1, [{ completed: 2, failed: 2 }, { failed: 1 }])),
    ).toEqual({
      tripped: false,
    });
  });

  it("observed rate: terminated targets are finished but not failed", () => {
    expect(evaluateGates(run([observed(50, 5)], [100], 0, [{ failed: 2, terminated: 3 }])).tripped).toBe(
      false,
    );
    expect(evaluateGates(run([observed(40, 5)], [100], 0, [{ failed: 2, terminated: 3 }])).tripped).toBe(
      true,
    );
  });

  it("rate gate message carries the floored percentage and the threshold", () => {
    const v = evaluateGates(run([rate(25, "CUMULATIVE_RUN")], [2, 3], 1, [{ failed: 1 }, { failed: 1 }]));
    expect(v).toMatchObject({
      tripped: true,
      failed: 2,
      selected: 5,
      message: "failure_rate safety gate tripped for cumulative_run: 2/5 targets failed (40%, threshold 25%)",
    });
  });

  it("rate gate at 1 of 2 and 50% trips: 50%, threshold 50%", () => {
    const v = evaluateGates(run([rate(50)], [2], 0, [{ failed: 1 }]));
    expect(v).toMatchObject({
      tripped: true,
      message: "failure_rate safety gate tripped for current_phase: 1/2 targets failed (50%, threshold 50%)",
    });
  });

  it("terminated targets never count as failures", () => {
    expect(evaluateGates(run([count(1), rate(1)], [2], 0, [{ terminated: 2 }]))).toEqual({ tripped: false });
  });

  it("0 failed never trips any valid gate", () => {
    expect(
      evaluateGates(run([count(1), rate(1), rate(1, "CUMULATIVE_RUN")], [1, 1], 1, [{ completed: 1 }, {}])),
    ).toEqual({
      tripped: false,
    });
  });

  it("first tripped gate in configured order wins even when a later one also trips", () => {
    const v = evaluateGates(run([rate(90), count(2), count(1)], [4], 0, [{ failed: 2 }]));
    expect(v).toMatchObject({ tripped: true, gateIndex: 1, gate: count(2) });
  });

  it("a cumulative gate sees failures of earlier phases after the phase changed", () => {
    const r = run([count(1), count(1, "CUMULATIVE_RUN")], [2, 2], 1, [{ failed: 1, completed: 1 }, {}]);
    expect(evaluateGates(r)).toMatchObject({
      tripped: true,
      gateIndex: 1,
      scope: "CUMULATIVE_RUN",
      failed: 1,
      selected: 4,
      message: "failure_count safety gate tripped for cumulative_run: 1/4 targets failed (threshold 1)",
    });
  });

  it("a cumulative rate is not diluted by future phases: 1 of [2 | 8 future] at 50% trips", () => {
    expect(evaluateGates(run([rate(50, "CUMULATIVE_RUN")], [2, 8], 0, [{ failed: 1 }])).tripped).toBe(true);
  });

  it("no gates configured → not tripped", () => {
    expect(evaluateGates(run([], [1], 0, [{ failed: 1 }]))).toEqual({ tripped: false });
  });
});

describe("gates: messages and names", () => {
  it("rate message with nothing selected prints 0%", () => {
    expect(gateTrippedMessage(rate(10), { failed: 0, selected: 0, finished: 0 })).toBe(
      "failure_rate safety gate tripped for current_phase: 0/0 targets failed (0%, threshold 10%)",
    );
  });

  it("percentage is floored: 1 of 3 → 33%", () => {
    expect(gateTrippedMessage(rate(30, "CUMULATIVE_RUN"), { failed: 1, selected: 3, finished: 1 })).toBe(
      "failure_rate safety gate tripped for cumulative_run: 1/3 targets failed (33%, threshold 30%)",
    );
  });

  it("observed-rate message with nothing finished prints 0%", () => {
    expect(gateTrippedMessage(observed(10, 1), { failed: 0, selected: 4, finished: 0 })).toBe(
      "observed_failure_rate safety gate tripped for current_phase: 0/0 finished targets failed (0%, threshold 10%, min finished 1)",
    );
  });

  it("observed-rate percentage is floored over finished: 2 of 3 → 66%", () => {
    expect(gateTrippedMessage(observed(60, 3), { failed: 2, selected: 50, finished: 3 })).toBe(
      "observed_failure_rate safety gate tripped for current_phase: 2/3 finished targets failed (66%, threshold 60%, min finished 3)",
    );
  });

  it("kind names are the reference's snake_case", () => {
    expect(gateKindName(rate(1))).toBe("failure_rate");
    expect(gateKindName(count(1))).toBe("failure_count");
    expect(gateKindName(observed(1, 1))).toBe("observed_failure_rate");
  });

  it("an unknown gate kind or scope (corrupted item) is rejected loudly, not treated as holding", () => {
    const bogus = { kind: "latency", scope: "CURRENT_PHASE" } as unknown as SafetyGate;
    const counts = { failed: 1, selected: 1, finished: 1 };
    expect(() => isGateTripped(bogus, counts)).toThrow("unreachable");
    expect(() => gateTrippedMessage(bogus, counts)).toThrow("unreachable");
    expect(() => gateKindName(bogus)).toThrow("unreachable");
    expect(() => scopeCounts(run([], [1], 0, []), "WHOLE_FLEET" as never)).toThrow("unreachable");
  });
});
