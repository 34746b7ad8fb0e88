/**
 * The one place that builds AWS client configuration, so every client (DynamoDB, Step Functions,
 * IoT data plane) agrees on region, endpoint and retry policy.
 *
 * It reads no environment: each deployable's validated configuration (src/service/config.ts, config-front.ts)
 * gives the endpoint (`AWS_ENDPOINT_URL`: an AWS-compatible endpoint such as moto or LocalStack;
 * absent in AWS, the region's endpoints) and the region (`AWS_REGION`, else `us-east-1`: any
 * region works against moto and LocalStack). With an endpoint and no credentials given, the
 * clients sign with placeholder credentials, which such endpoints accept; without one, the SDK's
 * default provider chain finds the role's (Lambda, ECS).
 *
 * Retries: the SDK's adaptive mode, which backs off exponentially with jitter AND rate-limits the
 * client itself after throttling errors (ProvisionedThroughputExceededException,
 * ThrottlingException, RequestLimitExceeded, 429s, 5xx). `maxAttempts` 8 means one call plus up to
 * seven retries, roughly 0.1 s … 20 s of backoff before the error surfaces. Transaction conflicts
 * (TransactionCanceledException with a TransactionConflict reason) are NOT retried by the SDK; the
 * DynamoDB adapter retries those itself (src/adapters/dynamodb/db.ts).
 *
 * DynamoDB clients come in two profiles, because their callers wait differently:
 *
 *   worker  the Lambdas, the local dispatcher and child tasks: nobody waits on a call, every write
 *           is idempotent, one event is handled at a time. The retries above, the SDK's socket
 *           pool (50, more than a dispatch pass uses) and its timeouts.
 *   front   the gRPC front: a client waits, with a deadline, and admission control
 *           (src/adapters/grpc/admission.ts) is the one queue. So:
 *           - `standard` retries, 3 attempts: exponential backoff with full jitter, under a retry
 *             quota; at most a few hundred ms of backoff, so a throttled or failing store shows
 *             within the call's deadline instead of behind it. Adaptive mode would instead hold
 *             admitted calls in its client-side rate limiter: a queue the admission limits cannot
 *             see. A failed call is the client's to retry (flowctl does, with backoff).
 *           - 256 sockets, kept alive: more than the admitted work uses at once (64 calls; a
 *             create's lookups run at most 8 at a time per kind of reference), so no request
 *             waits for a socket; the SDK's default 50 queued 150 requests behind 50 sockets in
 *             the trial.
 *           - connect within 2 s (a regional endpoint answers in milliseconds; longer is a dead
 *             endpoint or network), answer within 15 s, else the attempt fails and is retried:
 *             a stuck socket releases its call's admission slot instead of holding it for the
 *             SDK's default 300 s.
 *
 * Request CPU (bench/sdk-request.ts measures it per request, against the same configuration without
 * this setting): the clients no document client wraps (Step Functions: heartbeats, wake-ups,
 * executions) resolve their middleware stack once per kind of command (`awsServiceClientConfig`).
 * It changes no request on the wire.
 */
import { DynamoDBClient, type DynamoDBClientConfig } from "@aws-sdk/client-dynamodb";
import { AdaptiveRetryStrategy, DefaultRateLimiter, MAXIMUM_RETRY_DELAY, Retry } from "@smithy/core/retry";

type Backoff = NonNullable<NonNullable<ConstructorParameters<typeof AdaptiveRetryStrategy>[1]>["backoff"]>;

export interface AwsOptions {
  region?: string;
  /** e.g. `http://127.0.0.1:5000` for moto_server. */
  endpoint?: string;
  maxAttempts?: number;
  /** Static credentials (tests, local stack). Absent = the SDK's default provider chain. */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /**
   * The adaptive retry's pacing, for tests that run it on short delays: every back-off delay is
   * multiplied by it and the client-side rate limiter recovers 1/scale times as fast (see
   * `adaptiveRetryStrategy`). Absent: the SDK's own pacing, unchanged.
   */
  retryDelayScale?: number;
}

export const DEFAULT_MAX_ATTEMPTS = 8;

export interface AwsClientConfig {
  region: string;
  endpoint?: string;
  maxAttempts: number;
  retryMode: "adaptive";
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** Only with `retryDelayScale`: the SDK's adaptive strategy on scaled delays. */
  retryStrategy?: AdaptiveRetryStrategy;
}

export const DEFAULT_REGION = "us-east-1";

/** What an AWS-compatible endpoint is signed with when no credentials are given. */
const LOCAL_ENDPOINT_CREDENTIALS = { accessKeyId: "local", secretAccessKey: "local" };

