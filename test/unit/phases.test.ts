import { describe, expect, it } from "vitest";
import type { PhasePlan } from "../../src/domain/model.js";
import { allocatePhases, ceilDiv, zeroPhaseMessage } from "../../src/domain/phases.js";

const equal = (phaseCount: number): PhasePlan => ({ kind: "equal", phaseCount });
const percentage = (...percentages: number[]): PhasePlan => ({ kind: "percentage", percentages });
const count = (...counts: number[]): PhasePlan => ({ kind: "count", counts });

describe("phases: ceilDiv", () => {
  it.each([
    [0, 3, 0],
    [1, 100, 1],
    [100, 100, 1],
    [101, 100, 2],
    [350, 100, 4],
    [20, 3, 7],
    [21, 3, 7],
  ])("ceil(%i / %i) = %i", (numerator, denominator, expected) => {
    expect(ceilDiv(numerator, denominator)).toBe(expected);
  });
});

describe("phases: equal phases", () => {
  it.each([
    [10, 3, [4, 3, 3]],
    [5, 3, [2, 2, 1]],
    [3, 3, [1, 1, 1]],
    [7, 1, [7]],
    [100, 3, [34, 33, 33]],
    [11, 4, [3, 3, 3, 2]],
  ])("%i targets in %i phases → %j", (total, phases, sizes) => {
    expect(allocatePhases(total, equal(phases))).toEqual({ ok: true, sizes });
  });

  it("2 targets in 3 phases → phase 3 (1-based) is empty", () => {
    expect(allocatePhases(2, equal(3))).toEqual({
      ok: false,
      message: "equal phase 3 resolves to zero targets for 2 selected targets",
    });
  });

  it("1 target in 2 phases → phase 2 is empty", () => {
    expect(allocatePhases(1, equal(2))).toEqual({
      ok: false,
      message: "equal phase 2 resolves to zero targets for 1 selected targets",
    });
  });

  it.each([0, -1, 1.5])("phase count %d is rejected", (phaseCount) => {
    expect(allocatePhases(5, equal(phaseCount))).toEqual({
      ok: false,
      message: "equal phase_count must be greater than 0",
    });
  });
});

describe("phases: percentage phases", () => {
  it.each([
    [10, [10, 30, 60], [1, 3, 6]],
    [7, [50, 50], [4, 3]],
    [1, [100], [1]],
    [100, [1, 99], [1, 99]],
    [9, [20, 30, 50], [2, 3, 4]],
  ])("%i targets at %j → %j", (total, percentages, sizes) => {
    expect(allocatePhases(total, percentage(...percentages))).toEqual({ ok: true, sizes });
  });

  it("2 targets at 25/25/50 → phase 2 is empty (boundaries 1, 1, 2)", () => {
    expect(allocatePhases(2, percentage(25, 25, 50))).toEqual({
      ok: false,
      message: "percentage phase 2 resolves to zero targets for 2 selected targets",
    });
  });

  it("3 targets at 34/33/33 → phase 3 is empty (boundaries 2, 3, 3)", () => {
    expect(allocatePhases(3, percentage(34, 33, 33))).toEqual({
      ok: false,
      message: "percentage phase 3 resolves to zero targets for 3 selected targets",
    });
  });

  it.each([
    [[], "percentage phase policy must include at least one phase"],
    [[0, 100], "percentage phase percentages must be between 1 and 100"],
    [[101], "percentage phase percentages must be between 1 and 100"],
    [[50, 40], "percentage phase percentages must sum to 100"],
    [[60, 60], "percentage phase percentages must sum to 100"],
  ])("percentages %j are rejected", (percentages, message) => {
    expect(allocatePhases(10, percentage(...percentages))).toEqual({ ok: false, message });
  });
});

describe("phases: count phases", () => {
  it.each([
    [10, [2, 3], [2, 3, 5]],
    [5, [2, 3], [2, 3]],
    [1, [1], [1]],
    [4, [1], [1, 3]],
  ])("%i targets with counts %j → %j", (total, counts, sizes) => {
    expect(allocatePhases(total, count(...counts))).toEqual({ ok: true, sizes });
  });

  it("4 targets with counts [2, 3] → the counts exceed the selection", () => {
    expect(allocatePhases(4, count(2, 3))).toEqual({
      ok: false,
      message: "count phase counts exceed selected target count",
    });
  });

  it.each([
    [[], "count phase policy must include at least one phase"],
    [[2, 0], "count phase counts must be greater than 0"],
  ])("counts %j are rejected", (counts, message) => {
    expect(allocatePhases(10, count(...counts))).toEqual({ ok: false, message });
  });
});

describe("phases: zero-phase message", () => {
  it("names the plan kind, the phase counted from 1 (index 3 is phase 4) and the selection size", () => {
    expect(zeroPhaseMessage("count", 3, 9)).toBe(
      "count phase 4 resolves to zero targets for 9 selected targets",
    );
  });
});
