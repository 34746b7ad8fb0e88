/**
 * Phase allocation: how many of the ordered targets each phase receives.
 *
 * Rounding policy: cumulative, rounding up. Each plan kind defines the cumulative boundary after
 * phase i (how many targets phases 0..i hold together); a phase's size is the difference of two
 * neighbouring boundaries. Rounding the boundaries, not the sizes, means the sizes always sum to
 * the total and no rounding error accumulates from phase to phase; rounding up front-loads the
 * remainder into the early phases.
 *
 *   equal, k phases        boundary i = ceil(total * i / k)               i = 1..k
 *     10 in 3              boundaries 4, 7, 10              → [4, 3, 3]
 *     5 in 3               boundaries 2, 4, 5               → [2, 2, 1]
 *     2 in 3               boundaries 1, 2, 2               → phase 3 is empty: rejected
 *
 *   percentage p1..pk      boundary i = ceil(total * (p1 + … + pi) / 100)
 *     10 at 10/30/60       boundaries 1, 4, 10              → [1, 3, 6]
 *     7 at 50/50           boundaries 4, 7                  → [4, 3]
 *     2 at 25/25/50        boundaries 1, 1, 2               → phase 2 is empty: rejected
 *
 *   count c1..ck           the listed counts, then one final phase with the remainder,
 *                          only if targets remain
 *     10 with [2, 3]       → [2, 3, 5]
 *     5 with [2, 3]        → [2, 3]
 *     4 with [2, 3]        → rejected: the counts exceed the selection
 *
 * Invariants of every accepted allocation: the sizes sum to `total`, every size is >= 1, and the
 * cumulative boundaries are non-decreasing (strictly increasing, since no phase is empty).
 *
 * A phase that would receive zero targets is an error, not a dropped phase: the operator asked for
 * k phases and gets k or nothing.
 *
 * Phase numbers for people and indexes for programs: every text written for a person names a
 * phase by its number counted from 1 (`phaseName`: "phase 1" is the first phase), while every
 * `phaseIndex` field, on the wire and in storage, counts from 0. The zero-target message is such a
 * text ("percentage phase 2 resolves to zero targets for 2 selected targets" is the second phase).
 * The only exceptions are the reference's advance messages, which its published behaviour fixes
 * with zero-based indexes ("advanced to phase 1" after the first phase; see `reduceRun`'s advance).
 *
 * All arithmetic is on integers: `ceilDiv` never goes through a fractional quotient, so there is
 * no floating-point rounding to get wrong (ceil(7 * 50 / 100) is exactly 4).
 */
import type { PhasePlan } from "./model.js";

export type PhaseAllocation = { ok: true; sizes: number[] } | { ok: false; message: string };

/** ceil(numerator / denominator) for a non-negative integer numerator and a positive denominator. */
export function ceilDiv(numerator: number, denominator: number): number {
  const remainder = numerator % denominator;
  const quotient = (numerator - remainder) / denominator;
  return remainder === 0 ? quotient : quotient + 1;
}

export const COUNT_PHASES_EXCEED_MESSAGE = "count phase counts exceed selected target count";

/** How a text for people names the phase at zero-based `phaseIndex`: "phase 1" for index 0. */
export function phaseName(phaseIndex: number): string {
  return `phase ${phaseIndex + 1}`;
}

/** The message for the phase at zero-based `phaseIndex` when it receives nothing. */
export function zeroPhaseMessage(kind: PhasePlan["kind"], phaseIndex: number, total: number): string {
  return `${kind} ${phaseName(phaseIndex)} resolves to zero targets for ${total} selected targets`;
}

/**
 * Splits `total` ordered targets into phases according to `plan`. Pure; the plan is assumed
 * validated at create (equal phase count >= 1, percentages 1..100 summing to 100, counts >= 1),
 * and anything else is reported as a failed allocation rather than a wrong one.
 */
export function allocatePhases(total: number, plan: PhasePlan): PhaseAllocation {
  const planError = checkPlan(plan);
  if (planError !== undefined) return { ok: false, message: planError };
  const sizes = phaseSizes(total, plan);
  if (sizes === undefined) return { ok: false, message: COUNT_PHASES_EXCEED_MESSAGE };
  const empty = sizes.indexOf(0);
  if (empty >= 0) return { ok: false, message: zeroPhaseMessage(plan.kind, empty, total) };
  return { ok: true, sizes };
}

/** The create-time rules (the reference's texts), rechecked so that a bad plan cannot mis-split. */
function checkPlan(plan: PhasePlan): string | undefined {
  switch (plan.kind) {
    case "equal":
      return isPositiveInteger(plan.phaseCount) ? undefined : "equal phase_count must be greater than 0";
    case "percentage":
      if (plan.percentages.length === 0) return "percentage phase policy must include at least one phase";
      if (!plan.percentages.every((p) => isPositiveInteger(p) && p <= 100)) {
        return "percentage phase percentages must be between 1 and 100";
      }
      return plan.percentages.reduce((a, b) => a + b, 0) === 100
        ? undefined
        : "percentage phase percentages must sum to 100";
    case "count":
      if (plan.counts.length === 0) return "count phase policy must include at least one phase";
      return plan.counts.every(isPositiveInteger) ? undefined : "count phase counts must be greater than 0";
  }
}

function isPositiveInteger(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 1;
}

/** Sizes per phase, possibly with zeros; `undefined` when count phases ask for more than `total`. */
function phaseSizes(total: number, plan: PhasePlan): number[] | undefined {
  switch (plan.kind) {
    case "equal": {
      const boundaries = Array.from({ length: plan.phaseCount }, (_, i) =>
        ceilDiv(total * (i + 1), plan.phaseCount),
      );
      return differences(boundaries);
    }
    case "percentage": {
      let runningSum = 0;
      const boundaries = plan.percentages.map((p) => {
        runningSum += p;
        return ceilDiv(total * runningSum, 100);
      });
      return differences(boundaries);
    }
    case "count": {
      const listed = plan.counts.reduce((a, b) => a + b, 0);
      if (listed > total) return undefined;
      return listed < total ? [...plan.counts, total - listed] : [...plan.counts];
    }
  }
}

function differences(boundaries: number[]): number[] {
  let previous = 0;
  return boundaries.map((boundary) => {
    const size = boundary - previous;
    previous = boundary;
    return size;
  });
}
