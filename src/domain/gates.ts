/**
 * Safety gates as verdicts: which gate tripped, over which scope, on which counts, and the pause
 * message, so the shell decides what to write and the message is built in one place.
 *
 * Arithmetic (the reference's, integers only, no rounding anywhere):
 * - Only FAILED targets count. TERMINATED ones (cancelled children) do not trip a gate.
 * - "Selected" is the planned size of the scope: the current phase for CURRENT_PHASE, phases
 *   0..current for CUMULATIVE_RUN. Future phases never count, so a cumulative rate does not get
 *   diluted by targets that have not had a chance to run.
 * - Rate gate trips when `selected > 0 && failed * 100 >= percent * selected`.
 *   1 failed of 2 at 50% → 100 >= 100 → trips; 1 of 3 at 34% → 100 >= 102 → holds.
 * - Count gate trips when `failed >= count` (validation keeps count > 0, so 0 failed never trips).
 * - Gates compose with OR, checked in configured order; the first tripped gate is the verdict.
 *
 * Messages (exact reference texts; the percentage is `floor(failed * 100 / selected)`):
 *   failure_count safety gate tripped for current_phase: 1/2 targets failed (threshold 1)
 *   failure_rate safety gate tripped for cumulative_run: 3/10 targets failed (30%, threshold 30%)
 */

import { assertNever, type GateScope, type Run, type SafetyGate } from "./model.js";
import { outcomesThrough, phaseOutcomes, phaseSize, selectedThrough } from "./stats.js";

export type GateVerdict =
  | { tripped: false }
  | {
      tripped: true;
      /** Index into `config.safetyGates`. */
      gateIndex: number;
      gate: SafetyGate;
      scope: GateScope;
      failed: number;
      selected: number;
      message: string;
    };

/** Failed and planned counts for a gate scope, read from the run's counters. */
export function scopeCounts(run: Run, scope: GateScope): { failed: number; selected: number } {
  const current = run.currentPhaseIndex;
  switch (scope) {
    case "CURRENT_PHASE":
      return { failed: phaseOutcomes(run, current).failed, selected: phaseSize(run, current) };
    case "CUMULATIVE_RUN":
      return { failed: outcomesThrough(run, current).failed, selected: selectedThrough(run, current) };
    default:
      return assertNever(scope);
  }
}

/** Whether one gate trips on the given counts (see the module comment for the arithmetic). */
export function isGateTripped(gate: SafetyGate, failed: number, selected: number): boolean {
  switch (gate.kind) {
    case "failureRate":
      return selected > 0 && failed * 100 >= gate.thresholdPercent * selected;
    case "failureCount":
      return failed >= gate.thresholdCount;
    default:
      return assertNever(gate);
  }
}

/** The reference's pause message for a tripped gate; the module comment shows both shapes. */
export function gateTrippedMessage(gate: SafetyGate, failed: number, selected: number): string {
  const counts = `${gate.scope.toLowerCase()}: ${failed}/${selected} targets failed`;
  switch (gate.kind) {
    case "failureRate": {
      const percent = selected === 0 ? 0 : Math.floor((failed * 100) / selected);
      return `failure_rate safety gate tripped for ${counts} (${percent}%, threshold ${gate.thresholdPercent}%)`;
    }
    case "failureCount":
      return `failure_count safety gate tripped for ${counts} (threshold ${gate.thresholdCount})`;
    default:
      return assertNever(gate);
  }
}

/** The snake_case kind name the reference prints. */
export function gateKindName(gate: SafetyGate): "failure_rate" | "failure_count" {
  switch (gate.kind) {
    case "failureRate":
      return "failure_rate";
    case "failureCount":
      return "failure_count";
    default:
      return assertNever(gate);
  }
}

/**
 * Checks the run's gates in configured order against its counters.
 *
 * Example: gates [rate 50% current, count 1 cumulative], phaseSizes [2,2], current phase 1,
 * phase 0 failed 1, phase 1 failed 0 → the rate gate holds (0/2) and the count gate trips:
 * `{ tripped: true, gateIndex: 1, scope: "CUMULATIVE_RUN", failed: 1, selected: 4,
 *    message: "failure_count safety gate tripped for cumulative_run: 1/4 targets failed (threshold 1)" }`.
 */
export function evaluateGates(run: Run): GateVerdict {
  for (const [gateIndex, gate] of run.config.safetyGates.entries()) {
    const { failed, selected } = scopeCounts(run, gate.scope);
    if (isGateTripped(gate, failed, selected)) {
      return {
        tripped: true,
        gateIndex,
        gate,
        scope: gate.scope,
        failed,
        selected,
        message: gateTrippedMessage(gate, failed, selected),
      };
    }
  }
  return { tripped: false };
}
