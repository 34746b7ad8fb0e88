/**
 * RackLockStore on DynamoDB: one item per locked rack, taken and released by conditional writes.
 *
 *   task A: acquire(R, A, 60 s, t=0)   → acquired (no item)
 *   task B: acquire(R, B, 60 s, t=10)  → held     (A's lock runs to t=60)
 *   task A: acquire(R, A, 60 s, t=20)  → acquired (ours: extended to t=80; idempotent)
 *   task B: acquire(R, B, 60 s, t=90)  → acquired (A's lock expired: A crashed)
 *   task A: release(R, A)              → not-held (B holds it; nothing deleted)
 */

import type { DynamoDBDocumentClient, PutCommandInput } from "@aws-sdk/lib-dynamodb";
import { DeleteCommand, GetCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import type { AcquireOutcome, RackLockStore, ReleaseOutcome } from "../../app/ports.js";
import { isConditionFailed } from "./db.js";
import type { TableNames } from "./schema.js";

/** The conditional Put that takes a rack's lock (also inside the task store's create-with-lock). */
export function lockPut(
  tables: Pick<TableNames, "rackLocks">,
  rackId: string,
  owner: string,
  ttlMs: number,
  now: number,
): PutCommandInput {
  const expiresAt = now + ttlMs;
  return {
    TableName: tables.rackLocks,
    Item: { rackId, owner, expiresAt, acquiredAt: now, ttl: Math.ceil(expiresAt / 1000) + 3600 },
    ConditionExpression: "attribute_not_exists(rackId) OR expiresAt <= :now OR #o = :owner",
    ExpressionAttributeNames: { "#o": "owner" },
    ExpressionAttributeValues: { ":now": now, ":owner": owner },
  };
}

export class DynamoRackLockStore implements RackLockStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  async acquire(rackId: string, owner: string, ttlMs: number, now: number): Promise<AcquireOutcome> {
    try {
      await this.doc.send(new PutCommand(lockPut(this.tables, rackId, owner, ttlMs, now)));
      return "acquired";
    } catch (error) {
      if (isConditionFailed(error)) return "held";
      throw error;
    }
  }

  async release(rackId: string, owner: string): Promise<ReleaseOutcome> {
    try {
      await this.doc.send(
        new DeleteCommand({
          TableName: this.tables.rackLocks,
          Key: { rackId },
          ConditionExpression: "#o = :owner",
          ExpressionAttributeNames: { "#o": "owner" },
          ExpressionAttributeValues: { ":owner": owner },
        }),
      );
      return "released";
    } catch (error) {
      if (isConditionFailed(error)) return "not-held";
      throw error;
    }
  }

  async get(rackId: string): Promise<{ owner: string; expiresAt: number } | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.tables.rackLocks, Key: { rackId }, ConsistentRead: true }),
    );
    if (out.Item === undefined) return undefined;
    return { owner: out.Item.owner as string, expiresAt: Number(out.Item.expiresAt) };
  }
}
