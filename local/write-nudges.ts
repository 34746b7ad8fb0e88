/**
 * The local stack's writes wake its stream pollers (local/stream-poller.ts `nudge`): a middleware
 * on a DynamoDB client that, once a write command has been answered, names the tables it wrote
 * to. The pollers then idle on a backed-off interval without reading the stack's own writes any
 * later: what the stack writes is read as soon as the write is acknowledged.
 *
 * The write is reported whether it succeeded or not: a failed call may still have written (a
 * timeout after the store applied it), and a nudge for nothing costs one read.
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";

/** `undefined`: a write whose tables the input does not say (a PartiQL statement). */
export type WriteListener = (tables: readonly string[] | undefined) => void;

/** Calls `listener` after every write command sent on `client` or a document client built from it. */
export function reportWrites(client: DynamoDBClient, listener: WriteListener): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const tables = WRITES.has(context.commandName ?? "")
        ? writtenTables(context.commandName as string, args.input as WriteInput)
        : null;
      if (tables === null) return next(args);
      try {
        return await next(args);
      } finally {
        listener(tables);
      }
    },
    // initialize: outside the retries, so one call is one report, after its last attempt.
    { step: "initialize", name: "flowReportWrites", override: true },
  );
}

const WRITES = new Set([
  "PutItemCommand",
  "UpdateItemCommand",
  "DeleteItemCommand",
  "BatchWriteItemCommand",
  "TransactWriteItemsCommand",
  "ExecuteStatementCommand",
  "BatchExecuteStatementCommand",
  "ExecuteTransactionCommand",
]);

interface WriteInput {
  TableName?: string;
  RequestItems?: Record<string, unknown>;
  TransactItems?: Record<string, { TableName?: string } | undefined>[];
}

/** The tables a write command names (undefined: it names none, as PartiQL does). */
export function writtenTables(commandName: string, input: WriteInput): readonly string[] | undefined {
  switch (commandName) {
    case "PutItemCommand":
    case "UpdateItemCommand":
    case "DeleteItemCommand":
      return input.TableName === undefined ? undefined : [input.TableName];
    case "BatchWriteItemCommand":
      return Object.keys(input.RequestItems ?? {});
    case "TransactWriteItemsCommand": {
      const tables = new Set<string>();
      for (const item of input.TransactItems ?? []) {
        // ConditionCheck writes nothing; Put, Update and Delete do.
        for (const kind of ["Put", "Update", "Delete"]) {
          const table = item[kind]?.TableName;
          if (table !== undefined) tables.add(table);
        }
      }
      return [...tables];
    }
    default:
      return undefined;
  }
}
