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
 * A reported late failure is TARGET_FAILURE_REPORTED (`lateFailureEvent`), with the actor, in the
 * write that records it.
 * A run created awaiting approval (the two-person rule, approval.ts) records CREATED then
 * APPROVAL_REQUESTED; its approval is APPROVED (the approver as actor, the creator in the detail).
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
import { evaluateGates } from "./gates.js";
import { rackName } from "./late-failure.js";
import { formatRfc3339, scheduleOf, windowState } from "./maintenance-window.js";
import {
  type FollowUp,
  isTerminalRun,
  type Run,
  type RunOrigin,
  type RunReason,
  type RunStats,
  type RunStatus,
  type SafetyGate,
  type Target,
} from "./model.js";
import { phaseName } from "./phases.js";
import { MSG_APPROVED, MSG_PAUSED_BY_OPERATOR, MSG_RESUMED, type RunEvent } from "./run-machine.js";
import { phaseSoakMs } from "./soak.js";
import { computeStats, phaseSize } from "./stats.js";

export const RUN_EVENT_KINDS = [
  "CREATED",
  "STARTED",
  "PHASE_OPENED",
  "PHASE_GATE_REACHED",
  "GATE_TRIPPED",
  "PAUSED",
  "RESUMED",
  "ADVANCED",
  "CANCELLED",
  "CONFLICT_TIMEOUT",
  "WINDOW_OPENED",
  "WINDOW_CLOSED",
  "WINDOW_PAUSED",
  "FINISHED",
  /** (ours) A retry run of this run was created (`followUp` names it). */
  "RETRIED",
  /** (ours) A rollback run of this run was created. */
  "ROLLED_BACK",
  "SOAK_STARTED",
  "TARGET_FAILURE_REPORTED",
  "APPROVAL_REQUESTED",
  "APPROVED",
  "ACCESS_DENIED",
  /** (ours) PAUSED / EXTERNAL_CHECK_INCONCLUSIVE: a rack's external health check was inconclusive. */
  "EXTERNAL_CHECK_INCONCLUSIVE",
] as const;
export type RunEventKind = (typeof RUN_EVENT_KINDS)[number];

/** What some kinds carry besides the run's state. */
export type RunEventDetail =
  /** CREATED: the frozen plan and both seeds (the plan is reproducible from them). */
  | { type: "plan"; targets: number; phaseSizes: number[]; selectionSeed: string; orderingSeed: string }
  /** GATE_TRIPPED: the verdict. `gate` carries its kind, scope and threshold. */
  | {
      type: "gate";
      gateIndex: number;
      gate: SafetyGate;
      failed: number;
      selected: number;
      /** Ran to an end in the scope; absent in verdicts recorded before it was kept. */
      finished?: number;
    }
  /** ADVANCED: from and to (equal when every target already had an outcome and the run finished). */
  | { type: "advance"; fromPhaseIndex: number; toPhaseIndex: number; expectedPhaseIndex?: number }
  /** CANCELLED: the operator's reason, trimmed ("" when none was given). */
  | { type: "cancel"; reason: string }
  /** CONFLICT_TIMEOUT: the target that timed out on rack conflicts, and for how long it was blocked. */
  | { type: "conflict"; targetId: string; blockedForMs: number }
  /**
   * WINDOW_OPENED: when it closes again (absent: never). WINDOW_CLOSED: when the next opens
   * (recurring windows; absent: none before end_time), or `closedAt` = end_time when it closed for
   * good. WINDOW_PAUSED: `closedAt`.
   */
  | { type: "window"; closesAt?: number; opensAt?: number; closedAt?: number }
  /** RETRIED, ROLLED_BACK: the run created, and its planned targets. */
  | { type: "followUp"; runId: string; targets: number }
  /** SOAK_STARTED: the soaking phase, its soak and when the soak ends. */
  | { type: "soak"; phaseIndex: number; minSoakMs: number; endsAt: number }
  /** TARGET_FAILURE_REPORTED: the COMPLETED target reported FAILED afterwards, and why. */
  | { type: "lateFailure"; targetId: string; rackId: string; targetPhaseIndex: number; reason: string }
  /** APPROVAL_REQUESTED and APPROVED: the rule and the plan's racks; APPROVED: who created the run. */
  | { type: "approval"; minRacks: number; racks: number; requestedBy?: Actor }
  /** ACCESS_DENIED: the refused RPC (by name), the status the caller got and its message. */
  | { type: "denial"; rpc: string; code: "UNAUTHENTICATED" | "PERMISSION_DENIED"; reason: string }
  /** EXTERNAL_CHECK_INCONCLUSIVE: the check, the rack's target and what the check said. */
  | { type: "externalCheck"; check: string; targetId: string; rackId: string; reason: string };

