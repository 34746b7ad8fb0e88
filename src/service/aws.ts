/**
 * Building blocks of the AWS composition roots (src/service/grpc-front.ts, src/service/lambdas/):
 * the DynamoDB stores from the configuration, the cipher, the dispatcher wake-up, the Step
 * Functions executor, and the child-task parts on them. Each builds its clients when called (the
 * roots call them once, at start) and does no I/O until a client is used. Every one takes the
 * root's one observability (`RootObservability`): its logger and metrics, and in a Lambda the
 * tracer's `capture`, which every SDK client built here goes through.
 */
import { randomUUID } from "node:crypto";
import { KMSClient } from "@aws-sdk/client-kms";
import { LambdaClient } from "@aws-sdk/client-lambda";
import { SFNClient } from "@aws-sdk/client-sfn";
import { SSMClient } from "@aws-sdk/client-ssm";
import { type AwsOptions, createAwsClient, createDynamoDbClient } from "../adapters/aws-config.js";
import { DynamoFirmwareRecorder } from "../adapters/dynamodb/firmware-version-recorder.js";
import {
  createDynamoStores,
  type DynamoStores,
  LocalAesGcmCipher,
  type TableNames,
  tableNames,
} from "../adapters/dynamodb/index.js";
import { KmsEnvelopeCipher } from "../adapters/kms/kms-cipher.js";
import { KmsRequestMac, LocalRequestMac } from "../adapters/kms/request-mac.js";
import { LambdaRunWaker } from "../adapters/lambda/lambda-waker.js";
import { StepFunctionsTaskExecutor } from "../adapters/stepfunctions/sfn-executor.js";
import { StepFunctionsWaveWaker } from "../adapters/stepfunctions/sfn-wave-waker.js";
import { systemClock } from "../adapters/system-clock.js";
import type { DeploymentChildTaskSettings } from "../app/child-task/settings.js";
import { createDispatcher, type Dispatcher } from "../app/dispatcher.js";
import type { Logger, Metrics } from "../app/observability.js";
import type { Cipher, RequestMac, RunWaker } from "../app/ports.js";
import type { StoreUnavailableError } from "../domain/errors.js";
import { type ChildTaskParts, childTaskParts, childTaskService } from "./child-tasks.js";
import type { AwsConfig, DispatchConfig, SecretsConfig, StoresConfig } from "./config.js";

/**
 * The `Service` of each deployable: its logger's `service` and its metrics' `Service` dimension
 * (infra/constructs/observability.ts FLOW_METRIC_SERVICES).
 */
export type Emitter =
  | "dispatcher"
  | "stream-evaluator"
  | "task-steps"
  | "bmc-result"
  | "event-publisher"
  | "grpc";

/**
 * What a root observes with, built once per deployable (src/adapters/observability/): Powertools'
 * logger and metrics, writing to stdout, which Lambda and ECS ship to CloudWatch Logs; `capture`
 * traces an SDK client's calls (the Lambdas' X-Ray tracer), absent where nothing traces.
 */
export interface RootObservability {
  logger: Logger;
  metrics: Metrics;
  capture?: <C>(client: C) => C;
}

const captured = <C>(obs: RootObservability, client: C): C => (obs.capture ? obs.capture(client) : client);

/** The AWS clients' options from a deployable's configuration (its endpoint and region). */
export function awsOptions(config: AwsConfig): AwsOptions {
  return {
    ...(config.awsEndpoint === undefined ? {} : { endpoint: config.awsEndpoint }),
    ...(config.awsRegion === undefined ? {} : { region: config.awsRegion }),
  };
}

/** KMS envelope encryption under the deployment's key; a local AES key only off AWS. */
export function awsCipher(
  secrets: SecretsConfig,
  aws: AwsOptions,
  obs: RootObservability,
): { cipher: Cipher; keyId: string } | undefined {
  if (secrets === undefined) return undefined;
  if (secrets.kind === "kms") {
    return {
      cipher: new KmsEnvelopeCipher(captured(obs, createAwsClient(KMSClient, aws)), secrets.keyId),
      keyId: secrets.keyId,
    };
  }
  return { cipher: new LocalAesGcmCipher(Buffer.from(secrets.keyHex, "hex")), keyId: secrets.kind };
}

/**
 * The keyed digest of idempotent creates' credentials: KMS GenerateMac under the HMAC key in AWS,
 * a key derived from the local secrets key off AWS; none without a secrets key (credentials are
 * refused then anyway).
 */
