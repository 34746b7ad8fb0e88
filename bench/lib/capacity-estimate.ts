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
import {
  type AttributeMap,
  canonical,
  itemSize,
  PAGE_LIMIT_BYTES,
  readUnitsFor,
  toAttributeMap,
  type ValueForm,
  writeUnitsFor,
} from "./capacity/item-size.js";
import {
  type IndexShape,
  indexEntry,
  indexWriteUnits,
  itemKey,
  type TableShape,
  type TableShapeLookup,
} from "./capacity/table-shapes.js";
import { planUpdate, type UpdatePlan } from "./capacity/update-plan.js";

export * from "./capacity/item-size.js";
export * from "./capacity/table-shapes.js";
export * from "./capacity/update-plan.js";

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
