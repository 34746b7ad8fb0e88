/**
 * Which tables a DynamoDB write command writes to (local/write-nudges.ts `writtenTables`): the
 * local stack nudges those tables' stream pollers after each write its clients make.
 */
import { describe, expect, it } from "vitest";
import { writtenTables } from "../../local/write-nudges.js";

describe("writtenTables", () => {
  it("a single-item write names its table", () => {
    for (const command of ["PutItemCommand", "UpdateItemCommand", "DeleteItemCommand"]) {
      expect(writtenTables(command, { TableName: "runs" })).toEqual(["runs"]);
    }
  });

  it("a batch write names every table of its request", () => {
    expect(writtenTables("BatchWriteItemCommand", { RequestItems: { runs: [], targets: [] } })).toEqual([
      "runs",
      "targets",
    ]);
  });

  it("a transaction names the tables it puts, updates or deletes in, once each, not those it only checks", () => {
    expect(
      writtenTables("TransactWriteItemsCommand", {
        TransactItems: [
          { Update: { TableName: "runs" } },
          { Put: { TableName: "events" } },
          { Put: { TableName: "runs" } },
          { Delete: { TableName: "targets" } },
          { ConditionCheck: { TableName: "inventory" } },
        ],
      }),
    ).toEqual(["runs", "events", "targets"]);
  });

  it("a PartiQL write names none: undefined, so every poller is nudged", () => {
    for (const command of [
      "ExecuteStatementCommand",
      "BatchExecuteStatementCommand",
      "ExecuteTransactionCommand",
    ]) {
      expect(writtenTables(command, {})).toBeUndefined();
    }
  });
});
