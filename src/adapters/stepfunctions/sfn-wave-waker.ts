/**
 * The WaveWaker on AWS Step Functions: SendTaskSuccess with the task token an AwaitWave state
 * handed its Lambda (state-machines/child-task.asl.json), so the execution goes on to its check,
 * with the answers it waited for as the state's output (its ResultPath puts them on the wave, and
 * the check reads nothing more).
 * Its heartbeat is SendTaskHeartbeat with the same token: the state's HeartbeatSecondsPath timer
 * starts again, so a wave its BMCs still report on keeps waiting for its wake-up. Its failure is
 * SendTaskFailure with the same token: how a judging wait ends when it sends no next step.
 * A token whose wait is over (it timed out into the check, was woken already, or its execution
 * ended) answers TaskTimedOut or TaskDoesNotExist, and a token that is not one InvalidToken:
 * nothing to wake (or keep alive), no error. Anything else (throttling, the service unreachable) is thrown: the
 * caller wakes it again.
 */
import {
  SendTaskFailureCommand,
  SendTaskHeartbeatCommand,
  SendTaskSuccessCommand,
  type SFNClient,
} from "@aws-sdk/client-sfn";
import type { WaveWaker } from "../../app/ports.js";
import type { WakeOutput } from "../../domain/command-sets.js";

const NOTHING_TO_WAKE = new Set(["TaskTimedOut", "TaskDoesNotExist", "InvalidToken"]);

export class StepFunctionsWaveWaker implements WaveWaker {
  constructor(private readonly client: SFNClient) {}

  async wake(token: string, output: WakeOutput): Promise<void> {
    await ignoringOver(() =>
      this.client.send(new SendTaskSuccessCommand({ taskToken: token, output: JSON.stringify(output) })),
    );
  }

  async heartbeat(token: string): Promise<void> {
    await ignoringOver(() => this.client.send(new SendTaskHeartbeatCommand({ taskToken: token })));
  }

  async fail(token: string, error: string, cause: string): Promise<void> {
    await ignoringOver(() =>
      this.client.send(new SendTaskFailureCommand({ taskToken: token, error, cause })),
    );
  }
}

/** Runs `call`; a token whose wait is over is no error. */
async function ignoringOver(call: () => Promise<unknown>): Promise<void> {
  try {
    await call();
  } catch (error) {
    if (NOTHING_TO_WAKE.has((error as { name?: string } | null)?.name ?? "")) return;
    throw error;
  }
}
