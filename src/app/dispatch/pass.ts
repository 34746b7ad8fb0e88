/**
 * One pass for one run: read the run and its claim queue, decide (decide.ts), save the decision
 * under the version read ('stale': another pass or a control wrote first, so re-read and decide
 * again), then claim and submit (claim.ts). Nothing here reads, decides and then writes
 * unconditionally.
 */
import { isTerminalRun } from "../../domain/model.js";
import { historyEvents } from "../../domain/run-history.js";
import { claimAndSubmit } from "./claim.js";
import { decidePass } from "./decide.js";
import type { DispatchContext, PassResult } from "./deps.js";
import type { ReadRunAndQueue } from "./read-queue.js";

/** saveRun 'stale' means another pass or a control wrote first: re-read and decide again. */
const MAX_STALE_RETRIES = 5;

export async function runPass(
  ctx: DispatchContext,
  readRunAndQueue: ReadRunAndQueue,
  runId: string,
  speculate: boolean,
): Promise<PassResult> {
  const { runs, clock, logger, metrics } = ctx;
  const result: PassResult = { runId, decision: "contended", submitted: 0, blocked: 0, failed: 0 };
  for (let attempt = 0; attempt <= MAX_STALE_RETRIES; attempt++) {
    const { run, queue } = await readRunAndQueue(runId, speculate);
    if (run === undefined) return { ...result, decision: "not-found" };
    if (run.status !== "PENDING" && run.status !== "RUNNING") {
      return { ...result, decision: "inactive", status: run.status };
    }
    const now = clock.now();
    const phase = run.currentPhaseIndex;
    const decided = decidePass(run, queue, now);
    let current = decided.run;
    if (decided.write) {
      current = { ...current, updatedAt: Math.max(now, run.updatedAt + 1) };
      // The history events ride with the write: of passes racing on one version, only the one
      // whose write commits records "phase opened" (or whatever it decided).
      const saved = await runs.saveRun(
        current,
        run.updatedAt,
        historyEvents(run, current, decided.event, now),
      );
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
    const { claim } = decided;
    if (claim === undefined) return { ...result, decision: "claimed", status: current.status };
    const ready = claim.phaseIndex === phase ? { now, targets: decided.readyNow } : undefined;
    const done = await claimAndSubmit(ctx, current, claim, decided.blocked, ready);
    return { ...result, ...done, decision: "claimed", status: current.status };
  }
  logger.warn("dispatch pass gave up after repeated concurrent writes", { runId });
  return result;
}
