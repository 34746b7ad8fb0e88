/**
 * Reading DMTF Redfish documents (DSP0266, the resource schemas of DSP8010) into the few facts the
 * BMC agent acts on. Pure: text in, values out; the HTTP side is src/adapters/redfish/client.ts.
 *
 * Real services are lenient in what they send, so these readers are too, and only where it is
 * safe:
 * - a collection's `Members@odata.count` is informational: DMTF's own public-rackmount1 mockup
 *   says 2 and lists 3 firmware members; the `Members` array is what counts.
 * - a firmware `Version` is an opaque string (`1.45.455b66-rev4`, `P79 v1.45`), compared as is.
 * - message ids differ by registry version (`Update.1.0.ApplyFailed`, `Update.1.2.ApplyFailed`),
 *   so a message is matched on its name, the id's last segment.
 * - a missing `Updateable` means "not known", which is treated as updateable (the property is
 *   optional in the schema; a BMC that cannot update a member says `false`).
 * A document that lacks what the agent needs (no `@odata.id` on a member, a task without a
 * `TaskState`) is refused with a RedfishDocumentError naming the property.
 */

export class RedfishDocumentError extends Error {
  constructor(
    readonly document: string,
    readonly property: string,
    rule: string,
  ) {
    super(`${document}: ${property} ${rule}`);
    this.name = "RedfishDocumentError";
  }
}

import type {
  FirmwareMember,
  ResetAction,
  SimpleUpdateAction,
  TaskMessage,
  TaskState,
  TaskView,
  UpdateServiceInfo,
} from "../../app/ports/bmc-agent.js";

type Json = Record<string, unknown>;

function object(value: unknown, document: string): Json {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new RedfishDocumentError(document, "(root)", "must be a JSON object");
  }
  return value as Json;
}

function link(value: unknown): string | undefined {
  if (value === null || typeof value !== "object") return undefined;
  const id = (value as Json)["@odata.id"];
  return typeof id === "string" && id !== "" ? id : undefined;
}

