/**
 * The BMC protocol: the project's own JSON-over-MQTT conversation between a child task and one
 * component's BMC. One codec, shared by the production command path (src/adapters/iot/publisher.ts)
 * and the simulated fleet (local/bmc-fleet.ts), so the two cannot drift. docs/bmc-protocol.md is the
 * human-readable contract; this file is the executable one.
 *
 * Topics: src/domain/bmc-topics.ts (v4 puts them under the rack); decoding:
 * src/domain/bmc-protocol-decode.ts.
 *
 * Every message is one JSON object with a version `v` and a `type`. Every event carries the
 * `requestId` of the command it answers, which is how the waiting execution finds its reports.
 *
 * Versioning: a decoder rejects any `v` it does not speak (`UNSUPPORTED_VERSION`), and ignores
 * fields it does not know, so optional fields can be added inside a version; removing, renaming or
 * changing the meaning of a field is a new `v`. `image.size` is such an optional field (v1 and
 * v2): the product always sends it and `image.sha256`; older messages without them still decode.
 *   v1  everything below without `subTargets`.
 *   v2  `update` and `result` may carry `subTargets`: flash only these parts of the component, and
 *       (result) these are the parts flashed. A new version, not an optional v1 field, because a
 *       v1 BMC that ignored it would flash the whole component. The encoder writes v2 only for a
 *       message that has `subTargets`, so every other message is byte for byte what it was in v1
 *       and v1 BMCs keep working; a v1-only BMC refuses a v2 command (UNSUPPORTED_VERSION) and
 *       answers nothing, so the task sees it as unreachable, never as flashed.
 *   v3  activation: the `reset` command (the BMC resets itself, power-cycles its host or AC-cycles
 *       its tray, and answers with `status` once it is back), and `pendingVersion` on `status` and
 *       `result`: a version flashed but not active until a reset. A new version because an older
 *       task reading a staged result's `version` would take the old version for a mismatch at
 *       best; the encoder writes v3 only for messages that carry these, and a v1/v2 task that
 *       receives one refuses it (UNSUPPORTED_VERSION), so a staged flash is never read as success.
 *   v4  rack-scoped topics (bmc-topics.ts): where messages travel, not what they say. Bodies are
 *       v1–v3's, each still marked with the lowest version that carries its fields (no body is
 *       ever `v: 4`), so a v4 speaker decodes exactly what a v3 one does. A v1–v3 BMC, listening on
 *       its per-component topic, hears a v4 deployment only when that also publishes there.
 *   v5  a rack agent's batch of reports on its rack's topic (bmc-rack-reports.ts): a message of its
 *       own (`type: reports`, `v: 5`) whose elements are v1–v3 reports unchanged.
 */
import { commandRequestId, updateAddress } from "./command-addresses.js";

/**
 * The newest message version this codec speaks; it decodes every version in BMC_PROTOCOL_VERSIONS.
 * (The topic layout's version, 4, changed no message: BMC_TOPIC_LAYOUT_VERSION.)
 */
export const BMC_PROTOCOL_VERSION = 3 as const;
export const BMC_PROTOCOL_VERSIONS = [1, 2, 3] as const;
export type BmcProtocolVersion = (typeof BMC_PROTOCOL_VERSIONS)[number];

// ---------------------------------------------------------------------------------------------
// Messages

/**
 * Where the BMC fetches the firmware image: `uri` (the product sends a presigned HTTPS GET valid
 * until the wave's deadline), `sha256` (hex) what the fetched bytes must hash to, `size` how many
 * bytes they are. The product always sends all three; `sha256` and `size` are optional fields of
 * v1 and v2, so a message from an older sender still decodes.
 */
export interface FirmwareImageRef {
  uri: string;
  sha256?: string;
  /** Bytes. */
  size?: number;
}

/**
 * Credentials for the image store or the BMC, as an opaque blob encrypted for the BMC (for
 * example a KMS envelope). Only the BMC can open it; nothing on the way may log it, which is why
 * `describeBmcMessage` replaces it with `[redacted]`.
 */
export interface EncryptedAuth {
  /** Which key opened it, e.g. a KMS key ARN or alias. Not secret. */
  keyId: string;
  /** Base64 ciphertext. Secret in effect: never logged. */
  ciphertext: string;
}

