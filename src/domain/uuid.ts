/**
 * UUID text checks. IDs in this product are canonical lowercase 8-4-4-4-12 hex strings; clients may
 * send any case, so input is accepted case-insensitively and normalized to lowercase before it is
 * stored or compared. The braced, `urn:uuid:` and hyphen-less forms that some parsers accept are
 * rejected: a client sending them is more likely confused than clever.
 */

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const NIL_UUID = "00000000-0000-0000-0000-000000000000";

/** `"3F2504E0-4F89-11D3-9A0C-0305E82C3301"` → true; `"3f2504e04f8911d39a0c0305e82c3301"` → false. */
export function isUuid(s: string): boolean {
  return UUID_PATTERN.test(s);
}

/** The all-zero UUID: what an unset proto `UUID { id }` often decodes to, so never a real id. */
export function isNilUuid(s: string): boolean {
  return s.toLowerCase() === NIL_UUID;
}

/** The canonical lowercase form, or undefined when `s` is not a UUID. */
export function normalizeUuid(s: string): string | undefined {
  return isUuid(s) ? s.toLowerCase() : undefined;
}

/**
 * Why `s` is not a UUID, worded like Go's `uuid.Parse`, whose errors the reference embeds in its
 * target-spec messages (`invalid rack uuid "r1": invalid UUID length: 2`); undefined when it is one.
 * The length is in UTF-8 bytes, as Go counts it.
 */
export function uuidError(s: string): string | undefined {
  if (isUuid(s)) return undefined;
  const length = new TextEncoder().encode(s).length;
  return length === 36 ? "invalid UUID format" : `invalid UUID length: ${length}`;
}
