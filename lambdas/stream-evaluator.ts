/**
 * Stream evaluator Lambda on the Runs and Targets streams (ReportBatchItemFailures): for every run
 * a batch touches in a way that may need a decision, one dispatch pass (gates, phase boundary,
 * completion, and refilling the freed slot).
 */
import { streamBatchHandler } from "../src/adapters/dynamodb/stream-records.js";
import { jsonLogger } from "../src/app/observability.js";
import { createStreamEvaluator } from "../src/app/stream-evaluator.js";
import { composeDispatch } from "../src/service/compose-dispatch.js";

const { dispatcher } = composeDispatch(process.env, { service: "stream-evaluator" });

export const handler = streamBatchHandler(createStreamEvaluator({ dispatcher, logger: jsonLogger }));
