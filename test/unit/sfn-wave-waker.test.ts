/**
 * StepFunctionsWaveWaker (src/adapters/stepfunctions/sfn-wave-waker.ts): SendTaskSuccess with the
 * AwaitWave's token; a token whose wait is over is no error, a failure that may have lost the
 * wake-up is thrown (the receiver's batch is then delivered again). Error paths no emulator here
 * produces, so the client is mocked.
 */
import { SendTaskSuccessCommand, SFNClient } from "@aws-sdk/client-sfn";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { StepFunctionsWaveWaker, WOKEN_OUTPUT } from "../../src/adapters/stepfunctions/sfn-wave-waker.js";

const named = (name: string) => Object.assign(new Error(name), { name });

describe("StepFunctionsWaveWaker", () => {
  const sfn = mockClient(SFNClient);
  beforeEach(() => sfn.reset());
  const waker = () => new StepFunctionsWaveWaker(new SFNClient({ region: "us-east-1", maxAttempts: 1 }));

  it("sends SendTaskSuccess with the token and the wait's output", async () => {
    sfn.on(SendTaskSuccessCommand).resolves({});
    await waker().wake("AQB8AAAAKgAAAAMAAAAA-token");
    const calls = sfn.commandCalls(SendTaskSuccessCommand);
    expect(calls.map((c) => c.args[0].input)).toEqual([
      { taskToken: "AQB8AAAAKgAAAAMAAAAA-token", output: WOKEN_OUTPUT },
    ]);
    expect(JSON.parse(WOKEN_OUTPUT)).toEqual({ woken: true });
  });

  it("a token whose wait is over (timed out, woken already, execution ended) or no token at all: nothing to wake, no error", async () => {
    for (const name of ["TaskTimedOut", "TaskDoesNotExist", "InvalidToken"]) {
      sfn.reset();
      sfn.on(SendTaskSuccessCommand).rejects(named(name));
      await expect(waker().wake("t"), name).resolves.toBeUndefined();
    }
  });

  it("throttled or unreachable: thrown, so the wake-up is sent again", async () => {
    sfn.on(SendTaskSuccessCommand).rejects(named("ThrottlingException"));
    await expect(waker().wake("t")).rejects.toMatchObject({ name: "ThrottlingException" });
  });
});
