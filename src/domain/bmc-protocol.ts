/**
 * The BMC protocol: the project's own JSON-over-MQTT conversation between a child task and one
 * component's BMC. One codec, shared by the production command path (src/adapters/iot/publisher.ts)
 * and the simulated fleet (local/bmc-fleet.ts), so the two cannot drift. docs/bmc-protocol.md is the
 * human-readable contract; this file is the executable one.
 *
 * Topics (one IoT thing per component BMC):
 *   flow/bmc/{componentId}/cmd   child task → BMC: `update`, `query`, `reset` (v3)
 *   flow/bmc/{componentId}/evt   BMC → child task: `ack`, `progress`, `result`, `status`
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
 *
 * Decoding never throws on input from the network: it returns `{ ok: false, problems }` naming the
 * field path and the rule, e.g. `auth.ciphertext: missing required field`.
 */
import { commandRequestId, updateAddress } from "./command-addresses.js";

/** The newest version this codec speaks; it decodes every version in BMC_PROTOCOL_VERSIONS. */
export const BMC_PROTOCOL_VERSION = 3 as const;
export const BMC_PROTOCOL_VERSIONS = [1, 2, 3] as const;
export type BmcProtocolVersion = (typeof BMC_PROTOCOL_VERSIONS)[number];

export const BMC_TOPIC_ROOT = "flow/bmc";
/** What the simulated fleet subscribes to (and what a debug tap can watch). */
export const BMC_CMD_TOPIC_FILTER = `${BMC_TOPIC_ROOT}/+/cmd`;
/** What the IoT rule that feeds reports back to the waiting executions selects. */
export const BMC_EVT_TOPIC_FILTER = `${BMC_TOPIC_ROOT}/+/evt`;

export function bmcCmdTopic(componentId: string): string {
  return `${BMC_TOPIC_ROOT}/${componentId}/cmd`;
}

export function bmcEvtTopic(componentId: string): string {
  return `${BMC_TOPIC_ROOT}/${componentId}/evt`;
}

/** `"flow/bmc/abc/evt"` → `{ componentId: "abc", channel: "evt" }`; anything else → undefined. */
export function parseBmcTopic(topic: string): { componentId: string; channel: "cmd" | "evt" } | undefined {
  const parts = topic.split("/");
  if (parts.length !== 4 || parts[0] !== "flow" || parts[1] !== "bmc") return undefined;
  const componentId = parts[2]!;
  const channel = parts[3];
  if (componentId === "" || componentId === "+" || componentId === "#") return undefined;
  if (channel !== "cmd" && channel !== "evt") return undefined;
  return { componentId, channel };
}

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
 * restores its tray's power (Chassis.Reset PowerCycle).
 */
export const RESET_KINDS = ["bmc", "host", "ac"] as const;
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

// ---------------------------------------------------------------------------------------------
// Decoding

export const DECODE_PROBLEM_CODES = [
  "MALFORMED_JSON",
  "NOT_AN_OBJECT",
  "UNSUPPORTED_VERSION",
  "UNKNOWN_TYPE",
  "MISSING_FIELD",
  "WRONG_TYPE",
  "INVALID_VALUE",
] as const;
export type DecodeProblemCode = (typeof DECODE_PROBLEM_CODES)[number];

export interface DecodeProblem {
  code: DecodeProblemCode;
  /** Field path inside the message, `(root)` for the whole message: `image.uri`, `error.code`. */
  path: string;
  /** The rule, as a sentence fragment: `must be a string (got number)`. */
  rule: string;
}

export type DecodeResult<T> =
  | { ok: true; value: T }
  | { ok: false; problems: DecodeProblem[] /** `path: rule; path: rule` */; message: string };

const COMMAND_TYPES = ["update", "query", "reset"] as const;
const EVENT_TYPES = ["ack", "progress", "result", "status"] as const;

/** Decodes what arrived on a `cmd` topic. Events are rejected here (`UNKNOWN_TYPE`). */
export function decodeBmcCommand(payload: Uint8Array | string): DecodeResult<BmcCommand> {
  return decode(payload, COMMAND_TYPES) as DecodeResult<BmcCommand>;
}

