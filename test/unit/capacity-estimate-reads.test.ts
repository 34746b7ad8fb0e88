/**
 * The capacity estimate of reads (bench/lib/capacity-estimate.ts): gets, queries, scans and
 * transactional gets, consistent or not.
 */
import { describe, expect, it } from "vitest";
import type { EstimateInput } from "../../bench/lib/capacity-estimate.js";
import { estimate, itemOf, memoryOf, T } from "../support/capacity-cases.js";

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
