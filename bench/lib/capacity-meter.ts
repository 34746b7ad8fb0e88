/**
 * The DynamoDB capacity meter of the benchmarks: what every call consumed, as DynamoDB reported
 * it or as capacity-estimate.ts works it out. The product never meters: its clients send no
 * ReturnConsumedCapacity. A benchmark installs the meter on the client it builds the stores on:
 *
 *   const meter = installCapacityMeter(client, { reportedFigures: "ignore" });
 *   const stores = createDynamoStores(client, tables);
 *   meter.reset(); …measured calls…; const totals = meter.snapshot();
 */
import type { ConsumedCapacity, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { TABLES } from "../../src/adapters/dynamodb/schema.js";
import {
  type AttributeMap,
  estimateCapacity,
  guessForm,
  type ItemMemory,
  type ItemSeen,
  itemSize,
  productTableShapes,
  type TableShapeLookup,
  type ValueForm,
} from "./capacity-estimate.js";

/** Calls and units of one source of figures: DynamoDB's answers, or the estimator. */
export interface CapacitySourceTotals {
  calls: number;
  capacityUnits: number;
  readCapacityUnits: number;
  writeCapacityUnits: number;
  byOperation: Record<string, { calls: number; capacityUnits: number }>;
}

/**
 * The meter's totals: `capacityUnits` and the other unit fields add DynamoDB's figure where the
 * answer carried one and the estimate (capacity-estimate.ts) where it did not. `reported` and
 * `estimated` split them by source; each is absent until a call of its source is counted.
 *
 *   moto, default     GetItem/Query/PutItem… reported (moto's placeholders), UpdateItem and
 *                     transactions estimated
 *   moto, "ignore"    everything estimated (what the API benchmark prints)
 *   AWS               everything reported, except failed conditional writes (no figure in the error)
 */
export interface CapacityTotals {
  calls: number;
  /** Sum of ConsumedCapacity.CapacityUnits over every call (table + indexes). */
  capacityUnits: number;
  readCapacityUnits: number;
  writeCapacityUnits: number;
  byOperation: Record<string, { calls: number; capacityUnits: number }>;
  byTable: Record<string, number>;
  /**
   * Calls whose answer carried no ConsumedCapacity. Against AWS this stays 0; moto reports
   * capacity for single-item reads only (not for writes or transactions).
   */
  unreportedCalls: number;
  reported?: CapacitySourceTotals;
  estimated?: CapacitySourceTotals;
  /**
   * What "prefer" would have counted: DynamoDB's (or moto's) figure where the answer carried one,
   * else the estimate. With "ignore" this is the figure the rollout benchmark quoted before it
   * estimated every call; with "prefer" it equals `capacityUnits`.
   */
  preferReported: { capacityUnits: number; readCapacityUnits: number; writeCapacityUnits: number };
  /** Calls and units by the tag `tagOf` gave each call (absent without `tagOf`). */
  byTag: Record<string, TagTotals>;
}

/** One tag's share: its calls and units, by operation. */
export interface TagTotals {
  calls: number;
  capacityUnits: number;
  readCapacityUnits: number;
  writeCapacityUnits: number;
  byOperation: Record<string, { calls: number; capacityUnits: number }>;
}

export interface CapacityMeterOptions {
  /** Which tables are which; default: the schema's tables by logical-name suffix. */
  tables?: TableShapeLookup;
  /**
   * "prefer" (default): DynamoDB's figure whenever the answer carries one (AWS, LocalStack).
   * "ignore": always the estimate. moto's figures are constants (GetItem 0.5, Query/Scan/PutItem 1
   * whatever the size, BatchGetItem 1 per key), so a figure measured on moto means something only
   * with "ignore".
   */
  reportedFigures?: "prefer" | "ignore";
  /**
   * Names the part of the work a call belongs to (e.g. from an AsyncLocalStorage scope the caller
   * set, plus the call's table); asked in the caller's async context when the call is recorded.
   */
  tagOf?: (operation: string, input: Record<string, unknown>) => string | undefined;
}

/** What the middleware saw of one call, for the estimate. */
export interface MeteredCall {
  input: Record<string, unknown>;
  output?: Record<string, unknown>;
  errorName?: string;
  form: ValueForm;
}

/**
 * Meters `client`: every metered call asks for ReturnConsumedCapacity INDEXES and its answer is
 * recorded on the meter returned. The middleware sits on the client's stack, which the document
 * client shares, so document-client commands and raw commands alike are counted, including calls
 * that fail a condition (they consume too). Install it before the stores load anything, so the
 * meter has seen the items later calls read (the estimator sizes from what it has seen).
 */
export function installCapacityMeter(
  client: DynamoDBClient,
  options: CapacityMeterOptions = {},
): CapacityMeter {
  const meter = new CapacityMeter(options);
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName ?? "unknown";
      if (!METERED.has(name)) return next(args);
      const input = args.input as Record<string, unknown> & { ReturnConsumedCapacity?: string };
      input.ReturnConsumedCapacity ??= "INDEXES";
      const operation = name.replace(/Command$/, "");
      try {
        const result = await next(args);
        const output = result.output as unknown as Record<string, unknown> & {
          ConsumedCapacity?: ConsumedCapacity[];
        };
        meter.record(operation, output.ConsumedCapacity, {
          input,
          output,
          form: valueForm(context, input),
        });
        return result;
      } catch (error) {
        const errorName = (error as { name?: string } | undefined)?.name ?? "Error";
        meter.record(operation, undefined, { input, errorName, form: valueForm(context, input) });
        throw error;
      }
    },
    { step: "initialize", name: "flowCapacityMeter", override: true },
  );
  return meter;
}

