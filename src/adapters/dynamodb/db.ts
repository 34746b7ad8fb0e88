/**
 * The DynamoDB plumbing every store shares: the document client, transaction conflict retries and
 * the translation of condition failures into named outcomes.
 */
import { type DynamoDBClient, TransactionCanceledException } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBDocumentClient,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from "@aws-sdk/lib-dynamodb";

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

/** Every page of one Query, in order. */
export async function queryAll(
  doc: DynamoDBDocumentClient,
  input: Omit<QueryCommandInput, "ExclusiveStartKey">,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await doc.send(new QueryCommand({ ...input, ExclusiveStartKey: startKey }));
    items.push(...(out.Items ?? []));
    startKey = out.LastEvaluatedKey;
  } while (startKey !== undefined);
  return items;
}
