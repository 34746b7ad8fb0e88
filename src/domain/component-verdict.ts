/**
 * One BMC request as the child task tracks it (its record, its derived id), and the pure rules the
 * steps apply to it: how long to wait before the next poll, which credential a BMC gets.
 */
import { createHash } from "node:crypto";
import type { BmcError } from "./bmc-protocol.js";
import type { ComponentType, FirmwareAuthentication } from "./model.js";

/** One command's request record: what SendUpdate/SendQueries wrote and what the BMC reported. */
export interface BmcRequestRecord {
  componentId: string;
  requestId: string;
  taskId: string;
  kind: "update" | "query";
  sentAt: number;
  deadline: number;
  publishedAt?: number;
  ackedAt?: number;
  /** Highest progress percent reported. */
  progress?: number;
  /** An update's result (the first one stored; later ones are ignored). */
  result?: { ok: true; version: string } | { ok: false; version: string; error: BmcError };
  /** A query's answer. */
  status?: { version: string };
}

export type NewBmcRequest = Pick<
  BmcRequestRecord,
  "componentId" | "requestId" | "taskId" | "kind" | "sentAt" | "deadline"
>;

export interface ComponentResult {
  componentId: string;
  ok: boolean;
  version?: string;
  error?: { Error?: string; Cause?: unknown };
}

/** Preflight query ids: like update ids, derived, so a retried step re-asks with the same id. */
export function queryRequestId(taskId: string, componentId: string): string {
  const digest = createHash("sha256").update(`flow-bmc-query:${taskId}:${componentId}`, "utf8").digest("hex");
  return `qry-${digest.slice(0, 32)}`;
}

/** pollSeconds · 2^polls, capped by maxPollSeconds and by what is left until the deadline; ≥ 1. */
export function nextWaitSeconds(
  settings: { pollSeconds: number; maxPollSeconds: number },
  polls: number,
  deadline: number,
  now: number,
): number {
  const backoff = Math.min(settings.maxPollSeconds, settings.pollSeconds * 2 ** Math.min(polls, 30));
  const remaining = Math.ceil((deadline - now) / 1000);
  return Math.max(1, Math.min(backoff, remaining));
}

/** Which credential a component's BMC gets: the shared one, or its type's own. */
export function secretFor(auth: FirmwareAuthentication | undefined, type: ComponentType): string | undefined {
  if (auth === undefined) return undefined;
  if (auth.kind === "shared") return auth.secret;
  switch (type) {
    case "COMPUTE":
      return auth.compute;
    case "NVSWITCH":
      return auth.nvswitch;
    case "POWERSHELF":
      return auth.powershelf;
    default:
      return undefined;
  }
}
