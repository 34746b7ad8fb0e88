import { describe, expect, it } from "vitest";
import {
  type AttributeMap,
  type AttributeValue,
  type EstimateInput,
  estimateCapacity,
  type ItemMemory,
  itemKey,
  itemSize,
  numberSize,
  planUpdate,
  productTableShapes,
  readUnitsFor,
  type TableShape,
  toAttributeMap,
  valueSize,
  writeUnitsFor,
} from "../../bench/lib/capacity-estimate.js";
import { CapacityMeter } from "../../bench/lib/capacity-meter.js";
import { TABLES } from "../../src/adapters/dynamodb/schema.js";

describe("numberSize: ⌈significant digits / 2⌉ + 1 bytes, +1 when negative", () => {
  it.each([
    ["12", 2],
    ["0", 2],
    ["100", 2], // trailing zeros do not count: one digit
    ["007", 2], // nor leading ones
    ["123", 3],
    ["123.45", 4], // 5 digits
    ["1764432000000", 5], // epoch ms: 1764432 → 7 digits
    ["-0.5", 3],
    ["1e10", 2],
  ])("%s → %i bytes", (text, bytes) => {
    expect(numberSize(text)).toBe(bytes);
  });
});

describe("valueSize: bytes of one value without its name", () => {
  it.each<[string, AttributeValue, number]>([
    ["ASCII string", { S: "PENDING" }, 7],
    ["UTF-8 string: é is 2 bytes", { S: "héllo" }, 6],
    ["binary: raw bytes, not base64", { B: new Uint8Array(10) }, 10],
    ["boolean", { BOOL: false }, 1],
    ["null", { NULL: true }, 1],
    ["string set: the members", { SS: ["a", "bc"] }, 3],
    ["number set", { NS: ["12", "123"] }, 5],
    ["list: 3 + (1 + element) each", { L: [{ S: "a" }, { N: "12" }] }, 3 + (1 + 1) + (1 + 2)],
    ["map: 3 + (1 + name + value) each", { M: { a: { S: "xy" } } }, 3 + (1 + 1 + 2)],
    ["empty list", { L: [] }, 3],
    ["nested map in list", { L: [{ M: { k: { BOOL: true } } }] }, 3 + 1 + (3 + 1 + 1 + 1)],
  ])("%s", (_label, value, bytes) => {
    expect(valueSize(value)).toBe(bytes);
  });
});

describe("itemSize: attribute names plus values", () => {
  it("the module's worked example is 43 bytes", () => {
    // runId 5+3, status 6+7, inFlight 8+2, tags 4 + (3 + 2 + 3)
    const item: AttributeMap = {
      runId: { S: "r-1" },
      status: { S: "PENDING" },
      inFlight: { N: "12" },
      tags: { L: [{ S: "a" }, { S: "bc" }] },
    };
    expect(itemSize(item)).toBe(43);
  });

  it("a document-client item sizes the same as its AttributeValue form", () => {
    const native = {
      runId: "r-1",
      status: "PENDING",
      inFlight: 12,
      tags: ["a", "bc"],
      ok: true,
      none: null,
      names: new Set(["x", "yz"]),
    };
    const wire = toAttributeMap(native, "native");
    expect(wire.names).toEqual({ SS: ["x", "yz"] });
    expect(itemSize(wire)).toBe(43 + (2 + 1) + (4 + 1) + (5 + 3));
  });
});

describe("capacity units from bytes", () => {
  it.each([
    [0, 1],
    [1, 1],
    [1024, 1],
    [1025, 2],
    [3000, 3],
  ])("write: %i bytes → %i WCU (1 KB units, at least 1)", (bytes, units) => {
    expect(writeUnitsFor(bytes)).toBe(units);
  });

  it.each([
    [0, true, 1],
    [4096, true, 1],
    [4097, true, 2],
    [4097, false, 1],
    [0, false, 0.5],
    [10_240, true, 3], // 10 KB rounds up to 12 KB
  ])("read: %i bytes, consistent %s → %d RCU", (bytes, consistent, units) => {
    expect(readUnitsFor(bytes, consistent)).toBe(units);
  });
});

