/**
 * The run history, out: every event the RunEvents stream reports (an INSERT, decoded by
 * src/adapters/dynamodb/run-event-records.ts) is handed to the event bus (EventBridge), and the
 * stream records of those the bus refused, or of the whole batch when it could not be reached, are
 * reported back for redelivery.
 *
 * At-least-once, not exactly-once, and why: the stream delivers a record at least once (a retried
 * batch, a Lambda that timed out after publishing), PutEvents has no idempotency key, and
 * EventBridge delivers to its targets at least once anyway. So every event carries a stable id
 * (its run, the run version it was written with, its position: `runEventId`), the same each time
 * it is published, and consumers dedupe on it. Exactly-once would need a second store of what was
 * published, written atomically with a call that cannot be made atomic, and would still end at an
 * at-least-once target.
 *
 *   batch [e1 seq 10, e2 seq 11, e3 seq 12]: the bus refuses e2
 *     → failedSequenceNumbers ["11"]: Lambda resumes at 11; e2 and e3 are published again
 *       (e3 twice, deduped by its id downstream)
 */
import type { RunHistoryEvent } from "../domain/history-event.js";
import { errorText, type Logger, pickLogger } from "./observability.js";
import type { RunEventBus } from "./ports.js";

/** One history event the stream reported, and the record's sequence number (for redelivery). */
export interface RunEventRecord {
  event: RunHistoryEvent;
  sequenceNumber?: string;
}

export interface RunEventRelayDeps {
  bus: RunEventBus;
  logger?: Logger;
  log?: (line: string) => void;
}

export interface RunEventRelay {
  /** Publishes the batch's events in stream order; returns the sequence numbers to redeliver. */
  handle(records: readonly RunEventRecord[]): Promise<{ failedSequenceNumbers: string[] }>;
}

export function createRunEventRelay(deps: RunEventRelayDeps): RunEventRelay {
  const logger = pickLogger(deps);
  const sequenceOf = (records: readonly RunEventRecord[]) =>
    records.flatMap((r) => (r.sequenceNumber === undefined ? [] : [r.sequenceNumber]));
  return {
    async handle(records) {
      if (records.length === 0) return { failedSequenceNumbers: [] };
      try {
        const { rejected } = await deps.bus.publish(records.map((r) => r.event));
        const refused = rejected.flatMap((i) => {
          const record = records[i];
          return record === undefined ? [] : [record];
        });
        for (const { event } of refused) {
          logger.warn("the event bus refused a run event; it is published again", {
            runId: event.runId,
            eventKind: event.kind,
          });
        }
        return { failedSequenceNumbers: sequenceOf(refused) };
      } catch (error) {
        logger.error("run events could not be published; the batch is redelivered", {
          events: records.length,
          error: errorText(error),
        });
        return { failedSequenceNumbers: sequenceOf(records) };
      }
    },
  };
}
