/**
 * Stream evaluator Lambda on the Runs and Targets streams (ReportBatchItemFailures): for every run
 * a batch touches in a way that may need a decision, one dispatch pass (gates, phase boundary,
 * completion, and refilling the freed slot).
 */
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from "aws-lambda";
import { jsonLogger } from "../src/app/observability.js";
import { createStreamEvaluator } from "../src/app/stream-evaluator.js";
import { composeDispatch } from "../src/service/compose-dispatch.js";

const { dispatcher } = composeDispatch(process.env, { service: "stream-evaluator" });
const evaluator = createStreamEvaluator({ dispatcher, logger: jsonLogger });

export const handler = (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> =>
  evaluator.handle(event);