describe("planUpdate: what an UpdateExpression touches and leaves", () => {
  it("SET with a name placeholder, arithmetic and REMOVE", () => {
    const plan = planUpdate(
      "SET #s = :claimed, inFlight = inFlight + :one REMOVE expiresAt",
      { "#s": "status" },
      { ":claimed": { S: "CLAIMED" }, ":one": { N: "1" } },
    );
    expect([...plan.touched].sort()).toEqual(["expiresAt", "inFlight", "status"]);
    expect([...plan.removed]).toEqual(["expiresAt"]);
    const before: AttributeMap = {
      pk: { S: "a" },
      status: { S: "PENDING" },
      inFlight: { N: "12" },
      expiresAt: { N: "1700000000" },
    };
    expect(plan.apply(before)).toEqual({ pk: { S: "a" }, status: { S: "CLAIMED" }, inFlight: { N: "12" } });
  });

  it("ADD to a counter, if_not_exists and list_append", () => {
    const plan = planUpdate(
      "ADD #c :one SET firstAt = if_not_exists(firstAt, :now), log = list_append(log, :entry)",
      { "#c": "completed" },
      { ":one": { N: "1" }, ":now": { N: "1764432000000" }, ":entry": { L: [{ S: "x" }] } },
    );
    const after = plan.apply({ pk: { S: "a" }, log: { L: [{ S: "w" }] } });
    expect(after).toEqual({
      pk: { S: "a" },
      completed: { N: "1" },
      firstAt: { N: "1764432000000" },
      log: { L: [{ S: "w" }, { S: "x" }] },
    });
  });
});

// One table with two sparse global indexes: byName (ALL) and active (KEYS_ONLY).
const T = "flow-Things";
const SHAPE: TableShape = {
  partitionKey: "pk",
  indexes: [
    { name: "byName", kind: "global", partitionKey: "name", projection: "ALL" },
    { name: "active", kind: "global", partitionKey: "activePk", sortKey: "pk", projection: "KEYS_ONLY" },
  ],
};

/** An item of exactly `bytes` bytes: `pk`, the extra attributes, and a `pad` string. */
function itemOf(pk: string, bytes: number, extra: AttributeMap = {}): AttributeMap {
  const base: AttributeMap = { pk: { S: pk }, ...extra };
  const pad = bytes - itemSize(base) - "pad".length;
  if (pad < 0) throw new Error(`an item of ${bytes} bytes cannot hold ${JSON.stringify(extra)}`);
  const item = { ...base, pad: { S: "x".repeat(pad) } };
  expect(itemSize(item)).toBe(bytes);
  return item;
}

function memoryOf(items: AttributeMap[], average?: number): ItemMemory {
  const map = new Map<string, AttributeMap | null>();
  for (const item of items) map.set(itemKey(SHAPE, item)!, item);
  return { get: (_table, key) => map.get(key), averageSize: () => average };
}

function estimate(call: Omit<EstimateInput, "form" | "tables">) {
  const { seen: _seen, ...units } = estimateCapacity({
    form: "attribute-values",
    tables: (name) => (name === T ? SHAPE : undefined),
    ...call,
  });
  return units;
}

const NAME = { name: { S: "rack-a01" } };

