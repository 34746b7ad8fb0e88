/**
 * Composition root of the bmc-result Lambda (lambdas/bmc-result.ts): BMC reports from the IoT rule
 * and child-task execution endings from EventBridge, parsed by the Lambda adapter and recorded by
 * the receiving half of the child task; a recorded run child's outcome wakes the dispatcher.
 */
import type { BmcResultReceiver } from "../../app/child-task/receiving.js";
import { awsChildTasks, log } from "../aws.js";
import { bmcResultReceiver } from "../child-tasks.js";
import { type BmcResultConfig, readBmcResultConfig } from "../config.js";

export { parseBmcResultEvent } from "../../adapters/lambda/bmc-result-event.js";

export function composeBmcResultLambda(config: BmcResultConfig): BmcResultReceiver {
  return bmcResultReceiver(awsChildTasks(config, "bmc-result").parts, log);
}

export const bmcResultFromEnvironment = (): BmcResultReceiver =>
  composeBmcResultLambda(readBmcResultConfig(process.env));
