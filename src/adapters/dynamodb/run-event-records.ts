/**
 * The RunEvents table's stream → history events for the publisher (src/app/run-event-relay.ts),
 * and its answer → the Lambda's partial batch response. Events are only ever inserted, so an
 * INSERT's new image is the whole event (items.ts `runEventToItem`, read back by
 * `itemToRunEvent`); any other record (a table restored, an item removed by hand) publishes
 * nothing.
 *
 *   { eventName: "INSERT", dynamodb: { NewImage: { runId: {S:"r1"}, eventKey: {S:"…#00"},
 *     kind: {S:"GATE_TRIPPED"}, …, stats: {M:{…}} }, SequenceNumber: "100" } }
 *   → { event: { runId: "r1", kind: "GATE_TRIPPED", … }, sequenceNumber: "100" }
 */
import type { AttributeValue as SdkAttributeValue } from "@aws-sdk/client-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from "aws-lambda";
import type { RunEventRecord, RunEventRelay } from "../../app/run-event-relay.js";
import { itemToRunEvent } from "./items.js";

export function decodeRunEventRecord(record: DynamoDBRecord): RunEventRecord | undefined {
  const image = record.dynamodb?.NewImage;
  if (record.eventName !== "INSERT" || image === undefined) return undefined;
  // aws-lambda's AttributeValue is the stream's JSON shape, which is the SDK's.
  const event = itemToRunEvent(unmarshall(image as Record<string, SdkAttributeValue>));
  const sequenceNumber = record.dynamodb?.SequenceNumber;
  return sequenceNumber === undefined ? { event } : { event, sequenceNumber };
}

/** The Lambda handler (ReportBatchItemFailures) over a relay: decode, publish, report. */
export function runEventsBatchHandler(
  relay: RunEventRelay,
): (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse> {
  return async (event) => {
    const records = event.Records.flatMap((record) => decodeRunEventRecord(record) ?? []);
    const { failedSequenceNumbers } = await relay.handle(records);
    return { batchItemFailures: failedSequenceNumbers.map((itemIdentifier) => ({ itemIdentifier })) };
  };
}
