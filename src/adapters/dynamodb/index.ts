/** Builds every DynamoDB-backed store on one client. */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { Cipher } from "../../app/ports.js";
import type { StoreUnavailableError } from "../../domain/errors.js";
import { documentClient, raiseStoreUnavailable } from "./db.js";
import { DynamoFirmwareImageStore } from "./image-store.js";
import { DynamoInventoryStore } from "./inventory-store.js";
import { DynamoRackLockStore } from "./lock-store.js";
import { DynamoFirmwarePolicyStore } from "./policy-store.js";
import { DynamoReadinessStore } from "./readiness-store.js";
import { DynamoRunStore, type RunStoreOptions } from "./run-store.js";
import type { TableNames } from "./schema.js";
import { DynamoTaskStore } from "./task-store.js";

export interface DynamoStores {
  doc: DynamoDBDocumentClient;
  runs: DynamoRunStore;
  tasks: DynamoTaskStore;
  inventory: DynamoInventoryStore;
  locks: DynamoRackLockStore;
  policy: DynamoFirmwarePolicyStore;
  readiness: DynamoReadinessStore;
  images: DynamoFirmwareImageStore;
}

export function createDynamoStores(
  client: DynamoDBClient,
  tables: TableNames,
  options: {
    cipher?: Cipher;
    /** Told of every call that failed because the store is unavailable (see raiseStoreUnavailable). */
    onUnavailable?: (error: StoreUnavailableError) => void;
  } & Omit<RunStoreOptions, "cipher"> = {},
): DynamoStores {
  // Every store's calls: an unreachable or throttling store is a typed, retryable error.
  raiseStoreUnavailable(client, options.onUnavailable);
  const doc = documentClient(client);
  return {
    doc,
    runs: new DynamoRunStore(doc, tables, options),
    tasks: new DynamoTaskStore(doc, tables),
    inventory: new DynamoInventoryStore(doc, tables),
    locks: new DynamoRackLockStore(doc, tables),
    policy: new DynamoFirmwarePolicyStore(doc, tables),
    readiness: new DynamoReadinessStore(doc, tables),
    images: new DynamoFirmwareImageStore(doc, tables),
  };
}

export { LocalAesGcmCipher } from "./cipher.js";
export * from "./schema.js";
export { createTables, deleteTables } from "./tables.js";
