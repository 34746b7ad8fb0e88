/**
 * Builds the child-task machinery from the environment, once per Lambda container (module scope in
 * lambdas/task-steps.ts and lambdas/bmc-result.ts) or per Fargate task (the gRPC front's TasksApi,
 * the dispatcher's submitter).
 *
 * Environment (src/config.ts ENV): FLOW_TABLE_PREFIX (required); FLOW_IOT_DATA_ENDPOINT (the
 * task-steps Lambda: where commands are published); FLOW_CHILD_TASK_STATE_MACHINE_ARN (whoever
 * starts or stops executions: the submitter and the TasksApi); FLOW_SECRETS_KMS_KEY_ID (KMS
 * envelope encryption of credentials, in AWS) or, off AWS, FLOW_LOCAL_SECRETS_KEY (64 hex digits:
 * AES-256-GCM); without either a task with credentials is refused; FLOW_DISPATCHER_FUNCTION_NAME
 * (optional: whoever records run children's outcomes wakes the dispatcher Lambda for the run);
 * AWS_ENDPOINT_URL (optional).
 */
import { randomUUID } from "node:crypto";
import { KMSClient } from "@aws-sdk/client-kms";
import { LambdaClient } from "@aws-sdk/client-lambda";
import { SFNClient } from "@aws-sdk/client-sfn";
import type { OutcomeDeps } from "../../app/child-task/outcome.js";
import { type BmcResultReceiver, createBmcResultReceiver } from "../../app/child-task/receiving.js";
import { createTaskSteps, type TaskSteps } from "../../app/child-task/steps.js";
import { createTaskService, type TaskService } from "../../app/child-task/task-service.js";
import { emfMetrics, jsonLogger } from "../../app/observability.js";
import type { BmcAuthSealer, Cipher } from "../../app/ports.js";
import { ENV, optionalEnv, requireEnv } from "../../config.js";
import { awsClientConfig, createDynamoDbClient } from "../aws-config.js";
import { createDynamoStores, type DynamoStores, LocalAesGcmCipher, tableNames } from "../dynamodb/index.js";
import { IotPublisher } from "../iot/publisher.js";
import { KmsEnvelopeCipher } from "../kms/kms-cipher.js";
import { LambdaRunWaker } from "../lambda/lambda-waker.js";
import { CipherBmcAuthSealer } from "./bmc-auth.js";
import { DynamoBmcRequestStore, DynamoTaskSecretStore } from "./dynamo-task-records.js";
import { DynamoFirmwareRecorder } from "./inventory-firmware.js";
import { StepFunctionsTaskExecutor } from "./sfn-executor.js";

type Env = Record<string, string | undefined>;

export interface AwsChildTasks {
  stores: DynamoStores;
  requests: DynamoBmcRequestStore;
  outcomeDeps: OutcomeDeps;
  /** The step handlers (task-steps Lambda). Publishing needs FLOW_IOT_DATA_ENDPOINT. */
  steps(): TaskSteps;
  /** BMC reports and execution endings (bmc-result Lambda). */
  receiver(): BmcResultReceiver;
  /** Submitter + TasksApi on Step Functions. Needs FLOW_CHILD_TASK_STATE_MACHINE_ARN. */
  service(): TaskService;
}

/** KMS envelope encryption under the deployment's key; a local AES key only off AWS. */
export function cipherFromEnv(env: Env): Cipher | undefined {
  const kmsKey = optionalEnv(env, ENV.secretsKmsKeyId);
  if (kmsKey !== undefined) return new KmsEnvelopeCipher(new KMSClient(awsClientConfig()), kmsKey);
  const hex = optionalEnv(env, ENV.localSecretsKeyHex);
  return hex === undefined ? undefined : new LocalAesGcmCipher(Buffer.from(hex, "hex"));
}

/** `emitter` names the emitting service in EMF metrics: "task-steps", "bmc-result" or "grpc". */
export function composeChildTasks(env: Env = process.env, emitter = "task-steps"): AwsChildTasks {
  const names = tableNames(requireEnv(env, ENV.tablePrefix));
  const cipher = cipherFromEnv(env);
  const stores = createDynamoStores(createDynamoDbClient(), names, cipher ? { cipher } : {});
  const requests = new DynamoBmcRequestStore(stores.doc, names.tasks);
  const secrets = new DynamoTaskSecretStore(stores.doc, names.tasks, cipher);
  const dispatcherFunction = optionalEnv(env, ENV.dispatcherFunctionName);
  const outcomeDeps: OutcomeDeps = {
    tasks: stores.tasks,
    runs: stores.runs,
    locks: stores.locks,
    clock: Date.now,
    metrics: emfMetrics({ service: emitter }),
    ...(dispatcherFunction === undefined
      ? {}
      : { waker: new LambdaRunWaker(new LambdaClient(awsClientConfig()), dispatcherFunction, jsonLogger) }),
  };
  let steps: TaskSteps | undefined;
  let service: TaskService | undefined;
  let receiver: BmcResultReceiver | undefined;
  return {
    stores,
    requests,
    outcomeDeps,
    steps() {
      const sealer: BmcAuthSealer = cipher
        ? new CipherBmcAuthSealer(cipher, optionalEnv(env, ENV.secretsKmsKeyId) ?? "local-aes-256-gcm")
        : {
            seal: async () => {
              throw new Error(`firmware credentials need a cipher; set ${ENV.localSecretsKeyHex}`);
            },
          };
      steps ??= createTaskSteps({
        ...outcomeDeps,
        runs: stores.runs,
        requests,
        secrets,
        sealer,
        publisher: new IotPublisher({
          endpoint: requireEnv(env, ENV.iotDataEndpoint),
          region: awsClientConfig().region,
        }),
        firmware: new DynamoFirmwareRecorder(stores.doc, names.inventory),
        readiness: stores.readiness,
        log: (line) => console.log(line),
      });
      return steps;
    },
    receiver() {
      receiver ??= createBmcResultReceiver({
        requests,
        outcome: outcomeDeps,
        clock: Date.now,
        log: (line) => console.log(line),
      });
      return receiver;
    },
    service() {
      const sfn = new SFNClient(awsClientConfig());
      service ??= createTaskService({
        ...outcomeDeps,
        inventory: stores.inventory,
        policy: stores.policy,
        secrets,
        executor: new StepFunctionsTaskExecutor(sfn, requireEnv(env, ENV.childTaskStateMachineArn)),
        newId: randomUUID,
        log: (line) => console.log(line),
      });
      return service;
    },
  };
}
