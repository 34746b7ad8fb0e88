/**
 * The result codes the BMC agent reports on a failed `update` (docs/agent.md lists them), and how
 * a Redfish task's end reads as an outcome. Receivers treat every code as a failed update; the
 * code says why, for people and for a rule's retry policy.
 */
import { ImageError, type TaskView } from "../ports/bmc-agent.js";

export const AGENT_ERROR_CODES = [
  /** The task ended in Exception, Killed, Cancelled, or Completed with TaskStatus Critical. */
  "FLASH_FAILED",
  /** The task showed no progress within the agent's no-progress timeout. */
  "FLASH_TIMEOUT",
  /** The task completed, but the inventory did not show the target version in time. */
  "NOT_APPLIED",
  /** Another update is running on this BMC (the agent's or, after retries, the BMC's own 503). */
  "BUSY",
  "BMC_UNREACHABLE",
  "AUTH_FAILED",
  "TLS_FAILED",
  "NOT_UPDATEABLE",
  "UPDATE_SERVICE_DISABLED",
  /** The UpdateService offers no method the agent can use. */
  "NO_UPDATE_METHOD",
  /** Larger than the UpdateService's MaxImageSizeBytes, or refused with 413. */
  "IMAGE_TOO_LARGE",
  /** A sub-target the BMC's firmware inventory has no member for. */
  "UNKNOWN_SUB_TARGET",
  "IMAGE_UNAVAILABLE",
  /** The command carries no sha256: the agent never flashes bytes it cannot verify. */
  "IMAGE_UNVERIFIED",
  "IMAGE_DIGEST_MISMATCH",
  /** The command's `auth` blob could not be opened (KMS refused it, or no credentials to ask with). */
  "AUTH_UNAVAILABLE",
  /** The BMC answered something the agent did not expect. */
  "BMC_ERROR",
] as const;
export type AgentErrorCode = (typeof AGENT_ERROR_CODES)[number];

export class UpdateFailure extends Error {
  constructor(
    readonly code: AgentErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "UpdateFailure";
  }
}

/** The BMC's own words about a task: its messages, most severe first, or its state. */
export function taskMessage(task: TaskView): string {
  const rank = (s?: string) => (s === "Critical" ? 0 : s === "Warning" ? 1 : 2);
  const messages = [...task.messages].sort((a, b) => rank(a.severity) - rank(b.severity));
  const said = messages.map((m) => m.message).join("; ");
  const head = `task ${task.state}${task.status === undefined ? "" : ` (TaskStatus ${task.status})`}`;
  return said === "" ? head : `${head}: ${said}`;
}

/**
 * An ended task, judged: undefined when it completed well (the inventory decides next), the
 * failure otherwise.
 *
 *   Completed, TaskStatus OK / Warning / absent → undefined
 *   Completed, TaskStatus Critical              → FLASH_FAILED "task Completed (TaskStatus Critical): …"
 *   Exception / Killed / Cancelled              → FLASH_FAILED "task Exception: …"
 */
export function judgeEndedTask(task: TaskView): UpdateFailure | undefined {
  if (task.state === "Completed" && task.status !== "Critical") return undefined;
  return new UpdateFailure("FLASH_FAILED", taskMessage(task));
}

/** The result code for what went wrong: the failure's own, else by the Redfish error's kind. */
export function codeOf(err: unknown): AgentErrorCode {
  if (err instanceof UpdateFailure) return err.code;
  if (err instanceof ImageError) return err.code;
  switch ((err as { code?: string }).code) {
    case "UNREACHABLE":
      return "BMC_UNREACHABLE";
    case "AUTH":
      return "AUTH_FAILED";
    case "TLS":
      return "TLS_FAILED";
    default:
      return "BMC_ERROR";
  }
}

/** An error's message, for a result or a status reason (never carries secrets: none are in errors). */
export function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