/** Decodes what arrived on an `evt` topic. Commands are rejected here (`UNKNOWN_TYPE`). */
export function decodeBmcEvent(payload: Uint8Array | string): DecodeResult<BmcEvent> {
  return decode(payload, EVENT_TYPES) as DecodeResult<BmcEvent>;
}

/** Decodes any message (used by debug taps that watch both channels). */
export function decodeBmcMessage(payload: Uint8Array | string): DecodeResult<BmcMessage> {
  return decode(payload, [...COMMAND_TYPES, ...EVENT_TYPES]);
}

const MAX_PAYLOAD_BYTES = 128 * 1024; // AWS IoT Core's own message size limit

// Web-standard codecs, not Buffer: the domain uses nothing from Node but node:crypto. `ignoreBOM`
// keeps a byte-order mark in the text (as Buffer did), so a BOM-prefixed payload stays invalid JSON.
const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder("utf-8", { ignoreBOM: true });

function decode(payload: Uint8Array | string, allowed: readonly string[]): DecodeResult<BmcMessage> {
  const size = typeof payload === "string" ? utf8Encoder.encode(payload).byteLength : payload.byteLength;
  if (size > MAX_PAYLOAD_BYTES) {
    return failure([
      {
        code: "INVALID_VALUE",
        path: "(root)",
        rule: `must be at most ${MAX_PAYLOAD_BYTES} bytes (got ${size})`,
      },
    ]);
  }
  const text = typeof payload === "string" ? payload : utf8Decoder.decode(payload);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    // The parser's own message quotes a slice of the input, which may be ciphertext: not echoed.
    return failure([{ code: "MALFORMED_JSON", path: "(root)", rule: "is not valid JSON" }]);
  }
  if (!isRecord(raw)) {
    return failure([
      { code: "NOT_AN_OBJECT", path: "(root)", rule: `must be a JSON object (got ${kindOf(raw)})` },
    ]);
  }
  // The version decides how to read everything else, so it is checked alone and first.
  if (!("v" in raw)) return failure([{ code: "MISSING_FIELD", path: "v", rule: "missing required field" }]);
  if (!(BMC_PROTOCOL_VERSIONS as readonly unknown[]).includes(raw.v)) {
    const listed = (last: string) =>
      `${BMC_PROTOCOL_VERSIONS.slice(0, -1).join(", ")} ${last} ${BMC_PROTOCOL_VERSIONS.at(-1)}`;
    const rule =
      typeof raw.v === "number"
        ? `unsupported protocol version ${raw.v} (this codec speaks ${listed("and")})`
        : `must be the number ${listed("or")} (got ${kindOf(raw.v)})`;
    return failure([
      { code: typeof raw.v === "number" ? "UNSUPPORTED_VERSION" : "WRONG_TYPE", path: "v", rule },
    ]);
  }
  const r = new Reader(raw, raw.v as BmcProtocolVersion);
  const type = r.string("type");
  if (type === undefined) return failure(r.problems);
  if (!allowed.includes(type)) {
    return failure([
      {
        code: "UNKNOWN_TYPE",
        path: "type",
        rule: `must be one of ${allowed.join(", ")} (got ${JSON.stringify(type)})`,
      },
    ]);
  }
  const requestId = r.string("requestId");
  const message = readBody(r, type, requestId ?? "");
  return r.problems.length > 0 || message === undefined ? failure(r.problems) : { ok: true, value: message };
}

