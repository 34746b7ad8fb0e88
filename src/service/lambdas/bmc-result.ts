/**
 * Composition root of the bmc-result Lambda (lambdas/bmc-result.ts): BMC reports from the IoT rule
 * and child-task execution endings from EventBridge, parsed by the Lambda adapter and recorded by
 * the receiving half of the child task; a recorded run child's outcome wakes the dispatcher.
 * Observed by the function's Powertools logger, metrics and tracer.
 */
import { type LambdaObservability, lambdaObservability } from "../../adapters/observability/lambda.js";
import type { BmcResultInput, BmcResultReceiver } from "../../app/child-task/receiving.js";
import type { CorrelationKeys } from "../../app/observability.js";
import { awsChildTasks } from "../aws.js";
import { bmcResultReceiver } from "../child-tasks.js";
import { type BmcResultConfig, readBmcResultConfig } from "../config.js";

export { parseBmcResultEvent } from "../../adapters/lambda/bmc-result-event.js";

export interface BmcResultLambda {
  receiver: BmcResultReceiver;
  invoke: LambdaObservability["invoke"];
}

export function composeBmcResultLambda(
  config: BmcResultConfig,
  obs: LambdaObservability = lambdaObservability("bmc-result"),
): BmcResultLambda {
  return {
    receiver: bmcResultReceiver(awsChildTasks(config, obs, { wakesWaves: true }).parts),
    invoke: obs.invoke,
  };
}

/** An execution's ending names its task (the execution name); a BMC report names a component only. */
export const bmcResultKeys = (input: BmcResultInput): CorrelationKeys =>
  input.kind === "execution-ending" ? { taskId: input.ending.taskId } : {};

export const bmcResultFromEnvironment = (): BmcResultLambda =>
  composeBmcResultLambda(readBmcResultConfig(process.env));
