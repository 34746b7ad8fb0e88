/**
 * The DynamoDB stores on moto against the port contracts that the in-memory fakes also pass
 * (test/unit/memory-stores.test.ts). One set of tables for every suite: the suites keep apart by
 * their own ids.
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll } from "vitest";
import {
  createDynamoStores,
  type DynamoStores,
  LocalAesGcmCipher,
} from "../../src/adapters/dynamodb/index.js";
import { describeInventoryStoreContract } from "../support/contracts/inventory-store.js";
import { describeLateFailureContract } from "../support/contracts/late-failure.js";
import { describeRackLockStoreContract } from "../support/contracts/rack-lock-store.js";
import { describeRunHistoryContract } from "../support/contracts/run-history.js";
import { describeRunScheduleContract } from "../support/contracts/run-schedule.js";
import { describeRunStoreContract } from "../support/contracts/run-store.js";
import { describeTaskStoreContract } from "../support/contracts/task-store.js";
import { freshTables, testClient } from "../support/moto.js";
import { testEndpoint } from "../support/test-endpoint.js";

let client: DynamoDBClient;
let drop: () => Promise<void>;
let stores: DynamoStores;

beforeAll(async () => {
  client = testClient(testEndpoint());
  const tables = await freshTables(client, "contract");
  drop = tables.drop;
  stores = createDynamoStores(client, tables.names, { cipher: new LocalAesGcmCipher(Buffer.alloc(32, 7)) });
});
afterAll(async () => {
  await drop();
  client.destroy();
});

describeRunStoreContract("DynamoDB on moto", async () => ({ runs: stores.runs }));
describeRunHistoryContract("DynamoDB on moto", async () => ({ runs: stores.runs }));
describeRunScheduleContract("DynamoDB on moto", async () => ({ runs: stores.runs }));
describeLateFailureContract("DynamoDB on moto", async () => ({ runs: stores.runs }));
describeTaskStoreContract("DynamoDB on moto", async () => ({ tasks: stores.tasks }));
describeInventoryStoreContract("DynamoDB on moto", async () => ({ inventory: stores.inventory }));
describeRackLockStoreContract("DynamoDB on moto", async () => ({ locks: stores.locks }));
