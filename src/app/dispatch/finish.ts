/**
 * Finishing a claim: submit the claimed target's child task under its idempotency key and record
 * what came of it (SUBMITTED, BLOCKED on a rack conflict with its backoff, FAILED when rejected),
 * stop a task started for a target a cancel skipped meanwhile, and set the run's "submitted N …"
 * status message.
 */
import { conflictRetryDelayMs } from "../../domain/backoff.js";
import type { Run, Target } from "../../domain/model.js";
import { errorText } from "../observability.js";
import { targetIdempotencyKey } from "../ports.js";
import type { DispatchContext, PassWrites } from "./deps.js";

/** What came of one submission; `held`: the target as it is left BLOCKED (a rack conflict). */
export interface Submitted {
  kind: "submitted" | "blocked" | "failed";
  held?: Target;
}

export async function submitOne(
  ctx: DispatchContext,
  run: Run,
  target: Target,
  firstAttempt: boolean,
  writes: PassWrites,
): Promise<Submitted> {
  const { runs, submitter, clock } = ctx;
  const now = clock.now();
  const outcome = await submitter.submit(
    {
      idempotencyKey: targetIdempotencyKey(target.id),
      runId: run.id,
      targetId: target.id,
      // A target with a failure domain ends through a read of it (its domain counter moves too),
      // so its task carries no phase for the unread ending.
      ...(target.failureDomain === undefined ? { phaseIndex: target.phaseIndex } : {}),
      ...(firstAttempt ? { firstAttempt } : {}),
      rackId: target.rackId,
      ...(target.rackExternalId ? { rackExternalId: target.rackExternalId } : {}),
      componentsByType: target.componentsByType,
      ...(target.versions ? { versions: target.versions } : {}),
      ...(run.rule ? { rule: run.rule } : {}),
      template: run.config.operation.firmware,
    },
    now,
  );
  switch (outcome.kind) {
    case "submitted": {
      const recorded = await runs.recordSubmitted(run.id, target.id, outcome.taskId, clock.now());
      if (recorded === "lost-race") await afterLostSubmit(ctx, run.id, target.id, outcome.taskId);
      return { kind: "submitted" };
    }
    case "conflict": {
      // Attempts and the first-blocked time survive re-claims, so the backoff really grows.
      const attempts = target.conflictAttempts + 1;
      const delay = conflictRetryDelayMs(run.config.conflictRetry, attempts);
      const blocked = {
        message: outcome.message,
        retryAt: now + delay,
        conflictAttempts: attempts,
        firstBlockedAt: target.firstBlockedAt ?? now,
        ...(target.failureDomain === undefined ? {} : { failureDomain: target.failureDomain }),
      };
      const recorded = await runs.recordBlocked(run.id, target.id, blocked, now);
      if (recorded !== "recorded") return { kind: "blocked" };
      writes.marks += 1;
      return { kind: "blocked", held: { ...target, ...blocked, status: "BLOCKED", updatedAt: now } };
    }
    case "rejected": {
      const recorded = await runs.recordOutcome(run.id, target.id, "FAILED", outcome.message, clock.now());
      if (recorded === "recorded") writes.marks += 1;
      return { kind: "failed" };
    }
  }
}

/**
 * recordSubmitted lost: the task already ended and recorded its outcome (fine), or a cancel
 * skipped the still-CLAIMED target while we were submitting. In the second case the task we just
 * started belongs to a cancelled run: stop it.
 */
async function afterLostSubmit(
  ctx: DispatchContext,
  runId: string,
  targetId: string,
  taskId: string,
): Promise<void> {
  const target = await ctx.runs.getTarget(runId, targetId);
  const endedWithoutTask = target?.status === "SKIPPED" || target?.status === "TERMINATED";
  if (endedWithoutTask && target?.taskId === undefined) {
    await ctx.submitter
      .cancel(taskId, "operation run target was skipped before its task was recorded")
      .catch((error: unknown) =>
        ctx.logger.warn("could not stop a task started for a skipped target", {
          runId,
          targetId,
          taskId,
          error: errorText(error),
        }),
      );
  }
}

/**
 * The reference sets "submitted N …" after a claim pass; only while the run is still running.
 * First try: the run as this pass last saw it (claims and outcomes never move `updatedAt`, so
 * unless a control or another pass wrote since, that write succeeds without a read); 'stale' →
 * re-read and check again.
 */
export async function setStatusMessage(
  ctx: DispatchContext,
  known: Run,
  message: string,
  writes: PassWrites,
): Promise<void> {
  const { runs, clock } = ctx;
  let run: Run | undefined = known;
  for (let attempt = 0; attempt < 3; attempt++) {
    if (attempt > 0) {
      // Read without its schedule: another writer moved it, so the pass leaves the schedule due.
      writes.unknown = true;
      run = await runs.getRun(known.id);
    }
    if (run === undefined || run.status !== "RUNNING" || run.statusMessage === message) return;
    const now = clock.now();
    const saved = await runs.saveRun(
      { ...run, statusMessage: message, updatedAt: Math.max(now, run.updatedAt + 1) },
      run.updatedAt,
    );
    if (saved === "saved") writes.marks += 1;
    if (saved !== "stale") return;
  }
}
