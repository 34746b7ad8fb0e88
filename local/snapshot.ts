/**
 * `--data-dir`: keeps the local stack's state across restarts. moto keeps tables in memory only, so
 * the stack snapshots every table to `<dir>/tables.json` periodically and on shutdown, and restores
 * the snapshot into fresh tables at start. A crash loses at most one snapshot interval. Writes go
 * to a temporary file renamed into place, so a crash mid-write leaves the previous snapshot whole.
 */
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  type AttributeValue,
  BatchWriteItemCommand,
  type DynamoDBClient,
  paginateScan,
} from "@aws-sdk/client-dynamodb";
import type { TableNames } from "../src/adapters/dynamodb/schema.js";

type Item = Record<string, AttributeValue>;
type Snapshot = { version: 1; savedAt: string; tables: Record<keyof TableNames, Item[]> };

const FILE = "tables.json";

export async function saveSnapshot(client: DynamoDBClient, names: TableNames, dir: string): Promise<number> {
  const tables = {} as Snapshot["tables"];
  let count = 0;
  for (const key of Object.keys(names) as (keyof TableNames)[]) {
    const items: Item[] = [];
    for await (const page of paginateScan({ client }, { TableName: names[key], ConsistentRead: true })) {
      items.push(...(page.Items ?? []));
    }
    tables[key] = items;
    count += items.length;
  }
  const snapshot: Snapshot = { version: 1, savedAt: new Date().toISOString(), tables };
  await mkdir(dir, { recursive: true });
  const tmp = join(dir, `${FILE}.tmp`);
  await writeFile(tmp, JSON.stringify(snapshot));
  await rename(tmp, join(dir, FILE));
  return count;
}

/** Restores a snapshot if one exists; returns the number of items written (0 when none). */
export async function restoreSnapshot(
  client: DynamoDBClient,
  names: TableNames,
  dir: string,
): Promise<number> {
  let text: string;
  try {
    text = await readFile(join(dir, FILE), "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw error;
  }
  const snapshot = JSON.parse(text) as Snapshot;
  if (snapshot.version !== 1)
    throw new Error(`${join(dir, FILE)}: unsupported snapshot version ${snapshot.version}`);
  let count = 0;
  for (const key of Object.keys(names) as (keyof TableNames)[]) {
    const items = snapshot.tables[key] ?? [];
    for (let i = 0; i < items.length; i += 25) {
      let requests = items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } }));
      while (requests.length > 0) {
        const out = await client.send(
          new BatchWriteItemCommand({ RequestItems: { [names[key]]: requests } }),
        );
        requests = (out.UnprocessedItems?.[names[key]] ?? []) as typeof requests;
      }
    }
    count += items.length;
  }
  return count;
}
