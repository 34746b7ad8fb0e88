/**
 * The RunWaker on AWS: an asynchronous invocation (`InvocationType: Event`) of the dispatcher Lambda
 * with `{ runId }`, which runs one pass for that run (lambdas/dispatcher.ts). The caller (task-steps
 * or bmc-result, right after recording a target's outcome) waits only for Lambda to accept the event
 * (HTTP 202), not for the pass.
 *
 * Why not only the targets stream: the stream's event source mapping polls each shard about four
 * times a second, then invokes the evaluator, so a freed slot waits a few hundred milliseconds for
 * the stream; the direct invocation is one API call. The stream still wakes the run (gates, phase
 * boundaries and completion are decided there too), so a lost wake-up costs only that delay.
 * A failed invocation is logged, never thrown: the outcome is already recorded.
 */
import { InvokeCommand, type LambdaClient } from "@aws-sdk/client-lambda";
import { errorText, type Logger } from "../../app/observability.js";
import type { RunWaker } from "../../app/ports.js";

export class LambdaRunWaker implements RunWaker {
  constructor(
    private readonly client: LambdaClient,
    private readonly functionName: string,
    private readonly logger: Logger,
  ) {}

  async wake(runId: string): Promise<void> {
    try {
      await this.client.send(
        new InvokeCommand({
          FunctionName: this.functionName,
          InvocationType: "Event",
          Payload: new TextEncoder().encode(JSON.stringify({ runId })),
        }),
      );
    } catch (error) {
      this.logger.warn("could not wake the dispatcher; the targets stream will", {
        runId,
        functionName: this.functionName,
        error: errorText(error),
      });
    }
  }
}
