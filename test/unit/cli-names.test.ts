import { describe, expect, it } from "vitest";
import { gateScopeNames, PHASE_SCOPE_FLAGS, queueStrategyNames } from "../../cli/names.js";
import * as pb from "../../src/gen/flow/v1/flow.js";

const {
  OPERATION_RUN_SAFETY_GATE_SCOPE_CURRENT_PHASE: CURRENT,
  OPERATION_RUN_SAFETY_GATE_SCOPE_CUMULATIVE_RUN: CUMULATIVE,
} = pb.OperationRunSafetyGateScope;
const { OPERATION_RUN_TARGET_PHASE_SCOPE_COMPLETED_PHASES: COMPLETED } = pb.OperationRunTargetPhaseScope;

describe("cli names: tables of names of their own", () => {
  it("gate scopes read in any case and separator, and write back camelCase", () => {
    expect(["currentPhase", "CURRENT_PHASE", "current-phase"].map((s) => gateScopeNames.parse(s))).toEqual([
      CURRENT,
      CURRENT,
      CURRENT,
    ]);
    expect(gateScopeNames.parse("Cumulative Run")).toBe(CUMULATIVE);
    expect([CURRENT, CUMULATIVE].map((s) => gateScopeNames.name(s))).toEqual([
      "currentPhase",
      "cumulativeRun",
    ]);
    expect(gateScopeNames.name(pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_UNKNOWN)).toBe(
      undefined,
    );
  });

  it("queue strategies read in any case; UNSPECIFIED has no name", () => {
    expect(queueStrategyNames.parse("Queue")).toBe(pb.ConflictStrategy.CONFLICT_STRATEGY_QUEUE);
    expect(queueStrategyNames.parse("REJECT")).toBe(pb.ConflictStrategy.CONFLICT_STRATEGY_REJECT);
    expect(queueStrategyNames.parse(" queue")).toBeUndefined();
    expect(queueStrategyNames.name(pb.ConflictStrategy.CONFLICT_STRATEGY_UNSPECIFIED)).toBeUndefined();
  });

  it("--phase-scope values are taken exactly as written", () => {
    expect(PHASE_SCOPE_FLAGS.names).toEqual(["current", "completed", "current-and-completed"]);
    expect(PHASE_SCOPE_FLAGS.parse("completed")).toBe(COMPLETED);
    expect(PHASE_SCOPE_FLAGS.parse("Completed")).toBeUndefined();
  });

  it("an object's own keys are not names (constructor, toString, __proto__), nor is a non-string", () => {
    for (const table of [gateScopeNames, queueStrategyNames, PHASE_SCOPE_FLAGS]) {
      for (const text of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
        expect(table.parse(text)).toBeUndefined();
      }
      expect(table.parse(1)).toBeUndefined();
      expect(table.parse(null)).toBeUndefined();
    }
  });
});
