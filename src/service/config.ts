/**
 * The configuration of every deployable, read once at start from the environment by its
 * composition root, validated, frozen (src/service/env-reader.ts); every error names the variable
 * and the rule, all problems at once:
 *
 *   FLOW_TABLE_PREFIX: is required; FLOW_PORT: must be an integer from 0 to 65535 (got "abc")
 *
 * `ENV` is the one list of names: the CDK app sets function and task environments from it
 * (infra/constructs/functions.ts, front-service.ts), the readers read from it, and the local stack's reader
 * (local/config.ts) reuses the names it shares. The Lambdas' readers are below; the gRPC front's
 * is in src/service/config-front.ts, on the rules and settings exported here. test/unit/infra-env.test.ts checks that every
 * variable the stack sets on a deployable is one its reader reads, and that every variable a
 * reader requires is set.
 */

import { TABLES } from "../adapters/dynamodb/schema.js";
import {
  DEFAULT_CHILD_TASK_SETTINGS,
  DEPLOYMENT_SETTING_BOUNDS,
  type DeploymentChildTaskSettings,
} from "../app/child-task/settings.js";
import { type ExternalCheckConfig, parseExternalChecks } from "../domain/external-check.js";
import {
  boolean,
  configReader,
  hexKey,
  httpUrl,
  integerFrom,
  matching,
  optional,
  type Rule,
  required,
  type Setting,
  text,
  withDefault,
} from "./env-reader.js";

