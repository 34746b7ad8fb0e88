/**
 * The ExternalCheckRunner in AWS: hands a rack to the check the deployment configured
 * (src/domain/external-check.ts) and returns once the check has the request; the check answers
 * later with the request's task token (Step Functions SendTaskSuccess, so it needs
 * `states:SendTaskSuccess` on the child-task state machine).
 *
 * - `lambda`: an asynchronous invocation (`InvocationType: Event`) with the request as its event;
 *   Lambda's 202 is the hand-over. The task-steps Lambda needs `lambda:InvokeFunction` on it.
 * - `https`: a POST of the request as JSON; any 2xx is the hand-over (the endpoint answers at
 *   once and judges in its own time); anything else, or no answer within 10 s, is an error.
 * A `command` check runs only in the local stack (local/external-checks.ts).
 */
import { InvokeCommand, type LambdaClient } from "@aws-sdk/client-lambda";
import type { ExternalCheckRunner } from "../../app/ports.js";
import type { ExternalCheckConfig, ExternalCheckRequest } from "../../domain/external-check.js";

const HANDOVER_TIMEOUT_MS = 10_000;

export class AwsExternalCheckRunner implements ExternalCheckRunner {
  constructor(
    private readonly lambda: Pick<LambdaClient, "send"> | undefined,
    private readonly fetcher: typeof fetch = fetch,
  ) {}

  async start(check: ExternalCheckConfig, request: ExternalCheckRequest): Promise<void> {
    const body = JSON.stringify(request);
    const target = check.target;
    switch (target.kind) {
      case "lambda": {
        if (this.lambda === undefined) throw new Error("no Lambda client to invoke the check with");
        const answer = await this.lambda.send(
          new InvokeCommand({
            FunctionName: target.functionArn,
            InvocationType: "Event",
            Payload: new TextEncoder().encode(body),
          }),
        );
        if (answer.StatusCode !== 202)
          throw new Error(`Lambda answered ${answer.StatusCode} to the invocation`);
        return;
      }
      case "https": {
        const response = await this.fetcher(target.url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
          signal: AbortSignal.timeout(HANDOVER_TIMEOUT_MS),
        });
        await response.body?.cancel();
        if (!response.ok) throw new Error(`${new URL(target.url).host} answered ${response.status}`);
        return;
      }
      case "command":
        throw new Error("a command check runs only in the local stack");
    }
  }
}