function readBody(r: Reader, type: string, requestId: string): BmcMessage | undefined {
  const v = r.version;
  // v1 never had subTargets: a v1 message that carries the field is read without it (unknown);
  // likewise pendingVersion before v3.
  const subTargets = v >= 2 ? r.optionalStringList("subTargets") : undefined;
  const pendingVersion = v >= 3 ? r.optionalString("pendingVersion") : undefined;
  switch (type) {
    case "update": {
      const taskId = r.string("taskId");
      const targetVersion = r.string("targetVersion");
      const image = r.object("image");
      const uri = image && r.string("image.uri", image);
      const sha256 = image && r.optionalString("image.sha256", image);
      if (sha256 !== undefined && !/^[0-9a-f]{64}$/.test(sha256)) {
        r.problem("INVALID_VALUE", "image.sha256", "must be 64 lowercase hex digits");
      }
      const size =
        image?.size === undefined ? undefined : r.integer("image.size", 1, Number.MAX_SAFE_INTEGER, image);
      const auth = r.optionalObject("auth");
      const keyId = auth && r.string("auth.keyId", auth);
      const ciphertext = auth && r.string("auth.ciphertext", auth);
      if (ciphertext !== undefined && !/^[A-Za-z0-9+/]*={0,2}$/.test(ciphertext)) {
        r.problem("INVALID_VALUE", "auth.ciphertext", "must be base64");
      }
      const issuedAt = r.integer("issuedAt", 0);
      if (
        taskId === undefined ||
        targetVersion === undefined ||
        uri === undefined ||
        issuedAt === undefined
      ) {
        return undefined;
      }
      const msg: UpdateCommand = { v, type, requestId, taskId, targetVersion, image: { uri }, issuedAt };
      if (subTargets !== undefined) msg.subTargets = subTargets;
      if (sha256 !== undefined) msg.image.sha256 = sha256;
      if (size !== undefined) msg.image.size = size;
      if (keyId !== undefined && ciphertext !== undefined) msg.auth = { keyId, ciphertext };
      return msg;
    }
    case "query":
    case "ack":
      return { v, type, requestId };
    case "reset": {
      if (v < 3) {
        r.problem("UNSUPPORTED_VERSION", "type", `reset needs protocol version 3 (got ${v})`);
        return undefined;
      }
      const taskId = r.string("taskId");
      const kind = r.string("kind");
      if (kind !== undefined && !(RESET_KINDS as readonly string[]).includes(kind)) {
        r.problem(
          "INVALID_VALUE",
          "kind",
          `must be one of ${RESET_KINDS.join(", ")} (got ${JSON.stringify(kind)})`,
        );
      }
      const graceSeconds =
        r.raw.graceSeconds === undefined ? undefined : r.integer("graceSeconds", 0, 86_400);
      const issuedAt = r.integer("issuedAt", 0);
      if (taskId === undefined || kind === undefined || issuedAt === undefined) return undefined;
      const reset: ResetCommand = { v, type, requestId, taskId, kind: kind as ResetKind, issuedAt };
      if (graceSeconds !== undefined) reset.graceSeconds = graceSeconds;
      return reset;
    }
    case "progress": {
      const percent = r.integer("percent", 0, 100);
      return percent === undefined ? undefined : { v, type, requestId, percent };
    }
    case "status": {
      const version = r.string("version");
      const ready = r.raw.ready === undefined ? undefined : r.boolean("ready");
      const reason = r.raw.reason === undefined ? undefined : r.string("reason", r.raw, true);
      const failed = v >= 3 && r.raw.error !== undefined ? r.object("error") : undefined;
      const code = failed && r.string("error.code", failed);
      const text = failed && r.string("error.message", failed, true);
      if (version === undefined) return undefined;
      const status: StatusEvent = { v, type, requestId, version };
      if (ready !== undefined) status.ready = ready;
      if (reason !== undefined) status.reason = reason;
      if (pendingVersion !== undefined) status.pendingVersion = pendingVersion;
      if (code !== undefined && text !== undefined) status.error = { code, message: text };
      const health = v >= 3 ? r.optionalString("health") : undefined;
      if (health !== undefined && !(BMC_HEALTH as readonly string[]).includes(health)) {
        r.problem(
          "INVALID_VALUE",
          "health",
          `must be one of ${BMC_HEALTH.join(", ")} (got ${JSON.stringify(health)})`,
        );
      } else if (health !== undefined) status.health = health as BmcHealth;
      const healthReason =
        v >= 3 && r.raw.healthReason !== undefined ? r.string("healthReason", r.raw, true) : undefined;
      if (healthReason !== undefined) status.healthReason = healthReason;
      return status;
    }
    default: {
      // "result": the only type left that `allowed` lets through.
      const ok = r.boolean("ok");
      const version = r.string("version");
      const parts = {
        ...(subTargets === undefined ? {} : { subTargets }),
        ...(pendingVersion === undefined ? {} : { pendingVersion }),
      };
      if (ok === true) {
        if (r.raw.error !== undefined) r.problem("INVALID_VALUE", "error", "must be absent when ok is true");
        return version === undefined ? undefined : { v, type: "result", requestId, ok, version, ...parts };
      }
      const error = ok === false ? r.object("error") : undefined;
      const code = error && r.string("error.code", error);
      const text = error && r.string("error.message", error, true);
      if (ok === undefined || version === undefined || code === undefined || text === undefined)
        return undefined;
      return { v, type: "result", requestId, ok, version, error: { code, message: text }, ...parts };
    }
  }
}