export const ENV = {
  /** DynamoDB table-name prefix; table names are `${prefix}${logicalName}` (see adapters/dynamodb/schema.ts). */
  tablePrefix: "FLOW_TABLE_PREFIX",
  /** ARN of the child-task state machine (Step Functions Standard). */
  childTaskStateMachineArn: "FLOW_CHILD_TASK_STATE_MACHINE_ARN",
  /** Name of the dispatcher Lambda, invoked asynchronously to wake a run when a slot frees. */
  dispatcherFunctionName: "FLOW_DISPATCHER_FUNCTION_NAME",
  /** The account's IoT data-plane endpoint (https://xxxx-ats.iot.<region>.amazonaws.com). */
  iotDataEndpoint: "FLOW_IOT_DATA_ENDPOINT",
  /** The firmware image catalog's S3 bucket (image bytes; the records are in the Inventory table). */
  imageBucket: "FLOW_IMAGE_BUCKET",
  /** KMS key used to encrypt firmware credentials at rest (a data key per value). */
  secretsKmsKeyId: "FLOW_SECRETS_KMS_KEY_ID",
  /** Off AWS only: a 32-byte hex key for AES-256-GCM instead of KMS. */
  localSecretsKeyHex: "FLOW_LOCAL_SECRETS_KEY",
  /**
   * The front's KMS HMAC key (HMAC_256, GENERATE_VERIFY_MAC): an idempotent create's credentials
   * are remembered by their MAC under it (src/adapters/kms/request-mac.ts). Required beside
   * FLOW_SECRETS_KMS_KEY_ID; off AWS the MAC key is derived from FLOW_LOCAL_SECRETS_KEY instead.
   */
  requestMacKmsKeyId: "FLOW_REQUEST_MAC_KMS_KEY_ID",
  /** gRPC listen port (the local stack also takes --port). */
  port: "FLOW_PORT",
  /** gRPC listen address; the container listens on 0.0.0.0 (default 127.0.0.1). */
  host: "FLOW_HOST",
  /**
   * `true` lets the server speak plaintext on a non-loopback address: only behind a load balancer
   * that terminates TLS and reaches the task inside the VPC (the Fargate front).
   */
  plaintextBehindLoadBalancer: "FLOW_PLAINTEXT_BEHIND_LB",
  /**
   * `true`: the front serves TLS with a key and self-signed certificate it makes at start
   * (src/adapters/grpc/self-signed.ts), for the load balancer's hop to the task (the Fargate
   * front; an ALB does not verify a target's certificate). Exclusive with FLOW_TLS_CERT.
   */
  tlsSelfSigned: "FLOW_TLS_SELF_SIGNED",
  /** Where the .proto files live, for server reflection (the container ships them in /app/proto). */
  protoDir: "FLOW_PROTO_DIR",
  /**
   * `true` serves gRPC server reflection on the front (it lists every service, the admin service
   * included, to any client that connects). Default false: off in AWS unless the CDK app's context
   * `serverReflection=true` turns it on; the local stack always serves it.
   */
  serverReflection: "FLOW_SERVER_REFLECTION",
  /**
   * `true`: every BMC command is published on the v1–v3 per-component topic too, beside its rack's
   * (src/domain/bmc-topics.ts), for BMCs not yet on a rack-scoped agent. Default false.
   */
  legacyBmcTopics: "FLOW_LEGACY_BMC_TOPICS",
  /** Any AWS-compatible endpoint (moto, LocalStack); unset in AWS. */
  awsEndpoint: "AWS_ENDPOINT_URL",
  /** The region of every AWS client (Lambda and ECS set it); default us-east-1. */
  awsRegion: "AWS_REGION",
  /** TLS for the gRPC server: PEM file paths; a client CA switches on mutual TLS. */
  tlsCert: "FLOW_TLS_CERT",
  tlsKey: "FLOW_TLS_KEY",
  tlsClientCa: "FLOW_TLS_CLIENT_CA",
  /**
   * Admission control of the gRPC front (src/adapters/grpc/admission.ts): calls in progress at
   * once, every method; and calls that plan runs (CreateOperationRun, PlanOperationRun,
   * UpgradeFirmware) in progress at once. More is answered RESOURCE_EXHAUSTED, not queued.
   */
  maxInFlightCalls: "FLOW_MAX_IN_FLIGHT_CALLS",
  maxConcurrentCreates: "FLOW_MAX_CONCURRENT_CREATES",
  /**
   * `true`: the caller of a run change may be the client certificate the load balancer forwards
   * (ALB mTLS verify mode). Only with FLOW_PLAINTEXT_BEHIND_LB: the front must be reachable
   * through that load balancer alone (src/adapters/grpc/caller-identity.ts).
   */
  trustLoadBalancerClientCert: "FLOW_TRUST_LB_CLIENT_CERT",
  /**
   * The access policy file (YAML or JSON: who may do what, src/domain/access-policy.ts). The
   * front on Fargate refuses to start without one; the local stack runs open without one.
   */
  authzPolicy: "FLOW_AUTHZ_POLICY",
  /**
   * The access policy document itself, instead of a file (a container run by hand); it never
   * changes while the process runs.
   */
  authzPolicyText: "FLOW_AUTHZ_POLICY_TEXT",
  /**
   * The SSM parameter holding the access policy document: what the CDK app sets on the Fargate
   * front (src/adapters/ssm/access-policy-parameter.ts). Read at start (unreadable: the front does
   * not start), then polled every FLOW_AUTHZ_POLICY_POLL_SECONDS; a new version is in force
   * without a restart.
   */
  authzPolicyParameter: "FLOW_AUTHZ_POLICY_PARAMETER",
  /** How often the front looks for a changed policy (parameter or file), in seconds: 5 to 3600, default 30. */
  authzPolicyPollSeconds: "FLOW_AUTHZ_POLICY_POLL_SECONDS",
  /** The EventBridge bus run events are published to (name or ARN); default: the account's `default`. */
  eventBusName: "FLOW_EVENT_BUS_NAME",
  /**
   * The child task's deployment settings, carried in each execution's input by whoever starts it
   * (the dispatcher, the front): components flashed at once when a rule's stage says 0, the update's
   * and the preflight's deadlines, and how long the preflight waits for components that are not
   * ready (a rule's own values win). Bounds: DEPLOYMENT_SETTING_BOUNDS.
   */
  childTaskMaxParallel: "FLOW_CHILD_TASK_MAX_PARALLEL",
  updateTimeoutSeconds: "FLOW_UPDATE_TIMEOUT_SECONDS",
  preflightTimeoutSeconds: "FLOW_PREFLIGHT_TIMEOUT_SECONDS",
  readinessTimeoutSeconds: "FLOW_READINESS_TIMEOUT_SECONDS",
  /** Build facts reported by the Version RPC. */
  version: "FLOW_VERSION",
  gitCommit: "FLOW_GIT_COMMIT",
  buildTime: "FLOW_BUILD_TIME",
  /**
   * The external health checks a rule's CHECK_HEALTH may name, as JSON by name, each a `lambda`
   * ARN or an `https` URL, with `timeoutSeconds` (src/domain/external-check.ts). The front reads
   * the names (rules naming another are refused), task-steps hands racks to them.
   */
  externalChecks: "FLOW_EXTERNAL_CHECKS",
} as const;

export type EnvName = (typeof ENV)[keyof typeof ENV];

/** The variable of each child-task deployment setting. */
export const CHILD_TASK_ENV: Readonly<Record<keyof DeploymentChildTaskSettings, EnvName>> = {
  maxParallel: ENV.childTaskMaxParallel,
  updateTimeoutSeconds: ENV.updateTimeoutSeconds,
  preflightTimeoutSeconds: ENV.preflightTimeoutSeconds,
  readinessTimeoutSeconds: ENV.readinessTimeoutSeconds,
};

