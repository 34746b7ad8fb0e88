/**
 * The DynamoDB stream consumer (Lambda event source mapping in AWS, local/stream-poller.ts locally):
 * the gate, phase and completion evaluator, and the wake-up that refills a freed slot.
 *
 * Counters are NOT moved here: each target transition moves its run's counters in the same
 * conditional write (RunStore.recordOutcome), exactly once. The stream only says "this run may
 * need a decision now", and the answer is a dispatch pass, which recomputes everything from the
 * run's counters. That is what makes the handler idempotent under duplicated, replayed, reordered
 * and split batches: processing a run twice, late, or in any order is one more pass with nothing
 * to change.
 *
 * Which records wake a run (both tables are keyed by `runId`):
 * - a target moving from a non-terminal to a terminal status (a slot freed, an outcome counted: a
 *   gate may trip, a phase may be complete, the run may be finished);
 * - a target moving CLAIMED → BLOCKED (a rack conflict freed a slot);
 * - a run item inserted (a new run starts at once instead of at the next tick), or one whose status
 *   changed into PENDING or RUNNING (resume, advance).
 * Everything else (claims, submissions, the dispatcher's own message updates) is ignored, so the
 * dispatcher's writes do not wake it in a loop.
 */
import type { AttributeValue, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from "aws-lambda";
import { TERMINAL_TARGET_STATUSES } from "../domain/model.js";
import { type Dispatcher, forEachLimited } from "./dispatcher.js";
import { errorText, type Logger, pickLogger } from "./observability.js";

const TERMINAL: ReadonlySet<string> = TERMINAL_TARGET_STATUSES;
const ACTIVE_RUN = new Set(["PENDING", "RUNNING"]);

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
  handle(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse>;
}

export function createStreamEvaluator(deps: StreamEvaluatorDeps): StreamEvaluator {
  const logger = pickLogger(deps);
  const dispatcher = deps.dispatcher;
  const process =
    deps.process ?? (dispatcher === undefined ? undefined : (runId: string) => dispatcher.dispatchRun(runId));
  if (process === undefined) throw new TypeError("createStreamEvaluator needs `process` or `dispatcher`");
  return {
    async handle(event) {
      const byRun = new Map<string, DynamoDBRecord[]>();
      for (const record of event.Records) {
        const runId = runToWake(record);
        if (runId === undefined) continue;
        const list = byRun.get(runId) ?? [];
        list.push(record);
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
          for (const record of byRun.get(runId) ?? []) {
            const id = record.dynamodb?.SequenceNumber;
            if (id !== undefined) failed.push(id);
          }
        }
      });
      return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) };
    },
  };
}

/** The run a record should wake, or undefined. Exported for the unit tests. */
export function runToWake(record: DynamoDBRecord): string | undefined {
  const data = record.dynamodb;
  const runId = str(data?.Keys?.runId);
  if (data === undefined || runId === undefined) return undefined;
  const isTarget = data.Keys?.targetId !== undefined;
  const oldStatus = str(data.OldImage?.status);
  const newStatus = str(data.NewImage?.status);
  if (isTarget) {
    if (record.eventName !== "MODIFY" || newStatus === undefined) return undefined;
    const ended = TERMINAL.has(newStatus) && (oldStatus === undefined || !TERMINAL.has(oldStatus));
    const blocked = newStatus === "BLOCKED" && oldStatus === "CLAIMED";
    return ended || blocked ? runId : undefined;
  }
  if (record.eventName === "INSERT") {
    // moto emits a key-only INSERT before the full one for an UpdateItem that creates an item.
    return newStatus !== undefined && ACTIVE_RUN.has(newStatus) ? runId : undefined;
  }
  if (record.eventName === "MODIFY" && newStatus !== undefined && newStatus !== oldStatus) {
    return ACTIVE_RUN.has(newStatus) ? runId : undefined;
  }
  return undefined;
}

function str(value: AttributeValue | undefined): string | undefined {
  return value?.S;
}
