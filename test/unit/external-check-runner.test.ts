/**
 * The AWS hand-over to an external health check (src/adapters/external-checks/runner.ts): a
 * Lambda check is invoked asynchronously with the request as its event (the Lambda client mocked:
 * moto cannot run a function), an HTTPS check is POSTed the request as JSON (a real server on
 * loopback, reached through the runner's fetch); anything but the hand-over's success throws, so
 * the task judges the rack inconclusive instead of waiting for a check that never got it.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { InvokeCommand, LambdaClient } from "@aws-sdk/client-lambda";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AwsExternalCheckRunner } from "../../src/adapters/external-checks/runner.js";
import type { ExternalCheckRequest } from "../../src/domain/external-check.js";

const REQUEST: ExternalCheckRequest = {
  taskToken: "AQB-token",
  check: "dcgm-diag",
  checkId: "7a5c.s0",
  taskId: "7a5c",
  rackId: "rack-a01",
  stage: "trays",
  components: [{ id: "c-1", type: "COMPUTE", version: "2.0.0" }],
  timeoutSeconds: 600,
  requestedAt: "2026-12-05T03:00:00.000Z",
};
const ARN = "arn:aws:lambda:eu-west-1:123456789012:function:dcgm-diag";

describe("a Lambda check", () => {
  it("is invoked asynchronously with the request as its event; anything but 202 throws", async () => {
    const lambda = mockClient(LambdaClient);
    lambda.on(InvokeCommand).resolvesOnce({ StatusCode: 202 }).resolvesOnce({ StatusCode: 200 });
    const runner = new AwsExternalCheckRunner(new LambdaClient({ region: "eu-west-1" }));
    const check = {
      name: "dcgm-diag",
      target: { kind: "lambda" as const, functionArn: ARN },
      timeoutSeconds: 600,
    };
    await runner.start(check, REQUEST);
    const input = lambda.commandCalls(InvokeCommand)[0]?.args[0].input;
    expect([input?.FunctionName, input?.InvocationType]).toEqual([ARN, "Event"]);
    expect(JSON.parse(new TextDecoder().decode(input?.Payload as Uint8Array))).toEqual(REQUEST);
    await expect(runner.start(check, REQUEST)).rejects.toThrow("Lambda answered 200 to the invocation");
    lambda.restore();
  });
});

describe("an HTTPS check", () => {
  const received: { method?: string; type?: string; body: string }[] = [];
  let status = 202;
  let server: Server;
  let url: string;
  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        received.push({ method: req.method, type: req.headers["content-type"], body });
        res.writeHead(status).end("accepted");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/burn-in`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("is POSTed the request as JSON; a 2xx is the hand-over, anything else throws naming the host and status", async () => {
    const runner = new AwsExternalCheckRunner(undefined);
    const check = { name: "burn-in", target: { kind: "https" as const, url }, timeoutSeconds: 600 };
    await runner.start(check, REQUEST);
    expect(received).toEqual([{ method: "POST", type: "application/json", body: JSON.stringify(REQUEST) }]);
    status = 503;
    await expect(runner.start(check, REQUEST)).rejects.toThrow(`${new URL(url).host} answered 503`);
  });

  it("a command check is the local stack's alone", async () => {
    const runner = new AwsExternalCheckRunner(undefined);
    await expect(
      runner.start({ name: "x", target: { kind: "command", argv: ["true"] }, timeoutSeconds: 1 }, REQUEST),
    ).rejects.toThrow("a command check runs only in the local stack");
  });
});
