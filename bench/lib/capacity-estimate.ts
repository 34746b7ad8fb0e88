/**
 * What DynamoDB would charge for one call, worked out from what the client sees: the request,
 * the answer, and the items this process has already seen. The benchmarks' capacity meter
 * (capacity-meter.ts) uses it when the answer carries no ConsumedCapacity (moto: writes,
 * transactions, and it answers fixed placeholders for the rest), so cost-per-rack figures
 * measured locally are estimates, not lower bounds of unknown size.
 *
 * The rules (DynamoDB developer guide, "Item sizes and formats", "Read and write operations",
 * "Transactions", "Global secondary indexes"):
 *
 *   item size   Σ (UTF-8 bytes of the attribute name + size of the value)
 *               S: UTF-8 bytes · B: raw bytes · BOOL, NULL: 1 · N: ⌈significant digits / 2⌉ + 1
 *               (+1 if negative; leading/trailing zeros do not count, 0 counts one digit)
 *               L, M: 3 + Σ (1 + element), a map element counting its name · SS, NS, BS: Σ elements
 *   writes      1 WCU per started 1 KB of the item (min 1); PutItem / UpdateItem: the larger of the
 *               item before and after; DeleteItem: the deleted item
 *   reads       1 RCU per started 4 KB, strongly consistent; 0.5 eventually consistent
 *   Query/Scan  per page: Σ sizes of the items READ (before the filter), rounded up to 4 KB once
 *   BatchGet    each item rounded on its own; a key not found costs the minimum
 *   transactions 2× per item (TransactWriteItems: WCU; TransactGetItems: RCU)
 *   indexes     a write that changes what an index holds for the item costs index writes of the
 *               index entry's size (1 KB units): entry added or removed 1, index key changed 2
 *               (delete + put), a projected attribute changed 1, nothing projected changed 0
 *   conditional a write whose condition fails still costs 1 KB units of the existing item (min 1)
 *
 * Worked example: `{ runId: "r-1", status: "PENDING", inFlight: 12, tags: ["a", "bc"] }` is
 *   runId (5) + "r-1" (3) + status (6) + "PENDING" (7) + inFlight (8) + 12 (⌈2/2⌉+1 = 2)
 *   + tags (4) + list (3 + (1+1) + (1+2) = 8) = 43 bytes:
 * a Put costs 1 WCU, 2 inside a transaction, plus 1 per index whose entry it adds; a strongly
 * consistent GetItem of it 1 RCU, an eventually consistent one 0.5.
 *
 * What it cannot see, and what it assumes instead (docs/benchmarks.md says which of these matter
 * for the figures it quotes):
 *   - The item before a write is known only if the answer returns it (ReturnValues ALL_OLD), this
 *     process read or wrote it earlier (the meter remembers the last version of up to 2,000
 *     items), or a successful `attribute_not_exists(<partition key>)` condition proves there was
 *     none. Otherwise the table write is sized on the new item alone (PutItem), or on the key plus
 *     the assigned values (UpdateItem): a lower bound.
 *   - Index membership of an unseen item: a write that sets an index key counts 1 index write (a
 *     lower bound: moving an entry costs 2); a write that touches only projected attributes, or a
 *     delete, counts 1 write per index, as if the item were in it (an upper bound for sparse
 *     indexes the item is not in).
 *   - Index writes inside a transaction count 1×, not 2×: the guide says index updates propagate
 *     after the transaction completes, outside its two phases (it does not state their price).
 *   - A cancelled transaction (TransactionCanceledException) counts its items once (the prepare
 *     phase) without index writes: DynamoDB does not document what a cancellation costs.
 *   - A ConditionCheck inside TransactWriteItems counts as a transactional read of the item
 *     (2 RCU per 4 KB): it reads, and writes nothing.
 *   - Reads with a ProjectionExpression are charged on the whole item; only the projected part is
 *     visible, so they are a lower bound unless the whole item is remembered.
 *   - Items a Query/Scan filter dropped are sized at the average of the table's distinct items
 *     seen so far (the dropped ones are by definition unlike the returned ones), else of the items
 *     returned; `Select: COUNT` pages likewise. A page never counts more than 1 MB (DynamoDB stops
 *     a page there) unless the returned items alone are larger (an emulator's pages may be).
 *   - Failures other than a failed condition or a cancelled transaction (validation, throttling,
 *     network) count nothing.
 */
