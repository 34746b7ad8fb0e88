/**
 * What every part of the dispatcher is given: the run store, the child-task submitter, the clock,
 * a logger and metrics, and the pass's limits, with the defaults filled in (see withDefaults).
 */
import type { Run } from "../../domain/model.js";
import { CLAIM_LEASE_MS } from "../../domain/target-machine.js";
import { type Logger, type Metrics, noopMetrics, pickLogger } from "../observability.js";
import type { ChildTaskSubmitter, Clock, RunStore } from "../ports.js";

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
  /**
   * How often a tick passes EVERY active run instead of the due ones only (default 1 h; the first
   * tick of a process always does): a backstop for runs no write has put in the due index yet
   * (runs created before it existed) and for any lost mark.
   */
  sweepIntervalMs?: number;
  /**
   * How far past now a tick reads the due index (default 0: the runs due now only). A tick that
   * finds none due then says when the next run falls due within that time (`TickResult.nextDueAt`),
   * so a ticker that knows of every write (the local stack's) may skip the ticks until then.
   */
  dueLookaheadMs?: number;
}

/** The deps as every part sees them. */
export interface DispatchContext {
  runs: RunStore;
  submitter: ChildTaskSubmitter;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  leaseMs: number;
  submitParallelism: number;
  tickParallelism: number;
  sweepIntervalMs: number;
  dueLookaheadMs: number;
}

export function withDefaults(deps: DispatcherDeps): DispatchContext {
  return {
    runs: deps.runs,
    submitter: deps.submitter,
    clock: deps.clock,
    logger: pickLogger(deps),
    metrics: deps.metrics ?? noopMetrics,
    leaseMs: deps.leaseMs ?? CLAIM_LEASE_MS,
    submitParallelism: deps.submitParallelism ?? 10,
    tickParallelism: deps.tickParallelism ?? 16,
    sweepIntervalMs: deps.sweepIntervalMs ?? 3_600_000,
    dueLookaheadMs: Math.max(0, deps.dueLookaheadMs ?? 0),
  };
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

/** What a pass's claims led to: targets submitted, blocked by a rack conflict, failed at submit. */
export type ClaimCounts = Pick<PassResult, "submitted" | "blocked" | "failed">;

/**
 * The run writes a pass made itself, each a mark of the run's dispatch schedule (RunStore
 * DispatchSchedule): its deferral expects the mark it read plus these. `unknown`: the pass re-read
 * the run without its schedule, or read its queue beside it; it then leaves the schedule alone.
 */
export interface PassWrites {
  marks: number;
  unknown: boolean;
}
