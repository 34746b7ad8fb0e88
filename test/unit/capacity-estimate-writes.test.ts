/**
 * The capacity estimate of writes and their index writes (bench/lib/capacity-estimate.ts).
 */
import { describe, expect, it } from "vitest";
import {
  type AttributeMap,
  type EstimateInput,
  estimateCapacity,
} from "../../bench/lib/capacity-estimate.js";
import { estimate, itemOf, memoryOf, SHAPE, T } from "../support/capacity-cases.js";

const NAME = { name: { S: "rack-a01" } };

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
