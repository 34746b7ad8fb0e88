/**
 * Composition root of the dispatcher Lambda (lambdas/dispatcher.ts): the dispatch pass on the
 * stores and the Step Functions task service, from the configuration read once at cold start,
 * observed by the function's Powertools logger, metrics and tracer.
 */
import { type LambdaObservability, lambdaObservability } from "../../adapters/observability/lambda.js";
import type { Dispatcher } from "../../app/dispatcher.js";
import { awsDispatcher } from "../aws.js";
import { type DispatchConfig, readDispatchConfig } from "../config.js";

export interface DispatcherLambda {
  dispatcher: Dispatcher;
  invoke: LambdaObservability["invoke"];
}

export function composeDispatcherLambda(
  config: DispatchConfig,
  obs: LambdaObservability = lambdaObservability("dispatcher"),
): DispatcherLambda {
  return { dispatcher: awsDispatcher(config, obs), invoke: obs.invoke };
}

export const dispatcherFromEnvironment = (): DispatcherLambda =>
  composeDispatcherLambda(readDispatchConfig(process.env));
