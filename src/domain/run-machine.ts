/**
 * The run as a reducer: `reduceRun(run, event, now) → { run, effects, write }`.
 *
 * The shell persists the new run first (a conditional write on the version it read) and performs
 * the effects only after the write succeeded, so a retried event cannot cancel or claim twice.
 *
 * Error convention (shared with target-machine.ts): a transition the run's state does not allow
 * returns `{ ok: false, error }` with a `FailedPreconditionError` whose message is the reference's
 * full gRPC message, e.g.
 *   `operation run is not in a valid state for the requested operation: <id> is not paused`.
 * The reducer never throws for that; `assertNever` only fires on corrupted data.
 *
 * `write: false` means "nothing changed, do not write" (the returned run is the input object):
 * pausing a paused run keeps its original reason, cancelling a terminal run returns it unchanged,
 * and a dispatch pass with nothing to change only emits effects. Every write sets `updatedAt = now`;
 * every terminal state sets `finishedAt = now` and reason NONE.
 *
 * Events
 * - Manual controls (PauseOperationRun, ResumeOperationRun, AdvanceOperationRunPhase,
 *   CancelOperationRun): `pause`, `resume`, `advance`, `cancel`; ApproveOperationRun: `approve`
 *   (a run the two-person rule holds, PAUSED / AWAITING_APPROVAL → PENDING; who may approve is
 *   decided before, in src/domain/approval.ts).
 * - Dispatcher: `evaluate`, one pass of the decision order for PENDING and RUNNING runs:
 *     1. every target of every phase has an outcome → finish: FAILED if every target FAILED or was
 *        TERMINATED, COMPLETED_WITH_FAILURES if at least one was, else COMPLETED;
 *     2. a current-phase target timed out on rack conflicts → PAUSED / CONFLICT_RETRY_TIMEOUT;
 *     3. a safety gate tripped (first in configured order) → PAUSED / SAFETY_GATE;
 *    3½. (ours) the current phase is complete and its soak has not elapsed (src/domain/soak.ts):
 *        RUNNING "phase 1 soaking until T", no claim; the first such pass stores the deadline.
 *        Step 1 waits for it too: a run whose last phase soaks finishes when the soak ends;
 *     4. (ours) the maintenance window closed for good (end_time passed): no claim; with targets in
 *        flight the run waits for them ("maintenance window closed at T: waiting for 2 targets in
 *        flight"), then PAUSED / MAINTENANCE_WINDOW "maintenance window closed at T: 3 targets not
 *        started";
 *     5. the current phase is complete and is not the last → auto-advance (then claim in the new
 *        phase, if the window is open), or PAUSED / PHASE_GATE "waiting for phase advance";
 *     6. (ours) not inside the window: before start_time, or a run that never started outside its
 *        recurring windows → PENDING "waiting for maintenance window: opens at T"; a started run
 *        outside its windows → RUNNING "outside maintenance window: next opens at T"; no claim;
 *     7. claim work: RUNNING (startedAt on the first time), effect `claim`, bounded by the
 *        window's close.
 *   Before step 1, a current phase with no planned targets (corrupted plan) fails the run with the
 *   reference's "operation run phase N has no targets; persisted phase plan is invalid".
 *   Paused and terminal runs are not dispatched: unchanged, no effects.
 *
 * Where the window sits, and why: finishing comes first (a run whose every target ended before or
 * after end_time is done, window or not); the conflict timeout and the safety gates come before the
 * window because targets still in flight after end_time keep reporting, and a tripped gate is the
 * more urgent news for the operator. A closed window (4) comes before the phase boundary: advancing
 * into a phase that can never be claimed, or pausing at a PHASE_GATE whose Advance could start
 * nothing, would only mislead. Waiting for an opening (6) comes after the phase boundary, so a run
 * between two nightly windows still pauses at its phase gate at once and the operator can advance
 * it before the next window opens instead of losing that window to the gate.
 */