export class CapacityMeter {
  private totals: CapacityTotals = emptyCapacityTotals();
  private readonly tables: TableShapeLookup;
  private readonly reportedFigures: "prefer" | "ignore";
  private readonly memory = new RememberedItems();
  private readonly tagOf: CapacityMeterOptions["tagOf"];

  constructor(options: CapacityMeterOptions = {}) {
    this.tables = options.tables ?? productTableShapes(TABLES);
    this.reportedFigures = options.reportedFigures ?? "prefer";
    this.tagOf = options.tagOf;
  }

  /**
   * Counts one call. `consumed` is the answer's ConsumedCapacity; `call` what the estimator needs
   * when there is none (or when reported figures are ignored). Without `call`, an unreported call
   * counts 0 units.
   */
  record(
    operation: string,
    consumed: ConsumedCapacity[] | ConsumedCapacity | undefined,
    call?: MeteredCall,
  ): void {
    const list = consumed === undefined ? [] : Array.isArray(consumed) ? consumed : [consumed];
    // Against AWS every answer carries its figure: no estimate (it costs 2–3 ms per 100 KB of items on a busy 2-core machine).
    const needed = call !== undefined && (list.length === 0 || this.reportedFigures === "ignore");
    const estimate = needed
      ? estimateCapacity({ operation, ...call, tables: this.tables, memory: this.memory })
      : undefined;
    for (const seen of estimate?.seen ?? []) this.memory.remember(seen);

    this.totals.calls += 1;
    if (list.length === 0) this.totals.unreportedCalls += 1;
    const useReported = list.length > 0 && (this.reportedFigures === "prefer" || estimate === undefined);
    let units = 0;
    let read = 0;
    let write = 0;
    if (useReported) {
      for (const c of list) {
        units += c.CapacityUnits ?? 0;
        read += c.ReadCapacityUnits ?? 0;
        write += c.WriteCapacityUnits ?? 0;
        if (c.TableName !== undefined) {
          this.totals.byTable[c.TableName] = (this.totals.byTable[c.TableName] ?? 0) + (c.CapacityUnits ?? 0);
        }
      }
    } else if (estimate !== undefined) {
      read = estimate.readUnits;
      write = estimate.writeUnits;
      units = read + write;
      for (const [table, u] of Object.entries(estimate.byTable)) {
        this.totals.byTable[table] = (this.totals.byTable[table] ?? 0) + u;
      }
    }
    this.totals.capacityUnits += units;
    this.totals.readCapacityUnits += read;
    this.totals.writeCapacityUnits += write;
    addOperation(this.totals.byOperation, operation, units);
    // What "prefer" counts: the answer's figure where there is one, else the estimate.
    const preferred =
      list.length > 0
        ? list.reduce(
            (sum, c) => ({
              u: sum.u + (c.CapacityUnits ?? 0),
              r: sum.r + (c.ReadCapacityUnits ?? 0),
              w: sum.w + (c.WriteCapacityUnits ?? 0),
            }),
            { u: 0, r: 0, w: 0 },
          )
        : { u: units, r: read, w: write };
    this.totals.preferReported.capacityUnits += preferred.u;
    this.totals.preferReported.readCapacityUnits += preferred.r;
    this.totals.preferReported.writeCapacityUnits += preferred.w;
    const tag = this.tagOf && call !== undefined ? this.tagOf(operation, call.input) : undefined;
    if (tag !== undefined) {
      const t = this.totals.byTag[tag] ?? emptyTag();
      this.totals.byTag[tag] = t;
      t.calls += 1;
      t.capacityUnits += units;
      t.readCapacityUnits += read;
      t.writeCapacityUnits += write;
      addOperation(t.byOperation, operation, units);
    }
    if (useReported || estimate !== undefined) {
      const source = useReported ? "reported" : "estimated";
      const s = this.totals[source] ?? emptySource();
      this.totals[source] = s;
      s.calls += 1;
      s.capacityUnits += units;
      s.readCapacityUnits += read;
      s.writeCapacityUnits += write;
      addOperation(s.byOperation, operation, units);
    }
  }

