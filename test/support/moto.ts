/**
 * A moto server for tests: spawned on a free loopback port, ready when it answers HTTP. Plus `freshTables()`, which gives each suite its own tables under a unique prefix.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll } from "vitest";
import { freePort, type LocalMoto, startLocalMoto } from "../../local/moto.js";
import { createDynamoDbClient } from "../../src/adapters/aws-config.js";
import { createDynamoStores, type DynamoStores } from "../../src/adapters/dynamodb/index.js";
import { type TableNames, tableNames } from "../../src/adapters/dynamodb/schema.js";
import { createTables, deleteTables } from "../../src/adapters/dynamodb/tables.js";
import { testEndpoint } from "./test-endpoint.js";

export const TEST_CREDENTIALS = { accessKeyId: "test", secretAccessKey: "test" };
export const TEST_REGION = "us-east-1";

export type MotoServer = LocalMoto;

/** moto on a free loopback port with serialized requests (see local/moto.ts). */
export function startMoto(options: { timeoutMs?: number; serialized?: boolean } = {}): Promise<MotoServer> {
  return startLocalMoto(options);
}

export { freePort };

/** A low-level client on the test endpoint with dummy credentials and few retries, built as the product builds its workers'. */
export function testClient(endpoint: string, maxAttempts = 3): DynamoDBClient {
  return createDynamoDbClient({ endpoint, region: TEST_REGION, credentials: TEST_CREDENTIALS, maxAttempts });
}

/** Creates the product's tables under a unique prefix; `drop()` deletes them. */
export async function freshTables(
  client: DynamoDBClient,
  label = "t",
): Promise<{ names: TableNames; drop: () => Promise<void> }> {
  const names = tableNames(`${label}-${randomUUID().slice(0, 8)}-`);
  await createTables(client, names);
  return { names, drop: () => deleteTables(client, names) };
}

/**
 * A suite's own client, tables and stores on the test endpoint:
 *   beforeAll(async () => ({ client, names, stores, drop } = await freshStores(testEndpoint(), "x")));
 *   afterAll(() => drop());
 * `drop()` deletes the tables and destroys the client.
 */
export async function freshStores(
  endpoint: string,
  label: string,
): Promise<{ client: DynamoDBClient; names: TableNames; stores: DynamoStores; drop: () => Promise<void> }> {
  const client = testClient(endpoint);
  const { names, drop } = await freshTables(client, label);
  return {
    client,
    names,
    stores: createDynamoStores(client, names),
    drop: async () => {
      await drop();
      client.destroy();
    },
  };
}

/**
 * The name of every command sent on `client` (or a document client built from it) from now on,
 * once per call (retries are not counted): what a piece of work costs the endpoint.
 */
export function recordCommands(client: DynamoDBClient | S3Client): string[] {
  const names: string[] = [];
  // Both clients' stacks take the same middleware; their input and output types differ.
  (client.middlewareStack as DynamoDBClient["middlewareStack"]).add(
    (next, context) => (args) => {
      names.push(context.commandName ?? "?");
      return next(args);
    },
    { step: "initialize", name: `recordCommands${++recorders}` },
  );
  return names;
}
let recorders = 0;

/** A process's parent's pid, from /proc (a forked moto's is the fork server's). */
export function parentOf(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ")[1]);
}

/** Whether no process has this pid (a zombie still has it: gone means reaped). */
export function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
}

/**
 * A suite's fresh stores on the test endpoint (freshStores, made before its tests and dropped
 * after them) with every command sent on them recorded (recordCommands), for tests that count a
 * step's requests:
 *   const db = countedStores("start");
 *   db.sent.length = 0; await step(db.stores); expect(db.sent).toEqual(["TransactWriteItemsCommand"]);
 */
export function countedStores(label: string): {
  readonly names: TableNames;
  readonly stores: DynamoStores;
  readonly sent: string[];
} {
  let fresh: Awaited<ReturnType<typeof freshStores>> | undefined;
  let sent: string[] = [];
  beforeAll(async () => {
    fresh = await freshStores(testEndpoint(), label);
    sent = recordCommands(fresh.client);
  });
  afterAll(() => fresh?.drop());
  const made = () => {
    if (fresh === undefined) throw new Error("countedStores: used before its suite's beforeAll");
    return fresh;
  };
  return {
    get names() {
      return made().names;
    },
    get stores() {
      return made().stores;
    },
    get sent() {
      return sent;
    },
  };
}
