/**
 * Target transitions as a reducer: `reduceTarget(target, event, now, policy)`.
 *
 * Error convention (shared with run-machine.ts): reducers never throw for a transition the state
 * does not allow. They return `{ ok: false, error }` with a `FailedPreconditionError` carrying the
 * message, so a caller that maps it to gRPC can `throw result.error`, and a caller that lost a race
 * (a stream record delivered twice, two dispatchers on one target) can simply drop it.
 *
 *   PENDING ──claim──► CLAIMED ──submitted──► SUBMITTED ──outcome──► COMPLETED | FAILED | TERMINATED
 *      ▲                 │  │ ▲                                           ▲
 *      │                 │  │ └─claim (lease expired: another dispatcher may take it over)
 *      │                 │  └──submitFailed──► FAILED
 *      │                 └──conflict──► BLOCKED ──claim (retryAt <= now)──► CLAIMED
 *      └─ PENDING, BLOCKED and CLAIMED (without a task yet) end SKIPPED when a cancel stops them:
 *         they never started, unlike a target whose child task the cancel stopped (TERMINATED).
 *
 * Counters: `counterDelta(from, to)` says which outcome counter and how the run's in-flight count
 * move for a transition; the storage layer applies it in the same conditional write as the
 * transition, so each target moves each counter at most once.
 */

import { conflictRetryDelayMs } from "./backoff.js";
import { formatGoDuration } from "./duration.js";
import { FailedPreconditionError } from "./errors.js";
import {
  assertNever,
  type ConflictRetryPolicy,
  isTerminalTarget,
  type OutcomeCounts,
  type Target,
  type TargetStatus,
} from "./model.js";

/** How long a claim holds a target before another dispatcher may take it over (the reference's 30 s). */
export const CLAIM_LEASE_MS = 30_000;

export const CLAIMED_MESSAGE = "claimed for submission";
export const SUBMITTED_MESSAGE = "submitted";

export type TargetEvent =
  /** Take the target for submission until `now + leaseMs`. */
  | { type: "claim"; leaseMs: number }
  /** The child task exists (or was found again by its idempotency key). */
  | { type: "submitted"; taskId: string }
  /** The rack is busy with another hardware task: back off and retry. */
  | { type: "conflict" }
  /** Submission failed for any reason other than a rack conflict; the text becomes the message. */
  | { type: "submitFailed"; message: string }
  /** The child task ended (COMPLETED, FAILED, TERMINATED), or a cancel skipped a target that had none (SKIPPED). */
  | { type: "outcome"; status: "COMPLETED" | "FAILED" | "TERMINATED" | "SKIPPED"; message: string }
  /**
   * Restart the conflict timeout clock of a BLOCKED target (firstBlockedAt := now) without losing
   * its attempt count. For resuming a run paused with CONFLICT_RETRY_TIMEOUT: without it the
   * still-blocked target would trip the timeout again on the next dispatch pass.
   */
  | { type: "restartConflictClock" };

export type TargetResult =
  | {
      ok: true;
      target: Target;
      /** False when the event was already applied (a duplicate outcome); nothing to write. */
      changed: boolean;
    }
  | { ok: false; error: FailedPreconditionError };

/** Whether the dispatcher may claim the target now (the reference's "ready for submission"). */
export function isReady(target: Target, now: number): boolean {
  const status = target.status;
  switch (status) {
    case "PENDING":
      return true;
    case "BLOCKED":
      return target.retryAt === undefined || target.retryAt <= now;
    case "CLAIMED":
      return target.leaseExpiresAt === undefined || target.leaseExpiresAt <= now;
    case "SUBMITTED":
    case "COMPLETED":
    case "FAILED":
    case "TERMINATED":
    case "SKIPPED":
      return false;
    default:
      return assertNever(status);
  }
}

/**
 * The ready targets of one phase in sequence order, from its claim queue as the store keeps it:
 * the held targets (BLOCKED, CLAIMED) that are ready now, merged with the PENDING ones read.
 */
