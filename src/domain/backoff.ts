/**
 * Rack-conflict backoff and the conflict retry timeout.
 *
 * A claimed target whose rack is busy (another hardware task holds the rack lock) goes BLOCKED and
 * is retried later. Here, unlike the reference, the backoff really grows: `conflictAttempts` and
 * `firstBlockedAt` survive re-claims (the reference clears its retry state on every claim, so its
 * delay never passes the initial value and its blocked-since clock restarts on every retry).
 *
 * - Delay for the n-th block (n counts blocks including this one, n >= 1):
 *   `min(initial * 2^(n-1), max)`. With the defaults 30 s / 5 min:
 *   n=1 → 30s, 2 → 1m0s, 3 → 2m0s, 4 → 4m0s, 5 → 5m0s (capped), 1000 → 5m0s.
 * - Timeout: a BLOCKED target whose first block is at least `retry_timeout` ago pauses the run with
 *   CONFLICT_RETRY_TIMEOUT (`>=`, as the reference compares). Measured from the first block, so
 *   re-claims in between do not restart the clock: blocked at 10:00, re-claimed 10:00:30, blocked
 *   again 10:00:31 … with a 1 h timeout the run pauses at 11:00, not at 11:00:31.
 */

import { formatGoDuration } from "./duration.js";
import type { ConflictRetryPolicy, Run, Target } from "./model.js";

/**
 * The delay before the `attempts`-th block may be retried. Overflow-safe: 2^(n-1) becomes Infinity
 * for huge n, which the cap turns back into `max`. Attempts below 1 are treated as 1.
 * Example (30 s / 5 min): attempts 3 → 120_000.
 */
export function conflictRetryDelayMs(policy: ConflictRetryPolicy, attempts: number): number {
  const exponent = Math.max(0, attempts - 1);
  const delay = policy.initialRetryDelayMs * 2 ** exponent;
  return Math.min(delay, policy.maxRetryDelayMs);
}

/**
 * Whether a target has been blocked by rack conflicts for at least the retry timeout, counted from
 * its first block. Only BLOCKED targets time out: a re-claimed target is being retried right now.
 * Example (1 h timeout): firstBlockedAt 0, now 3_600_000, status BLOCKED → true; now 3_599_999 → false.
 */
export function conflictTimedOut(target: Target, policy: ConflictRetryPolicy, now: number): boolean {
  return (
    target.status === "BLOCKED" &&
    target.firstBlockedAt !== undefined &&
    now - target.firstBlockedAt >= policy.retryTimeoutMs
  );
}

/** What the dispatcher hands the run reducer when a conflict timed out (`evaluate.conflictTimeout`). */
export interface ConflictTimeout {
  targetId: string;
  blockedForMs: number;
}

/**
 * The first timed-out target of the run's current phase, in the order given (pass phase-then-
 * sequence order to match the reference's choice), or undefined. Targets of other phases are
 * ignored, as in the reference.
 */
export function findConflictTimeout(
  run: Run,
  targets: readonly Target[],
  now: number,
): ConflictTimeout | undefined {
  const policy = run.config.conflictRetry;
  const target = targets.find(
    (t) => t.phaseIndex === run.currentPhaseIndex && conflictTimedOut(t, policy, now),
  );
  if (target === undefined) return undefined;
  // conflictTimedOut guarantees firstBlockedAt is set.
  return { targetId: target.id, blockedForMs: now - (target.firstBlockedAt as number) };
}

/**
 * The run's pause message. The reference prints the configured timeout, not the time the target
 * has actually been blocked: `target <id> blocked by rack conflict for 1h0m0s`.
 */
export function conflictTimeoutMessage(targetId: string, policy: ConflictRetryPolicy): string {
  return `target ${targetId} blocked by rack conflict for ${formatGoDuration(policy.retryTimeoutMs)}`;
}
