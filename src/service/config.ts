/**
 * Service configuration, read once at start from the environment, validated, failing fast with the
 * variable's name in the message (Powertools' getStringFromEnv). The core receives plain values.
 *
 * The CDK app sets these on every Lambda and on the Fargate task; the local stack sets them for
 * itself. `ENV` lists every name so the CDK app and the local stack cannot drift.
 */
export const ENV = {
  /** DynamoDB table-name prefix; table names are `${prefix}${logicalName}` (see adapters/dynamodb/schema.ts). */
  tablePrefix: "FLOW_TABLE_PREFIX",
  /** ARN of the child-task state machine (Step Functions Standard). */
  childTaskStateMachineArn: "FLOW_CHILD_TASK_STATE_MACHINE_ARN",
  /** Name of the dispatcher Lambda, invoked asynchronously to wake a run when a slot frees. */
  dispatcherFunctionName: "FLOW_DISPATCHER_FUNCTION_NAME",
  /** The account's IoT data-plane endpoint (https://xxxx-ats.iot.<region>.amazonaws.com). */
  iotDataEndpoint: "FLOW_IOT_DATA_ENDPOINT",
  /** KMS key used to encrypt firmware credentials at rest (a data key per value). */
  secretsKmsKeyId: "FLOW_SECRETS_KMS_KEY_ID",
  /** Local only: a 32-byte hex key for AES-256-GCM instead of KMS. */
  localSecretsKeyHex: "FLOW_LOCAL_SECRETS_KEY",
  /** gRPC listen port (the local stack also takes --port). */
  port: "FLOW_PORT",
  /** gRPC listen address; the container listens on 0.0.0.0 (default 127.0.0.1). */
  host: "FLOW_HOST",
  /**
   * `true` lets the server speak plaintext on a non-loopback address: only behind a load balancer
   * that terminates TLS and reaches the task inside the VPC (the Fargate front).
   */
  plaintextBehindLoadBalancer: "FLOW_PLAINTEXT_BEHIND_LB",
  /** Where the .proto files live, for server reflection (the container ships them in /app/proto). */
  protoDir: "FLOW_PROTO_DIR",
  /** Dispatcher tick, e.g. `10s`. */
  tick: "FLOW_TICK",
  /** Any AWS-compatible endpoint (moto, LocalStack); unset in AWS. */
  awsEndpoint: "AWS_ENDPOINT_URL",
  /** TLS for the gRPC server: PEM file paths; a client CA switches on mutual TLS. */
  tlsCert: "FLOW_TLS_CERT",
  tlsKey: "FLOW_TLS_KEY",
  tlsClientCa: "FLOW_TLS_CLIENT_CA",
  /** Build facts reported by the Version RPC. */
  version: "FLOW_VERSION",
  gitCommit: "FLOW_GIT_COMMIT",
  buildTime: "FLOW_BUILD_TIME",
} as const;

export type EnvName = (typeof ENV)[keyof typeof ENV];

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

type Env = Record<string, string | undefined>;

export function requireEnv(env: Env, name: EnvName): string {
  const value = env[name]?.trim();
  if (!value) throw new ConfigError(`environment variable ${name} is required`);
  return value;
}

export function optionalEnv(env: Env, name: EnvName): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}
