/**
 * Composition root of the task-steps Lambda (lambdas/task-steps.ts): every Task state of the
 * child-task state machine, publishing BMC commands through IoT Core, sealing credentials with
 * the deployment's KMS key, waking the dispatcher when a run child's outcome is recorded.
 */
import { awsClientConfig } from "../../adapters/aws-config.js";
import { IotPublisher } from "../../adapters/iot/publisher.js";
import { DynamoFirmwareRecorder } from "../../adapters/stepfunctions/inventory-firmware.js";
import type { TaskSteps } from "../../app/child-task/steps.js";
import { awsChildTasks, awsOptions, log } from "../aws.js";
import { childTaskSteps } from "../child-tasks.js";
import { readTaskStepsConfig, type TaskStepsConfig } from "../config.js";

export type { StepEvent } from "../../app/child-task/settings.js";

export function composeTaskStepsLambda(config: TaskStepsConfig): TaskSteps {
  const { names, stores, parts } = awsChildTasks(config, "task-steps");
  return childTaskSteps(parts, {
    publisher: new IotPublisher({
      endpoint: config.iotDataEndpoint,
      region: awsClientConfig(awsOptions(config)).region,
    }),
    firmware: new DynamoFirmwareRecorder(stores.doc, names.inventory),
    log,
  });
}

export const taskStepsFromEnvironment = (): TaskSteps =>
  composeTaskStepsLambda(readTaskStepsConfig(process.env));
