/**
 * (ours) Late failures: a target that COMPLETED is reported FAILED afterwards
 * (ReportTargetFailure), when a health signal finds the rack broken after its flash: XID errors,
 * a link that flaps, a burn-in that fails hours later.
 *
 * The report, as one change of the run (`reportLateFailure`):
 *   target  COMPLETED → FAILED, message = the reason, failureReportedBy/At = who and when
 *   run     the target's phase: completed −1, failed +1; a new version (updatedAt), so the change
 *           and its TARGET_FAILURE_REPORTED history event are written together and exactly once
 * The gates count it like any failure: the next dispatch pass (the service wakes one) evaluates
 * them, so a report during a phase's soak (soak.ts) pauses the run before the next phase opens.
 * The run's status is not changed here: pausing is the gates' decision, in the dispatcher's order.
 *
 * Rules, in order:
 *   - the request: `reason` required (trimmed, at most 1024 characters, no control characters);
 *     exactly one of `target_id` and `rack_id`. Violations name the field (InvalidArgument);
 *   - the run exists (NotFound) and is not terminal: `…: <id> is in terminal state completed`
 *     (FailedPrecondition: a finished run's outcome is final; create a new run to redo racks);
 *   - the target exists in the run (NotFound `operation run target not found: …`);
 *   - a target already reported FAILED by an earlier report: nothing is written and the run is
 *     answered as it is (a retried report after a lost answer changes nothing);
 *   - any other status than COMPLETED: FailedPrecondition `target <id> (rack R) is failed: only a
 *     completed target can be reported failed`.
 */
import type { Actor } from "./actor.js";
import type { FieldViolation } from "./errors.js";
import { FailedPreconditionError } from "./errors.js";
import { type RunHistoryEvent, stampEvents } from "./history-event.js";
import { isTerminalRun, type Run, type Target } from "./model.js";
import { phaseName } from "./phases.js";
import { INVALID_STATE_PREFIX } from "./run-messages.js";
import { controlCharacterRule } from "./text.js";
import { isUuid } from "./uuid.js";

export const LATE_FAILURE_REASON_MAX = 1024;

/** The request as decoded: the run id, the target by id or by rack id, and the reason as sent. */
export interface LateFailureRequest {
  runId: string;
  targetId?: string;
  rackId?: string;
  reason: string;
}

/** The request's violations, each naming its field (the wire's names); [] when it is valid. */
export function checkLateFailureRequest(request: LateFailureRequest): FieldViolation[] {
  const violations: FieldViolation[] = [];
  const reason = request.reason.trim();
  if (reason === "") violations.push({ field: "reason", rule: "is required: why the target failed" });
  else if (reason.length > LATE_FAILURE_REASON_MAX) {
    violations.push({
      field: "reason",
      rule: `must be at most ${LATE_FAILURE_REASON_MAX} characters (got ${reason.length})`,
    });
  } else {
    const control = controlCharacterRule(reason);
    if (control !== undefined) violations.push({ field: "reason", rule: control });
  }
  const byTarget = request.targetId !== undefined && request.targetId !== "";
  const byRack = request.rackId !== undefined && request.rackId !== "";
  if (byTarget === byRack) {
    violations.push({
      field: "target_id",
      rule: byTarget
        ? "set either target_id or rack_id, not both"
        : "one of target_id and rack_id is required",
    });
  }
  if (byTarget && !isUuid(request.targetId as string)) {
    violations.push({ field: "target_id.id", rule: "must be a UUID" });
  }
  if (byRack && !isUuid(request.rackId as string))
    violations.push({ field: "rack_id.id", rule: "must be a UUID" });
  return violations;
}

/** What the report changes, or that an earlier report already did. */
export type LateFailureDecision =
  | { kind: "report"; run: Run; target: Target }
  | { kind: "already-reported" }
  | { kind: "refused"; error: FailedPreconditionError };

/**
 * The run and the target after the report, at `now` (the run's new version is
 * max(now, updatedAt + 1)); the caller writes both with `lateFailureEvent` in one conditional write.
 */
export function reportLateFailure(
  run: Run,
  target: Target,
  reason: string,
  actor: Actor | undefined,
  now: number,
): LateFailureDecision {
  if (isTerminalRun(run.status)) {
    return refused(`${INVALID_STATE_PREFIX}: ${run.id} is in terminal state ${run.status.toLowerCase()}`);
  }
  if (target.status === "FAILED" && target.failureReportedAt !== undefined)
    return { kind: "already-reported" };
  if (target.status !== "COMPLETED") {
    return refused(
      `target ${target.id} (rack ${rackName(target)}) is ${target.status.toLowerCase()}: only a completed target can be reported failed`,
    );
  }
  const updatedAt = Math.max(now, run.updatedAt + 1);
  const counters = run.counters.map((c, phase) =>
    phase === target.phaseIndex ? { ...c, completed: c.completed - 1, failed: c.failed + 1 } : c,
  );
  return {
    kind: "report",
    run: { ...run, counters, updatedAt },
    target: {
      ...target,
      status: "FAILED",
      message: reason.trim(),
      updatedAt,
      failureReportedAt: updatedAt,
      ...(actor === undefined ? {} : { failureReportedBy: actor }),
    },
  };
}

/** How texts name a target's rack: its external id when it has one. */
export function rackName(target: Pick<Target, "rackId" | "rackExternalId">): string {
  return target.rackExternalId ?? target.rackId;
}

function refused(message: string): LateFailureDecision {
  return { kind: "refused", error: new FailedPreconditionError(message) };
}

/**
 * The TARGET_FAILURE_REPORTED event of a late failure (late-failure.ts), at the run's new version:
 * "rack EXT-A03 (phase 1) reported failed: XID 79 on GPU 3", who reported it, and the target.
 * `after` is the run as the report leaves it, `target` the target as it leaves it.
 */
export function lateFailureEvent(after: Run, target: Target, actor?: Actor): RunHistoryEvent {
  return stampEvents(after, after.updatedAt, [
    {
      kind: "TARGET_FAILURE_REPORTED",
      message: `rack ${rackName(target)} (${phaseName(target.phaseIndex)}) reported failed: ${target.message}`,
      ...(actor === undefined ? {} : { actor }),
      detail: {
        type: "lateFailure",
        targetId: target.id,
        rackId: target.rackId,
        targetPhaseIndex: target.phaseIndex,
        reason: target.message,
      },
    },
  ])[0] as RunHistoryEvent;
}
