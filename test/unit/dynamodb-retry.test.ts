import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { DescribeTableCommand, DynamoDBClient, TransactionCanceledException } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, TransactWriteCommand } from "@aws-sdk/lib-dynamodb";
import { StandardRetryStrategy } from "@smithy/core/retry";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import {
  adaptiveRetryStrategy,
  awsClientConfig,
  createDynamoDbClient,
  dynamoDbClientConfig,
} from "../../src/adapters/aws-config.js";
import { transactWrite } from "../../src/adapters/dynamodb/db.js";

describe("aws-config: one place for region, endpoint and retries", () => {
  it("reads no environment: what the options say, placeholder credentials for an endpoint; adaptive retries, 8 attempts by default", () => {
    const saved = { ...process.env };
    Object.assign(process.env, {
      AWS_ENDPOINT_URL: "http://127.0.0.1:2",
      AWS_REGION: "ap-south-1",
      AWS_ACCESS_KEY_ID: "AKIAENV",
    });
    try {
      expect(awsClientConfig({ endpoint: "http://127.0.0.1:1" })).toEqual({
        region: "us-east-1",
        endpoint: "http://127.0.0.1:1",
        maxAttempts: 8,
        retryMode: "adaptive",
        credentials: { accessKeyId: "local", secretAccessKey: "local" },
      });
      expect(awsClientConfig({ maxAttempts: 2 })).toEqual({
        region: "us-east-1",
        maxAttempts: 2,
        retryMode: "adaptive",
      });
    } finally {
      process.env = saved;
    }
  });

  it("a region and credentials given are used; no endpoint → the SDK's regional endpoints and its default credential chain", () => {
    const credentials = { accessKeyId: "test", secretAccessKey: "test" };
    expect(awsClientConfig({ endpoint: "http://127.0.0.1:2", region: "eu-west-1", credentials })).toEqual({
      region: "eu-west-1",
      endpoint: "http://127.0.0.1:2",
      maxAttempts: 8,
      retryMode: "adaptive",
      credentials,
    });
    expect(awsClientConfig({ region: "eu-west-1" })).toEqual({
      region: "eu-west-1",
      maxAttempts: 8,
      retryMode: "adaptive",
    });
  });
});

describe("aws-config: the adaptive retry's pacing (retryDelayScale)", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("absent: no strategy of the project's, the SDK's adaptive mode; given: the SDK's adaptive strategy with the same attempts", async () => {
    expect(awsClientConfig({})).not.toHaveProperty("retryStrategy");
    const config = awsClientConfig({ maxAttempts: 5, retryDelayScale: 0.1 });
    expect(config).toMatchObject({ maxAttempts: 5, retryMode: "adaptive" });
    expect(config.retryStrategy?.mode).toBe("adaptive");
    expect(await config.retryStrategy?.maxAttemptsProvider()).toBe(5);
  });

  it("each back-off delay is the SDK's for the same jitter, times the scale: throttling's base and a transient error's, doubling per retry", async () => {
    vi.spyOn(Math, "random").mockReturnValue(0.25);
    const delays = async (strategy: StandardRetryStrategy | ReturnType<typeof adaptiveRetryStrategy>) => {
      const seen: number[] = [];
      let token = await strategy.acquireInitialRetryToken("scope");
      for (const errorType of ["THROTTLING", "THROTTLING", "TRANSIENT"] as const) {
        token = await strategy.refreshRetryTokenForRetry(token as never, { errorType });
        seen.push(
          (token as unknown as { $retryLog: { acquisitionDelay: number } }).$retryLog.acquisitionDelay,
        );
      }
      return seen;
    };
    const sdk = await delays(new StandardRetryStrategy(8));
    expect(sdk).toEqual([250, 500, 50]);
    expect(await delays(adaptiveRetryStrategy(8, 0.01))).toEqual(sdk.map((d) => Math.floor(d * 0.01)));
  });

  it("a scale outside (0, 1], or on the front profile (standard retries), is refused", () => {
    for (const scale of [0, -1, 2, Number.NaN])
      expect(() => awsClientConfig({ retryDelayScale: scale })).toThrow(
        `retryDelayScale must be in (0, 1], got ${scale}`,
      );
    expect(() => dynamoDbClientConfig("front", { retryDelayScale: 0.5 })).toThrow(
      "retryDelayScale paces the adaptive retries of the worker profile; the front profile's are standard",
    );
  });
});

describe("aws-config: DynamoDB profiles", () => {
  it("worker: the shared configuration, the SDK's own socket pool and timeouts", () => {
    expect(dynamoDbClientConfig("worker", { endpoint: "http://127.0.0.1:1" })).toEqual(
      awsClientConfig({ endpoint: "http://127.0.0.1:1" }),
    );
  });

  it("front: standard retries, 3 attempts, 256 kept-alive sockets, 2 s to connect, 15 s to answer", () => {
    const agent = { keepAlive: true, maxSockets: 256 };
    expect(dynamoDbClientConfig("front", { endpoint: "http://127.0.0.1:1" })).toEqual({
      region: "us-east-1",
      endpoint: "http://127.0.0.1:1",
      maxAttempts: 3,
      retryMode: "standard",
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
      requestHandler: {
        connectionTimeout: 2_000,
        requestTimeout: 15_000,
        throwOnRequestTimeout: true,
        httpAgent: agent,
        httpsAgent: agent,
      },
    });
  });
});