import { type ConflictTimeout, conflictTimeoutMessage } from "./backoff.js";
import { formatRfc3339 } from "./calendar.js";
import { FailedPreconditionError } from "./errors.js";
import { evaluateGates } from "./gates.js";
import { scheduleOf, windowState } from "./maintenance-window.js";
import { assertNever, isTerminalRun, type Run, type RunReason, type RunStatus } from "./model.js";
import { phaseName } from "./phases.js";
import {
  externalCheckMessage,
  INVALID_STATE_PREFIX,
  MSG_APPROVED,
  MSG_AUTO_ADVANCED,
  MSG_CANCELLED,
  MSG_COMPLETED,
  MSG_COMPLETED_WITH_FAILURES,
  MSG_FAILED,
  MSG_NO_TARGETS,
  MSG_NOT_STARTED_CANCELLED,
  MSG_NOT_STARTED_WINDOW_CLOSED,
  MSG_PAUSED_BY_OPERATOR,
  MSG_RESUMED,
  MSG_WAITING_FOR_PHASE_ADVANCE,
  MSG_WAITING_FOR_QUOTA,
} from "./run-messages.js";
import { soakingMessage, soakingRefusal, soakState } from "./soak.js";
import {
  allTargetsTerminal,
  isPhaseComplete,
  outcomesThrough,
  phaseSize,
  phaseTerminalCount,
  totalTargets,
} from "./stats.js";

export type RunEvent =
  | { type: "pause" }
  | { type: "resume" }
  /** `expectedPhaseIndex` is checked only when > 0 (omitted or 0 skips the check). */
  | { type: "advance"; expectedPhaseIndex?: number }
  /** The operator's reason; trimmed, and appended to the message when non-empty. */
  | { type: "cancel"; reason: string }
  | { type: "approve" }
  /**
   * `conflictTimeout`: the dispatcher found a timed-out target (see `findConflictTimeout`).
   * `expiredClaims`: current-phase targets still CLAIMED with their lease run out (a pass died
   * between claim and submission). They count in `inFlight`, but after end_time nothing may
   * re-claim them, so they must not hold a closed window's run in "waiting for targets in flight".
   */
  | { type: "evaluate"; conflictTimeout?: ConflictTimeout; expiredClaims?: number }
  /**
   * (ours) A rack's external health check was inconclusive (or gave no verdict in time): the
   * child task asks a person to look (`externalCheckInconclusive`).
   */
  | { type: "externalCheckInconclusive"; check: string; targetId: string; rackId: string; reason: string };

export type RunEffect =
  /**
   * Claim ready targets of `phaseIndex` in phase-then-sequence order: up to `slots` targets that
   * need a new slot (PENDING, BLOCKED whose retry time has come), plus any CLAIMED target whose
   * lease expired, which is re-claimed in place because it still holds its slot (see
   * `counterDelta`). `slots` may be 0 when every slot is taken. `until`: the maintenance window's
   * close (its current window or end_time); a claim whose time is not before it must not commit.
   */
  | { type: "claim"; phaseIndex: number; slots: number; until?: number }
  /**
   * Best effort, after the cancel is durable, within one shared 5 s budget: cancel every
   * non-terminal child task of the phase. The targets they stop end TERMINATED through the target
   * `outcome` event, so stats stay truthful after a cancel; targets that never got a child task
   * (PENDING, BLOCKED, CLAIMED without one) end SKIPPED with `skipMessage`.
   */
  | { type: "cancelChildTasks"; phaseIndex: number; skipMessage: string }
  /** Restart the conflict clock of the phase's BLOCKED targets (target event `restartConflictClock`). */
  | { type: "restartConflictClocks"; phaseIndex: number };

export type RunResult =
  | { ok: true; run: Run; effects: RunEffect[]; write: boolean }
  | { ok: false; error: FailedPreconditionError };

export function reduceRun(run: Run, event: RunEvent, now: number): RunResult {
  switch (event.type) {
    case "pause":
      return pause(run, now);
    case "resume":
      return resume(run, now);
    case "advance":
      return advance(run, event.expectedPhaseIndex, now);
    case "cancel":
      return cancel(run, event.reason, now);
    case "approve":
      return approve(run, now);
    case "evaluate":
      return evaluate(run, event.conflictTimeout, event.expiredClaims ?? 0, now);
    case "externalCheckInconclusive":
      return externalCheckInconclusive(run, event, now);
    default:
      return assertNever(event);
  }
}