describe("estimateCapacity: reads", () => {
  const big = itemOf("a", 5000);
  it.each<[string, Omit<EstimateInput, "form" | "tables">, number]>([
    [
      "GetItem, consistent, 5,000 bytes → 2",
      {
        operation: "GetItem",
        input: { TableName: T, Key: { pk: { S: "a" } }, ConsistentRead: true },
        output: { Item: big },
      },
      2,
    ],
    [
      "GetItem, eventually consistent, 5,000 bytes → 1",
      { operation: "GetItem", input: { TableName: T, Key: { pk: { S: "a" } } }, output: { Item: big } },
      1,
    ],
    [
      "GetItem of a missing item, consistent → the minimum 1",
      {
        operation: "GetItem",
        input: { TableName: T, Key: { pk: { S: "z" } }, ConsistentRead: true },
        output: {},
      },
      1,
    ],
    [
      "Query: 3 items of 2,000 bytes returned, 5 read before the filter → 10,000 bytes → 3",
      {
        operation: "Query",
        input: { TableName: T, ConsistentRead: true },
        output: {
          Items: [itemOf("a", 2000), itemOf("b", 2000), itemOf("c", 2000)],
          Count: 3,
          ScannedCount: 5,
        },
      },
      3,
    ],
    [
      "Query, same page eventually consistent → 1.5",
      {
        operation: "Query",
        input: { TableName: T },
        output: {
          Items: [itemOf("a", 2000), itemOf("b", 2000), itemOf("c", 2000)],
          Count: 3,
          ScannedCount: 5,
        },
      },
      1.5,
    ],
    [
      "Query of 100 items of 300 bytes: one 4 KB rounding for the page (30,000 → 8 units), not 100",
      {
        operation: "Query",
        input: { TableName: T, ConsistentRead: true },
        output: {
          Items: Array.from({ length: 100 }, (_, i) => itemOf(`t${i}`, 300)),
          Count: 100,
          ScannedCount: 100,
        },
      },
      8,
    ],
    [
      "Query: 1 item of 4,000 bytes kept, 99 dropped by the filter, the table's items average 100 → 13,900 bytes → 4",
      {
        operation: "Query",
        input: { TableName: T, ConsistentRead: true },
        output: { Items: [itemOf("a", 4000)], Count: 1, ScannedCount: 100 },
        memory: memoryOf([], 100),
      },
      4,
    ],
    [
      "Scan: 100 items of 4,000 bytes kept, 10,000 dropped: the page stops at 1 MB → 256",
      {
        operation: "Scan",
        input: { TableName: T, ConsistentRead: true },
        output: {
          Items: Array.from({ length: 100 }, (_, i) => itemOf(`r${i}`, 4000)),
          Count: 100,
          ScannedCount: 10_100,
        },
      },
      256,
    ],
    [
      "Scan: a page above 1 MB (moto does not page) counts what it returned: 300 × 4 KB → 300",
      {
        operation: "Scan",
        input: { TableName: T, ConsistentRead: true },
        output: {
          Items: Array.from({ length: 300 }, (_, i) => itemOf(`r${i}`, 4096)),
          Count: 300,
          ScannedCount: 300,
        },
      },
      300,
    ],
    [
      "BatchGetItem (the guide's example): 1.5 KB + 6.5 KB → 4 KB + 8 KB = 3, plus a missing key 1",
      {
        operation: "BatchGetItem",
        input: {
          RequestItems: {
            [T]: { ConsistentRead: true, Keys: [{ pk: { S: "a" } }, { pk: { S: "b" } }, { pk: { S: "c" } }] },
          },
        },
        output: { Responses: { [T]: [itemOf("a", 1536), itemOf("b", 6656)] } },
      },
      4,
    ],
    [
      "TransactGetItems: two 1 KB items → 2 × 1 each = 4",
      {
        operation: "TransactGetItems",
        input: {
          TransactItems: [
            { Get: { TableName: T, Key: { pk: { S: "a" } } } },
            { Get: { TableName: T, Key: { pk: { S: "b" } } } },
          ],
        },
        output: { Responses: [{ Item: itemOf("a", 1024) }, { Item: itemOf("b", 1024) }] },
      },
      4,
    ],
  ])("%s", (_label, call, units) => {
    expect(estimate(call)).toEqual({ readUnits: units, writeUnits: 0, byTable: { [T]: units } });
  });
});

