/**
 * Composition root of the dispatcher Lambda (lambdas/dispatcher.ts): the dispatch pass on the
 * stores and the Step Functions task service, from the configuration read once at cold start.
 */
import type { Dispatcher } from "../../app/dispatcher.js";
import { awsDispatcher } from "../aws.js";
import { type DispatchConfig, readDispatchConfig } from "../config.js";

export function composeDispatcherLambda(config: DispatchConfig): Dispatcher {
  return awsDispatcher(config, "dispatcher");
}

export const dispatcherFromEnvironment = (): Dispatcher =>
  composeDispatcherLambda(readDispatchConfig(process.env));
