/**
 * batchGetAll (src/adapters/dynamodb/db.ts): BatchGetItem in chunks of 100, up to four at once (a
 * listing of running tasks asks for every update-set part of each: several chunks), each chunk
 * following its UnprocessedKeys; and batchGetTables, the same across several tables in one
 * request (each table's consistency and projection kept, its unprocessed keys asked again). How
 * many calls are in flight at once is not something an emulator shows, so the client is mocked.
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { BatchGetCommand, DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { batchGetAll, batchGetTables } from "../../src/adapters/dynamodb/db.js";

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

describe("batchGetTables: several tables in the same BatchGetItem", () => {
  beforeEach(() => ddb.reset());

  type Asked = Record<
    string,
    { Keys: { id: string }[]; ConsistentRead?: boolean; ProjectionExpression?: string }
  >;

  it("both tables in one request, each with its consistency and projection; unprocessed keys of either asked again alone, with their table's", async () => {
    const unprocessedOnce = new Set(["a1", "b0"]);
    ddb.on(BatchGetCommand).callsFake(async (input: { RequestItems: Asked }) => {
      const responses: Record<string, { id: string }[]> = {};
      const left: Record<string, { Keys: { id: string }[] }> = {};
      for (const [table, { Keys }] of Object.entries(input.RequestItems)) {
        const again = Keys.filter((k) => unprocessedOnce.delete(k.id));
        responses[table] = Keys.filter((k) => !again.includes(k)).map((k) => ({ id: k.id }));
        if (again.length > 0) left[table] = { Keys: again };
      }
      return { Responses: responses, ...(Object.keys(left).length > 0 ? { UnprocessedKeys: left } : {}) };
    });
    const read = await batchGetTables(doc, {
      tasks: { keys: [{ id: "a0" }, { id: "a1" }], consistent: true },
      inventory: {
        keys: [{ id: "b0" }, { id: "b1" }],
        consistent: true,
        projection: { expression: "id, #r", names: { "#r": "rack" } },
      },
    });
    expect(read.tasks?.map((i) => i.id).sort()).toEqual(["a0", "a1"]);
    expect(read.inventory?.map((i) => i.id).sort()).toEqual(["b0", "b1"]);
    const calls = ddb.commandCalls(BatchGetCommand).map((c) => c.args[0].input.RequestItems as Asked);
    expect(calls).toHaveLength(2);
    expect(Object.keys(calls[0] ?? {})).toEqual(["tasks", "inventory"]);
    expect(calls[1]).toEqual({
      tasks: { Keys: [{ id: "a1" }], ConsistentRead: true },
      inventory: {
        Keys: [{ id: "b0" }],
        ConsistentRead: true,
        ProjectionExpression: "id, #r",
        ExpressionAttributeNames: { "#r": "rack" },
      },
    });
  });

  it("100 keys a request across the tables; a table with no keys asks nothing and has an empty list", async () => {
    ddb.on(BatchGetCommand).callsFake(async (input: { RequestItems: Asked }) => ({
      Responses: Object.fromEntries(
        Object.entries(input.RequestItems).map(([t, { Keys }]) => [t, Keys.map((k) => ({ id: k.id }))]),
      ),
    }));
    const read = await batchGetTables(doc, {
      tasks: { keys: keys(70) },
      inventory: { keys: keys(50).map((k) => ({ id: `i${k.id}` })) },
      none: { keys: [] },
    });
    expect(read.tasks).toHaveLength(70);
    expect(read.inventory).toHaveLength(50);
    expect(read.none).toEqual([]);
    const calls = ddb.commandCalls(BatchGetCommand).map((c) => c.args[0].input.RequestItems as Asked);
    expect(calls.map((c) => Object.values(c).reduce((n, t) => n + t.Keys.length, 0)).sort()).toEqual([
      100, 20,
    ]);
    expect(calls.every((c) => !("none" in c))).toBe(true);
  });
});
