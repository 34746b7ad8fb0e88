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
    expect(isGateTripped(gate, failed, selected)).toBe(tripped);
  });
});

describe("gates: scope counts", () => {
  const r = run([], [2, 3, 4], 1, [{ failed: 1, completed: 1 }, { failed: 2, terminated: 1 }, { failed: 4 }]);

  it("CURRENT_PHASE → the current phase's failed and planned size only", () => {
    expect(scopeCounts(r, "CURRENT_PHASE")).toEqual({ failed: 2, selected: 3 });
  });

  it("CUMULATIVE_RUN → phases 0..current; the future phase's size and failures never count", () => {
    expect(scopeCounts(r, "CUMULATIVE_RUN")).toEqual({ failed: 3, selected: 5 });
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
      message: "failure_count safety gate tripped for current_phase: 1/2 targets failed (threshold 1)",
    });
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
    expect(gateTrippedMessage(rate(10), 0, 0)).toBe(
      "failure_rate safety gate tripped for current_phase: 0/0 targets failed (0%, threshold 10%)",
    );
  });

  it("percentage is floored: 1 of 3 → 33%", () => {
    expect(gateTrippedMessage(rate(30, "CUMULATIVE_RUN"), 1, 3)).toBe(
      "failure_rate safety gate tripped for cumulative_run: 1/3 targets failed (33%, threshold 30%)",
    );
  });

  it("kind names are the reference's snake_case", () => {
    expect(gateKindName(rate(1))).toBe("failure_rate");
    expect(gateKindName(count(1))).toBe("failure_count");
  });

  it("an unknown gate kind or scope (corrupted item) is rejected loudly, not treated as holding", () => {
    const bogus = { kind: "latency", scope: "CURRENT_PHASE" } as unknown as SafetyGate;
    expect(() => isGateTripped(bogus, 1, 1)).toThrow("unreachable");
    expect(() => gateTrippedMessage(bogus, 1, 1)).toThrow("unreachable");
    expect(() => gateKindName(bogus)).toThrow("unreachable");
    expect(() => scopeCounts(run([], [1], 0, []), "WHOLE_FLEET" as never)).toThrow("unreachable");
  });
});
