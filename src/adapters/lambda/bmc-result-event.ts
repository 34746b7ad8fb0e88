/**
 * The bmc-result Lambda's two event sources, told apart and parsed:
 *   - the EventBridge rule on "Step Functions Execution Status Change" for the child-task machine:
 *     `{ "detail-type": "Step Functions Execution Status Change",
 *        detail: { name: <task id>, status: "ABORTED", error: null, cause: "…" } }`
 *     → an execution ending (SUCCEEDED, FAILED, TIMED_OUT, ABORTED), or a status to ignore;
 *   - the reports queue (IoT rule `SELECT *, topic(3) AS componentId FROM 'flow/bmc/+/evt'` → SQS →
 *     event source mapping): `{ Records: [{ eventSource: "aws:sqs", messageId, body }] }`, each body
 *     one report as JSON, or a rack agent's batch of them (the rule `SELECT *, topic(3) AS rackId
 *     FROM 'flow/rack/+/reports'`), read by the receiver → a batch of reports (a body that is not a
 *     JSON object: no message, dropped);
 *   - any other object is one BMC report straight from the rule, decoded by the receiver
 *     (src/app/child-task/receiving.ts).
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

interface SqsEvent {
  Records: { eventSource: "aws:sqs"; messageId: string; body: string }[];
}

function isSqsBatch(event: unknown): event is SqsEvent {
  const records = (event as { Records?: unknown } | null)?.Records;
  return (
    Array.isArray(records) &&
    records.every((r) => (r as { eventSource?: unknown } | null)?.eventSource === "aws:sqs")
  );
}

function reportOf(body: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

export function parseBmcResultEvent(event: unknown): BmcResultInput {
  if (isSqsBatch(event)) {
    return {
      kind: "bmc-reports",
      reports: event.Records.map((r) => {
        const message = reportOf(r.body);
        return message === undefined ? { id: r.messageId } : { id: r.messageId, message };
      }),
    };
  }
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
