/**
 * Two event sources, one job (make what the BMCs and executions did durable):
 *   - the IoT rule `SELECT *, topic(3) AS componentId FROM 'flow/bmc/+/evt'`: one BMC report,
 *     stored on its request record (idempotent: duplicates and late reports change nothing), where
 *     the waiting execution's CheckUpdate/CheckPreflight polls find it;
 *   - the EventBridge rule on "Step Functions Execution Status Change" for the child-task machine
 *     (ABORTED, TIMED_OUT, FAILED): the task ends (TERMINATED, FAILED), its run target is recorded
 *     and the rack lock released, by the same recordTaskOutcome the last state uses.
 */
import { composeChildTasks } from "../src/adapters/stepfunctions/compose-aws.js";
import { type ExecutionEnding, reconcileExecutionEnd } from "../src/app/child-task/outcome.js";
import { recordBmcReport } from "../src/app/child-task/receiving.js";

const child = composeChildTasks(process.env, "bmc-result");

interface ExecutionStatusEvent {
  "detail-type": "Step Functions Execution Status Change";
  detail: { name: string; status: string; error?: string | null; cause?: string | null };
}

const ENDINGS = new Set(["SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"]);

function isExecutionStatus(event: unknown): event is ExecutionStatusEvent {
  return (
    typeof event === "object" &&
    event !== null &&
    (event as Record<string, unknown>)["detail-type"] === "Step Functions Execution Status Change"
  );
}

export const handler = async (event: unknown): Promise<unknown> => {
  if (isExecutionStatus(event)) {
    const { name, status, error, cause } = event.detail;
    if (!ENDINGS.has(status)) return { ignored: status };
    const ending: ExecutionEnding = { taskId: name, status: status as ExecutionEnding["status"] };
    if (error) ending.error = error;
    if (cause) ending.cause = cause;
    const task = await reconcileExecutionEnd(child.outcomeDeps, ending);
    return { taskId: name, status: task?.status ?? "unknown task" };
  }
  if (typeof event !== "object" || event === null || Array.isArray(event)) return { outcome: "invalid" };
  const outcome = await recordBmcReport(
    child.requests,
    event as Record<string, unknown>,
    Date.now(),
    (line) => console.log(line),
  );
  return { outcome };
};
