/**
 * Composition root of the stream-evaluator Lambda (lambdas/stream-evaluator.ts): the Runs and
 * Targets stream batches (ReportBatchItemFailures) decoded by the DynamoDB adapter, one dispatch
 * pass per run a batch may need a decision for.
 */
import { streamBatchHandler } from "../../adapters/dynamodb/stream-records.js";
import { jsonLogger } from "../../app/observability.js";
import { createStreamEvaluator } from "../../app/stream-evaluator.js";
import { awsDispatcher } from "../aws.js";
import { type DispatchConfig, readDispatchConfig } from "../config.js";

export type StreamBatchHandler = ReturnType<typeof streamBatchHandler>;

export function composeStreamEvaluatorLambda(config: DispatchConfig): StreamBatchHandler {
  const dispatcher = awsDispatcher(config, "stream-evaluator");
  return streamBatchHandler(createStreamEvaluator({ dispatcher, logger: jsonLogger }));
}

export const streamEvaluatorFromEnvironment = (): StreamBatchHandler =>
  composeStreamEvaluatorLambda(readDispatchConfig(process.env));
