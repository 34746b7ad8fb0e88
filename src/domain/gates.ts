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
 * - (ours) Observed-rate gate: "finished" is the scope's targets that ran to an end (COMPLETED,
 *   FAILED, TERMINATED; a SKIPPED target never started and says nothing about the firmware). It is
 *   judged only once `finished >= min(minFinished, selected)` (a scope smaller than `minFinished`
 *   is judged when all of it has finished, not never), then trips when
 *   `failed * 100 >= percent * finished`.
 *   50%, min 5: 4 of 4 finished in a scope of 10 → not judged yet; 3 of 5 → 300 >= 250 → trips;
 *   2 of 5 → holds; 2 of 2 in a scope of 2 → trips.
 *   With 100 planned, 5 of 5 finished failing trips it while failed/planned is 5%.
 * - Gates compose with OR, checked in configured order; the first tripped gate is the verdict.
 *
 * Messages (exact reference texts; the percentage is `floor(failed * 100 / selected)`):
 *   failure_count safety gate tripped for current_phase: 1/2 targets failed (threshold 1)
 *   failure_rate safety gate tripped for cumulative_run: 3/10 targets failed (30%, threshold 30%)
 */

import { assertNever, type GateScope, type OutcomeCounts, type Run, type SafetyGate } from "./model.js";
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
      /** Targets of the scope that ran to an end (COMPLETED, FAILED, TERMINATED). */
      finished: number;
      message: string;
    };

/** A gate scope's counts: failed, planned (`selected`) and ran to an end (`finished`). */
export interface ScopeCounts {
  failed: number;
  selected: number;
  finished: number;
}

/** The counts for a gate scope, read from the run's counters. */
export function scopeCounts(run: Run, scope: GateScope): ScopeCounts {
  const current = run.currentPhaseIndex;
  switch (scope) {
    case "CURRENT_PHASE":
      return withFinished(phaseOutcomes(run, current), phaseSize(run, current));
    case "CUMULATIVE_RUN":
      return withFinished(outcomesThrough(run, current), selectedThrough(run, current));
    default:
      return assertNever(scope);
  }
}

function withFinished(o: OutcomeCounts, selected: number): ScopeCounts {
  return { failed: o.failed, selected, finished: o.completed + o.failed + o.terminated };
}

/** Whether one gate trips on the given counts (see the module comment for the arithmetic). */
export function isGateTripped(gate: SafetyGate, counts: ScopeCounts): boolean {
  const { failed, selected, finished } = counts;
  switch (gate.kind) {
    case "failureRate":
      return selected > 0 && failed * 100 >= gate.thresholdPercent * selected;
    case "failureCount":
      return failed >= gate.thresholdCount;
    case "observedFailureRate":
      return (
        finished > 0 &&
        finished >= Math.min(gate.minFinished, selected) &&
        failed * 100 >= gate.thresholdPercent * finished
      );
    default:
      return assertNever(gate);
  }
}

/** The pause message for a tripped gate; the module comment shows each shape. */
export function gateTrippedMessage(gate: SafetyGate, counts: ScopeCounts): string {
  const { failed, selected, finished } = counts;
  const scope = gate.scope.toLowerCase();
  const counted = `${scope}: ${failed}/${selected} targets failed`;
  switch (gate.kind) {
    case "failureRate": {
      const percent = selected === 0 ? 0 : Math.floor((failed * 100) / selected);
      return `failure_rate safety gate tripped for ${counted} (${percent}%, threshold ${gate.thresholdPercent}%)`;
    }
    case "failureCount":
      return `failure_count safety gate tripped for ${counted} (threshold ${gate.thresholdCount})`;
    case "observedFailureRate": {
      const percent = finished === 0 ? 0 : Math.floor((failed * 100) / finished);
      return (
        `observed_failure_rate safety gate tripped for ${scope}: ${failed}/${finished} finished targets failed ` +
        `(${percent}%, threshold ${gate.thresholdPercent}%, min finished ${gate.minFinished})`
      );
    }
    default:
      return assertNever(gate);
  }
}

/** The snake_case kind name the reference prints (and ours for the observed rate). */
export function gateKindName(gate: SafetyGate): "failure_rate" | "failure_count" | "observed_failure_rate" {
  switch (gate.kind) {
    case "failureRate":
      return "failure_rate";
    case "failureCount":
      return "failure_count";
    case "observedFailureRate":
      return "observed_failure_rate";
    default:
      return assertNever(gate);
  }
}

/**
 * Checks the run's gates in configured order against its counters.
 *
 * Example: gates [rate 50% current, count 1 cumulative], phaseSizes [2,2], current phase 1,
 * phase 0 failed 1, phase 1 failed 0 → the rate gate holds (0/2) and the count gate trips:
 * `{ tripped: true, gateIndex: 1, scope: "CUMULATIVE_RUN", failed: 1, selected: 4, finished: 1,
 *    message: "failure_count safety gate tripped for cumulative_run: 1/4 targets failed (threshold 1)" }`.
 */
export function evaluateGates(run: Run): GateVerdict {
  for (const [gateIndex, gate] of run.config.safetyGates.entries()) {
    const counts = scopeCounts(run, gate.scope);
    if (isGateTripped(gate, counts)) {
      return {
        tripped: true,
        gateIndex,
        gate,
        scope: gate.scope,
        ...counts,
        message: gateTrippedMessage(gate, counts),
      };
    }
  }
  return { tripped: false };
}