export function readyInOrder(queue: { held: Target[]; pending: Target[] }, now: number): Target[] {
  return [...queue.held.filter((t) => isReady(t, now)), ...queue.pending].sort(
    (a, b) => a.phaseIndex - b.phaseIndex || a.sequenceIndex - b.sequenceIndex,
  );
}

/** Whether the target holds a concurrency slot by the reference's rule: submitted, or claimed under a live lease. */
export function isActive(target: Target, now: number): boolean {
  return (
    target.status === "SUBMITTED" ||
    (target.status === "CLAIMED" && target.leaseExpiresAt !== undefined && target.leaseExpiresAt > now)
  );
}

/**
 * Applies one event. Worked examples (policy 1h / 30s / 5m, now = 1_000_000):
 * - PENDING + claim{30_000} → CLAIMED, leaseExpiresAt 1_030_000, "claimed for submission".
 * - CLAIMED + conflict, conflictAttempts 1 → BLOCKED, conflictAttempts 2, retryAt 1_060_000,
 *   "blocked by rack conflict; retrying in 1m0s", firstBlockedAt unchanged.
 * - SUBMITTED + outcome{FAILED, "bmc timeout"} → FAILED, "bmc timeout".
 * - COMPLETED + outcome{COMPLETED} → ok, changed false (a redelivered stream record).
 * - SUBMITTED + claim → error "target <id> cannot be claimed from status SUBMITTED".
 */
export function reduceTarget(
  target: Target,
  event: TargetEvent,
  now: number,
  policy: ConflictRetryPolicy,
): TargetResult {
  switch (event.type) {
    case "claim":
      if (!isReady(target, now)) return reject(target, "be claimed");
      return changed({
        ...omit(target, "retryAt", "taskId"),
        status: "CLAIMED",
        message: CLAIMED_MESSAGE,
        leaseExpiresAt: now + event.leaseMs,
        updatedAt: now,
      });

    case "submitted":
      if (target.status !== "CLAIMED") return reject(target, "be marked submitted");
      // The conflict episode is over once a task exists; the backoff state has done its job.
      return changed({
        ...omit(target, "leaseExpiresAt", "retryAt", "firstBlockedAt"),
        status: "SUBMITTED",
        message: SUBMITTED_MESSAGE,
        taskId: event.taskId,
        conflictAttempts: 0,
        updatedAt: now,
      });

    case "conflict": {
      if (target.status !== "CLAIMED") return reject(target, "be blocked");
      const attempts = target.conflictAttempts + 1;
      const delay = conflictRetryDelayMs(policy, attempts);
      return changed({
        ...omit(target, "leaseExpiresAt", "taskId"),
        status: "BLOCKED",
        message: `blocked by rack conflict; retrying in ${formatGoDuration(delay)}`,
        conflictAttempts: attempts,
        firstBlockedAt: target.firstBlockedAt ?? now,
        retryAt: now + delay,
        updatedAt: now,
      });
    }

    case "submitFailed":
      if (target.status !== "CLAIMED") return reject(target, "fail submission");
      return changed(ended(target, "FAILED", event.message, now));

    case "outcome":
      return applyOutcome(target, event.status, event.message, now);

    case "restartConflictClock":
      if (target.status !== "BLOCKED") return reject(target, "restart its conflict clock");
      return changed({ ...target, firstBlockedAt: now, updatedAt: now });

    default:
      return assertNever(event);
  }
}

/**
 * Outcomes normally arrive on SUBMITTED targets. Two other paths are legitimate:
 * - CLAIMED: the child task was started and finished before the dispatcher recorded SUBMITTED
 *   (Step Functions can be that fast), or a cancel skips a claim that has no task yet; any outcome
 *   is accepted, and the late `submitted` is rejected.
 * - PENDING / BLOCKED: a cancel skips a target that never got a task; only SKIPPED fits.
 * A SUBMITTED target has a task, so it is never SKIPPED. A repeat of the outcome a target already
 * has is a no-op; a different one is rejected.
 */