  snapshot(): CapacityTotals {
    return structuredClone(this.totals);
  }

  reset(): void {
    this.totals = emptyCapacityTotals();
  }
}

function addOperation(
  byOperation: Record<string, { calls: number; capacityUnits: number }>,
  operation: string,
  units: number,
): void {
  const op = byOperation[operation] ?? { calls: 0, capacityUnits: 0 };
  op.calls += 1;
  op.capacityUnits += units;
  byOperation[operation] = op;
}

function emptyTag(): TagTotals {
  return { calls: 0, capacityUnits: 0, readCapacityUnits: 0, writeCapacityUnits: 0, byOperation: {} };
}

function emptySource(): CapacitySourceTotals {
  return { calls: 0, capacityUnits: 0, readCapacityUnits: 0, writeCapacityUnits: 0, byOperation: {} };
}

/** The totals of a meter that has counted nothing. */
export function emptyCapacityTotals(): CapacityTotals {
  return {
    calls: 0,
    capacityUnits: 0,
    readCapacityUnits: 0,
    writeCapacityUnits: 0,
    byOperation: {},
    byTable: {},
    unreportedCalls: 0,
    preferReported: { capacityUnits: 0, readCapacityUnits: 0, writeCapacityUnits: 0 },
    byTag: {},
  };
}

/**
 * For the estimator: the last version of up to 2,000 items (whole items, for "before" sizes), and
 * the sizes of up to 50,000 distinct items per table (numbers only, for the average size of items
 * a Query/Scan filter dropped: an item read a thousand times counts once).
 */
class RememberedItems implements ItemMemory {
  private readonly items = new Map<string, AttributeMap | null>();
  private readonly sizes = new Map<string, { total: number; byKey: Map<string, number> }>();

  constructor(
    private readonly capacity = 2_000,
    private readonly sizedPerTable = 50_000,
  ) {}

  get(table: string, key: string): AttributeMap | null | undefined {
    const k = `${table}\u0000${key}`;
    const item = this.items.get(k);
    if (item !== undefined) {
      this.items.delete(k);
      this.items.set(k, item);
    }
    return item;
  }

  averageSize(table: string): number | undefined {
    const s = this.sizes.get(table);
    return s === undefined || s.byKey.size === 0 ? undefined : s.total / s.byKey.size;
  }

  remember(seen: ItemSeen): void {
    const k = `${seen.table}\u0000${seen.key}`;
    this.items.delete(k);
    if (seen.item === undefined) return;
    this.items.set(k, seen.item);
    if (this.items.size > this.capacity) this.items.delete(this.items.keys().next().value!);

    const s = this.sizes.get(seen.table) ?? { total: 0, byKey: new Map<string, number>() };
    this.sizes.set(seen.table, s);
    const old = s.byKey.get(seen.key);
    if (old !== undefined) {
      s.total -= old;
      s.byKey.delete(seen.key);
    }
    if (seen.item !== null && (old !== undefined || s.byKey.size < this.sizedPerTable)) {
      const size = itemSize(seen.item);
      s.total += size;
      s.byKey.set(seen.key, size);
    }
  }
}

/** Commands that accept ReturnConsumedCapacity; the meter asks every one of them for INDEXES. */
const METERED = new Set([
  "GetItemCommand",
  "PutItemCommand",
  "UpdateItemCommand",
  "DeleteItemCommand",
  "QueryCommand",
  "ScanCommand",
  "BatchGetItemCommand",
  "BatchWriteItemCommand",
  "TransactWriteItemsCommand",
  "TransactGetItemsCommand",
]);

/**
 * Whether the call's items are plain JS values (a document-client command: lib-dynamodb marks the
 * context with the DDB_MAPPER feature when it marshals) or AttributeValues (a raw command). When
 * the mark is missing (another SDK version), the request's key or item decides.
 */
function valueForm(context: unknown, input: Record<string, unknown>): ValueForm {
  const features = (context as { __aws_sdk_context?: { features?: Record<string, unknown> } })
    .__aws_sdk_context?.features;
  if (features?.DDB_MAPPER !== undefined) return "native";
  const sample = (input.Key ?? input.Item ?? input.ExpressionAttributeValues) as
    | Record<string, unknown>
    | undefined;
  return sample === undefined ? "attribute-values" : guessForm(sample);
}