describe("SDK retries: a throttled DynamoDB call is retried with backoff", () => {
  // A real HTTP endpoint that answers with DynamoDB's throttling error `throttleFor` times, then
  // succeeds: the whole SDK path (retry strategy, error parsing) runs, nothing is mocked. The
  // worker profile's clients wait the SDK's own back-off and rate limiting once (as in
  // production: no retryDelayScale), and elsewhere on the same adaptive strategy scaled to a
  // hundredth (`retryDelayScale`, whose delays the tests above hold to the SDK's): the same
  // decisions, milliseconds of waiting instead of seconds.
  let server: Server;
  let endpoint: string;
  let requests = 0;
  let throttleFor = 0;
  let errorType = "ThrottlingException";

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        requests++;
        res.setHeader("content-type", "application/x-amz-json-1.0");
        if (requests <= throttleFor) {
          res.statusCode = 400;
          res.setHeader("x-amzn-errortype", errorType);
          res.end(
            JSON.stringify({
              __type: `com.amazonaws.dynamodb.v20120810#${errorType}`,
              message: "Rate exceeded",
            }),
          );
          return;
        }
        res.statusCode = 200;
        res.end(JSON.stringify({ Table: { TableName: "t", TableStatus: "ACTIVE" } }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    requests = 0;
  });

  const RETRY_DELAY_SCALE = 0.01;
  const client = (maxAttempts: number, retryDelayScale: number | undefined = RETRY_DELAY_SCALE) =>
    new DynamoDBClient(
      awsClientConfig({
        endpoint,
        maxAttempts,
        retryDelayScale,
        credentials: { accessKeyId: "a", secretAccessKey: "b" },
      }),
    );

  it("ThrottlingException twice, then success → the call succeeds after 3 requests", async () => {
    throttleFor = 2;
    errorType = "ThrottlingException";
    const out = await client(4).send(new DescribeTableCommand({ TableName: "t" }));
    expect(out.Table?.TableStatus).toBe("ACTIVE");
    expect(requests).toBe(3);
  });

  it("ProvisionedThroughputExceededException is retried the same way, on the SDK's own pacing (no scale)", async () => {
    throttleFor = 1;
    errorType = "ProvisionedThroughputExceededException";
    const out = await client(4, undefined).send(new DescribeTableCommand({ TableName: "t" }));
    expect(out.Table?.TableName).toBe("t");
    expect(requests).toBe(2);
  });

  it("the front profile's client gives up after its 3 attempts", async () => {
    throttleFor = 100;
    errorType = "ThrottlingException";
    const front = createDynamoDbClient({
      endpoint,
      profile: "front",
      credentials: { accessKeyId: "a", secretAccessKey: "b" },
    });
    const error = await front.send(new DescribeTableCommand({ TableName: "t" })).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "ThrottlingException", $metadata: { attempts: 3 } });
    expect(requests).toBe(3);
    front.destroy();
  });

  it("throttled on every attempt → after maxAttempts the typed error surfaces with its name", async () => {
    throttleFor = 100;
    errorType = "ProvisionedThroughputExceededException";
    const error = await client(3)
      .send(new DescribeTableCommand({ TableName: "t" }))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({
      name: "ProvisionedThroughputExceededException",
      $metadata: { attempts: 3 },
    });
    expect(requests).toBe(3);
  });
});

describe("transactWrite: transaction conflicts are retried, condition failures are answers", () => {
  const doc = DynamoDBDocumentClient.from(new DynamoDBClient({ region: "us-east-1" }));
  const mock = mockClient(doc);
  beforeEach(() => mock.reset());

  const cancelled = (...codes: string[]) =>
    new TransactionCanceledException({
      message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${codes.join(", ")}]`,
      $metadata: {},
      CancellationReasons: codes.map((Code) => ({ Code })),
    });

  it("TransactionConflict twice, then commit → committed after 3 sends", async () => {
    mock
      .on(TransactWriteCommand)
      .rejectsOnce(cancelled("TransactionConflict", "None"))
      .rejectsOnce(cancelled("None", "TransactionConflict"))
      .resolves({});
    expect(await transactWrite(doc, { TransactItems: [] })).toBeUndefined();
    expect(mock.commandCalls(TransactWriteCommand)).toHaveLength(3);
  });

  it("a failed condition is returned as per-item codes on the first send, not retried", async () => {
    mock.on(TransactWriteCommand).rejects(cancelled("None", "ConditionalCheckFailed"));
    expect(await transactWrite(doc, { TransactItems: [] })).toEqual(["None", "ConditionalCheckFailed"]);
    expect(mock.commandCalls(TransactWriteCommand)).toHaveLength(1);
  });

  it("conflicts that never clear → the TransactionCanceledException surfaces after the retries", async () => {
    mock.on(TransactWriteCommand).rejects(cancelled("TransactionConflict"));
    await expect(transactWrite(doc, { TransactItems: [] }, 2)).rejects.toMatchObject({
      name: "TransactionCanceledException",
    });
    expect(mock.commandCalls(TransactWriteCommand)).toHaveLength(3);
  });

  it("an unexpected error is thrown as is", async () => {
    mock.on(TransactWriteCommand).rejects(new Error("socket hang up"));
    await expect(transactWrite(doc, { TransactItems: [] })).rejects.toThrow("socket hang up");
  });
});
