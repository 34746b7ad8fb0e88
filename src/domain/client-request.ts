/**
 * Idempotent create: a client request id (CreateOperationRunRequest.client_request_id, our
 * extension 100) names one intended run. A retry with the same id and the same request gets the
 * first run's id back, even when the first answer was lost; the same id with another request is
 * InvalidArgument, so a client that reuses ids by mistake hears about it instead of getting
 * someone else's run.
 *
 * "The same request" is the same decoded CreateRunInput: `requestFingerprint` hashes it in a
 * canonical form (keys sorted, absent fields left out), so field order on the wire and omitted
 * defaults' encoding do not matter, while every value the run depends on does: name, description,
 * every configuration field, the order of target entries. Seeds are compared as sent: a request
 * that left them empty matches its retry, whose seeds the first create already generated.
 *
 * Credentials are the exception: the fingerprint keeps only their shape (which kind, which
 * component types carry one), never their values, because the fingerprint is stored in plain text
 * and a hash of a password is a password to whoever can guess it. Their values are bound by a
 * keyed digest instead (HMAC under a key the store never holds, see the RequestMac port): the
 * first create stores the MAC of `credentialsMacMessage`, a retry computes it again and compares.
 * Nothing is decrypted to answer a retry, and the stored MAC tells nothing without the key. The
 * message holds the id and the fingerprint, so two records with the same credentials have
 * different MACs (a stored MAC cannot be matched against another run's).
 */
import { createHash } from "node:crypto";
import type { CreateRunInput } from "./create-run-input.js";
import type { FieldViolation } from "./errors.js";
import type { FirmwareAuthentication } from "./model.js";

export const CLIENT_REQUEST_ID_FIELD = "client_request_id";

/** AWS's ClientToken rule (EC2, ECS): up to 64 printable ASCII characters, no spaces. */
export const CLIENT_REQUEST_ID_MAX = 64;
const CLIENT_REQUEST_ID = /^[\x21-\x7e]+$/;

/**
 * How long an id is remembered after the create that used it. A retry after that creates a new run.
 * A day covers any client's retry loop and a person re-running a command the next morning.
 */
export const CLIENT_REQUEST_TTL_MS = 24 * 60 * 60 * 1000;

export const CLIENT_REQUEST_REUSED = "was used for a different request; a retry must resend the same request";

/** Empty means "no idempotency" (proto3's default), not an id. */
export function checkClientRequestId(id: string): FieldViolation | undefined {
  if (id.length <= CLIENT_REQUEST_ID_MAX && CLIENT_REQUEST_ID.test(id)) return undefined;
  return {
    field: CLIENT_REQUEST_ID_FIELD,
    rule: `must be 1 to ${CLIENT_REQUEST_ID_MAX} printable ASCII characters without spaces, e.g. a UUID (got ${id.length} characters)`,
  };
}

/** The violation a reused id answers with. */
export const clientRequestReused: FieldViolation = {
  field: CLIENT_REQUEST_ID_FIELD,
  rule: CLIENT_REQUEST_REUSED,
};

/** Lowercase hex SHA-256 of the canonical request (credentials reduced to their shape). */
export function requestFingerprint(input: CreateRunInput): string {
  const firmware = input.configuration?.operation?.upgradeFirmware;
  const shaped =
    firmware?.authentication === undefined
      ? input
      : withFirmware(input, { ...firmware, authentication: credentialShape(firmware.authentication) });
  return createHash("sha256").update(canonicalJson(shaped), "utf8").digest("hex");
}

/** What the request MAC is computed over: the id, the fingerprint and the credentials' values. */
export function credentialsMacMessage(
  id: string,
  fingerprint: string,
  credentials: FirmwareAuthentication,
): string {
  return canonicalJson({ id, fingerprint, credentials });
}

/**
 * JSON with object keys sorted and `undefined` members dropped, arrays in order:
 *   canonicalJson({ b: 1, a: [2, { d: undefined, c: 3 }] }) → '{"a":[2,{"c":3}],"b":1}'
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(v).sort()) sorted[key] = (v as Record<string, unknown>)[key];
    return sorted;
  });
}

type FirmwareInput = NonNullable<
  NonNullable<NonNullable<CreateRunInput["configuration"]>["operation"]>["upgradeFirmware"]
>;

/** Each secret replaced by "set": what kind of credentials, and for which types, but no value. */
function credentialShape(auth: FirmwareAuthentication): Record<string, string> {
  return Object.fromEntries(
    Object.entries(auth).map(([key, value]) => [key, key === "kind" ? String(value) : "set"]),
  );
}

function withFirmware(input: CreateRunInput, firmware: unknown): CreateRunInput {
  const configuration = input.configuration as NonNullable<CreateRunInput["configuration"]>;
  const operation = configuration.operation as NonNullable<typeof configuration.operation>;
  return {
    ...input,
    configuration: {
      ...configuration,
      operation: { ...operation, upgradeFirmware: firmware as FirmwareInput },
    },
  };
}
