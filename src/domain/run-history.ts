/**
 * The run history: what a run write changed, as events, built by pure functions from the run as
 * read, the run as the reducer left it and the cause (`historyEvents`), or from the new run
 * (`createdEvent`). The shell writes them in the SAME conditional write as the run change they
 * record (RunStore.createRun / saveRun), so they are exactly once: a retried control or a
 * duplicated stream record finds nothing left to change and writes no run and no event; of two
 * racing passes only one run write, and so one set of events, commits.
 *
 * An event is identified by its run, the run version it was written with (`at`, the run's new
 * updatedAt, unique per run because every run write is conditional on the previous version) and
 * its position in that write (`seq`); `runEventId` spells that, and consumers dedupe on it.
 *
 * Which events one write yields, in this order:
 *   1. the operator's action: PAUSED, RESUMED, ADVANCED (with the expected phase), CANCELLED
 *      (with the reason), each with the actor;
 *   2. WINDOW_OPENED: the run was waiting for its maintenance window and is claiming now;
 *   3. STARTED: startedAt was set (PENDING → RUNNING, once);
 *   4. PHASE_OPENED: the run started (its first phase opens) or moved to a later phase;
 *   5. WINDOW_CLOSED: a claiming run is now outside its recurring windows, or end_time passed on
 *      a run that was claiming or waiting;
 *   6. what it paused for: PHASE_GATE_REACHED, GATE_TRIPPED (the verdict: gate, scope, counts),
 *      CONFLICT_TIMEOUT (the target), WINDOW_PAUSED (end_time passed with targets not started);
 *   6½. SOAK_STARTED (ours): the current phase is complete and its soak began (soak.ts);
 *   7. FINISHED: COMPLETED, COMPLETED_WITH_FAILURES or FAILED (a cancel is CANCELLED alone).
 * A reported late failure is TARGET_FAILURE_REPORTED (`lateFailureEvent`, late-failure.ts), with
 * the actor, in the write that records it; a retry or rollback run created for a run is RETRIED or
 * ROLLED_BACK on it (`followUpWrite`, follow-up-runs.ts).
 * A run created awaiting approval (the two-person rule, approval.ts) records CREATED then
 * APPROVAL_REQUESTED; its approval is APPROVED (the approver as actor, the creator in the detail;
 * both drafted in approval.ts). The events' shape and numbering are history-event.ts's.
 * A refused call on a run changes nothing and is recorded alone, as ACCESS_DENIED
 * (`accessDeniedEvent`), at a position no run write uses (DENIAL_SEQ_FIRST and on).
 * A write that only moves a status message ("submitted 2 operation run targets", "waiting for 1
 * target in flight") yields none.
 *
 * Example (phase indexes, counted from 0): a pass that auto-advances a RUNNING run from phase
 * index 0 to 1 yields [PHASE_OPENED(1)]; an operator's Advance at a phase gate yields [ADVANCED(0 →
 * 1, actor), PHASE_OPENED(1)]; the first claim of a run created before its start_time yields
 * [WINDOW_OPENED, STARTED, PHASE_OPENED(0)].
 *
 * The messages are for people and name phases counted from 1 (`phaseName`): index 0 opening is
 * "phase 1 opened: 4 targets", an Advance from index 0 is "advanced from phase 1 to phase 2"
 * (the run's own status message keeps the reference's zero-based "advanced to phase 1").
 *
 * Where a run stands against its window is judged from its status and the window at the time of
 * the write (`standing`), not from its message: a run created before start_time is waiting from
 * the moment it exists, so its first claim records the window opening.
 */
import type { Actor } from "./actor.js";
import { approvalRequestedDraft, approvedDraft } from "./approval.js";
import { formatRfc3339 } from "./calendar.js";
import { originText } from "./follow-up-runs.js";
import { evaluateGates } from "./gates.js";
import { type HistoryDraft, plural, type RunHistoryEvent, stampEvents } from "./history-event.js";
import { scheduleOf, windowState } from "./maintenance-window.js";
import { isTerminalRun, type Run } from "./model.js";
import { phaseName } from "./phases.js";
import type { RunEvent } from "./run-machine.js";
import { MSG_PAUSED_BY_OPERATOR, MSG_RESUMED } from "./run-messages.js";
import { phaseSoakMs } from "./soak.js";
import { phaseSize } from "./stats.js";

/**
 * The CREATED event of a new run: "operation run created: 15 targets in 3 phases", the plan's
 * sizes and seeds, and who created it.
 */
export function createdEvent(run: Run, actor?: Actor): RunHistoryEvent {
  return createdEvents(run, actor)[0] as RunHistoryEvent;
}

/**
 * The events of a new run: CREATED, and APPROVAL_REQUESTED when the two-person rule holds it
 * (`approval`: the rule's threshold and the plan's distinct racks).
 */
