/**
 * The receiving half of the child task: BMC reports, as the IoT rule hands them to
 * lambdas/bmc-result.ts, stored on their request records where the waiting execution polls them.
 */
import { decodeBmcEvent } from "../../domain/bmc-protocol.js";
import type { BmcRequestStore } from "../ports.js";

/**
 * Stores one BMC report as the IoT rule delivers it: the message's own fields plus `componentId`
 * (the rule's `topic(3)`). Undecodable messages are dropped with a log line that names fields and
 * rules only (never values: an update's auth blob must not reach a log even when echoed back).
 */
export async function recordBmcReport(
  requests: BmcRequestStore,
  message: Record<string, unknown>,
  now: number,
  log: (line: string) => void = () => {},
): Promise<"recorded" | "ignored" | "invalid"> {
  const { componentId, ...payload } = message;
  if (typeof componentId !== "string" || componentId === "") {
    log("bmc-result: report without componentId (the IoT rule adds topic(3) AS componentId)");
    return "invalid";
  }
  const decoded = decodeBmcEvent(JSON.stringify(payload));
  if (!decoded.ok) {
    log(`bmc-result: undecodable report from ${componentId}: ${decoded.message}`);
    return "invalid";
  }
  return requests.recordEvent(componentId.toLowerCase(), decoded.value, now);
}