function failure(problems: DecodeProblem[]): DecodeResult<never> {
  return { ok: false, problems, message: problems.map((p) => `${p.path}: ${p.rule}`).join("; ") };
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

function kindOf(x: unknown): string {
  if (x === null) return "null";
  if (Array.isArray(x)) return "array";
  return typeof x;
}

/** Reads fields off a parsed object, recording a problem for each one that is missing or wrong. */
class Reader {
  readonly problems: DecodeProblem[] = [];
  constructor(
    readonly raw: Record<string, unknown>,
    readonly version: BmcProtocolVersion,
  ) {}

  problem(code: DecodeProblemCode, path: string, rule: string): void {
    this.problems.push({ code, path, rule });
  }

  private field(path: string, from: Record<string, unknown>): unknown {
    return from[path.slice(path.lastIndexOf(".") + 1)];
  }

  private present(path: string, from: Record<string, unknown>): unknown {
    const value = this.field(path, from);
    if (value === undefined) this.problem("MISSING_FIELD", path, "missing required field");
    return value;
  }

  private wrongType(path: string, want: string, got: unknown): undefined {
    this.problem("WRONG_TYPE", path, `must be ${want} (got ${kindOf(got)})`);
    return undefined;
  }

  /** Required strings are non-empty unless `allowEmpty`: an empty id or version is always a bug. */
  string(path: string, from = this.raw, allowEmpty = false): string | undefined {
    const value = this.present(path, from);
    if (value === undefined) return undefined;
    if (typeof value !== "string") return this.wrongType(path, "a string", value);
    if (value === "" && !allowEmpty) {
      this.problem("INVALID_VALUE", path, "must not be empty");
      return undefined;
    }
    return value;
  }

  optionalString(path: string, from = this.raw): string | undefined {
    return this.field(path, from) === undefined ? undefined : this.string(path, from);
  }

  boolean(path: string): boolean | undefined {
    const value = this.present(path, this.raw);
    if (value === undefined) return undefined;
    return typeof value === "boolean" ? value : this.wrongType(path, "a boolean", value);
  }

  integer(path: string, min: number, max = Number.MAX_SAFE_INTEGER, from = this.raw): number | undefined {
    const value = this.present(path, from);
    if (value === undefined) return undefined;
    if (typeof value !== "number") return this.wrongType(path, "a number", value);
    if (!Number.isInteger(value) || value < min || value > max) {
      const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `between ${min} and ${max}`;
      this.problem("INVALID_VALUE", path, `must be an integer ${range} (got ${value})`);
      return undefined;
    }
    return value;
  }

  object(path: string): Record<string, unknown> | undefined {
    const value = this.present(path, this.raw);
    if (value === undefined) return undefined;
    return isRecord(value) ? value : this.wrongType(path, "an object", value);
  }

  optionalObject(path: string): Record<string, unknown> | undefined {
    return this.raw[path] === undefined ? undefined : this.object(path);
  }

  /** Absent, or a non-empty list of distinct non-empty strings. */
  optionalStringList(path: string): string[] | undefined {
    const value = this.raw[path];
    if (value === undefined) return undefined;
    if (!Array.isArray(value)) return this.wrongType(path, "an array of strings", value);
    if (value.length === 0) {
      this.problem("INVALID_VALUE", path, "must not be empty (omit it for the whole component)");
      return undefined;
    }
    const out: string[] = [];
    value.forEach((item, i) => {
      const at = `${path}[${i}]`;
      if (typeof item !== "string") this.wrongType(at, "a string", item);
      else if (item === "") this.problem("INVALID_VALUE", at, "must not be empty");
      else if (out.includes(item)) this.problem("INVALID_VALUE", at, `duplicate ${JSON.stringify(item)}`);
      else out.push(item);
    });
    return out.length === value.length ? out : undefined;
  }
}
