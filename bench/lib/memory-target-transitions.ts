/**
 * The in-memory RunStore's claims and target transitions (bench/lib/memory-run-store.ts holds the
 * runs and their history, bench/lib/memory-due-schedule.ts the due schedule): each method is the
 * store method of the same name after its call is counted, and does its whole work without an
 * await, so it is one atomic step like the adapter's conditional write or transaction
 * (src/adapters/dynamodb/target-transitions.ts), with the same outcomes in the same order of checks.
 */
import type {
  BatchClaimResult,
  BlockedUpdate,
  ClaimOutcome,
  TransitionOutcome,
} from "../../src/app/ports.js";
import { domainsTaken } from "../../src/domain/failure-domains.js";
import {
  isTerminalTarget,
  type OutcomeCounts,
  type OutcomeStatus,
  type PriorVersion,
  type Run,
  type Target,
} from "../../src/domain/model.js";
import type { MemoryDueSchedule } from "./memory-due-schedule.js";

const copy = <T>(value: T): T => structuredClone(value);

const inOrder = (a: Target, b: Target): number =>
  a.phaseIndex - b.phaseIndex || a.sequenceIndex - b.sequenceIndex;

const OUTCOME_FIELD: Record<OutcomeStatus, keyof OutcomeCounts> = {
  COMPLETED: "completed",
  FAILED: "failed",
  TERMINATED: "terminated",
  SKIPPED: "skipped",
};

/** claimTargets' limit: one transaction of 100 items holds 98 targets, the run and one spare. */
const MAX_BATCH_CLAIM = 98;

export const isActiveRun = (run: Run): boolean => run.status === "PENDING" || run.status === "RUNNING";
/** The run half of a claim's condition after it failed, in the adapter's order (whyRunRefused). */
const windowClosed = (run: Run, now: number): boolean => {
  const end = run.config.operation.firmware.endTime;
  return end !== undefined && end <= now;
};
const refusal = (run: Run, now: number): ClaimOutcome =>
  !isActiveRun(run) ? "run-not-active" : windowClosed(run, now) ? "window-closed" : "slots-full";

export class MemoryTargetTransitions {
  constructor(
    /** The store's runs, as stored: claims and outcomes move their counters in place. */
    private readonly runs: ReadonlyMap<string, Run>,
    /** The store's targets: runId → targetId → target. */
    private readonly targets: ReadonlyMap<string, ReadonlyMap<string, Target>>,
    private readonly schedule: MemoryDueSchedule,
  ) {}

  listQueuedTargets(
    runId: string,
    phaseIndex: number,
    pendingLimit: number,
  ): { held: Target[]; pending: Target[] } {
    const phase = [...(this.targets.get(runId)?.values() ?? [])]
      .filter((t) => t.phaseIndex === phaseIndex)
      .sort(inOrder);
    const held = phase.filter((t) => t.status === "BLOCKED" || t.status === "CLAIMED");
    const pending =
      pendingLimit > 0 ? phase.filter((t) => t.status === "PENDING").slice(0, pendingLimit) : [];
    return { held: held.map(copy), pending: pending.map(copy) };
  }

  claimTarget(expected: Target, leaseMs: number, now: number, until?: number): ClaimOutcome {
    if (until !== undefined && now >= until) return "window-closed";
    const target = this.claimable(expected, now);
    if (target === undefined) return "lost-race";
    const run = this.runs.get(expected.runId);
    if (run === undefined || !isActiveRun(run)) return "run-not-active";
    if (windowClosed(run, now)) return "window-closed";
    if (expected.status !== "CLAIMED") {
      if (run.inFlight >= run.config.maxConcurrentTargets) return "slots-full";
      if (!domainHasRoom(run, domainsTaken([expected]))) return "domain-full";
      run.inFlight += 1;
      moveDomains(run, domainsTaken([expected]), 1);
    }
    this.claim(target, leaseMs, now);
    this.schedule.mark(run.id);
    return "claimed";
  }

  claimTargets(expected: Target[], leaseMs: number, now: number, until?: number): BatchClaimResult {
    const nothing = (outcome: ClaimOutcome): BatchClaimResult => ({ outcome, claimed: [] });
    const first = expected[0];
    if (first === undefined) return { outcome: "claimed", claimed: [] };
    if (expected.length > MAX_BATCH_CLAIM) {
      throw new RangeError(`claimTargets takes at most ${MAX_BATCH_CLAIM} targets, got ${expected.length}`);
    }
    if (expected.some((t) => t.runId !== first.runId)) {
      throw new RangeError("claimTargets: targets of one run only");
    }
    if (new Set(expected.map((t) => t.id)).size !== expected.length) {
      throw new RangeError("claimTargets: a target appears twice");
    }
    if (until !== undefined && now >= until) return nothing("window-closed");
    // The adapter's order of checks: statuses that are never ready, then (when slots are needed)
    // the run and its limit as read, then the transaction's conditions.
    if (expected.some((t) => !["PENDING", "BLOCKED", "CLAIMED"].includes(t.status)))
      return nothing("lost-race");
    const run = this.runs.get(first.runId);
    const k = expected.filter((t) => t.status !== "CLAIMED").length;
    if (k > 0 && run === undefined) return nothing("run-not-active");
    if (run !== undefined && k > run.config.maxConcurrentTargets) {
      return nothing(refusal(run, now));
    }
    const targets = expected.map((t) => this.claimable(t, now));
    if (targets.some((t) => t === undefined)) return nothing("lost-race");
    if (run === undefined || !isActiveRun(run)) return nothing("run-not-active");
    if (windowClosed(run, now)) return nothing("window-closed");
    if (run.inFlight + k > run.config.maxConcurrentTargets) return nothing("slots-full");
    if (!domainHasRoom(run, domainsTaken(expected))) return nothing("domain-full");
    run.inFlight += k;
    moveDomains(run, domainsTaken(expected), 1);
    this.schedule.mark(run.id);
    const claimed = targets.filter((t) => t !== undefined).map((t) => copy(this.claim(t, leaseMs, now)));
    return { outcome: "claimed", claimed };
  }

