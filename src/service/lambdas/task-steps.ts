/**
 * Composition root of the task-steps Lambda (lambdas/task-steps.ts): every Task state of the
 * child-task state machine, publishing BMC commands through IoT Core, sealing credentials with
 * the deployment's KMS key, presigning each update's image GET in the catalog's bucket, waking the dispatcher when a run child's outcome is recorded; observed
 * by the function's Powertools logger, metrics and tracer.
 */
import { IoTDataPlaneClient } from "@aws-sdk/client-iot-data-plane";
import { LambdaClient } from "@aws-sdk/client-lambda";
import { awsClientConfig, createAwsClient } from "../../adapters/aws-config.js";
import { AwsExternalCheckRunner } from "../../adapters/external-checks/runner.js";
import { IotPublisher } from "../../adapters/iot/publisher.js";
import { type LambdaObservability, lambdaObservability } from "../../adapters/observability/lambda.js";
import { createS3Client, S3ImageObjectStore } from "../../adapters/s3/image-bucket.js";
import type { TaskSteps } from "../../app/child-task/steps.js";
import { awsChildTasks, awsOptions } from "../aws.js";
import { childTaskSteps } from "../child-tasks.js";
import { readTaskStepsConfig, type TaskStepsConfig } from "../config.js";

export type { StepEvent } from "../../app/child-task/settings.js";

export interface TaskStepsLambda {
  steps: TaskSteps;
  invoke: LambdaObservability["invoke"];
}

export function composeTaskStepsLambda(
  config: TaskStepsConfig,
  obs: LambdaObservability = lambdaObservability("task-steps"),
): TaskStepsLambda {
  const { stores, parts } = awsChildTasks(config, obs, { wakesWaves: true });
  const iot = new IoTDataPlaneClient({
    endpoint: config.iotDataEndpoint,
    region: awsClientConfig(awsOptions(config)).region,
  });
  const steps = childTaskSteps(parts, {
    publisher: new IotPublisher({ client: obs.capture(iot), legacyTopics: config.legacyBmcTopics }),
    readiness: stores.readiness,
    images: stores.images,
    imageUrls: new S3ImageObjectStore(obs.capture(createS3Client(awsOptions(config))), config.imageBucket),
    ...(config.externalChecks.length === 0
      ? {}
      : {
          externalChecks: {
            checks: config.externalChecks,
            runner: new AwsExternalCheckRunner(
              obs.capture(createAwsClient(LambdaClient, awsOptions(config))),
            ),
            runs: stores.runs,
          },
        }),
  });
  return { steps, invoke: obs.invoke };
}

export const taskStepsFromEnvironment = (): TaskStepsLambda =>
  composeTaskStepsLambda(readTaskStepsConfig(process.env));
