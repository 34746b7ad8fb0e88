import { InvokeCommand, LambdaClient } from "@aws-sdk/client-lambda";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { LambdaRunWaker } from "../../src/adapters/lambda/lambda-waker.js";
import type { Logger } from "../../src/app/observability.js";

const RUN = "11111111-1111-4111-8111-111111111111";

function recordingLogger(): Logger & { warnings: [string, Record<string, unknown> | undefined][] } {
  const warnings: [string, Record<string, unknown> | undefined][] = [];
  return { warnings, info() {}, error() {}, warn: (message, fields) => warnings.push([message, fields]) };
}

describe("LambdaRunWaker", () => {
  const lambda = mockClient(LambdaClient);
  afterAll(() => lambda.restore());
  beforeEach(() => lambda.reset());

  it("invokes the dispatcher asynchronously (Event) with { runId } and waits only for the 202", async () => {
    lambda.on(InvokeCommand).resolves({ StatusCode: 202 });
    const logger = recordingLogger();
    await new LambdaRunWaker(new LambdaClient({ region: "us-east-1" }), "Flow-prod-dispatcher", logger).wake(
      RUN,
    );
    const calls = lambda.commandCalls(InvokeCommand);
    expect(calls).toHaveLength(1);
    const input = calls[0]!.args[0].input;
    expect(input.FunctionName).toBe("Flow-prod-dispatcher");
    expect(input.InvocationType).toBe("Event");
    expect(JSON.parse(new TextDecoder().decode(input.Payload as Uint8Array))).toEqual({ runId: RUN });
    expect(logger.warnings).toEqual([]);
  });

  it("a failed invocation is logged with the run and the error, never thrown (the stream wakes the run anyway)", async () => {
    lambda
      .on(InvokeCommand)
      .rejects(Object.assign(new Error("Rate exceeded"), { name: "TooManyRequestsException" }));
    const logger = recordingLogger();
    const client = new LambdaClient({ region: "us-east-1", maxAttempts: 1 });
    await expect(new LambdaRunWaker(client, "fn", logger).wake(RUN)).resolves.toBeUndefined();
    expect(logger.warnings).toEqual([
      [
        "could not wake the dispatcher; the targets stream will",
        { runId: RUN, functionName: "fn", error: "TooManyRequestsException: Rate exceeded" },
      ],
    ]);
  });
});