export interface RunHistoryEvent {
  runId: string;
  /** The run version written with the change (its new updatedAt; createdAt for CREATED). */
  at: number;
  /** Position among the events of that write: 0, 1, … */
  seq: number;
  kind: RunEventKind;
  /** The run's name, so a consumer of the published event needs no read. */
  runName: string;
  /** The run's state after the write. */
  status: RunStatus;
  reason: RunReason;
  /** What happened, for people: phases named counted from 1 ("phase 1 opened: 4 targets"). */
  message: string;
  /** The run's current phase, counted from 0 as on the wire. */
  phaseIndex: number;
  totalPhases: number;
  /** The run's stats after the write, as GetOperationRun computes them. */
  stats: RunStats;
  /** Present on operator actions (CREATED, PAUSED, RESUMED, ADVANCED, CANCELLED, APPROVED) and ACCESS_DENIED. */
  actor?: Actor;
  detail?: RunEventDetail;
}

/** `<runId>/<at, 15 digits>.<seq, 2 digits>`: stable, unique, and sorts like the history. */
export function runEventId(event: Pick<RunHistoryEvent, "runId" | "at" | "seq">): string {
  return `${event.runId}/${String(event.at).padStart(15, "0")}.${String(event.seq).padStart(2, "0")}`;
}

/** What the event adds to the run's state; `historyEvents` numbers them and copies the state in. */
interface Draft {
  kind: RunEventKind;
  message: string;
  actor?: Actor;
  detail?: RunEventDetail;
}

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
  const requested: Draft[] =
    approval === undefined
      ? []
      : [
          {
            kind: "APPROVAL_REQUESTED",
            message: run.statusMessage,
            detail: { type: "approval", minRacks: approval.minRacks, racks: approval.racks },
          },
        ];
  return stamp(run, run.createdAt, [
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
  const [event] = stamp(run, at, [
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
 * A retry or rollback run being created for `source` (a finished run): `source` as it will be
 * written with it (updatedAt = its new version, `followUps` with the new run appended) and the
 * event that records it there, "retried by run <id>: 12 targets" (RETRIED or ROLLED_BACK), with
 * who asked. The create commits both with the new run, or none of them.
 */
export function followUpWrite(
  source: Run,
  followUp: FollowUp,
  targets: number,
  now: number,
  actor?: Actor,
): { run: Run; event: RunHistoryEvent } {
  const run: Run = {
    ...source,
    followUps: [...(source.followUps ?? []), followUp],
    updatedAt: Math.max(now, source.updatedAt + 1),
  };
  const verb = followUp.kind === "retry" ? "retried" : "rolled back";
  const [event] = stamp(run, run.updatedAt, [
    {
      kind: followUp.kind === "retry" ? "RETRIED" : "ROLLED_BACK",
      message: `${verb} by run ${followUp.runId}: ${plural(targets, "target")}`,
      ...(actor === undefined ? {} : { actor }),
      detail: { type: "followUp", runId: followUp.runId, targets },
    },
  ]);
  return { run, event: event as RunHistoryEvent };
}

/** What the CREATED event of a retry or rollback run says first: "retry of run <id>". */
export function originText(origin: RunOrigin): string {
  return `${origin.kind === "retry" ? "retry" : "rollback"} of run ${origin.runId}`;
}

/**
 * The TARGET_FAILURE_REPORTED event of a late failure (late-failure.ts), at the run's new version:
 * "rack EXT-A03 (phase 1) reported failed: XID 79 on GPU 3", who reported it, and the target.
 * `after` is the run as the report leaves it, `target` the target as it leaves it.
 */
export function lateFailureEvent(after: Run, target: Target, actor?: Actor): RunHistoryEvent {
  return stamp(after, after.updatedAt, [
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
  const drafts: Draft[] = [];
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
      drafts.push({
        kind: "APPROVED",
        message:
          actor === undefined || actor.name === ""
            ? MSG_APPROVED
            : `${MSG_APPROVED} by ${actor.name}${approval?.requestedBy?.name ? ` (created by ${approval.requestedBy.name})` : ""}`,
        ...by,
        ...(approval === undefined ? {} : { detail: { type: "approval", ...approval } }),
      });
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
  return stamp(after, after.updatedAt, drafts);
}

/** Steps 2-7 of the module comment: what the state change itself says, whoever caused it. */
function stateChanges(before: Run, after: Run, cause: RunEvent, now: number): Draft[] {
  const drafts: Draft[] = [];
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
function pauseEvent(after: Run, cause: RunEvent): Draft | undefined {
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

const plural = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? "" : "s"}`;

/** Numbers the drafts and gives each the run's state after the write. */
function stamp(run: Run, at: number, drafts: Draft[]): RunHistoryEvent[] {
  return drafts.map((draft, seq) => ({
    runId: run.id,
    at,
    seq,
    kind: draft.kind,
    runName: run.name,
    status: run.status,
    reason: run.reason,
    message: draft.message,
    phaseIndex: run.currentPhaseIndex,
    totalPhases: run.phaseSizes.length,
    stats: computeStats(run),
    ...(draft.actor === undefined ? {} : { actor: draft.actor }),
    ...(draft.detail === undefined ? {} : { detail: draft.detail }),
  }));
}
