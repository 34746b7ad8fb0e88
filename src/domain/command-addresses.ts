/**
 * Where a BMC command sits and how its request id names it: the task, the family (`u` updates,
 * `q` preflight queries, `v` verify queries), the qualifier and, for updates, the update set's part.
 * The id's form and the entry hash are described with the command sets (command-sets.ts), which
 * store the commands these addresses name; the codec (bmc-protocol.ts) and the component verdict
 * build ids from here without depending on the sets.
 */
import { createHash } from "node:crypto";

export type CommandFamily = "u" | "q" | "v";
export type CommandKind = "update" | "query";

export const kindOfFamily = (family: CommandFamily): CommandKind => (family === "u" ? "update" : "query");

/** Where a command sits: its task, family and qualifier (`0`, `1`, … or `stage.step.attempt`). */
export interface CommandAddress {
  taskId: string;
  family: CommandFamily;
  qualifier: string;
  /** The update set's part the command is stored in (its stage); absent: the set's first record. */
  part?: number;
}

export const updateAddress = (taskId: string, attempt: number, part?: number): CommandAddress => ({
  taskId,
  family: "u",
  qualifier: String(attempt),
  ...(part === undefined ? {} : { part }),
});

export const queryAddress = (taskId: string, attempt: number): CommandAddress => ({
  taskId,
  family: "q",
  qualifier: String(attempt),
});
export const verifyAddress = (
  taskId: string,
  stage: number,
  step: number,
  attempt: number,
): CommandAddress => ({
  taskId,
  family: "v",
  qualifier: `${stage}.${step}.${attempt}`,
});

/**
 * The entry of `componentId` in its set: 12 hex digits of sha256("flow-bmc:<task>:<family><qualifier>:<component>")
 * (not the part: where an entry is stored is not what it is).
 */
export function entryKey(address: CommandAddress, componentId: string): string {
  return createHash("sha256")
    .update(`flow-bmc:${address.taskId}:${address.family}${address.qualifier}:${componentId}`, "utf8")
    .digest("hex")
    .slice(0, 12);
}

/** The request id of the command `address` sends to `componentId`. */
export function commandRequestId(address: CommandAddress, componentId: string): string {
  const prefix = address.family === "u" ? "upd" : "qry";
  const part = address.part === undefined ? "" : `p${address.part}`;
  return `${prefix}-${address.taskId}.${address.family}${address.qualifier}${part}.${entryKey(address, componentId)}`;
}

const REQUEST_ID = /^(upd|qry)-([0-9a-f-]{36})\.([uqv])(\d+|\d+\.\d+\.\d+)(?:p(\d{1,3}))?\.([0-9a-f]{12})$/;

/** A request id of this form → its address and entry; any other string (older tasks' ids) → undefined. */
export function parseCommandRequestId(requestId: string): (CommandAddress & { entry: string }) | undefined {
  const m = REQUEST_ID.exec(requestId);
  if (m === null) return undefined;
  const [, prefix, taskId, family, qualifier, part, entry] = m as unknown as [
    string,
    string,
    string,
    CommandFamily,
    string,
    string | undefined,
    string,
  ];
  // The prefix and the family must agree (an update's id never names a query set).
  if ((prefix === "upd") !== (family === "u")) return undefined;
  if (family === "v" ? !qualifier.includes(".") : qualifier.includes(".")) return undefined;
  // Only the update set has parts.
  if (part !== undefined && family !== "u") return undefined;
  return { taskId, family, qualifier, ...(part === undefined ? {} : { part: Number(part) }), entry };
}

/** Whether a report with this (parsed) request id, arriving on `componentId`'s topic, is that component's. */
export function isReportFor(parsed: CommandAddress & { entry: string }, componentId: string): boolean {
  return entryKey(parsed, componentId) === parsed.entry;
}
