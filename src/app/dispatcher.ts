/**
 * The dispatcher: one pass per runnable run, in the reference's decision order (finish, conflict
 * timeout, safety gates, phase boundary, claim; see `reduceRun`), then the claim effect.
 *
 * Two triggers drive the same `dispatchRun(runId)`: the periodic `tick()` (every active run, found
 * through the sparse index of PENDING/RUNNING runs, so cost grows with active runs only) and the
 * stream wake-up (stream-evaluator.ts), which refills a freed slot as soon as a target ends.
 * Passes for one run overlap freely (two ticks, a tick and a wake-up, several Lambdas): nothing
 * here reads, decides and then writes unconditionally.
 *
 * ## The claim, as a timeline (one target T, run R with max_concurrent_targets 3)
 *
 *   pass  listQueuedTargets(R, phase)          T PENDING@100
 *   pass  claimTarget(T@100)  ── ONE transaction ──────────────────────────────────────────────
 *           T: PENDING@100 → CLAIMED, lease now+30 s           (fails → 'lost-race': skip T)
 *           R: status ∈ {PENDING,RUNNING} ∧ inFlight < 3 → +1  (fails → 'slots-full' / 'run-not-active')
 *              ∧ now < R's end_time                            (fails → 'window-closed': stop)
 *         ─────────────────────────────────────────────────────────────────────────────────────
 *         `now` is read from the clock right before each claim is sent, and a claim in a recurring
 *         window also carries the window's close (`until`): a pass that read the run while its
 *         window was open cannot claim after the window closed.
 *         (a pass makes this claim for ALL its ready targets up to the free slots at once with
 *          claimTargets: one Update per target + R: inFlight += k; all or nothing; on 'lost-race'
 *          or 'slots-full' it claims them one by one as above)
 *   pass  submitter.submit(key "operation-run-target:T")      idempotent: a retry finds the task
 *   pass  recordSubmitted(T, taskId)  CLAIMED → SUBMITTED     (slot stays taken)
 *     or  recordBlocked(T, backoff)   CLAIMED → BLOCKED, R.inFlight −1   (rack conflict)
 *     or  recordOutcome(T, FAILED)    CLAIMED → FAILED,  R.inFlight −1, R.c<phase>_failed +1
 *   task  recordOutcome(T, COMPLETED) SUBMITTED → COMPLETED, R.inFlight −1, counter +1
 *         └─ the stream record of that transition wakes dispatchRun(R): the slot refills
 *
 * ## Crashes and leases
 * A pass that dies after the claim leaves T CLAIMED with its slot taken (inFlight counts CLAIMED
 * by status, not by lease). Once the lease runs out, T is ready again and the next pass re-claims it
 * IN PLACE (CLAIMED → CLAIMED takes no new slot) and submits again under the same idempotency key:
 * the task service returns the task the dead pass started, if any, so a rack is never flashed
 * twice. A pass that dies after submit but before recordSubmitted is the same case. A child task
 * that ends while its target is still CLAIMED records its outcome anyway (CLAIMED → terminal), and
 * the late recordSubmitted is then a harmless 'lost-race'.
 */

import { conflictRetryDelayMs, findConflictTimeout } from "../domain/backoff.js";
import type { Run, Target } from "../domain/model.js";
import { isTerminalRun } from "../domain/model.js";
import { historyEvents } from "../domain/run-history.js";
import {
  claimStatusMessage,
  freeSlots,
  type RunEffect,
  type RunEvent,
  reduceRun,
} from "../domain/run-machine.js";
import { CLAIM_LEASE_MS, isActive, isReady, readyInOrder } from "../domain/target-machine.js";
import { errorText, type Logger, type Metrics, noopMetrics, pickLogger } from "./observability.js";
import type { Clock, RunStore } from "./ports.js";
import { type ChildTaskSubmitter, type RunWaker, targetIdempotencyKey } from "./ports.js";

// ---------------------------------------------------------------------------------------------
// The dispatcher

export interface DispatcherDeps {
  runs: RunStore;
  submitter: ChildTaskSubmitter;
  clock: Clock;
  logger?: Logger;
  /** A line sink instead of `logger` (the local stack's log). */
  log?: (line: string) => void;
  metrics?: Metrics;
  /** Runs dispatched at once by `tick()` (default 16). */
  tickParallelism?: number;
  /** Submissions in flight at once within one run's pass (default 10). */
  submitParallelism?: number;
  /** Claim lease (default the reference's 30 s); tests shorten it. */
  leaseMs?: number;
}

