/**
 * The one place that builds AWS client configuration, so every client (DynamoDB, Step Functions,
 * IoT data plane) agrees on region, endpoint and retry policy.
 *
 * Endpoint: an explicit option wins, then `AWS_ENDPOINT_URL` (the SDK's own variable, also what the
 * local stack and LocalStack users set), else the SDK's regional default. Region: the option, then
 * `AWS_REGION`, then `us-east-1` (any region works against moto and LocalStack).
 *
 * Retries: the SDK's adaptive mode, which backs off exponentially with jitter AND rate-limits the
 * client itself after throttling errors (ProvisionedThroughputExceededException,
 * ThrottlingException, RequestLimitExceeded, 429s, 5xx). `maxAttempts` 8 means one call plus up to
 * seven retries, roughly 0.1 s … 20 s of backoff before the error surfaces. Transaction conflicts
 * (TransactionCanceledException with a TransactionConflict reason) are NOT retried by the SDK; the
 * DynamoDB adapter retries those itself (src/adapters/dynamodb/db.ts).
 */
import { DynamoDBClient, type DynamoDBClientConfig } from "@aws-sdk/client-dynamodb";

export interface AwsOptions {
  region?: string;
  /** e.g. `http://127.0.0.1:5000` for moto_server. */
  endpoint?: string;
  maxAttempts?: number;
  /** Static credentials (tests, local stack). Absent = the SDK's default provider chain. */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

export const DEFAULT_MAX_ATTEMPTS = 8;

export interface AwsClientConfig {
  region: string;
  endpoint?: string;
  maxAttempts: number;
  retryMode: "adaptive";
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

/** `env` is a parameter so tests need not touch `process.env`. */
export function awsClientConfig(
  options: AwsOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): AwsClientConfig {
  const endpoint = options.endpoint ?? nonEmpty(env.AWS_ENDPOINT_URL);
  const config: AwsClientConfig = {
    region: options.region ?? nonEmpty(env.AWS_REGION) ?? nonEmpty(env.AWS_DEFAULT_REGION) ?? "us-east-1",
    maxAttempts: options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    retryMode: "adaptive",
  };
  if (endpoint !== undefined) config.endpoint = endpoint;
  if (options.credentials !== undefined) config.credentials = options.credentials;
  else if (endpoint !== undefined && env.AWS_ACCESS_KEY_ID === undefined) {
    // A local endpoint (moto, LocalStack) accepts any credentials; without this the default
    // provider chain would look for a profile or instance metadata and fail offline.
    config.credentials = { accessKeyId: "local", secretAccessKey: "local" };
  }
  return config;
}

export function createDynamoDbClient(
  options: AwsOptions = {},
  extra: Partial<DynamoDBClientConfig> = {},
): DynamoDBClient {
  return new DynamoDBClient({ ...awsClientConfig(options), ...extra });
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}
