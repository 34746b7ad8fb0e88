import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import { SendTaskHeartbeatCommand, SFNClient } from "@aws-sdk/client-sfn";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import {
  awsClientConfig,
  awsServiceClientConfig,
  createAwsClient,
  createDynamoDbClient,
  dynamoDbClientConfig,
} from "../../src/adapters/aws-config.js";
import { documentClient } from "../../src/adapters/dynamodb/db.js";

// A real HTTP endpoint answering every request with an empty JSON object (a valid GetItem and
// SendTaskHeartbeat answer) and recording what each request carried: the SDK's whole path runs.
describe("aws-config: what a client computes once instead of on every request", () => {
  let server: Server;
  let endpoint: string;
  let received: { headers: IncomingHttpHeaders; body: string }[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
        res.setHeader("content-type", "application/x-amz-json-1.0");
        res.end("{}");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    received = [];
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  const getItem = (sk: string) =>
    new GetItemCommand({ TableName: "t", Key: { pk: { S: "p" }, sk: { S: sk } } });
  /** The SDK's own user-agent sections for a client, counting how often they are asked for. */
  const countedUserAgent = () => {
    const sdk = new DynamoDBClient(awsClientConfig({ endpoint })).config.defaultUserAgentProvider;
    const counted = {
      calls: 0,
      provider: () => {
        counted.calls += 1;
        return sdk();
      },
    };
    return counted;
  };

  it("createDynamoDbClient asks for the user agent's sections once over three requests, and sends the SDK's own user-agent headers", async () => {
    const counted = countedUserAgent();
    const client = createDynamoDbClient({ endpoint }, { defaultUserAgentProvider: counted.provider });
    for (const sk of ["a", "b", "c"]) await client.send(getItem(sk));
    expect(counted.calls).toBe(1);

    // The same requests from the client as the SDK configures it: the same two headers, to the byte.
    const product = createDynamoDbClient({ endpoint });
    const sdk = new DynamoDBClient(dynamoDbClientConfig("worker", { endpoint }));
    received = [];
    await product.send(getItem("a"));
    await product.send(getItem("b"));
    await sdk.send(getItem("a"));
    await sdk.send(getItem("b"));
    const [, productSecond, , sdkSecond] = received;
    expect(productSecond?.headers["user-agent"]).toMatch(
      /^aws-sdk-js\/\S+ ua\/2\.1 os\/\S+ lang\/js md\/nodejs#\S+ /,
    );
    expect(productSecond?.headers["user-agent"]).toBe(sdkSecond?.headers["user-agent"]);
    expect(productSecond?.headers["x-amz-user-agent"]).toBe(sdkSecond?.headers["x-amz-user-agent"]);
  });

  it("the user agent's sections asked for again after the provider failed: the failed request fails, the next one is sent", async () => {
    const counted = countedUserAgent();
    let failures = 1;
    const client = createDynamoDbClient(
      { endpoint },
      {
        defaultUserAgentProvider: () =>
          failures-- > 0 ? Promise.reject(new Error("no user agent")) : counted.provider(),
      },
    );
    await expect(client.send(getItem("a"))).rejects.toThrow("no user agent");
    await client.send(getItem("b"));
    await client.send(getItem("c"));
    expect(counted.calls).toBe(1);
    expect(received.map((r) => JSON.parse(r.body).Key.sk.S)).toEqual(["b", "c"]);
  });

  it("createAwsClient(SFNClient) resolves the middleware once per kind of command; each request still carries its own input", async () => {
    const resolved = vi.spyOn(SendTaskHeartbeatCommand.prototype, "resolveMiddleware");
    const sfn = createAwsClient(SFNClient, { endpoint });
    expect(sfn.config.cacheMiddleware).toBe(true);
    for (const token of ["token-1", "token-2", "token-3"])
      await sfn.send(new SendTaskHeartbeatCommand({ taskToken: token }));
    expect(resolved).toHaveBeenCalledTimes(1);
    expect(received.map((r) => JSON.parse(r.body).taskToken)).toEqual(["token-1", "token-2", "token-3"]);
    expect(received.map((r) => r.headers["x-amz-target"])).toEqual(
      Array(3).fill("AWSStepFunctions.SendTaskHeartbeat"),
    );
  });

  it("createAwsClient asks for the user agent's sections once over three requests", async () => {
    const counted = countedUserAgent();
    const Counted = class extends SFNClient {
      constructor(config: ConstructorParameters<typeof SFNClient>[0]) {
        super({ ...config, defaultUserAgentProvider: counted.provider });
      }
    };
    const sfn = createAwsClient(Counted, { endpoint });
    for (const token of ["a", "b", "c"]) await sfn.send(new SendTaskHeartbeatCommand({ taskToken: token }));
    expect(counted.calls).toBe(1);
  });

  it("the DynamoDB clients keep cacheMiddleware off: the stores' document client refuses it", () => {
    expect(createDynamoDbClient({ endpoint }).config.cacheMiddleware).toBeUndefined();
    expect(createDynamoDbClient({ endpoint, profile: "front" }).config.cacheMiddleware).toBeUndefined();
    expect(() => documentClient(createDynamoDbClient({ endpoint }))).not.toThrow();
    expect(() => documentClient(new DynamoDBClient(awsServiceClientConfig({ endpoint })))).toThrow(
      /cacheMiddleware=true is not compatible with the DynamoDBDocumentClient/,
    );
  });
});
