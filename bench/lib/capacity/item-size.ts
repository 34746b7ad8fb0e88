/**
 * DynamoDB's item sizes and capacity units, from the attribute values (wire form or native): the
 * rules the estimator (../capacity-estimate.ts, whose comment lists them) prices every call by.
 */
/** One DynamoDB attribute value in the wire form (`{ S: "x" }`, `{ N: "12" }`, …). */
export type AttributeValue =
  | { S: string }
  | { N: string }
  | { B: Uint8Array }
  | { BOOL: boolean }
  | { NULL: true }
  | { SS: string[] }
  | { NS: string[] }
  | { BS: Uint8Array[] }
  | { L: AttributeValue[] }
  | { M: AttributeMap };

export type AttributeMap = Record<string, AttributeValue>;

/**
 * How the call's items are written: `attribute-values` for the low-level client's commands,
 * `native` for the document client's (plain JS values, `Set`s, `Uint8Array`s).
 */
export type ValueForm = "attribute-values" | "native";

export const KB = 1024;
export const READ_UNIT_BYTES = 4 * KB;
/** A Query or Scan page reads at most 1 MB before its filter. */
export const PAGE_LIMIT_BYTES = 1024 * KB;

// ---------------------------------------------------------------------------------------------
// Sizes

export function utf8Length(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

/**
 * Bytes of a number attribute value: ⌈significant digits / 2⌉ + 1, +1 when negative.
 *   "12" → 2 · "1764432000000" (epoch ms: 7 significant digits) → 5 · "-0.5" → 3 · "0" → 2
 */
export function numberSize(text: string): number {
  const trimmed = text.trim();
  const negative = trimmed.startsWith("-");
  const mantissa = trimmed.replace(/^[-+]/, "").split(/e/i)[0] ?? "";
  const digits = mantissa.replace(".", "").replace(/^0+/, "").replace(/0+$/, "");
  return Math.ceil(Math.max(1, digits.length) / 2) + 1 + (negative ? 1 : 0);
}

function binaryLength(value: Uint8Array | string): number {
  return typeof value === "string" ? Buffer.from(value, "base64").length : value.length;
}

/** Bytes of one attribute value, without its name. */
export function valueSize(value: AttributeValue): number {
  if ("S" in value) return utf8Length(value.S);
  if ("N" in value) return numberSize(value.N);
  if ("B" in value) return binaryLength(value.B);
  if ("BOOL" in value || "NULL" in value) return 1;
  if ("SS" in value) return value.SS.reduce((sum, s) => sum + utf8Length(s), 0);
  if ("NS" in value) return value.NS.reduce((sum, n) => sum + numberSize(n), 0);
  if ("BS" in value) return value.BS.reduce((sum, b) => sum + binaryLength(b), 0);
  if ("L" in value) return 3 + value.L.reduce((sum, v) => sum + 1 + valueSize(v), 0);
  return 3 + Object.entries(value.M).reduce((sum, [k, v]) => sum + 1 + utf8Length(k) + valueSize(v), 0);
}

/** Bytes of an item: attribute names plus values. */
export function itemSize(item: AttributeMap): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) size += utf8Length(name) + valueSize(value);
  return size;
}

const AV_TYPES = new Set(["S", "N", "B", "BOOL", "NULL", "SS", "NS", "BS", "L", "M"]);

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array)
  );
}

function looksLikeAttributeValue(value: unknown): boolean {
  if (!isPlainObject(value)) return false;
  const keys = Object.keys(value);
  return keys.length === 1 && AV_TYPES.has(keys[0]!);
}

/**
 * The form of a map of values, judged by its values: every value `{ S: … }`-shaped means the
 * wire form. For a call whose form nothing else tells (the meter asks the SDK first).
 */
export function guessForm(map: Record<string, unknown>): ValueForm {
  const values = Object.values(map);
  return values.length > 0 && values.every(looksLikeAttributeValue) ? "attribute-values" : "native";
}

/** A document-client value in the wire form, as lib-dynamodb's marshalling would write it. */
export function toAttributeValue(value: unknown): AttributeValue | undefined {
  if (value === undefined) return undefined;
  if (value === null) return { NULL: true };
  if (typeof value === "string") return { S: value };
  if (typeof value === "number" || typeof value === "bigint") return { N: String(value) };
  if (typeof value === "boolean") return { BOOL: value };
  if (value instanceof Uint8Array) return { B: value };
  if (value instanceof Set) {
    const members = [...value];
    if (members.every((m) => typeof m === "string")) return { SS: members as string[] };
    if (members.every((m) => m instanceof Uint8Array)) return { BS: members as Uint8Array[] };
    return { NS: members.map((m) => numberText(m)) };
  }
  if (Array.isArray(value)) {
    return { L: value.map((v) => toAttributeValue(v)).filter((v): v is AttributeValue => v !== undefined) };
  }
  if (value instanceof Map) return { M: toAttributeMap(Object.fromEntries(value), "native") };
  if (isPlainObject(value)) {
    // util-dynamodb's NumberValue (wrapNumbers) carries the digits in `value`.
    if (
      Object.keys(value).length === 1 &&
      typeof value.value === "string" &&
      /^[-+\d.eE]+$/.test(value.value)
    ) {
      return { N: value.value };
    }
    return { M: toAttributeMap(value, "native") };
  }
  return { S: String(value) };
}

function numberText(value: unknown): string {
  if (isPlainObject(value) && typeof value.value === "string") return value.value;
  return String(value);
}

/** An item or key map in the wire form, whichever form it came in. */
export function toAttributeMap(map: unknown, form: ValueForm): AttributeMap {
  if (!isPlainObject(map)) return {};
  if (form === "attribute-values") return map as AttributeMap;
  const out: AttributeMap = {};
  for (const [name, value] of Object.entries(map)) {
    const av = toAttributeValue(value);
    if (av !== undefined) out[name] = av;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Units

/** ⌈bytes / 1 KB⌉, at least 1. */
export function writeUnitsFor(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / KB));
}

/** ⌈bytes / 4 KB⌉ (at least 1), halved when eventually consistent. */
export function readUnitsFor(bytes: number, consistent: boolean): number {
  const units = Math.max(1, Math.ceil(bytes / READ_UNIT_BYTES));
  return consistent ? units : units / 2;
}

export function sameValue(a: AttributeValue | undefined, b: AttributeValue | undefined): boolean {
  return canonical(a) === canonical(b);
}

export function canonical(value: unknown): string {
  if (value === undefined) return "undefined";
  if (value instanceof Uint8Array) return `b64:${Buffer.from(value).toString("base64")}`;
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (isPlainObject(value)) {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value);
}
