import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SendTaskHeartbeatCommand, SFNClient } from "@aws-sdk/client-sfn";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import {
  awsServiceClientConfig,
  createAwsClient,
  createDynamoDbClient,
} from "../../src/adapters/aws-config.js";
import { documentClient } from "../../src/adapters/dynamodb/db.js";

// A real HTTP endpoint answering every request with an empty JSON object (a valid
// SendTaskHeartbeat answer) and recording what each request carried: the SDK's whole path runs.
describe("aws-config: what a client resolves once instead of on every request", () => {
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

  it("the DynamoDB clients keep cacheMiddleware off: the stores' document client refuses it", () => {
    expect(createDynamoDbClient({ endpoint }).config.cacheMiddleware).toBeUndefined();
    expect(createDynamoDbClient({ endpoint, profile: "front" }).config.cacheMiddleware).toBeUndefined();
    expect(() => documentClient(createDynamoDbClient({ endpoint }))).not.toThrow();
    expect(() => documentClient(new DynamoDBClient(awsServiceClientConfig({ endpoint })))).toThrow(
      /cacheMiddleware=true is not compatible with the DynamoDBDocumentClient/,
    );
  });
});
