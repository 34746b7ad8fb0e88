/**
 * The DynamoDB plumbing every store shares: the document client, transaction conflict retries,
 * the translation of condition failures into named outcomes, and the boundary where a store that
 * cannot be reached becomes a StoreUnavailableError.
 */
import { type DynamoDBClient, TransactionCanceledException } from "@aws-sdk/client-dynamodb";
import {
  BatchGetCommand,
  type BatchGetCommandOutput,
  DynamoDBDocumentClient,
  PutCommand,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from "@aws-sdk/lib-dynamodb";
import { StoreUnavailableError } from "../../domain/errors.js";

/** Socket-level failures: nothing answered (Node's codes, and undici's behind "fetch failed"). */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
]);
/** DynamoDB's answers for "too much, slow down", still there after the client's own retries. */
const THROTTLING = new Set([
  "ProvisionedThroughputExceededException",
  "ThrottlingException",
  "RequestLimitExceeded",
  "TooManyRequestsException",
]);
/** DynamoDB's documented transient server errors (not any 500: an endpoint's bug stays INTERNAL). */
const SERVER_TRANSIENT = new Set(["InternalServerError", "ServiceUnavailable"]);

/**
 * Why a failed DynamoDB call means the store is unavailable, or undefined when it is an answer
 * (a condition failure, a validation error) or a bug. Examples: `connect ECONNREFUSED` →
 * unreachable; the SDK's TimeoutError → unreachable; ThrottlingException → throttled.
 */
export function unavailability(error: unknown): StoreUnavailableError["reason"] | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const e = error as {
    name?: unknown;
    code?: unknown;
    cause?: { code?: unknown };
    $metadata?: { httpStatusCode?: number };
  };
  if (typeof e.name === "string" && THROTTLING.has(e.name)) return "throttled";
  if (e.$metadata?.httpStatusCode === 429) return "throttled";
  const code =
    typeof e.code === "string" ? e.code : typeof e.cause?.code === "string" ? e.cause.code : undefined;
  if (code !== undefined && NETWORK_CODES.has(code)) return "unreachable";
  if (e.name === "TimeoutError" || e.name === "RequestTimeout") return "unreachable";
  if (typeof e.name === "string" && SERVER_TRANSIENT.has(e.name)) return "unreachable";
  if (e.$metadata?.httpStatusCode === 503) return "unreachable";
  return undefined;
}

/**
 * Every call on `client` (and on document clients built from it) that fails because the store is
 * unavailable, after the SDK's retries, fails with a StoreUnavailableError instead (its cause the
 * SDK's error), and `observe` hears of it (the store-health monitor probes at once). Installing it
 * again on the same client replaces the first.
 */
export function raiseStoreUnavailable(
  client: DynamoDBClient,
  observe?: (error: StoreUnavailableError) => void,
): void {
  client.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        const reason = unavailability(error);
        if (reason === undefined) throw error;
        const unavailable = new StoreUnavailableError(reason, { cause: error });
        observe?.(unavailable);
        throw unavailable;
      }
    },
    // initialize: outside the retry middleware, so only what survives the retries is translated.
    { step: "initialize", name: "flowStoreUnavailable", override: true },
  );
}

/** The document client every store sends through; it shares `client`'s middleware stack. */
export function documentClient(client: DynamoDBClient): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertEmptyValues: false },
    unmarshallOptions: { wrapNumbers: false },
  });
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

/**
 * Puts an index item (its map empty) unless it exists: a transaction can SET a key of a map only
 * once the map is there, so a store makes its index item before its first transaction on it.
 */
export async function ensureIndexItem(
  doc: DynamoDBDocumentClient,
  table: string,
  item: Record<string, unknown> & { pk: string },
): Promise<void> {
  try {
    await doc.send(
      new PutCommand({ TableName: table, Item: item, ConditionExpression: "attribute_not_exists(pk)" }),
    );
  } catch (error) {
    if (!isConditionFailed(error)) throw error;
  }
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

/** Every page of one Query, in order; or only the first `limit` items (asked for with Limit, no more read). */
export async function queryAll(
  doc: DynamoDBDocumentClient,
  input: Omit<QueryCommandInput, "ExclusiveStartKey" | "Limit">,
  limit?: number,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const left = limit === undefined ? undefined : limit - items.length;
    const out = await doc.send(
      new QueryCommand({
        ...input,
        ExclusiveStartKey: startKey,
        ...(left === undefined ? {} : { Limit: left }),
      }),
    );
    items.push(...(out.Items ?? []));
    startKey = out.LastEvaluatedKey;
  } while (startKey !== undefined && (limit === undefined || items.length < limit));
  return items;
}

