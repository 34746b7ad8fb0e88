/**
 * DynamoDB stream records of the Runs and Targets tables → `StreamChange`s for the stream evaluator
 * (src/app/stream-evaluator.ts), and its answer → the Lambda's partial batch response. The key
 * names and the `status` attribute are the storage layout's (schema.ts), so they are read here
 * and nowhere else.
 *
 *   { eventName: "MODIFY", dynamodb: { Keys: { runId: {S:"r1"}, targetId: {S:"t1"} },
 *     OldImage: { status: {S:"SUBMITTED"}, … }, NewImage: { status: {S:"COMPLETED"}, … },
 *     SequenceNumber: "100" } }
 *   → { kind: "target", runId: "r1", eventName: "MODIFY", oldStatus: "SUBMITTED",
 *       newStatus: "COMPLETED", sequenceNumber: "100" }
 */
import type { AttributeValue, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from "aws-lambda";
import type { StreamChange, StreamEvaluator } from "../../app/stream-evaluator.js";
import { RUNS_TABLE, TARGETS_TABLE } from "./schema.js";

const RUN_ID = RUNS_TABLE.partitionKey.name;
const TARGET_ID = TARGETS_TABLE.sortKey!.name;

/** A record of a run or target item; undefined for one without its run key or event name. */
export function decodeStreamRecord(record: DynamoDBRecord): StreamChange | undefined {
  const data = record.dynamodb;
  const runId = str(data?.Keys?.[RUN_ID]);
  if (data === undefined || runId === undefined || record.eventName === undefined) return undefined;
  const change: StreamChange = {
    kind: data.Keys?.[TARGET_ID] !== undefined ? "target" : "run",
    runId,
    eventName: record.eventName,
  };
  const oldStatus = str(data.OldImage?.status);
  const newStatus = str(data.NewImage?.status);
  if (oldStatus !== undefined) change.oldStatus = oldStatus;
  if (newStatus !== undefined) change.newStatus = newStatus;
  if (data.SequenceNumber !== undefined) change.sequenceNumber = data.SequenceNumber;
  return change;
}

export function decodeStreamEvent(event: DynamoDBStreamEvent): StreamChange[] {
  return event.Records.flatMap((record) => decodeStreamRecord(record) ?? []);
}

/** The Lambda handler (ReportBatchItemFailures) over an evaluator: decode, evaluate, report. */
export function streamBatchHandler(
  evaluator: StreamEvaluator,
): (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse> {
  return async (event) => {
    const { failedSequenceNumbers } = await evaluator.handle(decodeStreamEvent(event));
    return { batchItemFailures: failedSequenceNumbers.map((itemIdentifier) => ({ itemIdentifier })) };
  };
}

function str(value: AttributeValue | undefined): string | undefined {
  return value?.S;
}
