/**
 * Composition root of the stream-evaluator Lambda (lambdas/stream-evaluator.ts): the Runs and
 * Targets stream batches (ReportBatchItemFailures) decoded by the DynamoDB adapter, one dispatch
 * pass per run a batch may need a decision for, observed by the function's Powertools logger,
 * metrics and tracer.
 */
import { streamBatchHandler } from "../../adapters/dynamodb/stream-records.js";
import { type LambdaObservability, lambdaObservability } from "../../adapters/observability/lambda.js";
import { createStreamEvaluator } from "../../app/stream-evaluator.js";
import { awsDispatcher } from "../aws.js";
import { type DispatchConfig, readDispatchConfig } from "../config.js";

export type StreamBatchHandler = ReturnType<typeof streamBatchHandler>;

export interface StreamEvaluatorLambda {
  handle: StreamBatchHandler;
  invoke: LambdaObservability["invoke"];
}

export function composeStreamEvaluatorLambda(
  config: DispatchConfig,
  obs: LambdaObservability = lambdaObservability("stream-evaluator"),
): StreamEvaluatorLambda {
  const dispatcher = awsDispatcher(config, obs);
  return {
    handle: streamBatchHandler(createStreamEvaluator({ dispatcher, logger: obs.logger })),
    invoke: obs.invoke,
  };
}

export const streamEvaluatorFromEnvironment = (): StreamEvaluatorLambda =>
  composeStreamEvaluatorLambda(readDispatchConfig(process.env));
