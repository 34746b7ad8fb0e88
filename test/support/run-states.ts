/**
 * Runs in a given state for the use-case tables: each target's status is named, and the run's
 * counters and inFlight are the ones those statuses imply (as the store's transitions would have
 * left them), so a table row reads as the situation it tests:
 *
 *   runInState(id, { phases: [["COMPLETED", "FAILED"], ["PENDING"]], status: "RUNNING" })
 *
 * Each status gets the fields it carries in the store: CLAIMED a live lease, SUBMITTED a task id,
 * BLOCKED a retry time not yet due and one conflict attempt. `target` overrides them per target.
 */
import {
  isTerminalTarget,
  type OutcomeCounts,
  type Run,
  type RunConfig,
  type Target,
  type TargetStatus,
} from "../../src/domain/model.js";
import { CLAIM_LEASE_MS } from "../../src/domain/target-machine.js";
import { runWithTargets } from "./dynamodb-fixtures.js";
import { taskIdFor } from "./scripted-submitter.js";

/** The instant the states are built around; targets were created a little before. */
export const T0 = 1_700_000_100_000;

const COUNTER: Partial<Record<TargetStatus, keyof OutcomeCounts>> = {
  COMPLETED: "completed",
  FAILED: "failed",
  TERMINATED: "terminated",
  SKIPPED: "skipped",
};

export interface RunState {
  /** Per phase, the statuses of its targets in sequence order. */
  phases: TargetStatus[][];
  status?: Run["status"];
  reason?: Run["reason"];
  statusMessage?: string;
  currentPhaseIndex?: number;
  maxConcurrent?: number;
  config?: Partial<RunConfig>;
  /** Extra fields for the target at `index` (sequence order, all phases). */
  target?: (index: number, target: Target) => Partial<Target>;
}

export function runInState(id: string, state: RunState): { run: Run; targets: Target[] } {
  const { run, targets } = runWithTargets(id, {
    phaseSizes: state.phases.map((p) => p.length),
    maxConcurrent: state.maxConcurrent ?? 3,
    status: state.status ?? "RUNNING",
  });
  run.reason = state.reason ?? "NONE";
  run.statusMessage = state.statusMessage ?? "";
  run.currentPhaseIndex = state.currentPhaseIndex ?? 0;
  if (run.status !== "PENDING") run.startedAt = run.createdAt;
  run.config = { ...run.config, ...state.config };
  const statuses = state.phases.flat();
  const built = targets.map((target, index): Target => {
    const status = statuses[index] as TargetStatus;
    const withStatus: Target = { ...target, status, ...fieldsFor(status, target) };
    return { ...withStatus, ...state.target?.(index, withStatus) };
  });
  for (const t of built) {
    const counter = COUNTER[t.status];
    if (counter !== undefined) run.counters[t.phaseIndex]![counter] += 1;
    if (t.status === "CLAIMED" || t.status === "SUBMITTED") run.inFlight += 1;
  }
  return { run, targets: built };
}

function fieldsFor(status: TargetStatus, target: Target): Partial<Target> {
  switch (status) {
    case "CLAIMED":
      return { leaseExpiresAt: T0 + CLAIM_LEASE_MS, updatedAt: T0 };
    case "SUBMITTED":
      return { taskId: taskIdFor(target.id), message: "submitted", updatedAt: T0 };
    case "BLOCKED":
      return {
        message: "rack busy",
        retryAt: T0 + 60_000,
        conflictAttempts: 1,
        firstBlockedAt: T0,
        updatedAt: T0,
      };
    default:
      return isTerminalTarget(status) ? { message: status.toLowerCase(), updatedAt: T0 } : {};
  }
}