/**
 * (ours) PENDING, RUNNING, or PAUSED for a reason a resume lifts → PAUSED /
 * EXTERNAL_CHECK_INCONCLUSIVE: nothing more is claimed until a person resumes (anyone who may
 * resume) or reports the rack failed (ReportTargetFailure; then the gates decide). A run paused
 * for its maintenance window or awaiting approval keeps that reason; a terminal run, and one paused
 * for this very verdict already (a retried step), are unchanged.
 */
function externalCheckInconclusive(
  run: Run,
  event: Extract<RunEvent, { type: "externalCheckInconclusive" }>,
  now: number,
): RunResult {
  if (isTerminalRun(run.status)) return unchanged(run);
  if (run.status === "PAUSED" && (run.reason === "MAINTENANCE_WINDOW" || run.reason === "AWAITING_APPROVAL"))
    return unchanged(run);
  const message = externalCheckMessage(event);
  if (
    run.status === "PAUSED" &&
    run.reason === "EXTERNAL_CHECK_INCONCLUSIVE" &&
    run.statusMessage === message
  )
    return unchanged(run);
  return written(paused(run, "EXTERNAL_CHECK_INCONCLUSIVE", message), now);
}

/**
 * PENDING or RUNNING → PAUSED / OPERATOR_PAUSED. Already paused → unchanged, no write, so an
 * operator pause does not hide a safety, conflict or phase-gate pause. Terminal → error
 * `…: <id> is in terminal state completed`.
 */
function pause(run: Run, now: number): RunResult {
  if (isTerminalRun(run.status)) return invalid(`${run.id} is in terminal state ${lower(run.status)}`);
  if (run.status === "PAUSED") return unchanged(run);
  return written(
    { ...run, status: "PAUSED", reason: "OPERATOR_PAUSED", statusMessage: MSG_PAUSED_BY_OPERATOR },
    now,
  );
}

/**
 * PAUSED (any reason but PHASE_GATE, MAINTENANCE_WINDOW and AWAITING_APPROVAL) → RUNNING "operation run resumed", or
 * straight to the final state when every target already has an outcome (outcomes keep arriving
 * while paused). Safety gates are not checked here: the next dispatch pass does, and may pause the
 * run again. Resuming from CONFLICT_RETRY_TIMEOUT also restarts the conflict clocks, or the
 * still-blocked target would time out again on the very next pass.
 */
function resume(run: Run, now: number): RunResult {
  if (run.status !== "PAUSED") return invalid(`${run.id} is not paused`);
  if (run.reason === "PHASE_GATE") {
    return invalid(`${run.id} is paused at a phase gate; use AdvanceOperationRunPhase`);
  }
  if (run.reason === "AWAITING_APPROVAL") {
    // Resume would let the creator lift the two-person rule alone.
    return invalid(`${run.id} is awaiting approval by a second person; use ApproveOperationRun`);
  }
  if (run.reason === "MAINTENANCE_WINDOW") {
    // Nothing can be claimed after end_time, so a resumed run would only pause again.
    const end = scheduleOf(run.config).endTime;
    const at = end === undefined ? "" : ` at ${formatRfc3339(end)}`;
    return invalid(`${run.id} cannot resume: maintenance window closed${at}; cancel it or create a new run`);
  }
  if (allTargetsTerminal(run) && soakState(run, now).kind === "none") return written(finished(run, now), now);
  const effects: RunEffect[] =
    run.reason === "CONFLICT_RETRY_TIMEOUT"
      ? [{ type: "restartConflictClocks", phaseIndex: run.currentPhaseIndex }]
      : [];
  return written(start(run, MSG_RESUMED, now), now, effects);
}

/**
 * PAUSED / PHASE_GATE → next phase, RUNNING "advanced to phase N". These messages are the
 * reference's, word for word, and so are the only texts here that name a phase by its zero-based
 * index (N is `currentPhaseIndex`; everything else says `phaseName`). Checks, in the reference's order:
 * paused at a phase gate (`<id> is not paused at a phase gate`); every target terminal → finish
 * instead; current phase complete (`phase N is not complete`); not the last (`phase N is the final
 * phase`); a positive expected index equals current + 1 (`expected phase 2, next phase is 1`).
 */
