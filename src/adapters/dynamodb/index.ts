/** Builds every DynamoDB-backed store on one client and one capacity meter. */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { DynamoCapacityMeter } from "../../../bench/lib/capacity-meter.js";
import type { Cipher } from "../../app/ports.js";
import { documentClient } from "./db.js";
import { DynamoInventoryStore } from "./inventory-store.js";
import { DynamoRackLockStore } from "./lock-store.js";
import { DynamoRunStore, type RunStoreOptions } from "./run-store.js";
import type { TableNames } from "./schema.js";
import { DynamoTaskStore } from "./task-store.js";

export interface DynamoStores {
  doc: DynamoDBDocumentClient;
  meter: DynamoCapacityMeter;
  runs: DynamoRunStore;
  tasks: DynamoTaskStore;
  inventory: DynamoInventoryStore;
  locks: DynamoRackLockStore;
}

export function createDynamoStores(
  client: DynamoDBClient,
  tables: TableNames,
  options: { cipher?: Cipher } & Omit<RunStoreOptions, "cipher"> = {},
): DynamoStores {
  const meter = new DynamoCapacityMeter();
  const doc = documentClient(client, meter);
  return {
    doc,
    meter,
    runs: new DynamoRunStore(doc, tables, options),
    tasks: new DynamoTaskStore(doc, tables),
    inventory: new DynamoInventoryStore(doc, tables),
    locks: new DynamoRackLockStore(doc, tables),
  };
}

export { DynamoCapacityMeter } from "../../../bench/lib/capacity-meter.js";
export { LocalAesGcmCipher } from "./cipher.js";
export * from "./schema.js";
export { createTables, deleteTables } from "./tables.js";