import type { IndexDefinition, TableDefinition } from "../../src/adapters/dynamodb/schema.js";

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

export interface IndexShape {
  name: string;
  /** A local index shares the table's partition key; its `partitionKey` names it anyway. */
  kind: "global" | "local";
  partitionKey: string;
  sortKey?: string;
  /** ALL, KEYS_ONLY, or the non-key attributes of an INCLUDE projection. */
  projection: "ALL" | "KEYS_ONLY" | readonly string[];
}

export interface TableShape {
  partitionKey: string;
  sortKey?: string;
  indexes: readonly IndexShape[];
}

export type TableShapeLookup = (tableName: string) => TableShape | undefined;

/** What the caller remembers of items: `null` = known not to exist, `undefined` = unknown. */
export interface ItemMemory {
  get(table: string, key: string): AttributeMap | null | undefined;
  /** Mean size in bytes of the distinct items of `table` seen so far. */
  averageSize(table: string): number | undefined;
}

export interface EstimateInput {
  /** The operation without "Command": "PutItem", "TransactWriteItems", … */
  operation: string;
  input: Record<string, unknown>;
  /** Absent when the call failed. */
  output?: Record<string, unknown>;
  /** The error's name when the call failed. */
  errorName?: string;
  form: ValueForm;
  tables: TableShapeLookup;
  memory?: ItemMemory;
}

export interface ItemSeen {
  table: string;
  /** `itemKey` of the item. */
  key: string;
  /**
   * The item as it now is; `null` when the call deleted it or proved it absent; `undefined` when
   * the call changed it in a way only partly known (forget the remembered version).
   */
  item: AttributeMap | null | undefined;
}

export interface CapacityEstimate {
  readUnits: number;
  writeUnits: number;
  /** Units by table name (table and its indexes together). */
  byTable: Record<string, number>;
  /** Items whose current version the call revealed, for the next estimates to use as "before". */
  seen: ItemSeen[];
}

const KB = 1024;
const READ_UNIT_BYTES = 4 * KB;
/** A Query or Scan page reads at most 1 MB before its filter. */
const PAGE_LIMIT_BYTES = 1024 * KB;

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