describe("estimateCapacity: writes and index writes", () => {
  const put = (item: AttributeMap, extra: Record<string, unknown> = {}) => ({
    operation: "PutItem",
    input: { TableName: T, Item: item, ...extra },
    output: {},
  });

  it.each<[string, Omit<EstimateInput, "form" | "tables">, number]>([
    ["PutItem, 1,500 bytes, in no index → 2", put(itemOf("a", 1500)), 2],
    [
      "PutItem, 1,500 bytes, named → 2 + byName entry (ALL: 1,500 bytes) 2 = 4",
      put(itemOf("a", 1500, NAME)),
      4,
    ],
    [
      "PutItem over a remembered 3,000-byte item → the larger, 3",
      { ...put(itemOf("a", 500)), memory: memoryOf([itemOf("a", 3000)]) },
      3,
    ],
    [
      "PutItem over a remembered item with the same name: byName changed in place → 1 + 1",
      { ...put(itemOf("a", 500, NAME)), memory: memoryOf([itemOf("a", 400, NAME)]) },
      2,
    ],
    [
      "PutItem moving the item to another name: delete + put in byName → 1 + 2",
      { ...put(itemOf("a", 500, NAME)), memory: memoryOf([itemOf("a", 500, { name: { S: "rack-b02" } })]) },
      3,
    ],
    [
      "PutItem identical to the remembered item: no index write → 1",
      { ...put(itemOf("a", 500, NAME)), memory: memoryOf([itemOf("a", 500, NAME)]) },
      1,
    ],
    [
      "PutItem whose condition fails → 1 (no index writes)",
      {
        ...put(itemOf("a", 1500, NAME), { ConditionExpression: "attribute_not_exists(pk)" }),
        output: undefined,
        errorName: "ConditionalCheckFailedException",
      },
      1,
    ],
    [
      "UpdateItem of an unseen item, SET status (projected by byName's ALL) → 1 + assumed byName entry 1",
      {
        operation: "UpdateItem",
        input: {
          TableName: T,
          Key: { pk: { S: "a" } },
          UpdateExpression: "SET #s = :s",
          ExpressionAttributeNames: { "#s": "status" },
          ExpressionAttributeValues: { ":s": { S: "DONE" } },
        },
        output: {},
      },
      2,
    ],
    [
      "UpdateItem of a remembered 3,000-byte named item, SET status → 3 + byName entry 3 = 6",
      {
        operation: "UpdateItem",
        input: {
          TableName: T,
          Key: { pk: { S: "a" } },
          UpdateExpression: "SET #s = :s",
          ExpressionAttributeNames: { "#s": "status" },
          ExpressionAttributeValues: { ":s": { S: "DONE" } },
        },
        output: {},
        memory: memoryOf([itemOf("a", 3000, NAME)]),
      },
      6,
    ],
    [
      "UpdateItem removing activePk from a remembered active item → 1 + active entry deleted 1",
      {
        operation: "UpdateItem",
        input: { TableName: T, Key: { pk: { S: "a" } }, UpdateExpression: "REMOVE activePk" },
        output: {},
        memory: memoryOf([itemOf("a", 200, { activePk: { S: "ACTIVE" } })]),
      },
      2,
    ],
    [
      "UpdateItem with ReturnValues ALL_NEW sizes the returned item: 2,500 bytes → 3 (+ nothing indexed)",
      {
        operation: "UpdateItem",
        input: {
          TableName: T,
          Key: { pk: { S: "a" } },
          UpdateExpression: "SET pad = :p",
          ExpressionAttributeValues: { ":p": { S: "y" } },
          ReturnValues: "ALL_NEW",
        },
        output: { Attributes: itemOf("a", 2500) },
      },
      3,
    ],
    [
      "DeleteItem of an unseen item → 1 + 1 per index, assumed member = 3",
      { operation: "DeleteItem", input: { TableName: T, Key: { pk: { S: "a" } } }, output: {} },
      3,
    ],
    [
      "DeleteItem returning ALL_OLD, 1,500 bytes, named → 2 + byName 2 = 4",
      {
        operation: "DeleteItem",
        input: { TableName: T, Key: { pk: { S: "a" } }, ReturnValues: "ALL_OLD" },
        output: { Attributes: itemOf("a", 1500, NAME) },
      },
      4,
    ],
    [
      "BatchWriteItem: two 600-byte puts, one unprocessed → 1",
      {
        operation: "BatchWriteItem",
        input: {
          RequestItems: {
            [T]: [{ PutRequest: { Item: itemOf("a", 600) } }, { PutRequest: { Item: itemOf("b", 600) } }],
          },
        },
        output: { UnprocessedItems: { [T]: [{ PutRequest: { Item: itemOf("b", 600) } }] } },
      },
      1,
    ],
    [
      "TransactWriteItems: named 1,500-byte put 2 × 2 + byName 2 (1×); unseen update 2 × 1 + byName 1 (ALL projects inFlight; assumed member) = 9",
      {
        operation: "TransactWriteItems",
        input: {
          TransactItems: [
            {
              Put: {
                TableName: T,
                Item: itemOf("a", 1500, NAME),
                ConditionExpression: "attribute_not_exists(pk)",
              },
            },
            {
              Update: {
                TableName: T,
                Key: { pk: { S: "run" } },
                UpdateExpression: "SET inFlight = inFlight + :one",
                ExpressionAttributeValues: { ":one": { N: "1" } },
              },
            },
          ],
        },
        output: {},
      },
      9,
    ],
    [
      "TransactWriteItems cancelled: each item once, no index writes → 2 + 1 = 3",
      {
        operation: "TransactWriteItems",
        input: {
          TransactItems: [
            { Put: { TableName: T, Item: itemOf("a", 1500, NAME) } },
            { Delete: { TableName: T, Key: { pk: { S: "b" } } } },
          ],
        },
        errorName: "TransactionCanceledException",
      },
      3,
    ],
    [
      "a failure that is not a condition (validation) → 0",
      { ...put(itemOf("a", 1500)), output: undefined, errorName: "ValidationException" },
      0,
    ],
  ])("%s", (_label, call, units) => {
    const result = estimate(call);
    expect(result.writeUnits).toBe(units);
    expect(result.readUnits).toBe(0);
  });

  it("a ConditionCheck in a transaction is a transactional read: 2 RCU", () => {
    const result = estimate({
      operation: "TransactWriteItems",
      input: {
        TransactItems: [
          {
            ConditionCheck: {
              TableName: T,
              Key: { pk: { S: "a" } },
              ConditionExpression: "attribute_exists(pk)",
            },
          },
        ],
      },
      output: {},
    });
    expect(result).toEqual({ readUnits: 2, writeUnits: 0, byTable: { [T]: 2 } });
  });

  it("a successful attribute_not_exists(pk) proves the item was new: exact index write, remembered", () => {
    const item = itemOf("a", 1500, NAME);
    const result = estimateCapacity({
      ...put(item, {
        ConditionExpression: "attribute_not_exists(#k)",
        ExpressionAttributeNames: { "#k": "pk" },
      }),
      form: "attribute-values",
      tables: () => SHAPE,
    });
    expect(result.writeUnits).toBe(4);
    expect(result.seen).toEqual([{ table: T, key: '["S:a"]', item }]);
  });
});