function advance(run: Run, expectedPhaseIndex: number | undefined, now: number): RunResult {
  const soak = isPhaseComplete(run, run.currentPhaseIndex) ? soakState(run, now) : undefined;
  if (soak?.kind === "soaking")
    return invalid(soakingRefusal(run.currentPhaseIndex, soak.leftMs, soak.endsAt));
  if (run.status !== "PAUSED" || run.reason !== "PHASE_GATE") {
    return invalid(`${run.id} is not paused at a phase gate`);
  }
  if (allTargetsTerminal(run)) return written(finished(run, now), now);
  const current = run.currentPhaseIndex;
  if (!isPhaseComplete(run, current)) return invalid(`phase ${current} is not complete`);
  const next = current + 1;
  if (next >= run.phaseSizes.length) return invalid(`phase ${current} is the final phase`);
  if (expectedPhaseIndex !== undefined && expectedPhaseIndex > 0 && expectedPhaseIndex !== next) {
    return invalid(`expected phase ${expectedPhaseIndex}, next phase is ${next}`);
  }
  return written(start(nextPhase(run), `advanced to phase ${next}`, now), now);
}

/**
 * Non-terminal → CANCELLED, "operation run cancelled" or "operation run cancelled: <trimmed
 * reason>", then (after the write) cancel the current phase's child tasks. Terminal → unchanged.
 * Its targets that never got a child task end SKIPPED "not started: operation run cancelled", or
 * "not started: maintenance window closed" when the window had closed for good (the run paused
 * with MAINTENANCE_WINDOW, or was waiting for its last flashes after end_time).
 */
function cancel(run: Run, reason: string, now: number): RunResult {
  if (isTerminalRun(run.status)) return unchanged(run);
  const trimmed = reason.trim();
  const message = trimmed === "" ? MSG_CANCELLED : `${MSG_CANCELLED}: ${trimmed}`;
  const windowClosed =
    run.reason === "MAINTENANCE_WINDOW" || windowState(scheduleOf(run.config), now).kind === "closed";
  const skipMessage = windowClosed ? MSG_NOT_STARTED_WINDOW_CLOSED : MSG_NOT_STARTED_CANCELLED;
  return written(terminal(run, "CANCELLED", message, now), now, [
    { type: "cancelChildTasks", phaseIndex: run.currentPhaseIndex, skipMessage },
  ]);
}

/**
 * PAUSED / AWAITING_APPROVAL → PENDING "operation run approved": the next dispatch pass starts it
 * as it would a new run (window, quota and gates as usual). Anything else → error
 * `…: <id> is not awaiting approval`.
 */
function approve(run: Run, now: number): RunResult {
  if (run.status !== "PAUSED" || run.reason !== "AWAITING_APPROVAL") {
    return invalid(`${run.id} is not awaiting approval`);
  }
  return written({ ...run, status: "PENDING", reason: "NONE", statusMessage: MSG_APPROVED }, now);
}