export function awsRequestMac(
  secrets: SecretsConfig,
  macKeyId: string | undefined,
  aws: AwsOptions,
  obs: RootObservability,
): RequestMac | undefined {
  if (macKeyId !== undefined)
    return new KmsRequestMac(captured(obs, createAwsClient(KMSClient, aws)), macKeyId);
  if (secrets?.kind === "local-aes-256-gcm") return new LocalRequestMac(Buffer.from(secrets.keyHex, "hex"));
  return undefined;
}

/** Outcomes wake the dispatcher Lambda for their run when it is named; else the stream alone does. */
export function lambdaWaker(
  functionName: string | undefined,
  aws: AwsOptions,
  obs: RootObservability,
): RunWaker | undefined {
  return functionName === undefined
    ? undefined
    : new LambdaRunWaker(captured(obs, createAwsClient(LambdaClient, aws)), functionName, obs.logger);
}

/** The SSM client the front reads its access policy parameter with. */
export function awsSsm(config: AwsConfig, obs: RootObservability): SSMClient {
  return captured(obs, createAwsClient(SSMClient, awsOptions(config)));
}

/** Starts and stops child-task executions, each told the deployment's settings. */
export function stepFunctionsExecutor(
  config: { childTaskStateMachineArn: string; childTask: DeploymentChildTaskSettings },
  aws: AwsOptions,
  obs: RootObservability,
): StepFunctionsTaskExecutor {
  return new StepFunctionsTaskExecutor(
    captured(obs, createAwsClient(SFNClient, aws)),
    config.childTaskStateMachineArn,
    config.childTask,
  );
}

export interface AwsChildTasks {
  names: TableNames;
  stores: DynamoStores;
  parts: ChildTaskParts;
}

/** The stores and the child-task parts on them, with the cipher and the waker the configuration names. */
export function awsChildTasks(
  config: StoresConfig & { secrets?: SecretsConfig; dispatcherFunctionName?: string },
  obs: RootObservability,
  options: {
    /** The front's calls have a client waiting on a deadline; the Lambdas' have none. */
    dynamoProfile?: "front" | "worker";
    /** Told of every store call that failed because the store is unavailable (the store-health monitor). */
    onUnavailable?: (error: StoreUnavailableError) => void;
    /**
     * The deployable wakes waves waiting in AwaitWave (task-steps and bmc-result: their roles may
     * SendTaskSuccess on the machine); the others build no Step Functions client for it.
     */
    wakesWaves?: boolean;
  } = {},
): AwsChildTasks {
  const { dynamoProfile = "worker", onUnavailable } = options;
  const aws = awsOptions(config);
  const names = tableNames(config.tablePrefix);
  const cipher = awsCipher(config.secrets, aws, obs);
  // The document client shares the captured client's middleware, so its calls are traced too.
  const stores = createDynamoStores(
    captured(obs, createDynamoDbClient({ ...aws, profile: dynamoProfile })),
    names,
    {
      ...(cipher ? { cipher: cipher.cipher } : {}),
      ...(onUnavailable === undefined ? {} : { onUnavailable }),
    },
  );
  const waker = lambdaWaker(config.dispatcherFunctionName, aws, obs);
  const waveWaker = options.wakesWaves
    ? new StepFunctionsWaveWaker(captured(obs, createAwsClient(SFNClient, aws)))
    : undefined;
  const parts = childTaskParts({
    doc: stores.doc,
    tasksTable: names.tasks,
    stores,
    firmware: new DynamoFirmwareRecorder(stores.doc, names.inventory),
    ...(cipher === undefined ? {} : { cipher }),
    clock: Date.now,
    ...(waker === undefined ? {} : { waker }),
    ...(waveWaker === undefined ? {} : { waveWaker }),
    metrics: obs.metrics,
    logger: obs.logger,
  });
  return { names, stores, parts };
}

/** The dispatch pass of the dispatcher and stream-evaluator Lambdas: one execution per claimed target. */
export function awsDispatcher(config: DispatchConfig, obs: RootObservability): Dispatcher {
  const { stores, parts } = awsChildTasks(config, obs);
  const tasks = childTaskService(parts, {
    inventory: stores.inventory,
    policy: stores.policy,
    images: stores.images,
    executor: stepFunctionsExecutor(config, awsOptions(config), obs),
    newId: randomUUID,
  });
  return createDispatcher({
    runs: stores.runs,
    submitter: tasks.submitter,
    clock: systemClock,
    logger: obs.logger,
    metrics: obs.metrics,
  });
}
