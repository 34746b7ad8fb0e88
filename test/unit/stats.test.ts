import { describe, expect, it } from "vitest";
import type { OutcomeCounts, Run, RunConfig } from "../../src/domain/model.js";
import {
  addOutcomes,
  allTargetsTerminal,
  computeStats,
  isPhaseComplete,
  outcomesThrough,
  phaseOutcomes,
  phaseSize,
  phaseTerminalCount,
  selectedThrough,
  totalTargets,
} from "../../src/domain/stats.js";
import { runConfig } from "../support/domain-fixtures.js";

const config: RunConfig = runConfig({
  safetyGates: [{ kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 1 }],
  phasePlan: { kind: "equal", phaseCount: 3 },
});

const zero: OutcomeCounts = { completed: 0, failed: 0, terminated: 0, skipped: 0 };
const oc = (o: Partial<OutcomeCounts>): OutcomeCounts => ({ ...zero, ...o });

function run(phaseSizes: number[], current: number, counters: Partial<OutcomeCounts>[]): Run {
  return {
    id: "11111111-1111-4111-8111-111111111111",
    name: "r",
    description: "",
    config,
    status: "RUNNING",
    reason: "NONE",
    statusMessage: "",
    phaseSizes,
    currentPhaseIndex: current,
    counters: counters.map(oc),
    inFlight: 0,
    createdAt: 0,
    updatedAt: 0,
  };
}

describe("stats: computeStats from counters", () => {
  it("[4,3,3] at phase 1 → current is phase 1 alone, cumulative sums phases 0 and 1, phase 2 excluded", () => {
    const r = run([4, 3, 3], 1, [{ completed: 3, failed: 1 }, { failed: 1 }, { completed: 2, skipped: 1 }]);
    expect(computeStats(r)).toEqual({
      current: { phaseIndex: 1, selectedTargets: 3, outcomes: oc({ failed: 1 }) },
      cumulative: { phaseIndex: 1, selectedTargets: 7, outcomes: oc({ completed: 3, failed: 2 }) },
    });
  });

  it("phase 0 of a fresh run → selected is phase 0's size and every outcome is zero", () => {
    expect(computeStats(run([2, 5], 0, []))).toEqual({
      current: { phaseIndex: 0, selectedTargets: 2, outcomes: zero },
      cumulative: { phaseIndex: 0, selectedTargets: 2, outcomes: zero },
    });
  });

  it("last phase of a finished run → cumulative covers every phase and counts every outcome kind", () => {
    const r = run([1, 2], 1, [{ completed: 1 }, { terminated: 1, skipped: 1 }]);
    expect(computeStats(r).cumulative).toEqual({
      phaseIndex: 1,
      selectedTargets: 3,
      outcomes: oc({ completed: 1, terminated: 1, skipped: 1 }),
    });
  });
});

describe("stats: phase helpers", () => {
  const r = run([3, 2], 0, [{ completed: 2, failed: 1 }, { completed: 1 }]);

  it("phaseTerminalCount sums all four outcomes of one phase", () => {
    expect(phaseTerminalCount(r, 0)).toBe(3);
    expect(phaseTerminalCount(r, 1)).toBe(1);
  });

  it("a phase with no counters entry reads as zeros", () => {
    expect(phaseOutcomes(r, 5)).toEqual(zero);
    expect(phaseTerminalCount(r, 5)).toBe(0);
  });

  it("phaseSize is 0 outside the plan", () => {
    expect(phaseSize(r, 1)).toBe(2);
    expect(phaseSize(r, 2)).toBe(0);
  });

  it.each([
    [0, true],
    [1, false],
    [2, false], // outside the plan: nothing to complete
  ])("isPhaseComplete(phase %d) → %s", (i, expected) => {
    expect(isPhaseComplete(r, i)).toBe(expected);
  });

  it("allTargetsTerminal is false while any phase has a target without an outcome", () => {
    expect(allTargetsTerminal(r)).toBe(false);
  });

  it("allTargetsTerminal is true when every phase's outcomes reach its size", () => {
    expect(allTargetsTerminal(run([3, 2], 1, [{ completed: 3 }, { failed: 1, terminated: 1 }]))).toBe(true);
  });

  it("allTargetsTerminal looks at future phases too (phase 0 done, phase 1 untouched → false)", () => {
    expect(allTargetsTerminal(run([1, 1], 0, [{ completed: 1 }]))).toBe(false);
  });

  it("totals and sums through a phase", () => {
    expect(totalTargets(r)).toBe(5);
    expect(selectedThrough(r, 0)).toBe(3);
    expect(selectedThrough(r, 1)).toBe(5);
    expect(outcomesThrough(r, 1)).toEqual(oc({ completed: 3, failed: 1 }));
    expect(addOutcomes(oc({ completed: 1, skipped: 2 }), oc({ failed: 1, terminated: 3 }))).toEqual({
      completed: 1,
      failed: 1,
      terminated: 3,
      skipped: 2,
    });
  });
});
