/**
 * StepFunctionsWaveWaker (src/adapters/stepfunctions/sfn-wave-waker.ts): SendTaskSuccess with the
 * AwaitWave's token; a token whose wait is over is no error, a failure that may have lost the
 * wake-up is thrown (the receiver's batch is then delivered again); its heartbeat is
 * SendTaskHeartbeat with the same token, and its fail (a judging wait's own end) SendTaskFailure,
 * under the same rules. Error paths no emulator here
 * produces, so the client is mocked.
 */
import {
  SendTaskFailureCommand,
  SendTaskHeartbeatCommand,
  SendTaskSuccessCommand,
  SFNClient,
} from "@aws-sdk/client-sfn";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { StepFunctionsWaveWaker } from "../../src/adapters/stepfunctions/sfn-wave-waker.js";
import type { CommandSet } from "../../src/domain/command-sets.js";

/** What the wait waited for, as the receiver found it stored. */
const answers: CommandSet = {
  taskId: "7a5c0000-0000-4000-8000-000000000001",
  family: "u",
  part: 2,
  entries: {
    "0123456789ab": { sentAt: 1, deadline: 9, result: { ok: true, version: "2.0.0" }, resultAt: 5 },
  },
};

const named = (name: string) => Object.assign(new Error(name), { name });

describe("StepFunctionsWaveWaker", () => {
  const sfn = mockClient(SFNClient);
  afterAll(() => sfn.restore());
  beforeEach(() => sfn.reset());
  const waker = () => new StepFunctionsWaveWaker(new SFNClient({ region: "us-east-1", maxAttempts: 1 }));

  it("sends SendTaskSuccess with the token and the answers as the wait's output", async () => {
    sfn.on(SendTaskSuccessCommand).resolves({});
    await waker().wake("AQB8AAAAKgAAAAMAAAAA-token", answers);
    const calls = sfn.commandCalls(SendTaskSuccessCommand);
    expect(calls.map((c) => c.args[0].input.taskToken)).toEqual(["AQB8AAAAKgAAAAMAAAAA-token"]);
    expect(JSON.parse(calls[0]?.args[0].input.output ?? "")).toEqual(answers);
  });

  it("a token whose wait is over (timed out, woken already, execution ended) or no token at all: nothing to wake, no error", async () => {
    for (const name of ["TaskTimedOut", "TaskDoesNotExist", "InvalidToken"]) {
      sfn.reset();
      sfn.on(SendTaskSuccessCommand).rejects(named(name));
      await expect(waker().wake("t", answers), name).resolves.toBeUndefined();
    }
  });

  it("throttled or unreachable: thrown, so the wake-up is sent again", async () => {
    sfn.on(SendTaskSuccessCommand).rejects(named("ThrottlingException"));
    await expect(waker().wake("t", answers)).rejects.toMatchObject({ name: "ThrottlingException" });
  });

  it("a heartbeat sends SendTaskHeartbeat with the token, and nothing else", async () => {
    sfn.on(SendTaskHeartbeatCommand).resolves({});
    await waker().heartbeat("AQB8AAAAKgAAAAMAAAAA-token");
    expect(sfn.commandCalls(SendTaskHeartbeatCommand).map((c) => c.args[0].input)).toEqual([
      { taskToken: "AQB8AAAAKgAAAAMAAAAA-token" },
    ]);
    expect(sfn.commandCalls(SendTaskSuccessCommand)).toEqual([]);
  });

  it("a heartbeat to a wait that is over is no error; throttled or unreachable, it is thrown", async () => {
    for (const name of ["TaskTimedOut", "TaskDoesNotExist", "InvalidToken"]) {
      sfn.reset();
      sfn.on(SendTaskHeartbeatCommand).rejects(named(name));
      await expect(waker().heartbeat("t"), name).resolves.toBeUndefined();
    }
    sfn.reset();
    sfn.on(SendTaskHeartbeatCommand).rejects(named("ThrottlingException"));
    await expect(waker().heartbeat("t")).rejects.toMatchObject({ name: "ThrottlingException" });
  });

  it("a fail sends SendTaskFailure with the token, the error and the cause; a wait that is over is no error, throttled is thrown", async () => {
    sfn.on(SendTaskFailureCommand).resolves({});
    await waker().fail("AQB8AAAAKgAAAAMAAAAA-token", "StepHandedOver", "a sleep is next");
    expect(sfn.commandCalls(SendTaskFailureCommand).map((c) => c.args[0].input)).toEqual([
      { taskToken: "AQB8AAAAKgAAAAMAAAAA-token", error: "StepHandedOver", cause: "a sleep is next" },
    ]);
    expect(sfn.commandCalls(SendTaskSuccessCommand)).toEqual([]);
    for (const name of ["TaskTimedOut", "TaskDoesNotExist", "InvalidToken"]) {
      sfn.reset();
      sfn.on(SendTaskFailureCommand).rejects(named(name));
      await expect(waker().fail("t", "OutcomeRecorded", "done"), name).resolves.toBeUndefined();
    }
    sfn.reset();
    sfn.on(SendTaskFailureCommand).rejects(named("ThrottlingException"));
    await expect(waker().fail("t", "OutcomeRecorded", "done")).rejects.toMatchObject({
      name: "ThrottlingException",
    });
  });
});
