/**
 * The stream consumer's decision (Lambda event source mapping in AWS, local/stream-poller.ts
 * locally; src/adapters/dynamodb/stream-records.ts decodes the raw records into `StreamChange`s):
 * the gate, phase and completion evaluator, and the wake-up that refills a freed slot.
 *
 * Counters are NOT moved here: each target transition moves its run's counters in the same
 * conditional write (RunStore.recordOutcome), exactly once. The stream only says "this run may
 * need a decision now", and the answer is a dispatch pass, which recomputes everything from the
 * run's counters. That is what makes the handler idempotent under duplicated, replayed, reordered
 * and split batches: processing a run twice, late, or in any order is one more pass with nothing
 * to change.
 *
 * Which changes wake a run:
 * - a target moving from a non-terminal to a terminal status (a slot freed, an outcome counted: a
 *   gate may trip, a phase may be complete, the run may be finished);
 * - a target moving CLAIMED → BLOCKED (a rack conflict freed a slot);
 * - a run inserted (a new run starts at once instead of at the next tick), or one whose status
 *   changed into PENDING or RUNNING (resume, advance).
 * Everything else (claims, submissions, the dispatcher's own message updates) is ignored, so the
 * dispatcher's writes do not wake it in a loop.
 */
import { TERMINAL_TARGET_STATUSES } from "../domain/model.js";
import { type Dispatcher, forEachLimited } from "./dispatcher.js";
import { errorText, type Logger, pickLogger } from "./observability.js";

const TERMINAL: ReadonlySet<string> = TERMINAL_TARGET_STATUSES;
const ACTIVE_RUN = new Set(["PENDING", "RUNNING"]);

/**
 * One stored change of a run or target item, as the stream reports it: which item (its run), how
 * it changed, its status before and after (absent when that image has none), and the record's
 * sequence number, by which a failed record is reported back for redelivery.
 */
export interface StreamChange {
  kind: "run" | "target";
  runId: string;
  eventName: "INSERT" | "MODIFY" | "REMOVE";
  oldStatus?: string;
  newStatus?: string;
  sequenceNumber?: string;
}

export interface StreamEvaluatorDeps {
  /** A dispatch pass for the run: `process` if given (e.g. a wake-up of the dispatcher Lambda), else `dispatcher.dispatchRun`. */
  process?: (runId: string) => Promise<unknown>;
  dispatcher?: Pick<Dispatcher, "dispatchRun">;
  logger?: Logger;
  log?: (line: string) => void;
  /** Runs processed at once within a batch (default 8). */
  parallelism?: number;
}

export interface StreamEvaluator {
  /**
   * One pass per run the batch wakes, however many of its changes the batch holds. Returns the
   * sequence numbers of every change of a run whose pass failed (and only those), for redelivery.
   */
  handle(changes: readonly StreamChange[]): Promise<{ failedSequenceNumbers: string[] }>;
}

export function createStreamEvaluator(deps: StreamEvaluatorDeps): StreamEvaluator {
  const logger = pickLogger(deps);
  const dispatcher = deps.dispatcher;
  const process =
    deps.process ?? (dispatcher === undefined ? undefined : (runId: string) => dispatcher.dispatchRun(runId));
  if (process === undefined) throw new TypeError("createStreamEvaluator needs `process` or `dispatcher`");
  return {
    async handle(changes) {
      const byRun = new Map<string, StreamChange[]>();
      for (const change of changes) {
        const runId = runToWake(change);
        if (runId === undefined) continue;
        const list = byRun.get(runId) ?? [];
        list.push(change);
        byRun.set(runId, list);
      }
      const failed: string[] = [];
      await forEachLimited([...byRun.keys()], deps.parallelism ?? 8, async (runId) => {
        try {
          await process(runId);
        } catch (error) {
          logger.error("stream evaluation failed for a run; its records are reported for retry", {
            runId,
            error: errorText(error),
          });
          for (const change of byRun.get(runId) ?? []) {
            if (change.sequenceNumber !== undefined) failed.push(change.sequenceNumber);
          }
        }
      });
      return { failedSequenceNumbers: failed };
    },
  };
}

/** The run a change should wake, or undefined. Exported for the unit tests. */
export function runToWake(change: StreamChange): string | undefined {
  const { runId, eventName, oldStatus, newStatus } = change;
  if (change.kind === "target") {
    if (eventName !== "MODIFY" || newStatus === undefined) return undefined;
    const ended = TERMINAL.has(newStatus) && (oldStatus === undefined || !TERMINAL.has(oldStatus));
    const blocked = newStatus === "BLOCKED" && oldStatus === "CLAIMED";
    return ended || blocked ? runId : undefined;
  }
  if (eventName === "INSERT") {
    // moto emits a key-only INSERT before the full one for an UpdateItem that creates an item.
    return newStatus !== undefined && ACTIVE_RUN.has(newStatus) ? runId : undefined;
  }
  if (eventName === "MODIFY" && newStatus !== undefined && newStatus !== oldStatus) {
    return ACTIVE_RUN.has(newStatus) ? runId : undefined;
  }
  return undefined;
}