describe("productTableShapes: the schema's tables by name", () => {
  it("recognizes local and test names by their logical-name suffix; unknown names get no shape", () => {
    const shapes = productTableShapes(TABLES);
    expect(shapes("flow-Targets")?.indexes.map((i) => [i.name, i.kind, i.partitionKey, i.sortKey])).toEqual([
      ["byOrder", "local", "runId", "orderKey"],
      ["queued", "local", "runId", "queueKey"],
    ]);
    expect(shapes("e2e-create-1a2b3c4d-Runs")?.indexes.map((i) => i.projection)).toEqual([
      ["name", "status", "reason", "operationKind", "createdAt"],
      "KEYS_ONLY",
      "KEYS_ONLY",
    ]);
    expect(shapes("someone-elses-table")).toBeUndefined();
  });

  it("with deployed names, only those names match", () => {
    const shapes = productTableShapes(TABLES, { Runs: "FlowStack-RunsA1B2-XYZ" });
    expect(shapes("FlowStack-RunsA1B2-XYZ")?.partitionKey).toBe("runId");
    expect(shapes("flow-Runs")).toBeUndefined();
  });
});

describe("CapacityMeter: reported vs estimated units", () => {
  const getCall = (item: Record<string, unknown>) => ({
    input: { TableName: "flow-Runs", Key: { runId: "r1" }, ConsistentRead: true },
    output: { Item: item },
    form: "native" as const,
  });
  const big = { runId: "r1", blob: "x".repeat(5000) }; // 5 + 2 + 4 + 5000 = 5,011 bytes

  it("prefers the answer's figure and estimates the calls without one", () => {
    const meter = new CapacityMeter();
    meter.record("GetItem", { TableName: "flow-Runs", CapacityUnits: 0.5 }, getCall(big));
    meter.record("PutItem", undefined, {
      input: { TableName: "flow-Tasks", Item: { id: "idem:k", taskId: "t1" } },
      output: {},
      form: "native",
    });
    const snap = meter.snapshot();
    expect(snap.calls).toBe(2);
    expect(snap.unreportedCalls).toBe(1);
    expect(snap.capacityUnits).toBe(1.5);
    expect(snap.reported).toEqual({
      calls: 1,
      capacityUnits: 0.5,
      readCapacityUnits: 0,
      writeCapacityUnits: 0,
      byOperation: { GetItem: { calls: 1, capacityUnits: 0.5 } },
    });
    expect(snap.estimated).toEqual({
      calls: 1,
      capacityUnits: 1,
      readCapacityUnits: 0,
      writeCapacityUnits: 1,
      byOperation: { PutItem: { calls: 1, capacityUnits: 1 } },
    });
    expect(snap.byTable).toEqual({ "flow-Runs": 0.5, "flow-Tasks": 1 });
  });

  it("with reportedFigures 'ignore' (moto), estimates every call: a 5 KB consistent read is 2, not 0.5", () => {
    const meter = new CapacityMeter({ reportedFigures: "ignore" });
    meter.record("GetItem", { TableName: "flow-Runs", CapacityUnits: 0.5 }, getCall(big));
    const snap = meter.snapshot();
    expect(snap.capacityUnits).toBe(2);
    expect(snap.readCapacityUnits).toBe(2);
    expect(snap.unreportedCalls).toBe(0);
    expect(snap.reported).toBeUndefined();
    expect(snap.estimated?.calls).toBe(1);
  });

  it("remembers an item it read, and sizes a later update of it on the whole item", () => {
    const meter = new CapacityMeter({ reportedFigures: "ignore" });
    meter.record("GetItem", undefined, getCall(big));
    meter.reset();
    meter.record("UpdateItem", undefined, {
      input: {
        TableName: "flow-Runs",
        Key: { runId: "r1" },
        UpdateExpression: "SET inFlight = inFlight + :one",
        ExpressionAttributeValues: { ":one": 1 },
      },
      output: {},
      form: "native",
    });
    // 5,011 bytes before, a few more after → 5 WCU; nothing the run indexes project changed.
    expect(meter.snapshot().writeCapacityUnits).toBe(5);
  });

  it("sizes items a filter dropped at the average of DISTINCT items seen: a re-read item counts once", () => {
    const meter = new CapacityMeter({ reportedFigures: "ignore" });
    for (let i = 0; i < 5; i++) meter.record("GetItem", undefined, getCall(big)); // 5,011 bytes, one item
    meter.record("BatchWriteItem", undefined, {
      input: {
        RequestItems: {
          "flow-Runs": ["s1", "s2", "s3", "s4"].map((runId) => ({ PutRequest: { Item: { runId } } })),
        },
      },
      output: {},
      form: "native",
    }); // 4 items of 7 bytes
    meter.reset();
    meter.record("Query", undefined, {
      input: { TableName: "flow-Runs" },
      output: { Items: [], Count: 0, ScannedCount: 1000 },
      form: "native",
    });
    // average (5,011 + 4 × 7) / 5 = 1,007.8 → 1,007,800 bytes → 247 × 4 KB, eventually consistent
    // (counting the re-reads it would be 2,787 on average, and the page would hit 1 MB: 128).
    expect(meter.snapshot().readCapacityUnits).toBe(123.5);
  });

  it("without the call, an unreported call counts 0 units (the old behaviour); reset empties everything", () => {
    const meter = new CapacityMeter();
    meter.record("TransactWriteItems", undefined);
    expect(meter.snapshot().capacityUnits).toBe(0);
    expect(meter.snapshot().unreportedCalls).toBe(1);
    meter.reset();
    expect(meter.snapshot()).toEqual({
      calls: 0,
      capacityUnits: 0,
      readCapacityUnits: 0,
      writeCapacityUnits: 0,
      byOperation: {},
      byTable: {},
      unreportedCalls: 0,
      preferReported: { capacityUnits: 0, readCapacityUnits: 0, writeCapacityUnits: 0 },
      byTag: {},
    });
  });
});
