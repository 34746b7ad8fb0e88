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
 * ## Parts (src/app/dispatch/)
 *   deps.ts        what every part is given, with defaults
 *   pass-queue.ts  one run's passes coalesced within this process
 *   read-queue.ts  a pass's reads: the run and its phase's claim queue (speculative on wake-ups)
 *   decide.ts      the phase, gate, window and conflict-timeout decisions (the run reducer's)
 *   pass.ts        the pass loop: read, decide, save under the version read, claim
 *   claim.ts       claiming under the concurrency cap (one batch, else one by one)
 *   finish.ts      submit, record SUBMITTED / BLOCKED / FAILED, the status message
 *   tick.ts        the periodic pass over every active run, bounded parallelism
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

import { type DispatcherDeps, type PassResult, withDefaults } from "./dispatch/deps.js";
import { runPass } from "./dispatch/pass.js";
import { createPassQueue } from "./dispatch/pass-queue.js";
import { createRunReader } from "./dispatch/read-queue.js";
import { type TickResult, tickPass } from "./dispatch/tick.js";
import { errorText, type Logger } from "./observability.js";
import type { RunWaker } from "./ports.js";

export type { DispatcherDeps, PassResult } from "./dispatch/deps.js";
export { forEachLimited, type TickResult } from "./dispatch/tick.js";

export interface Dispatcher {
  /**
   * One pass for one run. Safe to run concurrently with any other pass (in this process they are
   * coalesced, see dispatch/pass-queue.ts). Throws only on I/O errors.
   */
  dispatchRun(runId: string): Promise<PassResult>;
  /** One pass for every active run; per-run failures are logged and counted, never thrown. */
  tick(): Promise<TickResult>;
}

export function createDispatcher(deps: DispatcherDeps): Dispatcher {
  const ctx = withDefaults(deps);
  const readRunAndQueue = createRunReader(ctx.runs);

  const timedPass = async (runId: string, speculate: boolean): Promise<PassResult> => {
    const started = ctx.clock.now();
    try {
      return await runPass(ctx, readRunAndQueue, runId, speculate);
    } finally {
      ctx.metrics.add("DispatchLatencyMs", Math.max(0, ctx.clock.now() - started));
      ctx.metrics.flush();
    }
  };
  const queuePass = createPassQueue(timedPass);

  return {
    dispatchRun: (runId) => queuePass(runId, true),
    tick: () => tickPass(ctx, queuePass),
  };
}

/**
 * The RunWaker of a process that runs the dispatcher itself (the local stack): queues a pass for the
 * run and returns at once (passes are coalesced per run, see dispatch/pass-queue.ts); a failed pass is
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
