/**
 * Every string a client sends, checked at decode time, before any handler sees the request:
 *
 *   - malformed UTF-8 is InvalidArgument `<field>: must be valid UTF-8`. Protobuf decoders replace
 *     invalid sequences with U+FFFD, and a stored name full of U+FFFD is not what the client sent.
 *     The generated decoders (src/gen, never edited) take a BinaryReader in place of bytes and
 *     pass it to every nested message, so `decodeRequest` hands them a reader whose UTF-8 decoder
 *     is strict and, instead of throwing (which would lose the field's name), returns a marker
 *     string no client can send; the walk below names the fields that hold it.
 *   - control characters (src/domain/text.ts: C0 but tab, DEL, C1) are InvalidArgument
 *     `<field>: must not contain control characters (U+001B at character 0)`, in every string
 *     field of every request, since whatever is stored is shown to someone later. Credentials
 *     (`authentication_data`) are exempt from this rule (not from UTF-8): they are never stored
 *     readable or shown, and a secret may be any text its BMC accepts.
 *
 * Field paths are the proto names, as every other InvalidArgument here says them:
 * `configuration.operation.upgrade_firmware.target_spec.racks.targets[2].name`.
 */
import { randomUUID } from "node:crypto";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { type FieldViolation, ValidationError } from "../../domain/errors.js";
import { controlCharacterRule } from "../../domain/text.js";
import type { MethodDefinition } from "./handlers.js";

export const INVALID_UTF8_RULE = "must be valid UTF-8";

/** What the strict decoder returns for a malformed string: unguessable, and no valid text. */
const MALFORMED = `\u0000malformed-utf8-${randomUUID()}`;

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function decodeUtf8(bytes: Uint8Array): string {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return MALFORMED;
  }
}

/** Fields whose values are secrets: checked for UTF-8 only. */
const SECRETS = new Set(["authenticationData"]);

/**
 * The request decoded with strict UTF-8, or a ValidationError listing every malformed or
 * control-character string field. Wire-format errors (a truncated message) throw as the
 * generated decoder throws them.
 */
export function decodeRequest<Req>(method: MethodDefinition<Req, unknown>, bytes: Uint8Array): Req {
  // The generated deserializer passes its argument to `decode`, which takes a reader as it is.
  const request = method.requestDeserialize(new BinaryReader(bytes, decodeUtf8) as unknown as Buffer);
  const violations: FieldViolation[] = [];
  walk(request, "", violations);
  if (violations.length > 0) throw new ValidationError(violations);
  return request;
}

/** `secret`: inside a credentials field, where only UTF-8 is checked. */
function walk(value: unknown, path: string, out: FieldViolation[], secret = false): void {
  if (typeof value === "string") {
    const rule = value === MALFORMED ? INVALID_UTF8_RULE : secret ? undefined : controlCharacterRule(value);
    if (rule !== undefined) out.push({ field: path, rule });
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      walk(item, `${path}[${i}]`, out, secret);
    });
    return;
  }
  if (value === null || typeof value !== "object" || value instanceof Date || value instanceof Uint8Array)
    return;
  for (const [key, field] of Object.entries(value)) {
    const inSecret = secret || SECRETS.has(key);
    // A oneof ({ $case, value }) is named by its case in proto paths, not by the oneof's name.
    if (isOneof(field)) walk(field.value, join(path, snake(field.$case)), out, inSecret);
    else walk(field, join(path, snake(key)), out, inSecret);
  }
}

function isOneof(value: unknown): value is { $case: string; value: unknown } {
  return typeof value === "object" && value !== null && "$case" in value && "value" in value;
}

/** ts-proto's camelCase back to the proto field name: `targetSpec` → `target_spec`. */
function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

function join(path: string, field: string): string {
  return path === "" ? field : `${path}.${field}`;
}