/**
 * Set on every deployable so that its configuration shows which build it runs. Only the front
 * reads them (the Version RPC); the Lambdas carry them for the operator and read them not.
 */
export const BUILD_FACTS: readonly EnvName[] = [ENV.version, ENV.gitCommit, ENV.buildTime];

// ---- rules of the product's own values (those exported: the front's reader uses them too)

/** DynamoDB allows 3–255 characters of [A-Za-z0-9_.-] in a table name; the prefix leaves room for the longest logical name. */
const MAX_PREFIX = 255 - Math.max(...TABLES.map((t) => t.logicalName.length));
const tablePrefix = matching(
  new RegExp(`^[A-Za-z0-9_.-]{1,${MAX_PREFIX}}$`),
  `at most ${MAX_PREFIX} letters, digits, "_", "-" or "."`,
);
export const stateMachineArn = matching(
  /^arn:aws[a-z-]*:states:[a-z0-9-]+:\d{12}:stateMachine:[A-Za-z0-9_-]{1,80}$/,
  "a state machine ARN (arn:aws:states:<region>:<account>:stateMachine:<name>)",
);
const functionName = matching(
  /^([A-Za-z0-9_-]{1,64}|arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9_$-]+)?)$/,
  "a Lambda function name or ARN",
);
export const bucketName = matching(
  /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/,
  "an S3 bucket name (3-63 lowercase letters, digits, '.' or '-')",
);
const localSecretsKey = hexKey(32);
/** The deployment's external health checks; a command check is the local stack's alone. */
export const externalChecks: Rule<ExternalCheckConfig[]> = (t) => parseExternalChecks(t, false);

// ---- settings shared by the readers (the front's too: src/service/config-front.ts)

/** An AWS region name: `us-east-1`, `eu-west-1`, `us-gov-west-1`, `cn-north-1`. */
const awsRegion = matching(/^[a-z]{2}(-[a-z]+)+-\d{1,2}$/, "an AWS region name such as eu-west-1");
/** Where the AWS clients go: the region's endpoints, or one AWS-compatible endpoint. */
const AWS = {
  awsEndpoint: optional(ENV.awsEndpoint, httpUrl),
  awsRegion: optional(ENV.awsRegion, awsRegion),
};

export const STORES = {
  tablePrefix: required(ENV.tablePrefix, tablePrefix),
  ...AWS,
};
export const SECRETS = {
  secretsKmsKeyId: optional(ENV.secretsKmsKeyId, text),
  localSecretsKeyHex: optional(ENV.localSecretsKeyHex, localSecretsKey),
};

/** Where the AWS clients go: `awsEndpoint` absent in AWS (the region's endpoints). */
export interface AwsConfig {
  awsEndpoint?: string;
  awsRegion?: string;
}

/** Where the tables are. */
export interface StoresConfig extends AwsConfig {
  tablePrefix: string;
}

/**
 * How firmware credentials are sealed: KMS envelope encryption in AWS; off AWS (LocalStack, moto)
 * a local AES-256-GCM key. KMS wins when both are set. Absent: a task with credentials is refused.
 */
export type SecretsConfig =
  | { kind: "kms"; keyId: string }
  | { kind: "local-aes-256-gcm"; keyHex: string }
  | undefined;

export function secrets(values: {
  secretsKmsKeyId: string | undefined;
  localSecretsKeyHex: string | undefined;
}) {
  if (values.secretsKmsKeyId !== undefined) return { kind: "kms", keyId: values.secretsKmsKeyId } as const;
  if (values.localSecretsKeyHex !== undefined) {
    return { kind: "local-aes-256-gcm", keyHex: values.localSecretsKeyHex } as const;
  }
  return undefined;
}

function aws(values: { awsEndpoint: string | undefined; awsRegion: string | undefined }): AwsConfig {
  return {
    ...(values.awsEndpoint === undefined ? {} : { awsEndpoint: values.awsEndpoint }),
    ...(values.awsRegion === undefined ? {} : { awsRegion: values.awsRegion }),
  };
}

export function stores(values: {
  tablePrefix: string;
  awsEndpoint: string | undefined;
  awsRegion: string | undefined;
}): StoresConfig {
  return { tablePrefix: values.tablePrefix, ...aws(values) };
}

