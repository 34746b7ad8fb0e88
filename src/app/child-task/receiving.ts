/**
 * The receiving half of the child task, behind lambdas/bmc-result.ts (its events parsed by
 * src/adapters/lambda/bmc-result-event.ts): BMC reports, as the IoT rule hands them over, stored
 * on their request records where the waiting execution polls them; and the ends of executions, as
 * Step Functions reports them, reconciled with their tasks (outcome.ts).
 */
import { decodeBmcEvent } from "../../domain/bmc-protocol.js";
import { type Logger, silentLogger } from "../observability.js";
import type { BmcRequestStore } from "../ports.js";
import { type ExecutionEnding, type OutcomeDeps, reconcileExecutionEnd } from "./outcome.js";

/**
 * Stores one BMC report as the IoT rule delivers it: the message's own fields plus `componentId`
 * (the rule's `topic(3)`). Undecodable messages are dropped with a log line that names fields and
 * rules only (never values: an update's auth blob must not reach a log even when echoed back).
 */
export async function recordBmcReport(
  requests: BmcRequestStore,
  message: Record<string, unknown>,
  now: number,
  logger: Logger = silentLogger,
): Promise<"recorded" | "ignored" | "invalid"> {
  const { componentId, ...payload } = message;
  if (typeof componentId !== "string" || componentId === "") {
    logger.warn("bmc report dropped: no componentId (the IoT rule adds topic(3) AS componentId)");
    return "invalid";
  }
  const decoded = decodeBmcEvent(JSON.stringify(payload));
  if (!decoded.ok) {
    logger.warn("bmc report dropped: undecodable", { componentId, problem: decoded.message });
    return "invalid";
  }
  return requests.recordEvent(componentId.toLowerCase(), decoded.value, now);
}

/** One event of the bmc-result Lambda, parsed. */
export type BmcResultInput =
  /** A child-task execution ended (EventBridge "Step Functions Execution Status Change"). */
  | { kind: "execution-ending"; ending: ExecutionEnding }
  /** A status change that is not an ending (e.g. RUNNING): nothing to do. */
  | { kind: "execution-status"; status: string }
  /** One BMC report from the IoT rule: the message's fields plus `componentId`. */
  | { kind: "bmc-report"; message: Record<string, unknown> }
  /** Neither: not even an object. */
  | { kind: "invalid" };

export interface BmcResultReceiverDeps {
  requests: BmcRequestStore;
  outcome: OutcomeDeps;
  clock: () => number;
  logger?: Logger;
}

export interface BmcResultReceiver {
  /**
   * `{ taskId, status }` for an ending (the task's status after it, or "unknown task"),
   * `{ ignored: status }` for another status change, `{ outcome }` for a report.
   */
  receive(input: BmcResultInput): Promise<unknown>;
}

export function createBmcResultReceiver(deps: BmcResultReceiverDeps): BmcResultReceiver {
  return {
    async receive(input) {
      switch (input.kind) {
        case "execution-ending": {
          const task = await reconcileExecutionEnd(deps.outcome, input.ending);
          return { taskId: input.ending.taskId, status: task?.status ?? "unknown task" };
        }
        case "execution-status":
          return { ignored: input.status };
        case "bmc-report":
          return { outcome: await recordBmcReport(deps.requests, input.message, deps.clock(), deps.logger) };
        case "invalid":
          return { outcome: "invalid" };
      }
    },
  };
}
