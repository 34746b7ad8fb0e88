/**
 * A pass's reads: the run and ONE read of its current phase's claim queue, which gives both the
 * phase's BLOCKED targets (only they can time out, and the reference looks nowhere else) and,
 * speculatively, its ready ones up to the free slots: most passes end in a claim.
 *
 * In a pass that is not a tick's (a wake-up: a slot has likely just freed) both reads go out
 * together when this process has seen the run before: the queue of the phase it was in then,
 * with up to max_concurrent_targets PENDING targets (the free slots can be no more; the pass
 * claims only as many as the run it reads has free). A run that moved to another phase since
 * has its queue read again, after the run. So a refill costs one round trip before its claim
 * instead of two, for a few more PENDING items read; what is claimed is decided on the run as
 * read, exactly as before. A tick's pass reads in turn, so a run with no free slot costs it
 * two reads and no PENDING query. A run with a failure-domain spread reads its phase's PENDING
 * targets whole (at most 100, still one query): the first free-slots-many may all wait on full
 * domains while later ones may go.
 */
import { pendingToRead } from "../../domain/failure-domains.js";
import type { Run, Target } from "../../domain/model.js";
import { freeSlots } from "../../domain/run-machine.js";
import type { DispatchSchedule, RunStore } from "../ports.js";

/** Runs whose phase a dispatcher remembers; past it, it forgets them all. */
const SEEN_RUNS_LIMIT = 10_000;

export interface ClaimQueue {
  held: Target[];
  pending: Target[];
}

export interface RunAndQueue {
  run: Run | undefined;
  /** The run's dispatch schedule as read with it (mark 0, not due, for a missing run). */
  schedule: DispatchSchedule;
  queue: ClaimQueue;
  /** The queue was read beside the run, not after it: it may be older than the schedule read. */
  guessed: boolean;
}

export type ReadRunAndQueue = (runId: string, speculate: boolean) => Promise<RunAndQueue>;

export function createRunReader(
  runs: Pick<RunStore, "getRunForDispatch" | "listQueuedTargets">,
): ReadRunAndQueue {
  /** Per active run this process dispatched: its phase and limit as last read. */
  const seenRuns = new Map<string, { phaseIndex: number; maxConcurrent: number }>();

  return async function readRunAndQueue(runId, speculate) {
    const seen = speculate ? seenRuns.get(runId) : undefined;
    const [read, guessed] = await Promise.all([
      runs.getRunForDispatch(runId),
      seen === undefined ? undefined : runs.listQueuedTargets(runId, seen.phaseIndex, seen.maxConcurrent),
    ]);
    const run = read?.run;
    const schedule = read?.schedule ?? { mark: 0 };
    const empty = { held: [], pending: [] };
    if (run === undefined || (run.status !== "PENDING" && run.status !== "RUNNING")) {
      seenRuns.delete(runId);
      return { run, schedule, queue: empty, guessed: false };
    }
    if (seenRuns.size >= SEEN_RUNS_LIMIT) seenRuns.clear();
    const phase = run.currentPhaseIndex;
    seenRuns.set(runId, {
      phaseIndex: phase,
      maxConcurrent: pendingToRead(run, phase, run.config.maxConcurrentTargets),
    });
    if (guessed !== undefined && seen?.phaseIndex === phase) {
      return { run, schedule, queue: guessed, guessed: true };
    }
    const queue = await runs.listQueuedTargets(runId, phase, pendingToRead(run, phase, freeSlots(run)));
    return { run, schedule, queue, guessed: false };
  };
}