export function createdEvents(
  run: Run,
  actor?: Actor,
  approval?: { minRacks: number; racks: number },
): RunHistoryEvent[] {
  const targets = run.phaseSizes.reduce((n, size) => n + size, 0);
  const phases = run.phaseSizes.length;
  const requested: HistoryDraft[] = approval === undefined ? [] : [approvalRequestedDraft(run, approval)];
  return stampEvents(run, run.createdAt, [
    {
      kind: "CREATED",
      message: `operation run created: ${run.origin === undefined ? "" : `${originText(run.origin)}: `}${plural(targets, "target")} in ${plural(phases, "phase")}`,
      ...(actor === undefined ? {} : { actor }),
      detail: {
        type: "plan",
        targets,
        phaseSizes: [...run.phaseSizes],
        selectionSeed: run.config.selector.seed,
        orderingSeed: run.config.ordering.seed,
      },
    },
    ...requested,
  ]);
}

/** The first position of ACCESS_DENIED events; a run write records far fewer events than this. */
export const DENIAL_SEQ_FIRST = 50;
/** The last position `runEventId` can spell. */
export const DENIAL_SEQ_LAST = 99;

/**
 * A refused call on `run` as an event: the run as read (unchanged), `at` the time of the refusal,
 * `seq` from DENIAL_SEQ_FIRST (the store moves it on when another denial took the key).
 *   "ResumeOperationRun refused (PERMISSION_DENIED): auditor may not operate operation run; roles …"
 */
export function accessDeniedEvent(
  run: Run,
  at: number,
  seq: number,
  actor: Actor,
  denial: { rpc: string; code: "UNAUTHENTICATED" | "PERMISSION_DENIED"; reason: string },
): RunHistoryEvent {
  const [event] = stampEvents(run, at, [
    {
      kind: "ACCESS_DENIED",
      message: `${denial.rpc} refused (${denial.code}): ${denial.reason}`,
      actor,
      detail: { type: "denial", ...denial },
    },
  ]);
  return { ...(event as RunHistoryEvent), seq };
}

/**
 * The events of one run write: `before` as read, `after` as it will be saved (updatedAt = the new
 * version), `cause` the reducer's event, `now` the time the reducer judged by. Call it only for a
 * write the reducer asked for (`write: true`); the module comment lists what comes out.
 */
export function historyEvents(
  before: Run,
  after: Run,
  cause: RunEvent,
  now: number,
  actor?: Actor,
  /** APPROVED: the rule's threshold, the plan's racks and who created the run. */
  approval?: { minRacks: number; racks: number; requestedBy?: Actor },
): RunHistoryEvent[] {
  const drafts: HistoryDraft[] = [];
  const by = actor === undefined ? {} : { actor };
  switch (cause.type) {
    case "pause":
      drafts.push({ kind: "PAUSED", message: MSG_PAUSED_BY_OPERATOR, ...by });
      break;
    case "resume":
      drafts.push({ kind: "RESUMED", message: MSG_RESUMED, ...by });
      break;
    case "advance": {
      const moved = after.currentPhaseIndex !== before.currentPhaseIndex;
      const expected = cause.expectedPhaseIndex;
      drafts.push({
        kind: "ADVANCED",
        message: moved
          ? `advanced from ${phaseName(before.currentPhaseIndex)} to ${phaseName(after.currentPhaseIndex)}`
          : "advance: every target already has an outcome; the run is finished",
        ...by,
        detail: {
          type: "advance",
          fromPhaseIndex: before.currentPhaseIndex,
          toPhaseIndex: after.currentPhaseIndex,
          ...(expected !== undefined && expected > 0 ? { expectedPhaseIndex: expected } : {}),
        },
      });
      break;
    }
    case "cancel":
      drafts.push({
        kind: "CANCELLED",
        message: after.statusMessage,
        ...by,
        detail: { type: "cancel", reason: cause.reason.trim() },
      });
      break;
    case "approve":
      drafts.push(approvedDraft(actor, approval));
      break;
    case "evaluate":
      break;
    case "externalCheckInconclusive":
      drafts.push({
        kind: "EXTERNAL_CHECK_INCONCLUSIVE",
        message: after.statusMessage,
        detail: {
          type: "externalCheck",
          check: cause.check,
          targetId: cause.targetId,
          rackId: cause.rackId,
          reason: cause.reason,
        },
      });
      break;
  }
  drafts.push(...stateChanges(before, after, cause, now));
  return stampEvents(after, after.updatedAt, drafts);
}

