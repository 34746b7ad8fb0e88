/**
 * The run's status messages with fixed wording (most are the reference's, word for word; "(ours)"
 * marks the ones it does not have), and the two built from a claim pass and an external check.
 * The reducer (run-machine.ts) sets them; the messages a maintenance window words from its times
 * stay beside the reducer's window step.
 */

// The reference's run status messages.
export const MSG_PAUSED_BY_OPERATOR = "operation run paused by operator";
export const MSG_RESUMED = "operation run resumed";
/** (ours) The two-person rule's approval. */
export const MSG_APPROVED = "operation run approved";
export const MSG_CANCELLED = "operation run cancelled";
export const MSG_COMPLETED = "operation run completed";
export const MSG_COMPLETED_WITH_FAILURES = "operation run completed with failed targets";
export const MSG_FAILED = "operation run failed";
export const MSG_NO_TARGETS = "operation run has no targets";
export const MSG_WAITING_FOR_PHASE_ADVANCE = "waiting for phase advance";
export const MSG_AUTO_ADVANCED = "advanced to next phase";
export const MSG_WAITING_FOR_QUOTA = "waiting for active targets quota";
/** (ours) The SKIPPED targets of a cancel: never started because of the cancel, or of the window. */
export const MSG_NOT_STARTED_CANCELLED = "not started: operation run cancelled";
export const MSG_NOT_STARTED_WINDOW_CLOSED = "not started: maintenance window closed";
/** The prefix of every invalid-lifecycle-transition message (the reference's wrapped sentinel error). */
export const INVALID_STATE_PREFIX = "operation run is not in a valid state for the requested operation";

/** The run's status message while a rack's external check waits for a person. */
export const externalCheckMessage = (e: { check: string; rackId: string; reason: string }): string =>
  `external check ${e.check} inconclusive on rack ${e.rackId}: ${e.reason}; look at the rack, then resume the run or report the rack failed`;

/**
 * The run status message after a claim pass, as the reference words it, for the shell to set
 * once it knows what it claimed: (2, 0) → "submitted 2 operation run targets"; (1, 1) →
 * "submitted 1 operation run target; 1 target waiting on rack conflicts"; (0, 3) → "3 targets
 * waiting on rack conflicts"; (0, 0) → "" (leave the message as it is).
 */
export function claimStatusMessage(submitted: number, blocked: number): string {
  const parts: string[] = [];
  if (submitted > 0) parts.push(`submitted ${submitted} operation run target${submitted === 1 ? "" : "s"}`);
  if (blocked > 0) parts.push(`${blocked} target${blocked === 1 ? "" : "s"} waiting on rack conflicts`);
  return parts.join("; ");
}