/** What one pass did for one run; `decision` names the branch the run reducer took. */
export interface PassResult {
  runId: string;
  decision: "not-found" | "inactive" | "finished" | "paused" | "claimed" | "contended";
  /** The run's status after the pass's own write (or as read when it wrote nothing). */
  status?: Run["status"];
  submitted: number;
  blocked: number;
  failed: number;
}

export interface TickResult {
  runs: number;
  failed: number;
  submitted: number;
}

export interface Dispatcher {
  /**
   * One pass for one run. Safe to run concurrently with any other pass (in this process they are
   * coalesced, see createDispatcher). Throws only on I/O errors.
   */
  dispatchRun(runId: string): Promise<PassResult>;
  /** One pass for every active run; per-run failures are logged and counted, never thrown. */
  tick(): Promise<TickResult>;
}

/** saveRun 'stale' means another pass or a control wrote first: re-read and decide again. */
const MAX_STALE_RETRIES = 5;
/** Targets per claimTargets call: one transaction holds at most 100 items, the run item included. */
const MAX_BATCH_CLAIM = 98;
/** Runs whose phase a dispatcher remembers (readRunAndQueue); past it, it forgets them all. */
const SEEN_RUNS_LIMIT = 10_000;

export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const { runs, submitter, clock } = deps;
  const logger = pickLogger(deps);
  const metrics = deps.metrics ?? noopMetrics;
  const leaseMs = deps.leaseMs ?? CLAIM_LEASE_MS;
  const submitParallelism = deps.submitParallelism ?? 10;
  const tickParallelism = deps.tickParallelism ?? 16;

  /**
   * Passes for one run within this process are coalesced: while one runs, every further call
   * shares ONE queued pass that starts when it ends (and so sees whatever the callers saw). A tick
   * and a burst of wake-ups thus cost two passes, not one each racing for the same targets.
   * Different processes (Lambdas) still overlap, which the conditional writes make safe.
   */
  const queue = new Map<string, { queued?: Promise<PassResult>; last: Promise<unknown>; woken?: boolean }>();
  const settle = () => undefined;
  /** Per active run this process dispatched: its phase and limit as last read (readRunAndQueue). */
  const seenRuns = new Map<string, { phaseIndex: number; maxConcurrent: number }>();

  /** `woken`: not a tick's pass (a wake-up, a control): a slot has likely just freed. */
  function queuePass(runId: string, woken: boolean): Promise<PassResult> {
    const slot = queue.get(runId) ?? { last: Promise.resolve() };
    if (woken) slot.woken = true;
    if (slot.queued !== undefined) return slot.queued;
    const next: Promise<PassResult> = slot.last.then(settle, settle).then(() => {
      const speculate = slot.woken === true;
      slot.queued = undefined;
      slot.woken = undefined;
      return timedPass(runId, speculate);
    });
    slot.queued = next;
    const last: Promise<unknown> = next.then(settle, settle).then(() => {
      if (slot.last === last) queue.delete(runId);
    });
    slot.last = last;
    queue.set(runId, slot);
    return next;
  }

  const dispatchRun = (runId: string): Promise<PassResult> => queuePass(runId, true);

  async function timedPass(runId: string, speculate: boolean): Promise<PassResult> {
    const started = clock.now();
    try {
      return await pass(runId, speculate);
    } finally {
      metrics.add("DispatchLatencyMs", Math.max(0, clock.now() - started));
      metrics.flush();
    }
  }

  async function pass(runId: string, speculate: boolean): Promise<PassResult> {
    const result: PassResult = { runId, decision: "contended", submitted: 0, blocked: 0, failed: 0 };
    for (let attempt = 0; attempt <= MAX_STALE_RETRIES; attempt++) {
      const { run, queue } = await readRunAndQueue(runId, speculate);
      if (run === undefined) return { ...result, decision: "not-found" };
      if (run.status !== "PENDING" && run.status !== "RUNNING") {
        return { ...result, decision: "inactive", status: run.status };
      }
      const now = clock.now();
      const phase = run.currentPhaseIndex;
      const blocked = queue.held.filter((t) => t.status === "BLOCKED");
      const readyNow = readyInOrder(queue, now);
      const conflictTimeout = findConflictTimeout(run, blocked, now);
      const expiredClaims = queue.held.filter((t) => t.status === "CLAIMED" && !isActive(t, now)).length;
      const event: RunEvent = {
        type: "evaluate",
        ...(conflictTimeout === undefined ? {} : { conflictTimeout }),
        ...(expiredClaims === 0 ? {} : { expiredClaims }),
      };
      const reduced = reduceRun(run, event, now);
      // evaluate never refuses a PENDING or RUNNING run; a refusal here would be corrupted data.
      if (!reduced.ok) throw reduced.error;
      let current = reduced.run;
      if (reduced.write) {
        current = { ...current, updatedAt: Math.max(now, run.updatedAt + 1) };
        // The history events ride with the write: of passes racing on one version, only the one
        // whose write commits records "phase opened" (or whatever it decided).
        const saved = await runs.saveRun(current, run.updatedAt, historyEvents(run, current, event, now));
        if (saved === "not-found") return { ...result, decision: "not-found" };
        if (saved === "stale") continue;
        if (current.reason === "SAFETY_GATE") metrics.add("GateTrips", 1);
        if (current.status === "PAUSED" || isTerminalRun(current.status)) {
          logger.info("operation run state changed", {
            runId,
            status: current.status,
            reason: current.reason,
            statusMessage: current.statusMessage,
          });
        }
      }
      if (isTerminalRun(current.status)) return { ...result, decision: "finished", status: current.status };
      if (current.status === "PAUSED") return { ...result, decision: "paused", status: current.status };
      const claim = reduced.effects.find(
        (e): e is Extract<RunEffect, { type: "claim" }> => e.type === "claim",
      );
      if (claim === undefined) return { ...result, decision: "claimed", status: current.status };
      const ready = claim.phaseIndex === phase ? { now, targets: readyNow } : undefined;
      const done = await claimAndSubmit(current, claim, blocked, ready);
      return { ...result, ...done, decision: "claimed", status: current.status };
    }
    logger.warn("dispatch pass gave up after repeated concurrent writes", { runId });
    return result;
  }

  /**
   * The run and ONE read of its current phase's claim queue, which gives both the phase's BLOCKED
   * targets (only they can time out, and the reference looks nowhere else) and, speculatively, its
   * ready ones up to the free slots: most passes end in a claim.
   *
   * In a pass that is not a tick's (a wake-up: a slot has likely just freed) both reads go out
   * together when this process has seen the run before: the queue of the phase it was in then,
   * with up to max_concurrent_targets PENDING targets (the free slots can be no more; the pass
   * claims only as many as the run it reads has free). A run that moved to another phase since
   * has its queue read again, after the run. So a refill costs one round trip before its claim
   * instead of two, for a few more PENDING items read; what is claimed is decided on the run as
   * read, exactly as before. A tick's pass reads in turn, so a run with no free slot costs it
   * two reads and no PENDING query.
   */
  async function readRunAndQueue(
    runId: string,
    speculate: boolean,
  ): Promise<{ run: Run | undefined; queue: { held: Target[]; pending: Target[] } }> {
    const seen = speculate ? seenRuns.get(runId) : undefined;
    const [run, guessed] = await Promise.all([
      runs.getRun(runId),
      seen === undefined ? undefined : runs.listQueuedTargets(runId, seen.phaseIndex, seen.maxConcurrent),
    ]);
    const empty = { held: [], pending: [] };
    if (run === undefined || (run.status !== "PENDING" && run.status !== "RUNNING")) {
      seenRuns.delete(runId);
      return { run, queue: empty };
    }
    if (seenRuns.size >= SEEN_RUNS_LIMIT) seenRuns.clear();
    seenRuns.set(runId, {
      phaseIndex: run.currentPhaseIndex,
      maxConcurrent: run.config.maxConcurrentTargets,
    });
    if (guessed !== undefined && seen?.phaseIndex === run.currentPhaseIndex) return { run, queue: guessed };
    return { run, queue: await runs.listQueuedTargets(runId, run.currentPhaseIndex, freeSlots(run)) };
  }

  /**
   * Claims ready targets of the phase in phase-then-sequence order and submits each. Targets that
   * need a new slot are claimed up to the free slots as read; expired CLAIMED targets already hold
   * theirs and are re-claimed whatever the count. The batch is one claimTargets transaction; on a
   * lost race or full slots the claims are made one by one, in order (they race other passes for
   * the same slots and order matters), each submission starting as soon as its claim commits.
   */
  async function claimAndSubmit(
    run: Run,
    claim: { phaseIndex: number; slots: number; until?: number },
    blockedAtStart: Target[],
    readAlready: { now: number; targets: Target[] } | undefined,
  ): Promise<Pick<PassResult, "submitted" | "blocked" | "failed">> {
    const { phaseIndex } = claim;
    const now = readAlready?.now ?? clock.now();
    const ready =
      readAlready?.targets ??
      readyInOrder(await runs.listQueuedTargets(run.id, phaseIndex, claim.slots), now);
    const counts = { submitted: 0, blocked: 0, failed: 0 };
    // PENDING as read, so never claimed before: no task can exist under their keys yet.
    const neverClaimed = new Set(ready.filter((t) => t.status === "PENDING").map((t) => t.id));
    // Each claimed target is submitted at once (at most `submitParallelism` at a time) while the
    // loop goes on claiming, so the first child task starts after one claim, not after all of them.
    const submissions: Promise<void>[] = [];
    let active = 0;
    const waiting: (() => void)[] = [];
    const submitSoon = (target: Target) => {
      submissions.push(
        (async () => {
          while (active >= submitParallelism) await new Promise<void>((resolve) => waiting.push(resolve));
          active++;
          try {
            counts[await submitOne(run, target, neverClaimed.has(target.id))] += 1;
          } catch (error) {
            // The target stays CLAIMED; when its lease runs out a later pass re-claims it and
            // submits again under the same idempotency key.
            logger.warn("target submission failed; retried after the claim lease", {
              runId: run.id,
              targetId: target.id,
              error: errorText(error),
            });
          } finally {
            active--;
            waiting.shift()?.();
          }
        })(),
      );
    };

    // At most the free slots as read: a slot freed since then wakes another pass through the stream,
    // which will read it. Not trying past the count keeps the pass short and spares the store a
    // transaction that can only fail. Expired claims keep their slot and are always re-claimed.
    //
    // The batch is claimed in ONE transaction (claimTargets: 10 targets + the run = 11 items), so a
    // refill costs one write, not one per slot. It is all or nothing: if another pass moved one of
    // its targets ('lost-race') or took some of the slots read ('slots-full'), the pass falls back
    // to claiming one by one over the same ready list, exactly as before batching, and so claims
    // what is still free.
    const batch: Target[] = [];
    let slotsForBatch = claim.slots;
    for (const target of ready) {
      if (batch.length >= MAX_BATCH_CLAIM) break;
      const needsSlot = target.status !== "CLAIMED";
      if (needsSlot && slotsForBatch <= 0) continue;
      if (needsSlot) slotsForBatch--;
      batch.push(target);
    }
    try {
      const batched =
        batch.length === 0 ? undefined : await runs.claimTargets(batch, leaseMs, clock.now(), claim.until);
      if (batched?.outcome === "claimed") {
        for (const target of batched.claimed) submitSoon(target);
        if (batch.length === MAX_BATCH_CLAIM) {
          // A full batch may have left ready targets behind (phases hold at most 100): one by one.
          const inBatch = new Set(batch.map((t) => t.id));
          await claimOneByOne(
            ready.filter((t) => !inBatch.has(t.id)),
            slotsForBatch,
          );
        }
      } else if (
        batched !== undefined &&
        batched.outcome !== "run-not-active" &&
        batched.outcome !== "window-closed"
      ) {
        await claimOneByOne(ready, claim.slots);
      }
    } finally {
      await Promise.all(submissions);
    }

    async function claimOneByOne(targets: Target[], slots: number): Promise<void> {
      let slotsLeft = slots;
      for (const target of targets) {
        const needsSlot = target.status !== "CLAIMED";
        if (needsSlot && slotsLeft <= 0) continue;
        const at = clock.now();
        const outcome = await runs.claimTarget(target, leaseMs, at, claim.until);
        if (outcome === "claimed") {
          if (needsSlot) slotsLeft--;
          submitSoon({ ...target, status: "CLAIMED", leaseExpiresAt: at + leaseMs, updatedAt: at });
        } else if (outcome === "slots-full") {
          slotsLeft = 0;
        } else if (outcome === "run-not-active" || outcome === "window-closed") {
          break;
        }
        // 'lost-race': another pass took or moved it; nothing to do.
      }
    }
    metrics.add("TargetsDispatched", counts.submitted);
    metrics.add("RackConflicts", counts.blocked);

    const stillWaiting = blockedAtStart.filter((t) => !isReady(t, now)).length + counts.blocked;
    const message = claimStatusMessage(counts.submitted, stillWaiting);
    if (message !== "") await setStatusMessage(run, message);
    return counts;
  }

  async function submitOne(
    run: Run,
    target: Target,
    firstAttempt: boolean,
  ): Promise<"submitted" | "blocked" | "failed"> {
    const now = clock.now();
    const outcome = await submitter.submit(
      {
        idempotencyKey: targetIdempotencyKey(target.id),
        runId: run.id,
        targetId: target.id,
        phaseIndex: target.phaseIndex,
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
        if (recorded === "lost-race") await afterLostSubmit(run.id, target.id, outcome.taskId);
        return "submitted";
      }
      case "conflict": {
        // Attempts and the first-blocked time survive re-claims, so the backoff really grows.
        const attempts = target.conflictAttempts + 1;
        const delay = conflictRetryDelayMs(run.config.conflictRetry, attempts);
        await runs.recordBlocked(
          run.id,
          target.id,
          {
            message: outcome.message,
            retryAt: now + delay,
            conflictAttempts: attempts,
            firstBlockedAt: target.firstBlockedAt ?? now,
          },
          now,
        );
        return "blocked";
      }
      case "rejected":
        await runs.recordOutcome(run.id, target.id, "FAILED", outcome.message, clock.now());
        return "failed";
    }
  }

  /**
   * recordSubmitted lost: the task already ended and recorded its outcome (fine), or a cancel
   * skipped the still-CLAIMED target while we were submitting. In the second case the task we just
   * started belongs to a cancelled run: stop it.
   */
  async function afterLostSubmit(runId: string, targetId: string, taskId: string): Promise<void> {
    const target = await runs.getTarget(runId, targetId);
    const endedWithoutTask = target?.status === "SKIPPED" || target?.status === "TERMINATED";
    if (endedWithoutTask && target?.taskId === undefined) {
      await submitter
        .cancel(taskId, "operation run target was skipped before its task was recorded")
        .catch((error: unknown) =>
          logger.warn("could not stop a task started for a skipped target", {
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
  async function setStatusMessage(known: Run, message: string): Promise<void> {
    let run: Run | undefined = known;
    for (let attempt = 0; attempt < 3; attempt++) {
      if (attempt > 0) run = await runs.getRun(known.id);
      if (run === undefined || run.status !== "RUNNING" || run.statusMessage === message) return;
      const now = clock.now();
      const saved = await runs.saveRun(
        { ...run, statusMessage: message, updatedAt: Math.max(now, run.updatedAt + 1) },
        run.updatedAt,
      );
      if (saved !== "stale") return;
    }
  }

  async function tick(): Promise<TickResult> {
    const started = clock.now();
    const ids = await runs.listActiveRunIds();
    const total: TickResult = { runs: ids.length, failed: 0, submitted: 0 };
    await forEachLimited(ids, tickParallelism, async (runId) => {
      try {
        const r = await queuePass(runId, false);
        total.submitted += r.submitted;
      } catch (error) {
        total.failed += 1;
        logger.error("dispatch pass failed", { runId, error: errorText(error) });
      }
    });
    // The ticker waits its interval AFTER each pass (infra/constructs/ticker.ts), so the next pass
    // starts as late against its tick as this whole pass took: the TickOverrun alarm fires when
    // that reaches one interval. Wake-ups (dispatchRun alone) are not ticks and emit none.
    metrics.add("TickOverrunMs", Math.max(0, clock.now() - started));
    metrics.flush();
    return total;
  }

  return { dispatchRun, tick };
}

/**
 * The RunWaker of a process that runs the dispatcher itself (the local stack): queues a pass for the
 * run and returns at once (passes are coalesced per run, see createDispatcher); a failed pass is
 * logged. `dispatcher` is read at wake time, so the waker can be handed out before it exists.
 */
export function inProcessWaker(
  dispatcher: () => Pick<Dispatcher, "dispatchRun"> | undefined,
  logger: Logger,
): RunWaker {
  return {
    async wake(runId) {
      dispatcher()
        ?.dispatchRun(runId)
        .catch((error: unknown) => logger.warn("wake-up pass failed", { runId, error: errorText(error) }));
    },
  };
}

/** Runs `fn` over `items` with at most `limit` in flight; rejects with the first error after all settle. */
export async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  let firstError: unknown;
  let failed = false;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      try {
        await fn(item);
      } catch (error) {
        if (!failed) firstError = error;
        failed = true;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), items.length) }, worker));
  if (failed) throw firstError;
}
