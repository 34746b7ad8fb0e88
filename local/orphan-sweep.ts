/**
 * Local stand-in for DynamoDB TTL on the pre-commit targets of createRun (moto never expires
 * items; the commit-marker protocol is in src/adapters/dynamodb/run-store.ts).
 */
import { DeleteCommand, GetCommand, ScanCommand } from "@aws-sdk/lib-dynamodb";
import { isConditionFailed } from "../src/adapters/dynamodb/db.js";
import type { DynamoStores, TableNames } from "../src/adapters/dynamodb/index.js";
import type { Item } from "../src/adapters/dynamodb/items.js";

/**
 * Deletes pre-commit targets whose TTL has passed and whose run never committed; seals those whose
 * run did. Returns the counts.
 */
export async function sweepOrphans(
  { doc, runs }: Pick<DynamoStores, "doc" | "runs">,
  tables: TableNames,
  now: number,
): Promise<{ deleted: number; sealed: number }> {
  const nowSeconds = Math.floor(now / 1000);
  const expired: Item[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await doc.send(
      new ScanCommand({
        TableName: tables.targets,
        FilterExpression: "expiresAt <= :now",
        ExpressionAttributeValues: { ":now": nowSeconds },
        ProjectionExpression: "runId, targetId",
        ExclusiveStartKey: startKey,
      }),
    );
    expired.push(...(out.Items ?? []));
    startKey = out.LastEvaluatedKey;
  } while (startKey !== undefined);
  const byRun = new Map<string, string[]>();
  for (const item of expired) {
    const list = byRun.get(item.runId as string) ?? [];
    list.push(item.targetId as string);
    byRun.set(item.runId as string, list);
  }
  let deleted = 0;
  let sealed = 0;
  for (const [runId, targetIds] of byRun) {
    const committed = await doc.send(
      new GetCommand({ TableName: tables.runs, Key: { runId }, ConsistentRead: true }),
    );
    if (committed.Item !== undefined) {
      await runs.seal(runId, targetIds);
      sealed += targetIds.length;
      continue;
    }
    for (const targetId of targetIds) {
      try {
        // Conditional: never delete a target whose TTL was removed meanwhile (sealed).
        await doc.send(
          new DeleteCommand({
            TableName: tables.targets,
            Key: { runId, targetId },
            ConditionExpression: "attribute_exists(expiresAt)",
          }),
        );
        deleted++;
      } catch (error) {
        if (!isConditionFailed(error)) throw error;
      }
    }
  }
  return { deleted, sealed };
}
