/**
 * The tracer in a Lambda (src/adapters/observability/lambda.ts): with the environment the Lambda
 * runtime sets under tracing ACTIVE, an invocation sends its `## handler` subsegment, annotated with
 * the cold start, the service and the correlation keys, and each SDK call of a captured client as
 * a subsegment under it, to the X-Ray daemon address, here a UDP socket of the test's own.
 * Its own file: the X-Ray SDK reads the Lambda environment when it is first imported.
 */

import { createSocket } from "node:dgram";
import { DescribeTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { Context } from "aws-lambda";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { captureOutput } from "../support/captured-output.js";
import { until } from "../support/poll.js";

const TRACE_ROOT = "1-5759e988-bd862e3fe1be46a994272793";
const FACADE = "53995c3f42cd8ad8";
const daemon = createSocket("udp4");
const received: Record<string, unknown>[] = [];

beforeAll(async () => {
  daemon.on("message", (packet) => {
    // `{"format":"json","version":1}\n{segment}`
    const [, body] = packet.toString("utf8").split("\n");
    if (body !== undefined) received.push(JSON.parse(body) as Record<string, unknown>);
  });
  await new Promise<void>((resolve) => daemon.bind(0, "127.0.0.1", resolve));
  vi.stubEnv("AWS_XRAY_DAEMON_ADDRESS", `127.0.0.1:${daemon.address().port}`);
  vi.stubEnv("AWS_EXECUTION_ENV", "AWS_Lambda_nodejs22.x");
  vi.stubEnv("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand");
  vi.stubEnv("LAMBDA_TASK_ROOT", process.cwd());
  vi.stubEnv("_X_AMZN_TRACE_ID", `Root=${TRACE_ROOT};Parent=${FACADE};Sampled=1`);
  vi.stubEnv("AWS_XRAY_CONTEXT_MISSING", "IGNORE_ERROR");
});
afterAll(() => {
  vi.unstubAllEnvs();
  daemon.close();
});

it("an invocation traces its handler with the correlation keys, and the captured client's calls under it", async () => {
  const { lambdaObservability } = await import("../../src/adapters/observability/lambda.js");
  const obs = lambdaObservability("task-steps");
  const client = obs.capture(
    new DynamoDBClient({
      endpoint: "http://127.0.0.1:1",
      region: "eu-west-1",
      credentials: { accessKeyId: "x", secretAccessKey: "y" },
      maxAttempts: 1,
    }),
  );
  const context = { functionName: "Flow-test-task-steps", awsRequestId: "req-1" } as Context;
  // The ColdStart metric line goes to stdout, as in Lambda; not this test's subject.
  const output = captureOutput();
  const outcome = await obs.invoke(context, { taskId: "t-1", runId: "r-1" }, () =>
    client.send(new DescribeTableCommand({ TableName: "Flow-test-Tasks" })).then(
      () => "answered",
      () => "refused",
    ),
  );
  output.restore();
  expect(outcome).toBe("refused");

  const handler = await until("the handler subsegment", () => received.find((s) => s.name === "## handler"));
  expect(handler).toMatchObject({
    type: "subsegment",
    trace_id: TRACE_ROOT,
    parent_id: FACADE,
    annotations: { ColdStart: true, Service: "task-steps", taskId: "t-1", runId: "r-1" },
  });
  const call = await until("the DynamoDB subsegment", () => received.find((s) => s.name === "DynamoDB"));
  expect(call).toMatchObject({
    namespace: "aws",
    parent_id: handler.id,
    aws: { operation: "DescribeTable", region: "eu-west-1" },
  });
});