/** One dispatch pass; the decision order is in the module comment. */
function evaluate(
  run: Run,
  conflictTimeout: ConflictTimeout | undefined,
  expiredClaims: number,
  now: number,
): RunResult {
  const status = run.status;
  switch (status) {
    case "PENDING":
    case "RUNNING":
      break;
    case "PAUSED":
    case "COMPLETED":
    case "CANCELLED":
    case "FAILED":
    case "COMPLETED_WITH_FAILURES":
      return unchanged(run);
    default:
      return assertNever(status);
  }

  const current = run.currentPhaseIndex;
  if (run.phaseSizes.length > 0 && phaseSize(run, current) === 0) {
    // Only corrupted data gets here: the planner rejects zero-target phases.
    const message = `operation run ${phaseName(current)} has no targets; persisted phase plan is invalid`;
    return written(terminal(run, "FAILED", message, now), now);
  }

  const soak = isPhaseComplete(run, current) ? soakState(run, now) : { kind: "none" as const };
  if (allTargetsTerminal(run) && soak.kind === "none") return written(finished(run, now), now);

  if (conflictTimeout !== undefined) {
    const message = conflictTimeoutMessage(conflictTimeout.targetId, run.config.conflictRetry);
    return written(paused(run, "CONFLICT_RETRY_TIMEOUT", message), now);
  }

  const verdict = evaluateGates(run);
  if (verdict.tripped) return written(paused(run, "SAFETY_GATE", verdict.message), now);

  if (soak.kind === "start") {
    const message = soakingMessage(current, soak.endsAt);
    return written(
      { ...run, status: "RUNNING", reason: "NONE", statusMessage: message, soakEndsAt: soak.endsAt },
      now,
    );
  }
  if (soak.kind === "soaking") return keep(run, "RUNNING", soakingMessage(current, soak.endsAt), now);

  const window = windowState(scheduleOf(run.config), now);
  if (window.kind === "closed") {
    const flashing = Math.max(0, run.inFlight - expiredClaims);
    if (flashing > 0) return keep(run, status, windowClosedWaitingMessage(window.closedAt, flashing), now);
    const message = windowClosedMessage(window.closedAt, notStarted(run, flashing));
    return written(paused(run, "MAINTENANCE_WINDOW", message), now);
  }

  if (isPhaseComplete(run, current) && current + 1 < run.phaseSizes.length) {
    if (!run.config.autoAdvance) {
      return written(paused(run, "PHASE_GATE", MSG_WAITING_FOR_PHASE_ADVANCE), now);
    }
    // The new phase has no outcomes, no blocked targets and is not complete, so steps 2-5 cannot
    // fire for it; claim in it right away (window permitting) instead of waiting for the next tick.
    const advanced = start(nextPhase(run), MSG_AUTO_ADVANCED, now);
    if (window.kind !== "open") {
      return written({ ...advanced, statusMessage: waitingMessage(window, window.kind === "outside") }, now);
    }
    return written(advanced, now, [claimEffect(advanced, window.closesAt)]);
  }

  if (window.kind === "before" || window.kind === "outside") {
    // Nothing started yet: the run is still PENDING. A started run stays RUNNING between windows.
    const started = run.status === "RUNNING" && window.kind === "outside";
    return keep(run, started ? "RUNNING" : "PENDING", waitingMessage(window, started), now);
  }

  // A window that has just opened clears its own waiting message; the claim pass then says what it did.
  const shown = isWindowMessage(run.statusMessage) ? "" : run.statusMessage;
  const slots = freeSlots(run);
  const message = slots > 0 ? shown : MSG_WAITING_FOR_QUOTA;
  if (run.status === "RUNNING" && message === run.statusMessage) {
    return { ok: true, run, effects: [claimEffect(run, window.closesAt)], write: false };
  }
  const running = start(run, message, now);
  return written(running, now, [claimEffect(running, window.closesAt)]);
}

/**
 * Holds a PENDING or RUNNING run in `status` with `message` and no claim: no write when both are
 * already so (a pass every tick while waiting for a window writes nothing).
 */
function keep(run: Run, status: "PENDING" | "RUNNING", message: string, now: number): RunResult {
  if (run.status === status && run.statusMessage === message) return unchanged(run);
  return written({ ...run, status, reason: "NONE", statusMessage: message }, now);
}

/** Targets with no outcome and not being flashed: the ones a closed window leaves unstarted. */
function notStarted(run: Run, flashing: number): number {
  let ended = 0;
  for (let i = 0; i < run.phaseSizes.length; i++) ended += phaseTerminalCount(run, i);
  return Math.max(0, totalTargets(run) - ended - flashing);
}