/** The child task's deployment settings (defaults: DEFAULT_CHILD_TASK_SETTINGS). */
export const CHILD_TASK = Object.fromEntries(
  (Object.keys(CHILD_TASK_ENV) as (keyof DeploymentChildTaskSettings)[]).map((key) => {
    const [min, max] = DEPLOYMENT_SETTING_BOUNDS[key];
    return [key, withDefault(CHILD_TASK_ENV[key], integerFrom(min, max), DEFAULT_CHILD_TASK_SETTINGS[key])];
  }),
) as { [K in keyof DeploymentChildTaskSettings]: Setting<number> };

export function childTask(v: DeploymentChildTaskSettings): DeploymentChildTaskSettings {
  return {
    maxParallel: v.maxParallel,
    updateTimeoutSeconds: v.updateTimeoutSeconds,
    preflightTimeoutSeconds: v.preflightTimeoutSeconds,
    readinessTimeoutSeconds: v.readinessTimeoutSeconds,
  };
}

// ---- one reader per Lambda deployable

export interface DispatchConfig extends StoresConfig {
  /** The child-task submitter starts one execution of it per claimed target. */
  childTaskStateMachineArn: string;
  /** What each execution it starts is told (its input's settings). */
  childTask: DeploymentChildTaskSettings;
}

/** The dispatcher and stream-evaluator Lambdas: the same dispatch pass, woken two ways. */
export const readDispatchConfig = configReader(
  {
    ...STORES,
    childTaskStateMachineArn: required(ENV.childTaskStateMachineArn, stateMachineArn),
    ...CHILD_TASK,
  },
  (v): DispatchConfig => ({
    ...stores(v),
    childTaskStateMachineArn: v.childTaskStateMachineArn,
    childTask: childTask(v),
  }),
);

export interface TaskStepsConfig extends StoresConfig {
  /** Where BMC commands are published. */
  iotDataEndpoint: string;
  /** Where the images are: each update command carries a presigned GET of its image. */
  imageBucket: string;
  secrets: SecretsConfig;
  /** Recording a run child's outcome wakes the dispatcher Lambda for the run; absent: the stream alone does. */
  dispatcherFunctionName?: string;
  /** The external health checks CHECK_HEALTH steps hand racks to (none by default). */
  externalChecks: ExternalCheckConfig[];
  /** Also publish on the v1–v3 per-component topics (ENV.legacyBmcTopics). */
  legacyBmcTopics: boolean;
}

export const readTaskStepsConfig = configReader(
  {
    ...STORES,
    iotDataEndpoint: required(ENV.iotDataEndpoint, httpUrl),
    imageBucket: required(ENV.imageBucket, bucketName),
    ...SECRETS,
    dispatcherFunctionName: optional(ENV.dispatcherFunctionName, functionName),
    externalChecks: withDefault(ENV.externalChecks, externalChecks, []),
    legacyBmcTopics: withDefault(ENV.legacyBmcTopics, boolean, false),
  },
  (v): TaskStepsConfig => ({
    ...stores(v),
    iotDataEndpoint: v.iotDataEndpoint,
    imageBucket: v.imageBucket,
    secrets: secrets(v),
    ...(v.dispatcherFunctionName === undefined ? {} : { dispatcherFunctionName: v.dispatcherFunctionName }),
    externalChecks: v.externalChecks,
    legacyBmcTopics: v.legacyBmcTopics,
  }),
);

export interface BmcResultConfig extends StoresConfig {
  dispatcherFunctionName?: string;
}

/** BMC reports and execution endings need the tables alone (and, optionally, the wake-up). */
export const readBmcResultConfig = configReader(
  { ...STORES, dispatcherFunctionName: optional(ENV.dispatcherFunctionName, functionName) },
  (v): BmcResultConfig => ({
    ...stores(v),
    ...(v.dispatcherFunctionName === undefined ? {} : { dispatcherFunctionName: v.dispatcherFunctionName }),
  }),
);

/** An EventBridge bus name (1-256 of [A-Za-z0-9._-/]) or a bus ARN. */
const eventBusName = matching(
  /^([A-Za-z0-9._\-/]{1,256}|arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:event-bus\/[A-Za-z0-9._\-/]{1,256})$/,
  "an EventBridge bus name or ARN",
);

export interface EventPublisherConfig extends AwsConfig {
  eventBusName: string;
}

/** The event publisher reads the RunEvents stream (its event, not a table) and writes to one bus. */
export const readEventPublisherConfig = configReader(
  {
    ...AWS,
    eventBusName: withDefault(ENV.eventBusName, eventBusName, "default"),
  },
  (v): EventPublisherConfig => ({ ...aws(v), eventBusName: v.eventBusName }),
);