  recordSubmitted(
    runId: string,
    targetId: string,
    taskId: string,
    now: number,
    message = "submitted",
  ): TransitionOutcome {
    const target = this.targets.get(runId)?.get(targetId);
    if (target === undefined) return "not-found";
    if (target.status === "SUBMITTED" && target.taskId === taskId) return "already-recorded";
    if (target.status !== "CLAIMED") return "lost-race";
    target.status = "SUBMITTED";
    target.taskId = taskId;
    target.message = message;
    target.updatedAt = now;
    delete target.leaseExpiresAt;
    return "recorded";
  }

  recordBlocked(runId: string, targetId: string, blocked: BlockedUpdate, now: number): TransitionOutcome {
    const target = this.targets.get(runId)?.get(targetId);
    if (target === undefined) return "not-found";
    const run = this.runs.get(runId);
    if (target.status !== "CLAIMED" || run === undefined) return "lost-race";
    target.status = "BLOCKED";
    target.message = blocked.message;
    target.retryAt = blocked.retryAt;
    target.conflictAttempts = blocked.conflictAttempts;
    target.firstBlockedAt = blocked.firstBlockedAt;
    target.updatedAt = now;
    delete target.leaseExpiresAt;
    run.inFlight -= 1;
    moveDomains(run, domainsTaken([{ ...target, status: "PENDING" }]), -1);
    this.schedule.mark(runId);
    return "recorded";
  }

  skipTargets(runId: string, targetIds: string[], message: string, now: number): number {
    return targetIds.filter((id) => this.recordOutcome(runId, id, "SKIPPED", message, now) === "recorded")
      .length;
  }

  restartConflictClock(runId: string, targetId: string, now: number): TransitionOutcome {
    const target = this.targets.get(runId)?.get(targetId);
    if (target === undefined) return "not-found";
    if (target.status !== "BLOCKED") return "lost-race";
    target.firstBlockedAt = now;
    target.updatedAt = now;
    return "recorded";
  }

  recordPriorVersions(runId: string, targetId: string, priors: PriorVersion[]): TransitionOutcome {
    const target = this.targets.get(runId)?.get(targetId);
    if (target === undefined) return "not-found";
    if (target.priorVersions !== undefined) return "already-recorded";
    target.priorVersions = copy(priors);
    return "recorded";
  }

  /**
   * The stored target, if it is still as the caller read it (status and updatedAt) and ready by
   * its stored state: a BLOCKED target once its retryAt is due, a CLAIMED one once its lease is
   * over (like a DynamoDB condition, a missing attribute never compares true).
   */
  private claimable(expected: Target, now: number): Target | undefined {
    const target = this.targets.get(expected.runId)?.get(expected.id);
    if (target === undefined) return undefined;
    if (target.status !== expected.status || target.updatedAt !== expected.updatedAt) return undefined;
    switch (target.status) {
      case "PENDING":
        return target;
      case "BLOCKED":
        return target.retryAt !== undefined && target.retryAt <= now ? target : undefined;
      case "CLAIMED":
        return target.leaseExpiresAt !== undefined && target.leaseExpiresAt <= now ? target : undefined;
      default:
        return undefined;
    }
  }

  /** Claims keep the message and the backoff state (attempts, firstBlockedAt, retryAt). */
  private claim(target: Target, leaseMs: number, now: number): Target {
    target.status = "CLAIMED";
    target.leaseExpiresAt = now + leaseMs;
    target.updatedAt = now;
    return target;
  }

  recordOutcome(
    runId: string,
    targetId: string,
    status: OutcomeStatus,
    message: string,
    now: number,
  ): TransitionOutcome {
    const target = this.targets.get(runId)?.get(targetId);
    if (target === undefined) return "not-found";
    if (isTerminalTarget(target.status)) return "already-recorded";
    const run = this.runs.get(runId);
    if (run === undefined) return "not-found";
    if (target.status === "CLAIMED" || target.status === "SUBMITTED") {
      run.inFlight -= 1;
      moveDomains(run, domainsTaken([{ ...target, status: "PENDING" }]), -1);
    }
    const counts = run.counters[target.phaseIndex];
    if (counts !== undefined) counts[OUTCOME_FIELD[status]] += 1;
    this.schedule.mark(runId);
    target.status = status;
    target.message = message;
    target.updatedAt = now;
    delete target.leaseExpiresAt;
    delete target.retryAt;
    return "recorded";
  }
}

/** The adapter's spread condition: every domain the claim takes stays within the cap. */
function domainHasRoom(run: Run, taken: ReadonlyMap<string, number>): boolean {
  const cap = run.config.failureDomainSpread?.maxInFlight;
  if (cap === undefined) return true;
  return [...taken].every(([domain, k]) => (run.domainInFlight?.[domain] ?? 0) + k <= cap);
}

/** Moves each domain's in-flight counter by `sign` × its count, as the adapter's writes do. */
function moveDomains(run: Run, taken: ReadonlyMap<string, number>, sign: 1 | -1): void {
  if (taken.size === 0) return;
  const counts = { ...run.domainInFlight };
  for (const [domain, k] of taken) counts[domain] = (counts[domain] ?? 0) + sign * k;
  run.domainInFlight = counts;
}
