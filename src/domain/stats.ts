/**
 * Run stats and phase progress from the run item's counters alone.
 *
 * The run item carries, per phase, the planned size (`phaseSizes`, frozen at create) and the
 * outcome counters (`counters`, moved exactly once per target transition by the storage layer).
 * Everything here reads those two arrays, so the cost is O(phases) and independent of the number
 * of targets; the reference pages through every target row instead.
 *
 * Scope (as the reference defines it): "current" is the run's current phase, which is the highest
 * phase in scope; "cumulative" is phases 0..current summed. Future phases are planned and stored
 * but never counted, neither their sizes nor their outcomes.
 *
 * Worked example: phaseSizes [4,3,3], current phase 1, counters
 *   phase 0 {completed 3, failed 1}, phase 1 {failed 1}, phase 2 {} →
 *   current    = { phaseIndex 1, selectedTargets 3, outcomes {completed 0, failed 1, …} }
 *   cumulative = { phaseIndex 1, selectedTargets 7, outcomes {completed 3, failed 2, …} }
 */

import type { OutcomeCounts, Run } from "./model.js";

export interface PhaseStats {
  phaseIndex: number;
  /** Planned targets in scope (not successful ones). */
  selectedTargets: number;
  outcomes: OutcomeCounts;
}

export interface RunStats {
  /** The latest included phase (the run's current phase). */
  current: PhaseStats;
  /** Every phase up to and including the current one; future phases excluded. */
  cumulative: PhaseStats;
}

export const ZERO_OUTCOMES: Readonly<OutcomeCounts> = Object.freeze({
  completed: 0,
  failed: 0,
  terminated: 0,
  skipped: 0,
});

/** The counters of phase `i`, zeros when the run item has none for it (a phase nobody touched). */
export function phaseOutcomes(run: Run, i: number): OutcomeCounts {
  return { ...ZERO_OUTCOMES, ...run.counters[i] };
}

export function addOutcomes(a: OutcomeCounts, b: OutcomeCounts): OutcomeCounts {
  return {
    completed: a.completed + b.completed,
    failed: a.failed + b.failed,
    terminated: a.terminated + b.terminated,
    skipped: a.skipped + b.skipped,
  };
}

/** Planned targets of phase `i`; 0 for an index outside the plan. */
export function phaseSize(run: Run, i: number): number {
  return run.phaseSizes[i] ?? 0;
}

/** Targets of phase `i` with an outcome (completed, failed, terminated or skipped). */
export function phaseTerminalCount(run: Run, i: number): number {
  const o = phaseOutcomes(run, i);
  return o.completed + o.failed + o.terminated + o.skipped;
}

/**
 * Whether every planned target of phase `i` has an outcome. A phase index outside the plan is
 * never complete (it has no targets to finish). Example: size 3 with counters {completed 2,
 * failed 1} → true; size 3 with {completed 2} → false.
 */
export function isPhaseComplete(run: Run, i: number): boolean {
  const size = phaseSize(run, i);
  return size > 0 && phaseTerminalCount(run, i) >= size;
}

/** Whether every target of every phase has an outcome; the dispatcher then finishes the run. */
export function allTargetsTerminal(run: Run): boolean {
  return run.phaseSizes.every((size, i) => phaseTerminalCount(run, i) >= size);
}

/** Planned targets over all phases. */
export function totalTargets(run: Run): number {
  return run.phaseSizes.reduce((sum, size) => sum + size, 0);
}

/** Outcomes summed over phases `0..last` (inclusive). */
export function outcomesThrough(run: Run, last: number): OutcomeCounts {
  let sum: OutcomeCounts = { ...ZERO_OUTCOMES };
  for (let i = 0; i <= last; i++) sum = addOutcomes(sum, phaseOutcomes(run, i));
  return sum;
}

/** Planned targets summed over phases `0..last` (inclusive). */
export function selectedThrough(run: Run, last: number): number {
  let sum = 0;
  for (let i = 0; i <= last; i++) sum += phaseSize(run, i);
  return sum;
}

/** The stats `GetOperationRun(include_stats)` returns; see the module comment for an example. */
export function computeStats(run: Run): RunStats {
  const current = run.currentPhaseIndex;
  return {
    current: {
      phaseIndex: current,
      selectedTargets: phaseSize(run, current),
      outcomes: phaseOutcomes(run, current),
    },
    cumulative: {
      phaseIndex: current,
      selectedTargets: selectedThrough(run, current),
      outcomes: outcomesThrough(run, current),
    },
  } satisfies { current: PhaseStats; cumulative: PhaseStats };
}