export function awsClientConfig(options: AwsOptions = {}): AwsClientConfig {
  const config: AwsClientConfig = {
    region: options.region ?? DEFAULT_REGION,
    maxAttempts: options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    retryMode: "adaptive",
  };
  if (options.endpoint !== undefined) config.endpoint = options.endpoint;
  const credentials =
    options.credentials ?? (options.endpoint === undefined ? undefined : LOCAL_ENDPOINT_CREDENTIALS);
  if (credentials !== undefined) config.credentials = credentials;
  if (options.retryDelayScale !== undefined)
    config.retryStrategy = adaptiveRetryStrategy(config.maxAttempts, options.retryDelayScale);
  return config;
}

/** The SDK's rate-limiter defaults (DefaultRateLimiter): its slowest refill, in tokens per second, and its cubic recovery's constant. */
const SDK_MIN_FILL_RATE = 0.5;
const SDK_SCALE_CONSTANT = 0.4;

/**
 * The SDK's adaptive retry strategy (what `retryMode: "adaptive"` builds) with its time scaled by
 * `scale` (0 < scale <= 1): the exponential back-off with full jitter waits `scale` times as long
 * (same base delays, throttling's the longer one, same cap, scaled), and the rate limiter that
 * throttling switches on refills at least 1/scale times as fast and its cubic recovery runs
 * 1/scale times as fast. The decisions - which errors are retried, how many attempts, the retry
 * quota, when the limiter engages - are the SDK's own.
 */
export function adaptiveRetryStrategy(maxAttempts: number, scale: number): AdaptiveRetryStrategy {
  if (!(scale > 0 && scale <= 1)) throw new RangeError(`retryDelayScale must be in (0, 1], got ${scale}`);
  const speed = 1 / scale;
  return new AdaptiveRetryStrategy(maxAttempts, {
    maxAttempts,
    baseDelay: Retry.delay(),
    backoff: scaledBackoff(scale),
    rateLimiter: new DefaultRateLimiter({
      minFillRate: SDK_MIN_FILL_RATE * speed,
      scaleConstant: SDK_SCALE_CONSTANT * speed ** 3,
    }),
  });
}

/** Exponential back-off with full jitter on a base the strategy sets per error kind, scaled. */
function scaledBackoff(scale: number): Backoff {
  let base = Retry.delay();
  return {
    setDelayBase: (delay: number) => {
      base = delay;
    },
    computeNextBackoffDelay: (retry: number) =>
      Math.floor(Math.random() * Math.min(base * 2 ** retry, MAXIMUM_RETRY_DELAY) * scale),
  };
}

export type DynamoDbProfile = "front" | "worker";

export const FRONT_DYNAMODB = {
  maxAttempts: 3,
  retryMode: "standard",
  maxSockets: 256,
  connectionTimeoutMs: 2_000,
  requestTimeoutMs: 15_000,
} as const;

/** The client configuration of a profile (see the file comment). */
export function dynamoDbClientConfig(
  profile: DynamoDbProfile,
  options: AwsOptions = {},
): DynamoDBClientConfig {
  if (profile === "worker") return awsClientConfig(options);
  if (options.retryDelayScale !== undefined)
    throw new RangeError(
      "retryDelayScale paces the adaptive retries of the worker profile; the front profile's are standard",
    );
  const agent = { keepAlive: true, maxSockets: FRONT_DYNAMODB.maxSockets };
  return {
    ...awsClientConfig({ maxAttempts: FRONT_DYNAMODB.maxAttempts, ...options }),
    retryMode: FRONT_DYNAMODB.retryMode,
    requestHandler: {
      connectionTimeout: FRONT_DYNAMODB.connectionTimeoutMs,
      requestTimeout: FRONT_DYNAMODB.requestTimeoutMs,
      throwOnRequestTimeout: true,
      httpAgent: agent,
      httpsAgent: agent,
    },
  };
}

/**
 * The configuration of a client that no DynamoDB document client wraps: the shared one, and the
 * SDK's `cacheMiddleware`, so the client resolves its middleware stack (some fifteen middlewares,
 * ordered and wrapped) once per kind of command instead of on every send. The SDK documents the one
 * limit: middleware added after the first send is not used. Every client of the product gets its
 * middleware (X-Ray's capture) when it is built, before its first send. Not for DynamoDB clients:
 * the document client keeps per-command state in its handler and refuses the setting.
 */
export function awsServiceClientConfig(
  options: AwsOptions = {},
): AwsClientConfig & { cacheMiddleware: true } {
  return { ...awsClientConfig(options), cacheMiddleware: true };
}

/** A client no document client wraps (Step Functions, KMS, Lambda, SSM, EventBridge), built with the settings above. */
export function createAwsClient<C>(
  Client: new (config: AwsClientConfig & { cacheMiddleware: true }) => C,
  options: AwsOptions = {},
): C {
  return new Client(awsServiceClientConfig(options));
}

export function createDynamoDbClient(
  options: AwsOptions & { profile?: DynamoDbProfile } = {},
  extra: Partial<DynamoDBClientConfig> = {},
): DynamoDBClient {
  const { profile = "worker", ...aws } = options;
  return new DynamoDBClient({ ...dynamoDbClientConfig(profile, aws), ...extra });
}
