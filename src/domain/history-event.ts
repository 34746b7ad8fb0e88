/**
 * A run history event: its kinds, what some kinds carry, its identity (`runEventId`), and how the
 * drafts of one run write become events (`stampEvents`). The events a write yields are built in
 * run-history.ts; a late failure's, a follow-up's and an approval's beside their rules
 * (late-failure.ts, follow-up-runs.ts, approval.ts).
 */
import type { Actor } from "./actor.js";
import type { Run, RunReason, RunStatus, SafetyGate } from "./model.js";
import { computeStats, type RunStats } from "./stats.js";

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

/**
 * What an event adds to the run's state; `stampEvents` numbers the drafts of one write and copies
 * the state in.
 */
export interface HistoryDraft {
  kind: RunEventKind;
  message: string;
  actor?: Actor;
  detail?: RunEventDetail;
}

/** "1 target", "2 targets". */
export const plural = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? "" : "s"}`;

/** Numbers the drafts and gives each the run's state after the write. */
export function stampEvents(run: Run, at: number, drafts: HistoryDraft[]): RunHistoryEvent[] {
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