export interface UpdateCommand {
  v: BmcProtocolVersion;
  type: "update";
  /** Idempotency key: a BMC that already handled it re-sends its result instead of flashing again. */
  requestId: string;
  taskId: string;
  targetVersion: string;
  /** (v2) Flash only these parts (src/domain/sub-targets.ts); absent: the whole component. */
  subTargets?: string[];
  image: FirmwareImageRef;
  auth?: EncryptedAuth;
  /** Epoch milliseconds. */
  issuedAt: number;
}

/** Preflight: the BMC answers with a `status` event carrying its current version. */
export interface QueryCommand {
  v: BmcProtocolVersion;
  type: "query";
  requestId: string;
}

/**
 * (v3) What a `reset` does to the component: `bmc` resets its controller (Redfish Manager.Reset),
 * `host` power-cycles its host, gracefully and then forced (ComputerSystem.Reset), `ac` removes and
 * restores its tray's power (Chassis.Reset PowerCycle), `rack` (sent to the rack's power shelf
 * only) removes and restores the whole rack's power through the shelf (Chassis.Reset PowerCycle on
 * the shelf's chassis): every component of the rack is reset, and the shelf answers for itself.
 */
export const RESET_KINDS = ["bmc", "host", "ac", "rack"] as const;
export type ResetKind = (typeof RESET_KINDS)[number];

/**
 * (v3) Activation: the BMC acks, performs the reset, and once it answers again sends `status` with
 * the version now active (and any still pending); a reset it could not perform: `status` with
 * `error`. Idempotent by `requestId` like an update: a repeat is answered, never reset twice.
 */
export interface ResetCommand {
  v: BmcProtocolVersion;
  type: "reset";
  requestId: string;
  taskId: string;
  kind: ResetKind;
  /** `host` only: seconds a graceful restart may take before the BMC forces it. */
  graceSeconds?: number;
  /** Epoch milliseconds. */
  issuedAt: number;
}

export type BmcCommand = UpdateCommand | QueryCommand | ResetCommand;

/** The BMC accepted an `update` and will report on it. */
export interface AckEvent {
  v: BmcProtocolVersion;
  type: "ack";
  requestId: string;
}

export interface ProgressEvent {
  v: BmcProtocolVersion;
  type: "progress";
  requestId: string;
  /** Integer 0..100. */
  percent: number;
}

export interface BmcError {
  /** Stable machine-readable code, e.g. `FLASH_FAILED`, `BUSY`, `IMAGE_UNAVAILABLE`. */
  code: string;
  message: string;
}

/**
 * The end of an `update`. `version` is what the BMC runs now: the target version on success, its
 * unchanged version on failure. A success whose `version` differs from the target is a version
 * mismatch, for the caller to judge; the protocol only carries it.
 */
export type ResultEvent = (
  | { v: BmcProtocolVersion; type: "result"; requestId: string; ok: true; version: string }
  | { v: BmcProtocolVersion; type: "result"; requestId: string; ok: false; version: string; error: BmcError }
) & {
  /** (v2) The parts the update flashed, when its command named sub-targets. */
  subTargets?: string[];
  /**
   * (v3) The version flashed but not active until a reset (staged): `version` is still the one
   * running. A staged success is not an upgrade until a reset activates it.
   */
  pendingVersion?: string;
};

/** The answer to a `query`. */
export interface StatusEvent {
  v: BmcProtocolVersion;
  type: "status";
  requestId: string;
  version: string;
  /**
   * Optional (v1 and v2): `false` when the BMC reports its component not ready to be flashed (a
   * status block, its host down), with `reason`. Absent: ready. Old tasks ignore it.
   */
  ready?: boolean;
  reason?: string;
  /** (v3) A version flashed but not yet active (staged until a reset). */
  pendingVersion?: string;
  /** (v3) The answer to a `reset` the BMC could not perform (`RESET_FAILED`, `RESET_UNSUPPORTED`). */
  error?: BmcError;
  /**
   * (v3) The component's health as its BMC sees it, when not OK (absent: OK), with why: Redfish
   * `Status.Health` / `HealthRollup` of its system, chassis and manager, the worst of them.
   */
  health?: BmcHealth;
  healthReason?: string;
}

export const BMC_HEALTH = ["Warning", "Critical"] as const;
export type BmcHealth = (typeof BMC_HEALTH)[number];

