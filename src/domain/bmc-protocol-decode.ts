/**
 * Reading BMC protocol messages off the wire (src/domain/bmc-protocol.ts has the messages and
 * their encoding). Decoding never throws on input from the network: it returns `{ ok: false,
 * problems }` naming the field path and the rule, e.g. `auth.ciphertext: missing required field`,
 * and never a value (an update's auth blob must not reach a log even when malformed).
 *
 * A decoder rejects any `v` it does not speak (`UNSUPPORTED_VERSION`) and ignores fields it does
 * not know; a field newer than the message's `v` is such an unknown field.
 */
import {
  BMC_HEALTH,
  BMC_PROTOCOL_VERSIONS,
  type BmcCommand,
  type BmcEvent,
  type BmcHealth,
  type BmcMessage,
  type BmcProtocolVersion,
  RESET_KINDS,
  type ResetCommand,
  type ResetKind,
  type StatusEvent,
  type UpdateCommand,
} from "./bmc-protocol.js";

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
