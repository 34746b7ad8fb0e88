/**
 * The capacity meter (bench/lib/capacity-meter.ts): the product's tables by name, and the units a
 * store reports against the ones the estimate gives.
 */
import { describe, expect, it } from "vitest";
import { productTableShapes } from "../../bench/lib/capacity-estimate.js";
import { CapacityMeter } from "../../bench/lib/capacity-meter.js";
import { TABLES } from "../../src/adapters/dynamodb/schema.js";

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