const plural = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? "" : "s"}`;

/** "maintenance window closed at 2026-11-20T12:00:00Z: 3 targets not started" (the pause). */
export function windowClosedMessage(closedAt: number, notStartedCount: number): string {
  return `maintenance window closed at ${formatRfc3339(closedAt)}: ${plural(notStartedCount, "target")} not started`;
}

/** "maintenance window closed at 2026-11-20T12:00:00Z: waiting for 2 targets in flight". */
export function windowClosedWaitingMessage(closedAt: number, inFlight: number): string {
  return `maintenance window closed at ${formatRfc3339(closedAt)}: waiting for ${plural(inFlight, "target")} in flight`;
}

/**
 * The message of a run held outside its window. Not started yet: "waiting for maintenance window:
 * opens at T"; started: "outside maintenance window: next opens at T". With no opening left before
 * end_time: "…: no window opens before end_time" (the run then waits for end_time and pauses).
 */
export function waitingMessage(window: { opensAt?: number }, started: boolean): string {
  const [prefix, opens] = started
    ? [MSG_OUTSIDE_WINDOW, "next opens at"]
    : [MSG_WAITING_FOR_WINDOW, "opens at"];
  if (window.opensAt === undefined) return `${prefix}: no window opens before end_time`;
  return `${prefix}: ${opens} ${formatRfc3339(window.opensAt)}`;
}

export const MSG_WAITING_FOR_WINDOW = "waiting for maintenance window";
export const MSG_OUTSIDE_WINDOW = "outside maintenance window";

/** Whether a status message is one of the window's own (waitingMessage's). */
function isWindowMessage(message: string): boolean {
  return message.startsWith(`${MSG_WAITING_FOR_WINDOW}:`) || message.startsWith(`${MSG_OUTSIDE_WINDOW}:`);
}

/** `max_concurrent_targets` minus targets claimed or submitted, never below 0. */
export function freeSlots(run: Run): number {
  return Math.max(0, run.config.maxConcurrentTargets - run.inFlight);
}

function claimEffect(run: Run, until: number | undefined): RunEffect {
  const claim: RunEffect = { type: "claim", phaseIndex: run.currentPhaseIndex, slots: freeSlots(run) };
  return until === undefined ? claim : { ...claim, until };
}

/**
 * The final status for a run whose targets all have outcomes, by the reference's rule: FAILED when
 * every target failed or was terminated, COMPLETED_WITH_FAILURES when at least one was, else
 * COMPLETED (skipped targets count as neither). A run with no targets at all fails with "operation
 * run has no targets". Example: 10 targets, 9 completed and 1 terminated → COMPLETED_WITH_FAILURES.
 */
export function finalStatus(run: Run): {
  status: "COMPLETED" | "COMPLETED_WITH_FAILURES" | "FAILED";
  message: string;
} {
  const total = totalTargets(run);
  if (total === 0) return { status: "FAILED", message: MSG_NO_TARGETS };
  const outcomes = outcomesThrough(run, run.phaseSizes.length - 1);
  const failedOrTerminated = outcomes.failed + outcomes.terminated;
  if (failedOrTerminated >= total) return { status: "FAILED", message: MSG_FAILED };
  if (failedOrTerminated > 0)
    return { status: "COMPLETED_WITH_FAILURES", message: MSG_COMPLETED_WITH_FAILURES };
  return { status: "COMPLETED", message: MSG_COMPLETED };
}

function finished(run: Run, now: number): Run {
  const { status, message } = finalStatus(run);
  return terminal(run, status, message, now);
}

function terminal(run: Run, status: RunStatus, message: string, now: number): Run {
  const { soakEndsAt: _over, ...rest } = run;
  return { ...rest, status, reason: "NONE", statusMessage: message, finishedAt: now };
}

/** The run in its next phase: the soak deadline belonged to the phase it leaves. */
function nextPhase(run: Run): Run {
  const { soakEndsAt: _left, ...rest } = run;
  return { ...rest, currentPhaseIndex: run.currentPhaseIndex + 1 };
}

function paused(run: Run, reason: RunReason, message: string): Run {
  return { ...run, status: "PAUSED", reason, statusMessage: message };
}

/**
 * Enter RUNNING. As in the reference, `startedAt` is set only on a PENDING → RUNNING change (and
 * never moved afterwards); a run paused while still PENDING and later resumed keeps no startedAt.
 */
function start(run: Run, message: string, now: number): Run {
  const running: Run = { ...run, status: "RUNNING", reason: "NONE", statusMessage: message };
  if (run.status === "PENDING" && run.startedAt === undefined) running.startedAt = now;
  return running;
}

function written(run: Run, now: number, effects: RunEffect[] = []): RunResult {
  return { ok: true, run: { ...run, updatedAt: now }, effects, write: true };
}

function unchanged(run: Run): RunResult {
  return { ok: true, run, effects: [], write: false };
}

function invalid(detail: string): RunResult {
  return { ok: false, error: new FailedPreconditionError(`${INVALID_STATE_PREFIX}: ${detail}`) };
}

/** Go prints the reference's statuses in lower case (`completed_with_failures`). */
function lower(status: RunStatus): string {
  return status.toLowerCase();
}
