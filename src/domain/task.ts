/** Child tasks: one rack, one operation. */
import type { OperationRule } from "./model.js";

export const TASK_STATUSES = ["PENDING", "RUNNING", "COMPLETED", "FAILED", "TERMINATED", "WAITING"] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
export const TERMINAL_TASK_STATUSES: ReadonlySet<TaskStatus> = new Set(["COMPLETED", "FAILED", "TERMINATED"]);

export interface Task {
  id: string;
  /** "UpgradeFirmware". */
  operation: string;
  rackId: string;
  /**
   * The rack's external id, frozen when the task is made (from the run's target or the inventory),
   * so listings show it without reading the inventory; "" if the rack had none then. Absent only on
   * tasks made before it was frozen (the task service looks those up in the inventory).
   */
  rackExternalId?: string;
  componentIds: string[];
  description: string;
  executorType: "STEP_FUNCTIONS";
  /** The Step Functions execution ARN. */
  executionId: string;
  status: TaskStatus;
  message: string;
  queueExpiresAt?: number;
  /**
   * A plain task's maintenance window (its request's start_time and end_time): WAITING until
   * `startTime`; FAILED if not started by `endTime`. Run children carry neither: the run's window
   * bounds the claim, and a child claimed in time runs to its end.
   */
  startTime?: number;
  endTime?: number;
  createdAt: number;
  updatedAt: number;
  startedAt?: number;
  finishedAt?: number;
  /** The rule the task runs: the pinned rule's id, else DEFAULT_RULE_ID. */
  appliedRuleId?: string;
  /** The pinned rule as frozen (absent: the built-in default); not on the wire. */
  rule?: OperationRule;
  /** Versioned JSON document with per-component progress (see the README's BMC protocol section). */
  report: string;
  /** `operation-run-target:<targetId>` for run children; a retried submission finds this task. */
  idempotencyKey?: string;
  runId?: string;
  targetId?: string;
  /** A run child's target phase, frozen at submission: its outcome moves that phase's counters. */
  targetPhaseIndex?: number;
  /**
   * An ending decided from outside the execution (a cancel, a stopped execution), stored on the
   * task before its command sets are closed and until the task is terminal. Whoever records the
   * task's outcome from then on (the canceller, or a step of the execution that found its sets
   * closed) records this status and message: the first ending decided is the one the task, its
   * target and the run's gates see. Not on the wire.
   */
  ending?: TaskEnding;
}

export interface TaskEnding {
  status: "COMPLETED" | "FAILED" | "TERMINATED";
  /** Absent: one made from the task as folded at its end (a completion message), by its recorder. */
  message?: string;
  /** When it was decided. */
  at: number;
}