function str(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

// ---------------------------------------------------------------------------------------------
// Service root

export interface ServiceRoot {
  redfishVersion?: string;
  updateService?: string;
  /** `Links.Sessions`, where a session is created (POST). */
  sessions?: string;
  managers?: string;
  systems?: string;
  chassis?: string;
  tasks?: string;
}

export function parseServiceRoot(doc: unknown): ServiceRoot {
  const root = object(doc, "ServiceRoot");
  const links = root.Links !== null && typeof root.Links === "object" ? (root.Links as Json) : {};
  const out: ServiceRoot = {};
  const version = str(root.RedfishVersion);
  if (version !== undefined) out.redfishVersion = version;
  const fields: [keyof ServiceRoot, unknown][] = [
    ["updateService", root.UpdateService],
    ["sessions", links.Sessions],
    ["managers", root.Managers],
    ["systems", root.Systems],
    ["chassis", root.Chassis],
    ["tasks", root.Tasks],
  ];
  for (const [key, value] of fields) {
    const id = link(value);
    if (id !== undefined) out[key] = id;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Reset actions (Manager.Reset, ComputerSystem.Reset, Chassis.Reset)

/**
 * A resource's `Actions["#<Type>.Reset"]`: its target and the ResetTypes it allows (inline
 * `ResetType@Redfish.AllowableValues`; absent: the resource does not say). Undefined: no such action.
 */
export function parseResetAction(doc: unknown, action: string): ResetAction | undefined {
  const r = object(doc, action.split(".")[0]?.replace("#", "") ?? "Resource");
  const actions = r.Actions !== null && typeof r.Actions === "object" ? (r.Actions as Json) : {};
  const found = actions[action];
  if (found === null || typeof found !== "object") return undefined;
  const target = str((found as Json).target);
  if (target === undefined) return undefined;
  const values = (found as Json)["ResetType@Redfish.AllowableValues"];
  const allowed = Array.isArray(values)
    ? values.filter((v): v is string => typeof v === "string")
    : undefined;
  return { target, ...(allowed === undefined ? {} : { allowed }) };
}

/** A resource's `Status.HealthRollup` (else `Health`), when it is OK, Warning or Critical. */
export function parseHealth(
  doc: unknown,
): { health: "OK" | "Warning" | "Critical"; field: "HealthRollup" | "Health" } | undefined {
  const r = object(doc, "Resource");
  const status = r.Status !== null && typeof r.Status === "object" ? (r.Status as Json) : {};
  for (const field of ["HealthRollup", "Health"] as const) {
    const value = status[field];
    if (value === "OK" || value === "Warning" || value === "Critical") return { health: value, field };
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Collections

export interface Collection {
  /** The members' `@odata.id`s, in the document's order. */
  members: string[];
  /** `Members@odata.count` as the service wrote it; may disagree with `members.length`. */
  declaredCount?: number;
}

export function parseCollection(doc: unknown, document = "Collection"): Collection {
  const c = object(doc, document);
  if (!Array.isArray(c.Members)) throw new RedfishDocumentError(document, "Members", "must be an array");
  const members: string[] = [];
  c.Members.forEach((m, i) => {
    const id = link(m);
    if (id === undefined) throw new RedfishDocumentError(document, `Members[${i}]`, "has no @odata.id");
    members.push(id);
  });
  const out: Collection = { members };
  const count = c["Members@odata.count"];
  if (typeof count === "number") out.declaredCount = count;
  return out;
}

// ---------------------------------------------------------------------------------------------
// UpdateService and its SimpleUpdate ActionInfo

export function parseUpdateService(doc: unknown): UpdateServiceInfo {
  const u = object(doc, "UpdateService");
  const out: UpdateServiceInfo = {
    enabled: u.ServiceEnabled !== false,
    pushBusy: u.HttpPushUriOptionsBusy === true,
  };
  const uri = str(u["@odata.id"]);
  if (uri !== undefined) out.uri = uri;
  const inventory = link(u.FirmwareInventory);
  if (inventory !== undefined) out.firmwareInventory = inventory;
  const multipart = str(u.MultipartHttpPushUri);
  if (multipart !== undefined) out.multipartHttpPushUri = multipart;
  const push = str(u.HttpPushUri);
  if (push !== undefined) out.httpPushUri = push;
  if (typeof u.MaxImageSizeBytes === "number" && u.MaxImageSizeBytes > 0) {
    out.maxImageSizeBytes = u.MaxImageSizeBytes;
  }
  const actions = u.Actions !== null && typeof u.Actions === "object" ? (u.Actions as Json) : {};
  const simple = actions["#UpdateService.SimpleUpdate"];
  if (simple !== null && typeof simple === "object") {
    const s = simple as Json;
    const target = str(s.target);
    if (target === undefined) {
      throw new RedfishDocumentError(
        "UpdateService",
        "Actions.#UpdateService.SimpleUpdate.target",
        "is missing",
      );
    }
    const action: SimpleUpdateAction = { target };
    const info = str(s["@Redfish.ActionInfo"]);
    if (info !== undefined) action.actionInfo = info;
    const inline = s["TransferProtocol@Redfish.AllowableValues"];
    if (Array.isArray(inline))
      action.transferProtocols = inline.filter((v): v is string => typeof v === "string");
    out.simpleUpdate = action;
  }
  return out;
}

export interface ActionParameter {
  name: string;
  required: boolean;
  allowableValues?: string[];
}

export function parseActionInfo(doc: unknown): ActionParameter[] {
  const a = object(doc, "ActionInfo");
  if (!Array.isArray(a.Parameters)) return [];
  return a.Parameters.flatMap((p, i) => {
    const param = object(p, `ActionInfo.Parameters[${i}]`);
    const name = str(param.Name);
    if (name === undefined)
      throw new RedfishDocumentError("ActionInfo", `Parameters[${i}].Name`, "is missing");
    const out: ActionParameter = { name, required: param.Required === true };
    if (Array.isArray(param.AllowableValues)) {
      out.allowableValues = param.AllowableValues.filter((v): v is string => typeof v === "string");
    }
    return [out];
  });
}

// ---------------------------------------------------------------------------------------------
// Firmware inventory (SoftwareInventory)

export function parseSoftwareInventory(doc: unknown): FirmwareMember {
  const s = object(doc, "SoftwareInventory");
  const uri = str(s["@odata.id"]);
  if (uri === undefined) throw new RedfishDocumentError("SoftwareInventory", "@odata.id", "is missing");
  const id = str(s.Id) ?? uri.slice(uri.lastIndexOf("/") + 1);
  const version = str(s.Version);
  if (version === undefined)
    throw new RedfishDocumentError(`SoftwareInventory ${id}`, "Version", "is missing");
  const related = Array.isArray(s.RelatedItem) ? s.RelatedItem.map(link).filter((v) => v !== undefined) : [];
  const out: FirmwareMember = { uri, id, version, updateable: s.Updateable !== false, relatedItems: related };
  const status = s.Status !== null && typeof s.Status === "object" ? (s.Status as Json) : {};
  const state = str(status.State);
  if (state !== undefined) out.state = state;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Tasks

export const TASK_STATES = [
  "New",
  "Starting",
  "Running",
  "Suspended",
  "Interrupted",
  "Pending",
  "Stopping",
  "Completed",
  "Killed",
  "Exception",
  "Service",
  "Cancelling",
  "Cancelled",
] as const satisfies readonly TaskState[];

/** True once a task can change no more. */
export function taskEnded(state: TaskState): boolean {
  return state === "Completed" || state === "Killed" || state === "Exception" || state === "Cancelled";
}

export function parseTask(doc: unknown): TaskView {
  const t = object(doc, "Task");
  const state = t.TaskState;
  if (typeof state !== "string" || !(TASK_STATES as readonly string[]).includes(state)) {
    throw new RedfishDocumentError("Task", "TaskState", `must be one of ${TASK_STATES.join(", ")}`);
  }
  const out: TaskView = { state: state as TaskState, messages: parseMessages(t.Messages) };
  const uri = str(t["@odata.id"]);
  if (uri !== undefined) out.uri = uri;
  const status = str(t.TaskStatus);
  if (status !== undefined) out.status = status;
  if (typeof t.PercentComplete === "number" && Number.isFinite(t.PercentComplete)) {
    out.percent = Math.max(0, Math.min(100, Math.round(t.PercentComplete)));
  }
  return out;
}

export function parseMessages(value: unknown): TaskMessage[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((m) => {
    if (m === null || typeof m !== "object") return [];
    const j = m as Json;
    const id = str(j.MessageId) ?? "";
    const out: TaskMessage = { name: id.slice(id.lastIndexOf(".") + 1), message: str(j.Message) ?? id };
    const severity = str(j.Severity) ?? str(j.MessageSeverity);
    if (severity !== undefined) out.severity = severity;
    return [out];
  });
}

/** A Redfish error body's messages (`error.@Message.ExtendedInfo`), joined; "" when there are none. */
export function errorText(doc: unknown): string {
  if (doc === null || typeof doc !== "object") return "";
  const error = (doc as Json).error;
  if (error === null || typeof error !== "object") return "";
  const e = error as Json;
  const extended = parseMessages(e["@Message.ExtendedInfo"]).map((m) => m.message);
  const head = str(e.message);
  return [...new Set([...(head === undefined ? [] : [head]), ...extended])].join("; ");
}