function applyOutcome(
  target: Target,
  status: "COMPLETED" | "FAILED" | "TERMINATED" | "SKIPPED",
  message: string,
  now: number,
): TargetResult {
  const from = target.status;
  switch (from) {
    case "SUBMITTED":
      if (status === "SKIPPED") return reject(target, "be skipped: it has a task");
      return changed(ended(target, status, message, now));
    case "CLAIMED":
      return changed(ended(target, status, message, now));
    case "PENDING":
    case "BLOCKED":
      if (status !== "SKIPPED") return reject(target, `end ${status} without a task`);
      return changed(ended(target, status, message, now));
    case "COMPLETED":
    case "FAILED":
    case "TERMINATED":
    case "SKIPPED":
      if (from === status) return { ok: true, target, changed: false };
      return reject(target, `end ${status}`);
    default:
      return assertNever(from);
  }
}

function ended(target: Target, status: TargetStatus, message: string, now: number): Target {
  return { ...omit(target, "leaseExpiresAt", "retryAt"), status, message, updatedAt: now };
}

/**
 * A copy without the given optional fields. Absent rather than `undefined`, so the item mapper
 * never sees an explicit undefined attribute.
 */
function omit<K extends keyof Target>(target: Target, ...keys: K[]): Omit<Target, K> {
  const copy: Partial<Target> = { ...target };
  for (const key of keys) delete copy[key];
  return copy as Omit<Target, K>;
}

function changed(target: Target): TargetResult {
  return { ok: true, target, changed: true };
}

function reject(target: Target, what: string): TargetResult {
  return {
    ok: false,
    error: new FailedPreconditionError(`target ${target.id} cannot ${what} from status ${target.status}`),
  };
}

/** Which outcome counter a status feeds. */
export function outcomeKey(status: TargetStatus): keyof OutcomeCounts | undefined {
  switch (status) {
    case "COMPLETED":
      return "completed";
    case "FAILED":
      return "failed";
    case "TERMINATED":
      return "terminated";
    case "SKIPPED":
      return "skipped";
    case "PENDING":
    case "BLOCKED":
    case "CLAIMED":
    case "SUBMITTED":
      return undefined;
    default:
      return assertNever(status);
  }
}

/** Statuses counted in the run's `inFlight`: a hardware slot is taken or about to be. */
const IN_FLIGHT: ReadonlySet<TargetStatus> = new Set(["CLAIMED", "SUBMITTED"]);

export interface CounterDelta {
  /** The phase outcome counter to increment by one, if the transition reaches an outcome. */
  outcome?: keyof OutcomeCounts;
  /** Change to the run's `inFlight`. */
  inFlight: -1 | 0 | 1;
}

/**
 * How a transition `from → to` moves the run's counters (apply on the target's phase).
 *
 * `inFlight` counts targets by status (CLAIMED or SUBMITTED), not by lease: a claim whose lease
 * ran out keeps its slot until it is re-claimed (CLAIMED → CLAIMED, delta 0) or leaves the claimed
 * state. Counting it as free would let a slow dispatcher and its successor both start hardware
 * work past `max_concurrent_targets`. The dispatcher therefore re-claims expired leases in place
 * without needing a free slot (see the `claim` effect in run-machine.ts).
 *
 * Examples: PENDING→CLAIMED {inFlight +1}; BLOCKED→CLAIMED {+1}; CLAIMED→CLAIMED {0};
 * CLAIMED→BLOCKED {-1}; SUBMITTED→FAILED {outcome "failed", -1}; PENDING→SKIPPED
 * {outcome "skipped", 0}; CLAIMED→SKIPPED {outcome "skipped", -1}; COMPLETED→COMPLETED (duplicate) {0}.
 */
export function counterDelta(from: TargetStatus, to: TargetStatus): CounterDelta {
  const inFlight = ((IN_FLIGHT.has(to) ? 1 : 0) - (IN_FLIGHT.has(from) ? 1 : 0)) as -1 | 0 | 1;
  const outcome = isTerminalTarget(from) ? undefined : outcomeKey(to);
  return outcome === undefined ? { inFlight } : { outcome, inFlight };
}