export type BmcEvent = AckEvent | ProgressEvent | ResultEvent | StatusEvent;
export type BmcMessage = BmcCommand | BmcEvent;

// ---------------------------------------------------------------------------------------------
// Encoding

/**
 * The JSON text of a message, fields in a fixed order (so equal messages encode to equal bytes).
 * Optional fields are written only when set.
 */
export function encodeBmcMessage(message: BmcMessage): string {
  return JSON.stringify(canonical(message));
}

/**
 * The version a message is sent as: 3 exactly when it is a `reset` or carries v3's
 * `pendingVersion` or a status `error`; else 2 exactly when it carries v2's `subTargets`; else 1.
 */
export function versionFor(m: BmcMessage): BmcProtocolVersion {
  if (m.type === "reset") return 3;
  if ((m.type === "status" || m.type === "result") && m.pendingVersion !== undefined) return 3;
  if (m.type === "status" && (m.error !== undefined || m.health !== undefined)) return 3;
  return (m.type === "update" || m.type === "result") && m.subTargets !== undefined ? 2 : 1;
}

function canonical(m: BmcMessage): Record<string, unknown> {
  const head = { v: versionFor(m), type: m.type, requestId: m.requestId };
  switch (m.type) {
    case "update": {
      const image: Record<string, unknown> = { uri: m.image.uri };
      if (m.image.sha256 !== undefined) image.sha256 = m.image.sha256;
      if (m.image.size !== undefined) image.size = m.image.size;
      const out: Record<string, unknown> = {
        ...head,
        taskId: m.taskId,
        targetVersion: m.targetVersion,
      };
      if (m.subTargets !== undefined) out.subTargets = [...m.subTargets];
      out.image = image;
      if (m.auth !== undefined) out.auth = { keyId: m.auth.keyId, ciphertext: m.auth.ciphertext };
      out.issuedAt = m.issuedAt;
      return out;
    }
    case "query":
    case "ack":
      return head;
    case "reset": {
      const out: Record<string, unknown> = { ...head, taskId: m.taskId, kind: m.kind };
      if (m.graceSeconds !== undefined) out.graceSeconds = m.graceSeconds;
      out.issuedAt = m.issuedAt;
      return out;
    }
    case "progress":
      return { ...head, percent: m.percent };
    case "status": {
      const out: Record<string, unknown> = { ...head, version: m.version };
      if (m.ready !== undefined) out.ready = m.ready;
      if (m.reason !== undefined) out.reason = m.reason;
      if (m.pendingVersion !== undefined) out.pendingVersion = m.pendingVersion;
      if (m.error !== undefined) out.error = { code: m.error.code, message: m.error.message };
      if (m.health !== undefined) out.health = m.health;
      if (m.healthReason !== undefined) out.healthReason = m.healthReason;
      return out;
    }
    case "result": {
      const out: Record<string, unknown> = m.ok
        ? { ...head, ok: true, version: m.version }
        : { ...head, ok: false, version: m.version, error: { code: m.error.code, message: m.error.message } };
      if (m.subTargets !== undefined) out.subTargets = [...m.subTargets];
      if (m.pendingVersion !== undefined) out.pendingVersion = m.pendingVersion;
      return out;
    }
  }
}

/**
 * A one-line description for logs: the message with `auth.ciphertext` replaced by `[redacted]`.
 * Log this, never the payload.
 */
export function describeBmcMessage(message: BmcMessage): string {
  const shown = canonical(message);
  if (message.type === "update" && message.auth !== undefined) {
    shown.auth = { keyId: message.auth.keyId, ciphertext: "[redacted]" };
  }
  return JSON.stringify(shown);
}

/**
 * A request id derived from the task and component, so a retried step of the same task re-sends
 * the same id and the BMC answers from memory instead of flashing twice. A new attempt that must
 * flash again (a rule's retry) passes a new `attempt`. The id names the task's update record (the
 * update set's `part`: the component's stage) and the component's entry in it (command-sets.ts),
 * so a report finds where it belongs:
 *
 * `updateRequestId("7a5c…0001", "c-1", 0, 2)` → `"upd-7a5c…0001.u0p2.<12 hex digits>"`.
 */
export function updateRequestId(taskId: string, componentId: string, attempt = 0, part?: number): string {
  return commandRequestId(updateAddress(taskId, attempt, part), componentId);
}
