/**
 * The run reducer's test cases (src/domain/run-machine.ts): a run in a given state, and the
 * unwrapping of a result as a change or as the reference's FailedPrecondition.
 */
import { expect } from "vitest";
import { FailedPreconditionError } from "../../src/domain/errors.js";
import type { OutcomeCounts, Run, RunConfig, RunStatus } from "../../src/domain/model.js";
import type { RunResult } from "../../src/domain/run-machine.js";
import { runConfig } from "./domain-fixtures.js";

export const ID = "11111111-1111-4111-8111-111111111111";
export const T0 = 1_000;
export const NOW = 5_000;
export const PREFIX = "operation run is not in a valid state for the requested operation: ";

export const baseConfig: RunConfig = runConfig({
  safetyGates: [{ kind: "failureRate", scope: "CURRENT_PHASE", thresholdPercent: 50 }],
  phasePlan: { kind: "equal", phaseCount: 2 },
});

export const zero: OutcomeCounts = { completed: 0, failed: 0, terminated: 0, skipped: 0 };

export type RunOverrides = Omit<Partial<Run>, "counters" | "config"> & {
  counters?: Partial<OutcomeCounts>[];
  config?: Partial<RunConfig>;
};

/** A RUNNING two-phase run [4, 4] at phase 0 with nothing done, started at T0. */
export function run(over: RunOverrides = {}): Run {
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
    counters: counters.map((c) => ({ ...zero, ...c })),
    inFlight: 0,
    createdAt: 0,
    updatedAt: T0,
    startedAt: T0,
    ...rest,
  };
}

export function ok(result: RunResult): Extract<RunResult, { ok: true }> {
  if (!result.ok) throw result.error;
  return result;
}

export function err(result: RunResult): FailedPreconditionError {
  if (result.ok) throw new Error(`expected an error, got ${result.run.status}`);
  expect(result.error).toBeInstanceOf(FailedPreconditionError);
  expect(result.error.code).toBe("FAILED_PRECONDITION");
  return result.error;
}

export const TERMINAL: RunStatus[] = ["COMPLETED", "CANCELLED", "FAILED", "COMPLETED_WITH_FAILURES"];