/** Chunks of a BatchGetItem asked at once: a listing's update-set parts are several chunks. */
const BATCH_GET_CONCURRENCY = 4;

/** What a BatchGetItem asks of one table. */
export interface TableRead {
  keys: Record<string, unknown>[];
  consistent?: boolean;
  /** Only these attributes of each item (a ProjectionExpression and its names). */
  projection?: { expression: string; names: Record<string, string> };
}

/**
 * BatchGetItem in chunks of 100 (up to BATCH_GET_CONCURRENCY at once), each following its
 * UnprocessedKeys until none are left.
 */
export async function batchGetAll(
  doc: DynamoDBDocumentClient,
  table: string,
  keys: Record<string, unknown>[],
  options: Omit<TableRead, "keys"> = {},
): Promise<Record<string, unknown>[]> {
  return (await batchGetTables(doc, { [table]: { keys, ...options } }))[table] ?? [];
}

/**
 * batchGetAll across tables: BatchGetItem takes several tables in one request, so the keys of
 * every table go in the same requests (chunks of 100 keys in all, tables in the order given, up
 * to BATCH_GET_CONCURRENCY at once), each with its table's consistency and projection, and each
 * request follows its UnprocessedKeys, whichever tables they are of, until none are left (a
 * throttled key or a response past 16 MB comes back there). Items by table (every table asked
 * has an entry), in no order.
 *
 *   batchGetTables(doc, { Tasks: { keys: [{ id: t }], consistent: true },
 *                         Inventory: { keys: [{ pk: "rack#r1" }], consistent: true } })
 *   → one BatchGetItem → { Tasks: [task], Inventory: [rack] }
 */
export async function batchGetTables(
  doc: DynamoDBDocumentClient,
  reads: Record<string, TableRead>,
): Promise<Record<string, Record<string, unknown>[]>> {
  const items: Record<string, Record<string, unknown>[]> = Object.fromEntries(
    Object.keys(reads).map((table) => [table, []]),
  );
  const optionsOf = (table: string) => {
    const { consistent, projection } = reads[table] as TableRead;
    return {
      ...(consistent === true ? { ConsistentRead: true } : {}),
      ...(projection === undefined
        ? {}
        : { ProjectionExpression: projection.expression, ExpressionAttributeNames: projection.names }),
    };
  };
  /** Keys by table, as RequestItems wants them. */
  const requestOf = (keys: readonly (readonly [string, Record<string, unknown>])[]) => {
    const byTable = new Map<string, Record<string, unknown>[]>();
    for (const [table, key] of keys) byTable.set(table, [...(byTable.get(table) ?? []), key]);
    return Object.fromEntries([...byTable].map(([table, Keys]) => [table, { Keys, ...optionsOf(table) }]));
  };
  const chunks = chunk(
    Object.entries(reads).flatMap(([table, read]) => read.keys.map((key) => [table, key] as const)),
    100,
  );
  const next = async (): Promise<void> => {
    for (let part = chunks.shift(); part !== undefined; part = chunks.shift()) {
      let pending = part;
      for (let round = 0; pending.length > 0; round++) {
        if (round > 0) await new Promise((r) => setTimeout(r, Math.min(1000, 25 * 2 ** round)));
        const out: BatchGetCommandOutput = await doc.send(
          new BatchGetCommand({ RequestItems: requestOf(pending) }),
        );
        for (const [table, found] of Object.entries(out.Responses ?? {})) items[table]?.push(...found);
        pending = Object.entries(out.UnprocessedKeys ?? {}).flatMap(([table, left]) =>
          (left.Keys ?? []).map((key) => [table, key] as const),
        );
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(BATCH_GET_CONCURRENCY, chunks.length) }, next));
  return items;
}
