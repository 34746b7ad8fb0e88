/**
 * The DynamoDB plumbing every store shares: the document client, capacity metering, transaction
 * conflict retries and the translation of condition failures into named outcomes.
 */
import {
  type ConsumedCapacity,
  type DynamoDBClient,
  TransactionCanceledException,
} from "@aws-sdk/client-dynamodb";
import {
  DynamoDBDocumentClient,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from "@aws-sdk/lib-dynamodb";
import type { CapacityMeter, CapacityTotals } from "../../app/ports.js";
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
import { TABLES } from "./schema.js";

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

/** Calls and units of one source of figures: DynamoDB's answers, or the estimator. */
export interface CapacitySourceTotals {
  calls: number;
  capacityUnits: number;
  readCapacityUnits: number;
  writeCapacityUnits: number;
  byOperation: Record<string, { calls: number; capacityUnits: number }>;
}

/**
 * The meter's totals: `capacityUnits` and the other CapacityTotals fields add DynamoDB's figure
 * where the answer carried one and the estimate (capacity-estimate.ts) where it did not.
 * `reported` and `estimated` split them by source; each is absent until a call of its source is
 * counted (so an empty meter is exactly the empty CapacityTotals).
 *
 *   moto, default     GetItem/Query/PutItem… reported (moto's placeholders), UpdateItem and
 *                     transactions estimated
 *   moto, "ignore"    everything estimated (what the API benchmark prints)
 *   AWS               everything reported, except failed conditional writes (no figure in the error)
 */
export interface DynamoCapacityTotals extends CapacityTotals {
  reported?: CapacitySourceTotals;
  estimated?: CapacitySourceTotals;
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
}

/** What the middleware saw of one call, for the estimate. */
export interface MeteredCall {
  input: Record<string, unknown>;
  output?: Record<string, unknown>;
  errorName?: string;
  form: ValueForm;
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

export class DynamoCapacityMeter implements CapacityMeter {
  private totals: DynamoCapacityTotals = emptyTotals();
  private tables: TableShapeLookup;
  private reportedFigures: "prefer" | "ignore";
  private readonly memory = new RememberedItems();

  constructor(options: CapacityMeterOptions = {}) {
    this.tables = options.tables ?? productTableShapes(TABLES);
    this.reportedFigures = options.reportedFigures ?? "prefer";
  }

  /** Changes the options of a meter already wired into a client (e.g. the local stack's). */
  configure(options: CapacityMeterOptions): void {
    if (options.tables) this.tables = options.tables;
    if (options.reportedFigures) this.reportedFigures = options.reportedFigures;
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

  snapshot(): DynamoCapacityTotals {
    return structuredClone(this.totals);
  }

  reset(): void {
    this.totals = emptyTotals();
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

function emptySource(): CapacitySourceTotals {
  return { calls: 0, capacityUnits: 0, readCapacityUnits: 0, writeCapacityUnits: 0, byOperation: {} };
}

function emptyTotals(): DynamoCapacityTotals {
  return {
    calls: 0,
    capacityUnits: 0,
    readCapacityUnits: 0,
    writeCapacityUnits: 0,
    byOperation: {},
    byTable: {},
    unreportedCalls: 0,
  };
}

/**
 * Wraps a low-level client: every metered call asks for ReturnConsumedCapacity INDEXES and its
 * answer is recorded on `meter`. The middleware sits on the client, so document-client commands
 * and raw commands alike are counted, including calls that fail a condition (they consume too).
 */
export function documentClient(client: DynamoDBClient, meter?: DynamoCapacityMeter): DynamoDBDocumentClient {
  if (meter !== undefined) {
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
  }
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertEmptyValues: false },
    unmarshallOptions: { wrapNumbers: false },
  });
}

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

export type CancellationCode = "ConditionalCheckFailed" | "TransactionConflict" | "None" | string;

/** The per-item reason codes of a cancelled transaction, in item order ("None" = that item was fine). */
export function cancellationCodes(error: unknown): CancellationCode[] | undefined {
  if (error instanceof TransactionCanceledException || isNamed(error, "TransactionCanceledException")) {
    const reasons = (error as TransactionCanceledException).CancellationReasons;
    if (reasons !== undefined) return reasons.map((r) => r.Code ?? "None");
    // Some endpoints put the reasons only in the message: "... [ConditionalCheckFailed, None]".
    const match = /\[([^\]]*)\]/.exec((error as Error).message);
    return match?.[1]?.split(",").map((s) => s.trim()) ?? [];
  }
  return undefined;
}

export function isConditionFailed(error: unknown): boolean {
  return isNamed(error, "ConditionalCheckFailedException");
}

export function isNamed(error: unknown, name: string): boolean {
  return typeof error === "object" && error !== null && (error as { name?: unknown }).name === name;
}

/**
 * TransactWriteItems, retried when another transaction touched the same items at the same moment
 * (reason TransactionConflict, or TransactionConflictException): the SDK does not retry those.
 * Condition failures are returned, not retried: they are answers.
 *
 *   returns undefined            the transaction committed
 *   returns ["None", "ConditionalCheckFailed"]  it was cancelled; item 1's condition failed
 */
export async function transactWrite(
  doc: DynamoDBDocumentClient,
  input: TransactWriteCommandInput,
  maxConflictRetries = 6,
): Promise<CancellationCode[] | undefined> {
  for (let attempt = 0; ; attempt++) {
    try {
      await doc.send(new TransactWriteCommand(input));
      return undefined;
    } catch (error) {
      const codes = cancellationCodes(error);
      const conflict =
        isNamed(error, "TransactionConflictException") ||
        (codes?.includes("TransactionConflict") === true && !codes.includes("ConditionalCheckFailed"));
      if (conflict && attempt < maxConflictRetries) {
        await sleep(jitteredBackoff(attempt));
        continue;
      }
      if (codes !== undefined && !conflict) return codes;
      throw error;
    }
  }
}

/** Full jitter over 20 ms · 2^attempt, capped at 1 s. */
function jitteredBackoff(attempt: number): number {
  return Math.random() * Math.min(1000, 20 * 2 ** attempt);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
