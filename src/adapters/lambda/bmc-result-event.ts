/**
 * The bmc-result Lambda's two event sources, told apart and parsed:
 *   - the EventBridge rule on "Step Functions Execution Status Change" for the child-task machine:
 *     `{ "detail-type": "Step Functions Execution Status Change",
 *        detail: { name: <task id>, status: "ABORTED", error: null, cause: "…" } }`
 *     → an execution ending (SUCCEEDED, FAILED, TIMED_OUT, ABORTED), or a status to ignore;
 *   - the IoT rule `SELECT *, topic(3) AS componentId FROM 'flow/bmc/+/evt'`: any other object is a
 *     BMC report, decoded by the receiver (src/app/child-task/receiving.ts).
 */
import type { ExecutionEnding } from "../../app/child-task/outcome.js";
import type { BmcResultInput } from "../../app/child-task/receiving.js";

const EXECUTION_STATUS_CHANGE = "Step Functions Execution Status Change";
const ENDINGS: ReadonlySet<string> = new Set<ExecutionEnding["status"]>([
  "SUCCEEDED",
  "FAILED",
  "TIMED_OUT",
  "ABORTED",
]);

interface ExecutionStatusEvent {
  "detail-type": typeof EXECUTION_STATUS_CHANGE;
  detail: { name: string; status: string; error?: string | null; cause?: string | null };
}

function isExecutionStatus(event: unknown): event is ExecutionStatusEvent {
  return (
    typeof event === "object" &&
    event !== null &&
    (event as Record<string, unknown>)["detail-type"] === EXECUTION_STATUS_CHANGE
  );
}

export function parseBmcResultEvent(event: unknown): BmcResultInput {
  if (isExecutionStatus(event)) {
    const { name, status, error, cause } = event.detail;
    if (!ENDINGS.has(status)) return { kind: "execution-status", status };
    const ending: ExecutionEnding = { taskId: name, status: status as ExecutionEnding["status"] };
    // EventBridge sends null for an absent error or cause.
    if (error) ending.error = error;
    if (cause) ending.cause = cause;
    return { kind: "execution-ending", ending };
  }
  if (typeof event !== "object" || event === null || Array.isArray(event)) return { kind: "invalid" };
  return { kind: "bmc-report", message: event as Record<string, unknown> };
}
