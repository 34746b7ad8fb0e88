/**
 * batchGetAll (src/adapters/dynamodb/db.ts): BatchGetItem in chunks of 100, up to four at once (a
 * listing of running tasks asks for every update-set part of each: several chunks), each chunk
 * following its UnprocessedKeys. How many calls are in flight at once is not something an emulator
 * shows, so the client is mocked.
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { BatchGetCommand, DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { batchGetAll } from "../../src/adapters/dynamodb/db.js";

const doc = DynamoDBDocumentClient.from(new DynamoDBClient({ region: "us-east-1", maxAttempts: 1 }));
const ddb = mockClient(doc);
const keys = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `k${i}` }));

describe("batchGetAll", () => {
  beforeEach(() => ddb.reset());

  it("asks up to four chunks at once, each following its unprocessed keys; every item comes back once", async () => {
    let inFlight = 0;
    let most = 0;
    const unprocessedOnce = new Set(["k0"]);
    ddb
      .on(BatchGetCommand)
      .callsFake(async (input: { RequestItems: Record<string, { Keys: { id: string }[] }> }) => {
        inFlight += 1;
        most = Math.max(most, inFlight);
        // Let every call started meanwhile get in before this one answers.
        await new Promise((r) => setImmediate(r));
        inFlight -= 1;
        const asked = input.RequestItems.t?.Keys ?? [];
        const left = asked.filter((k) => unprocessedOnce.delete(k.id));
        const served = asked.filter((k) => !left.includes(k));
        return {
          Responses: { t: served.map((k) => ({ id: k.id })) },
          ...(left.length > 0 ? { UnprocessedKeys: { t: { Keys: left } } } : {}),
        };
      });
    const items = await batchGetAll(doc, "t", keys(650), { consistent: true });
    expect(items.map((i) => i.id).sort()).toEqual(
      keys(650)
        .map((k) => k.id)
        .sort(),
    );
    expect(most).toBe(4);
    // 7 chunks, and one more call for k0's retry.
    const calls = ddb.commandCalls(BatchGetCommand).map((c) => c.args[0].input);
    expect(calls).toHaveLength(8);
    expect(calls.every((c) => c.RequestItems?.t?.ConsistentRead === true)).toBe(true);
  });
});