function isPlainObject(value: unknown): value is Record<string, unknown> {
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

// ---------------------------------------------------------------------------------------------
// Keys and index entries

/** A stable string for an item's primary key: `["S:run-1","S:target-7"]`. */
export function itemKey(shape: TableShape, item: AttributeMap): string | undefined {
  const parts: string[] = [];
  for (const name of [shape.partitionKey, shape.sortKey]) {
    if (name === undefined) continue;
    const value = item[name];
    if (value === undefined) return undefined;
    parts.push(scalarText(value));
  }
  return JSON.stringify(parts);
}

function scalarText(value: AttributeValue): string {
  if ("S" in value) return `S:${value.S}`;
  if ("N" in value) return `N:${value.N}`;
  if ("B" in value)
    return `B:${typeof value.B === "string" ? value.B : Buffer.from(value.B).toString("base64")}`;
  return JSON.stringify(value);
}

/** The index entry an item has in `index`, or undefined when the item lacks an index key. */
export function indexEntry(
  shape: TableShape,
  index: IndexShape,
  item: AttributeMap,
): AttributeMap | undefined {
  if (item[index.partitionKey] === undefined) return undefined;
  if (index.sortKey !== undefined && item[index.sortKey] === undefined) return undefined;
  if (index.projection === "ALL") return item;
  const names = new Set([shape.partitionKey, index.partitionKey]);
  if (shape.sortKey) names.add(shape.sortKey);
  if (index.sortKey) names.add(index.sortKey);
  if (index.projection !== "KEYS_ONLY") for (const n of index.projection) names.add(n);
  const entry: AttributeMap = {};
  for (const name of names) {
    const value = item[name];
    if (value !== undefined) entry[name] = value;
  }
  return entry;
}

function sameValue(a: AttributeValue | undefined, b: AttributeValue | undefined): boolean {
  return canonical(a) === canonical(b);
}

function canonical(value: unknown): string {
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

/**
 * Index write units of one item going from `before` to `after` (undefined = not in the table),
 * both fully known:
 *   absent → absent 0 · absent → entry 1 · entry → absent 1 · key changed 2 · entry changed 1 ·
 *   entry unchanged 0 (each write ⌈entry bytes / 1 KB⌉)
 */
export function indexWriteUnits(
  shape: TableShape,
  index: IndexShape,
  before: AttributeMap | undefined,
  after: AttributeMap | undefined,
): number {
  const old = before === undefined ? undefined : indexEntry(shape, index, before);
  const next = after === undefined ? undefined : indexEntry(shape, index, after);
  if (old === undefined && next === undefined) return 0;
  if (old === undefined) return writeUnitsFor(itemSize(next!));
  if (next === undefined) return writeUnitsFor(itemSize(old));
  const keyNames = [index.partitionKey, index.sortKey].filter((n): n is string => n !== undefined);
  if (keyNames.some((n) => !sameValue(old[n], next[n]))) {
    return writeUnitsFor(itemSize(old)) + writeUnitsFor(itemSize(next));
  }
  return canonical(old) === canonical(next) ? 0 : writeUnitsFor(itemSize(next));
}

// ---------------------------------------------------------------------------------------------
// Update expressions

interface UpdatePlan {
  /** Top-level attribute names every action touches. */
  touched: Set<string>;
  /** Top-level names whose attribute the update removes. */
  removed: Set<string>;
  /** Applies the update to `base` (a copy); nested paths keep or add the top-level attribute. */
  apply(base: AttributeMap): AttributeMap;
}

const CLAUSE = /\b(SET|REMOVE|ADD|DELETE)\b/gi;

/** Splits on commas outside parentheses and brackets. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "(" || c === "[") depth++;
    else if (c === ")" || c === "]") depth--;
    else if (c === "," && depth === 0) {
      parts.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  const last = text.slice(start).trim();
  if (last) parts.push(last);
  return parts;
}

/**
 * Reads an UpdateExpression well enough to size its result: which top-level attributes it sets,
 * removes, adds to, and the values it assigns.
 *   "SET #s = :claimed, inFlight = inFlight + :one REMOVE expiresAt"
 *     touched {status, inFlight, expiresAt}, removed {expiresAt}
 */
export function planUpdate(
  expression: string,
  names: Record<string, string>,
  values: AttributeMap,
): UpdatePlan {
  const touched = new Set<string>();
  const removed = new Set<string>();
  const steps: ((item: AttributeMap, before: AttributeMap) => void)[] = [];
  const marks = [...expression.matchAll(CLAUSE)];
  const topName = (path: string): { name: string; nested: boolean } => {
    const head = /^\s*([^.[\s]+)/.exec(path)?.[1] ?? path.trim();
    return { name: names[head] ?? head, nested: /[.[]/.test(path.trim()) };
  };
  const operand = (text: string, before: AttributeMap): AttributeValue | undefined => {
    const t = text.trim();
    if (t.startsWith(":")) return values[t];
    const call = /^(\w+)\s*\((.*)\)$/s.exec(t);
    if (call) {
      const args = splitTopLevel(call[2] ?? "");
      if (call[1] === "if_not_exists")
        return operand(args[0] ?? "", before) ?? operand(args[1] ?? "", before);
      if (call[1] === "list_append") {
        const lists = args.map((a) => operand(a, before));
        return { L: lists.flatMap((l) => (l !== undefined && "L" in l ? l.L : [])) };
      }
      return undefined;
    }
    const arithmetic = splitArithmetic(t);
    if (arithmetic.length > 1) {
      // a + b: the result has about as many digits as the longer operand.
      const numbers = arithmetic.map((a) => operand(a, before)).filter((v) => v !== undefined && "N" in v);
      return numbers.reduce<AttributeValue | undefined>(
        (longest, v) => (longest === undefined || valueSize(v!) > valueSize(longest) ? v : longest),
        undefined,
      );
    }
    const { name, nested } = topName(t);
    return nested ? undefined : before[name];
  };
  for (let i = 0; i < marks.length; i++) {
    const mark = marks[i]!;
    const clause = mark[1]!.toUpperCase();
    const body = expression.slice(mark.index! + mark[0].length, marks[i + 1]?.index ?? expression.length);
    for (const action of splitTopLevel(body)) {
      if (clause === "SET") {
        const eq = action.indexOf("=");
        const { name, nested } = topName(action.slice(0, eq));
        const rhs = action.slice(eq + 1);
        touched.add(name);
        steps.push((item, before) => {
          if (nested) {
            if (item[name] === undefined) {
              const value = firstPlaceholder(rhs, values);
              if (value !== undefined) item[name] = { M: { [name]: value } };
            }
            return;
          }
          const value = operand(rhs, before);
          if (value !== undefined) item[name] = value;
        });
      } else if (clause === "REMOVE") {
        const { name, nested } = topName(action);
        touched.add(name);
        if (!nested) {
          removed.add(name);
          steps.push((item) => {
            delete item[name];
          });
        }
      } else {
        // ADD path :v / DELETE path :v
        const [path = "", valueName = ""] = action.split(/\s+/).filter(Boolean);
        const { name } = topName(path);
        touched.add(name);
        const value = values[valueName];
        steps.push((item, before) => {
          const current = before[name];
          if (clause === "DELETE" || value === undefined) return;
          if (current === undefined) item[name] = value;
          else if ("N" in current && "N" in value) {
            item[name] = valueSize(value) > valueSize(current) ? value : current;
          } else if ("SS" in current && "SS" in value) {
            item[name] = { SS: [...new Set([...current.SS, ...value.SS])] };
          } else if ("NS" in current && "NS" in value) {
            item[name] = { NS: [...new Set([...current.NS, ...value.NS])] };
          }
        });
      }
    }
  }
  return {
    touched,
    removed,
    apply(base) {
      const item = { ...base };
      for (const step of steps) step(item, base);
      return item;
    },
  };
}

/** "a + :v" → ["a", ":v"]; "a" → ["a"] (outside parentheses only). */
function splitArithmetic(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "(") depth++;
    else if (c === ")") depth--;
    else if ((c === "+" || c === "-") && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts.map((p) => p.trim()).filter(Boolean);
}

function firstPlaceholder(text: string, values: AttributeMap): AttributeValue | undefined {
  const name = /:[A-Za-z0-9_]+/.exec(text)?.[0];
  return name === undefined ? undefined : values[name];
}

// ---------------------------------------------------------------------------------------------
// Calls

class Tally {
  readUnits = 0;
  writeUnits = 0;
  byTable: Record<string, number> = {};
  seen: ItemSeen[] = [];

  read(table: string, units: number): void {
    this.readUnits += units;
    this.byTable[table] = (this.byTable[table] ?? 0) + units;
  }

  write(table: string, units: number): void {
    this.writeUnits += units;
    this.byTable[table] = (this.byTable[table] ?? 0) + units;
  }

  result(): CapacityEstimate {
    return { readUnits: this.readUnits, writeUnits: this.writeUnits, byTable: this.byTable, seen: this.seen };
  }
}

interface WriteRequest {
  kind: "Put" | "Update" | "Delete" | "ConditionCheck";
  request: Record<string, unknown>;
  /** What the answer returned of the item (ReturnValues), already in the wire form. */
  returned?: AttributeMap;
  returnValues?: string;
}

interface Context {
  form: ValueForm;
  tables: TableShapeLookup;
  memory?: ItemMemory;
  tally: Tally;
}

/** Estimated capacity of one call; see the module comment for the rules and assumptions. */
export function estimateCapacity(call: EstimateInput): CapacityEstimate {
  const tally = new Tally();
  const ctx: Context = { form: call.form, tables: call.tables, memory: call.memory, tally };
  const { input, output } = call;
  const failed = call.errorName !== undefined;
  const conditionFailed = call.errorName === "ConditionalCheckFailedException";
  const cancelled = call.errorName === "TransactionCanceledException";
  if (failed && !conditionFailed && !cancelled) return tally.result();

  switch (call.operation) {
    case "GetItem":
      readOne(ctx, String(input.TableName), input, output?.Item, input.ConsistentRead === true, 1);
      break;
    case "BatchGetItem":
      batchGet(ctx, input, output);
      break;
    case "TransactGetItems": {
      if (failed) break;
      const items = (input.TransactItems as { Get: Record<string, unknown> }[] | undefined) ?? [];
      const responses = (output?.Responses as { Item?: unknown }[] | undefined) ?? [];
      items.forEach((entry, i) => {
        readOne(ctx, String(entry.Get.TableName), entry.Get, responses[i]?.Item, true, 2);
      });
      break;
    }
    case "Query":
    case "Scan":
      queryPage(ctx, input, output);
      break;
    case "PutItem":
    case "UpdateItem":
    case "DeleteItem": {
      const kind =
        call.operation === "PutItem" ? "Put" : call.operation === "UpdateItem" ? "Update" : "Delete";
      const returnValues = input.ReturnValues as string | undefined;
      const attributes = output?.Attributes;
      write(
        ctx,
        {
          kind,
          request: input,
          ...(attributes === undefined ? {} : { returned: toAttributeMap(attributes, ctx.form) }),
          ...(returnValues === undefined ? {} : { returnValues }),
        },
        { multiplier: 1, conditionFailed, indexes: !conditionFailed, remember: !failed },
      );
      break;
    }
    case "BatchWriteItem":
      batchWrite(ctx, input, output);
      break;
    case "TransactWriteItems": {
      const items = (input.TransactItems as Record<string, Record<string, unknown>>[] | undefined) ?? [];
      for (const entry of items) {
        const [kind, request] = Object.entries(entry)[0] ?? [];
        if (request === undefined) continue;
        if (kind === "ConditionCheck") {
          const table = String(request.TableName);
          const known = remembered(ctx, table, toAttributeMap(request.Key, ctx.form));
          const size = known ? itemSize(known) : 0;
          tally.read(table, readUnitsFor(size, true) * (cancelled ? 1 : 2));
          continue;
        }
        write(
          ctx,
          { kind: kind as WriteRequest["kind"], request },
          {
            multiplier: cancelled ? 1 : 2,
            conditionFailed: false,
            indexes: !cancelled,
            remember: !cancelled,
          },
        );
      }
      break;
    }
  }
  return tally.result();
}

function remembered(ctx: Context, table: string, key: AttributeMap): AttributeMap | null | undefined {
  const shape = ctx.tables(table);
  if (shape === undefined || ctx.memory === undefined) return undefined;
  const k = itemKey(shape, key);
  return k === undefined ? undefined : ctx.memory.get(table, k);
}

function see(ctx: Context, table: string, item: AttributeMap | null | undefined, key?: AttributeMap): void {
  const shape = ctx.tables(table);
  if (shape === undefined) return;
  const k = itemKey(shape, item ?? key ?? {});
  if (k !== undefined) ctx.tally.seen.push({ table, key: k, item });
}

/** Whether the request's items are whole (no projection), so they can stand for the item. */
function wholeItems(ctx: Context, table: string, request: Record<string, unknown>): boolean {
  if (request.ProjectionExpression !== undefined || request.AttributesToGet !== undefined) return false;
  if (request.Select === "COUNT" || request.Select === "SPECIFIC_ATTRIBUTES") return false;
  const indexName = request.IndexName as string | undefined;
  if (indexName === undefined) return true;
  const index = ctx.tables(table)?.indexes.find((i) => i.name === indexName);
  return index?.projection === "ALL";
}

function readOne(
  ctx: Context,
  table: string,
  request: Record<string, unknown>,
  item: unknown,
  consistent: boolean,
  multiplier: number,
): void {
  const key = toAttributeMap(request.Key, ctx.form);
  const whole = wholeItems(ctx, table, request);
  let size = 0;
  if (item !== undefined) {
    const found = toAttributeMap(item, ctx.form);
    const known = whole ? undefined : remembered(ctx, table, key);
    size = known ? itemSize(known) : itemSize(found);
    if (whole) see(ctx, table, found);
  } else {
    see(ctx, table, null, key);
  }
  ctx.tally.read(table, readUnitsFor(size, consistent) * multiplier);
}

function batchGet(
  ctx: Context,
  input: Record<string, unknown>,
  output: Record<string, unknown> | undefined,
): void {
  const requested = (input.RequestItems as Record<string, Record<string, unknown>> | undefined) ?? {};
  const responses = (output?.Responses as Record<string, unknown[]> | undefined) ?? {};
  const unprocessed = (output?.UnprocessedKeys as Record<string, { Keys?: unknown[] }> | undefined) ?? {};
  for (const [table, request] of Object.entries(requested)) {
    const consistent = request.ConsistentRead === true;
    const found = responses[table] ?? [];
    const whole = wholeItems(ctx, table, request);
    for (const raw of found) {
      const item = toAttributeMap(raw, ctx.form);
      ctx.tally.read(table, readUnitsFor(itemSize(item), consistent));
      if (whole) see(ctx, table, item);
    }
    const asked = ((request.Keys as unknown[] | undefined) ?? []).length;
    const missing = asked - found.length - (unprocessed[table]?.Keys?.length ?? 0);
    if (missing > 0) ctx.tally.read(table, readUnitsFor(0, consistent) * missing);
  }
}

function queryPage(
  ctx: Context,
  input: Record<string, unknown>,
  output: Record<string, unknown> | undefined,
): void {
  const table = String(input.TableName);
  const consistent = input.ConsistentRead === true;
  const items = ((output?.Items as unknown[] | undefined) ?? []).map((i) => toAttributeMap(i, ctx.form));
  const whole = wholeItems(ctx, table, input);
  let bytes = 0;
  for (const item of items) {
    bytes += itemSize(item);
    if (whole) see(ctx, table, item);
  }
  const scanned = (output?.ScannedCount as number | undefined) ?? items.length;
  const unseen = Math.max(0, scanned - items.length);
  if (unseen > 0) {
    const average = ctx.memory?.averageSize(table) ?? (items.length > 0 ? bytes / items.length : 0);
    bytes = Math.min(bytes + unseen * average, Math.max(bytes, PAGE_LIMIT_BYTES));
  }
  ctx.tally.read(table, readUnitsFor(bytes, consistent));
}

function batchWrite(
  ctx: Context,
  input: Record<string, unknown>,
  output: Record<string, unknown> | undefined,
): void {
  const requested = (input.RequestItems as Record<string, Record<string, unknown>[]> | undefined) ?? {};
  const unprocessed = (output?.UnprocessedItems as Record<string, unknown[]> | undefined) ?? {};
  for (const [table, requests] of Object.entries(requested)) {
    const skipped = new Set((unprocessed[table] ?? []).map(canonical));
    for (const request of requests) {
      if (skipped.has(canonical(request))) continue;
      const put = request.PutRequest as Record<string, unknown> | undefined;
      const del = request.DeleteRequest as Record<string, unknown> | undefined;
      const body = put ?? del;
      if (body === undefined) continue;
      write(
        ctx,
        { kind: put ? "Put" : "Delete", request: { ...body, TableName: table } },
        { multiplier: 1, conditionFailed: false, indexes: true, remember: true },
      );
    }
  }
}

/** `attribute_not_exists(<partition key>)` in a condition that held: there was no item. */
function provedAbsent(request: Record<string, unknown>, shape: TableShape): boolean {
  const condition = request.ConditionExpression;
  if (typeof condition !== "string") return false;
  const names = (request.ExpressionAttributeNames as Record<string, string> | undefined) ?? {};
  for (const match of condition.matchAll(/attribute_not_exists\s*\(\s*([^)\s]+)\s*\)/g)) {
    const path = match[1]!;
    if ((names[path] ?? path) === shape.partitionKey) return !/\bOR\b/i.test(condition);
  }
  return false;
}

function write(
  ctx: Context,
  w: WriteRequest,
  how: { multiplier: number; conditionFailed: boolean; indexes: boolean; remember: boolean },
): void {
  const table = String(w.request.TableName);
  const shape = ctx.tables(table);
  const newItem = w.kind === "Put" ? toAttributeMap(w.request.Item, ctx.form) : undefined;
  const key = newItem ?? toAttributeMap(w.request.Key, ctx.form);
  const returnedOld = w.returnValues === "ALL_OLD" && w.returned !== undefined ? w.returned : undefined;
  let before: AttributeMap | null | undefined = returnedOld ?? remembered(ctx, table, key);
  if (before === undefined && !how.conditionFailed && shape && provedAbsent(w.request, shape)) before = null;

  if (how.conditionFailed) {
    ctx.tally.write(table, writeUnitsFor(before ? itemSize(before) : 0) * how.multiplier);
    return;
  }

  // after: the item once written; `afterKnown` when it is the whole item, not a partial guess.
  let after: AttributeMap | undefined;
  let afterKnown = true;
  let plan: UpdatePlan | undefined;
  if (w.kind === "Put") after = newItem;
  else if (w.kind === "Update") {
    plan = planUpdate(
      String(w.request.UpdateExpression ?? ""),
      (w.request.ExpressionAttributeNames as Record<string, string> | undefined) ?? {},
      toAttributeMap(w.request.ExpressionAttributeValues, ctx.form),
    );
    if (w.returnValues === "ALL_NEW" && w.returned !== undefined) after = w.returned;
    else {
      // Unseen before: the key plus the assigned values, a lower bound of the item.
      after = plan.apply(before ?? key);
      afterKnown = before !== undefined;
    }
  }

  const tableBytes = Math.max(before ? itemSize(before) : 0, after ? itemSize(after) : 0);
  ctx.tally.write(table, writeUnitsFor(tableBytes) * how.multiplier);

  if (how.indexes && shape) {
    for (const index of shape.indexes) {
      const units = indexUnits(shape, index, w.kind, before, after, afterKnown, plan);
      if (units > 0) ctx.tally.write(table, units);
    }
  }

  if (how.remember) {
    if (w.kind === "Delete") see(ctx, table, null, key);
    else if (after !== undefined && afterKnown) see(ctx, table, after);
    else see(ctx, table, undefined, key); // only part of it is known now
  }
}

function indexUnits(
  shape: TableShape,
  index: IndexShape,
  kind: WriteRequest["kind"],
  before: AttributeMap | null | undefined,
  after: AttributeMap | undefined,
  afterKnown: boolean,
  plan: UpdatePlan | undefined,
): number {
  if (kind === "Delete") {
    if (before === null) return 0;
    if (before !== undefined) return indexWriteUnits(shape, index, before, undefined);
    return 1; // assumed in the index
  }
  if (before !== undefined && afterKnown) {
    return indexWriteUnits(shape, index, before ?? undefined, after);
  }
  if (kind === "Put") {
    // The previous version is unknown: count the new entry once (a moved entry would cost 2).
    return after === undefined ? 0 : indexWriteUnits(shape, index, undefined, after);
  }
  // Update of an unseen item: only attributes this index holds can cost anything.
  if (plan === undefined) return 0;
  const keys = [index.partitionKey, index.sortKey].filter((n): n is string => n !== undefined);
  const holds = (name: string) =>
    keys.includes(name) ||
    name === shape.partitionKey ||
    name === shape.sortKey ||
    index.projection === "ALL" ||
    (Array.isArray(index.projection) && index.projection.includes(name));
  const touched = [...plan.touched].filter(holds);
  if (touched.length === 0) return 0;
  const entry = after === undefined ? undefined : indexEntry(shape, index, after);
  if (keys.some((k) => plan.removed.has(k))) return 1; // the entry is deleted
  // The index keys untouched and the whole item returned (ALL_NEW): membership is known.
  if (afterKnown && entry === undefined && !keys.some((k) => plan.touched.has(k))) return 0;
  return writeUnitsFor(entry ? itemSize(entry) : 0); // added, or changed in place (assumed member)
}

// ---------------------------------------------------------------------------------------------
// Table shapes from the schema

/** The estimator's view of a table definition (schema.ts). */
export function tableShape(def: TableDefinition): TableShape {
  const projection = (p: IndexDefinition["projection"]): IndexShape["projection"] =>
    p.type === "INCLUDE" ? p.attributes : p.type;
  return {
    partitionKey: def.partitionKey.name,
    ...(def.sortKey ? { sortKey: def.sortKey.name } : {}),
    indexes: [
      ...def.globalSecondaryIndexes.map(
        (i): IndexShape => ({
          name: i.name,
          kind: "global",
          partitionKey: i.partitionKey.name,
          ...(i.sortKey ? { sortKey: i.sortKey.name } : {}),
          projection: projection(i.projection),
        }),
      ),
      ...def.localSecondaryIndexes.map(
        (i): IndexShape => ({
          name: i.name,
          kind: "local",
          partitionKey: def.partitionKey.name,
          sortKey: i.sortKey.name,
          projection: projection(i.projection),
        }),
      ),
    ],
  };
}

/**
 * Recognizes the product's tables by name: `names` when given (the deployed names), else any name
 * ending in a logical name, as the local stack and the tests name them (`flow-Runs`,
 * `e2e-create-1a2b3c4d-Targets`). Unknown tables get no shape: no index writes, no memory.
 */
export function productTableShapes(
  definitions: readonly TableDefinition[],
  names?: Partial<Record<TableDefinition["logicalName"], string>>,
): TableShapeLookup {
  const shapes = definitions.map((def) => ({ def, shape: tableShape(def) }));
  return (tableName) => {
    if (names) return shapes.find(({ def }) => names[def.logicalName] === tableName)?.shape;
    return shapes.find(({ def }) => tableName.endsWith(def.logicalName))?.shape;
  };
}