/** Steps 2-7 of the module comment: what the state change itself says, whoever caused it. */
function stateChanges(before: Run, after: Run, cause: RunEvent, now: number): HistoryDraft[] {
  const drafts: HistoryDraft[] = [];
  const was = standing(before, before.updatedAt);
  const window = windowState(scheduleOf(after.config), now);

  if (was === "waiting" && isActive(after) && window.kind === "open") {
    const { closesAt } = window;
    drafts.push({
      kind: "WINDOW_OPENED",
      message: `maintenance window opened${closesAt === undefined ? "" : `: closes at ${formatRfc3339(closesAt)}`}`,
      detail: { type: "window", ...(closesAt === undefined ? {} : { closesAt }) },
    });
  }
  const started = before.startedAt === undefined && after.startedAt !== undefined;
  if (started) drafts.push({ kind: "STARTED", message: "operation run started" });
  if (started || after.currentPhaseIndex > before.currentPhaseIndex) {
    const phase = after.currentPhaseIndex;
    drafts.push({
      kind: "PHASE_OPENED",
      message: `${phaseName(phase)} opened: ${plural(phaseSize(after, phase), "target")}`,
    });
  }
  // A started run between its recurring windows (`before` only precedes a start, never follows one).
  if (before.status === "RUNNING" && was === "open" && isActive(after) && window.kind === "outside") {
    const { opensAt } = window;
    drafts.push({
      kind: "WINDOW_CLOSED",
      message: `maintenance window closed: ${opensAt === undefined ? "no window opens before end_time" : `next opens at ${formatRfc3339(opensAt)}`}`,
      detail: { type: "window", ...(opensAt === undefined ? {} : { opensAt }) },
    });
  }
  const closedForGood =
    window.kind === "closed" && (isActive(after) || after.reason === "MAINTENANCE_WINDOW");
  if ((was === "open" || was === "waiting") && closedForGood) {
    drafts.push({
      kind: "WINDOW_CLOSED",
      message: `maintenance window closed at ${formatRfc3339(window.closedAt)}`,
      detail: { type: "window", closedAt: window.closedAt },
    });
  }

  if (after.status === "PAUSED" && before.status !== "PAUSED") {
    const pausedFor = pauseEvent(after, cause);
    if (pausedFor !== undefined) drafts.push(pausedFor);
  }
  if (after.soakEndsAt !== undefined && before.soakEndsAt === undefined) {
    const phaseIndex = after.currentPhaseIndex;
    drafts.push({
      kind: "SOAK_STARTED",
      message: `${phaseName(phaseIndex)} complete: ${after.statusMessage}`,
      detail: {
        type: "soak",
        phaseIndex,
        minSoakMs: phaseSoakMs(after.config, phaseIndex),
        endsAt: after.soakEndsAt,
      },
    });
  }
  if (isTerminalRun(after.status) && after.status !== "CANCELLED") {
    drafts.push({ kind: "FINISHED", message: after.statusMessage });
  }
  return drafts;
}

/** The event of a pause the run machine decided (the operator's own pause is PAUSED, step 1). */
function pauseEvent(after: Run, cause: RunEvent): HistoryDraft | undefined {
  const message = after.statusMessage;
  switch (after.reason) {
    case "PHASE_GATE":
      return {
        kind: "PHASE_GATE_REACHED",
        message: `${phaseName(after.currentPhaseIndex)} complete: ${message}`,
      };
    case "SAFETY_GATE": {
      const verdict = evaluateGates(after);
      // The run machine paused for this very verdict; the counters have not moved since.
      if (!verdict.tripped) return { kind: "GATE_TRIPPED", message };
      return {
        kind: "GATE_TRIPPED",
        message,
        detail: {
          type: "gate",
          gateIndex: verdict.gateIndex,
          gate: verdict.gate,
          failed: verdict.failed,
          selected: verdict.selected,
          finished: verdict.finished,
        },
      };
    }
    case "CONFLICT_RETRY_TIMEOUT": {
      const timeout = cause.type === "evaluate" ? cause.conflictTimeout : undefined;
      return {
        kind: "CONFLICT_TIMEOUT",
        message,
        ...(timeout === undefined
          ? {}
          : {
              detail: { type: "conflict", targetId: timeout.targetId, blockedForMs: timeout.blockedForMs },
            }),
      };
    }
    case "MAINTENANCE_WINDOW": {
      const closedAt = scheduleOf(after.config).endTime;
      return {
        kind: "WINDOW_PAUSED",
        message,
        detail: { type: "window", ...(closedAt === undefined ? {} : { closedAt }) },
      };
    }
    case "OPERATOR_PAUSED":
    case "AWAITING_APPROVAL":
    case "EXTERNAL_CHECK_INCONCLUSIVE":
    case "NONE":
      return undefined;
  }
}

type Standing = "open" | "waiting" | "closing" | "inactive";

/**
 * Where a run stood against its maintenance window when it was written (`t`): a PENDING or
 * RUNNING run is `waiting` (before start_time, or outside its recurring windows), `closing`
 * (end_time passed, flashes still ending) or `open`; paused and ended runs are `inactive`.
 */
function standing(run: Run, t: number): Standing {
  if (!isActive(run)) return "inactive";
  const kind = windowState(scheduleOf(run.config), t).kind;
  if (kind === "before" || kind === "outside") return "waiting";
  return kind === "closed" ? "closing" : "open";
}

const isActive = (run: Run): boolean => run.status === "PENDING" || run.status === "RUNNING";
