/**
 * A pass's decision on the run as read: the phase, safety-gate, window and conflict-timeout
 * decisions are the run reducer's (`reduceRun`, in the reference's order: finish, conflict timeout,
 * safety gates, phase boundary, claim); this gathers what it needs from the claim queue (the
 * phase's BLOCKED targets, expired claims) and returns its verdict with the ready targets. Pure: no
 * I/O, `now` given.
 */
import { findConflictTimeout } from "../../domain/backoff.js";
import type { Run, Target } from "../../domain/model.js";
import { type RunEffect, type RunEvent, reduceRun } from "../../domain/run-machine.js";
import { isActive, readyInOrder } from "../../domain/target-machine.js";
import type { ClaimQueue } from "./read-queue.js";

export type ClaimEffect = Extract<RunEffect, { type: "claim" }>;

export interface PassDecision {
  /** The event the reducer evaluated (its history events ride with the write). */
  event: RunEvent;
  /** The run after the decision; `write` says whether it must be saved. */
  run: Run;
  write: boolean;
  /** The claim the reducer asked for, if any. */
  claim: ClaimEffect | undefined;
  /** The phase's BLOCKED targets as read. */
  blocked: Target[];
  /** Targets of the phase read ready at `now`, in phase-then-sequence order. */
  readyNow: Target[];
}

export function decidePass(run: Run, queue: ClaimQueue, now: number): PassDecision {
  const blocked = queue.held.filter((t) => t.status === "BLOCKED");
  const readyNow = readyInOrder(queue, now);
  const conflictTimeout = findConflictTimeout(run, blocked, now);
  const expiredClaims = queue.held.filter((t) => t.status === "CLAIMED" && !isActive(t, now)).length;
  const event: RunEvent = {
    type: "evaluate",
    ...(conflictTimeout === undefined ? {} : { conflictTimeout }),
    ...(expiredClaims === 0 ? {} : { expiredClaims }),
  };
  const reduced = reduceRun(run, event, now);
  // evaluate never refuses a PENDING or RUNNING run; a refusal here would be corrupted data.
  if (!reduced.ok) throw reduced.error;
  const claim = reduced.effects.find((e): e is ClaimEffect => e.type === "claim");
  return { event, run: reduced.run, write: reduced.write, claim, blocked, readyNow };
}
