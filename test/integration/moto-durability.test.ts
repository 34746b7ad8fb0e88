/**
 * The moto launcher with a data dir (local/moto-launcher.py): a write moto acknowledged survives a
 * SIGKILL; failed writes are not replayed; snapshots compact the log and restore the same state;
 * SIGTERM leaves a snapshot and no log; a torn last line is dropped; a data dir has one moto at a
 * time; a restored table's stream is new and starts empty. Each test spawns its own moto, on a
 * data dir of its own, so the tests run at once: their motos' starts, mostly waiting on Python's
 * imports and on the restores, overlap.
 */
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AttributeValue,
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  PutItemCommand,
  ScanCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { afterAll, describe, expect, it } from "vitest";
import { type LocalMoto, type LocalMotoOptions, startLocalMoto } from "../../local/moto.js";
import { processGone, testClient } from "../support/moto.js";

const root = mkdtempSync(join(tmpdir(), "moto-durability-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const running: LocalMoto[] = [];
afterAll(async () => {
  await Promise.all(running.map((m) => m.stop()));
});

async function moto(options: LocalMotoOptions): Promise<{ moto: LocalMoto; client: DynamoDBClient }> {
  const m = await startLocalMoto(options);
  running.push(m);
  return { moto: m, client: testClient(m.endpoint, 1) };
}

async function createTable(client: DynamoDBClient, name: string): Promise<void> {
  await client.send(
    new CreateTableCommand({
      TableName: name,
      KeySchema: [{ AttributeName: "id", KeyType: "HASH" }],
      AttributeDefinitions: [{ AttributeName: "id", AttributeType: "S" }],
      BillingMode: "PAY_PER_REQUEST",
      StreamSpecification: { StreamEnabled: true, StreamViewType: "NEW_AND_OLD_IMAGES" },
    }),
  );
}

async function scan(client: DynamoDBClient, name: string): Promise<Record<string, AttributeValue>[]> {
  const out = await client.send(new ScanCommand({ TableName: name, ConsistentRead: true }));
  return (out.Items ?? []).sort((a, b) => String(a.id?.S).localeCompare(String(b.id?.S)));
}

const bump = (id: string) =>
  new UpdateItemCommand({
    TableName: "a",
    Key: { id: { S: id } },
    UpdateExpression: "ADD n :one",
    ExpressionAttributeValues: { ":one": { N: "1" } },
  });

/** SIGKILL, and the same port and data dir again. */
async function killAndRestart(m: LocalMoto): Promise<void> {
  process.kill(m.pid()!, "SIGKILL");
  await new Promise<void>((resolve) => {
    const check = () => (m.pid() !== undefined && processGone(m.pid()!) ? resolve() : setTimeout(check, 20));
    check();
  });
  await m.restart();
}

describe.concurrent("moto with a data dir", () => {
  it("every acknowledged write survives a SIGKILL right after its answer; failed writes are not replayed", async () => {
    const dataDir = join(root, "kill");
    const { moto: m, client } = await moto({ dataDir, compactEvery: 1_000_000 });
    await createTable(client, "a");
    await createTable(client, "b");
    // 60 concurrent counter increments (not idempotent: a replay that doubled one would show).
    await Promise.all(Array.from({ length: 60 }, () => client.send(bump("counter"))));
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        client.send(
          new PutItemCommand({ TableName: "b", Item: { id: { S: `b${i}` }, v: { S: "x".repeat(i) } } }),
        ),
      ),
    );
    // A failed condition and a cancelled transaction change nothing, before or after the replay.
    await expect(
      client.send(
        new PutItemCommand({
          TableName: "a",
          Item: { id: { S: "counter" }, n: { N: "0" } },
          ConditionExpression: "attribute_not_exists(id)",
        }),
      ),
    ).rejects.toMatchObject({ name: "ConditionalCheckFailedException" });
    await expect(
      client.send(
        new TransactWriteItemsCommand({
          TransactItems: [
            { Put: { TableName: "b", Item: { id: { S: "never" } } } },
            {
              ConditionCheck: {
                TableName: "a",
                Key: { id: { S: "counter" } },
                ConditionExpression: "n = :zero",
                ExpressionAttributeValues: { ":zero": { N: "0" } },
              },
            },
          ],
        }),
      ),
    ).rejects.toMatchObject({ name: "TransactionCanceledException" });
    const last = await client.send(bump("last"));
    expect(last.$metadata.httpStatusCode).toBe(200);
    const before = { a: await scan(client, "a"), b: await scan(client, "b") };

    await killAndRestart(m);
    expect({ a: await scan(client, "a"), b: await scan(client, "b") }).toEqual(before);
    expect(before.a.find((i) => i.id?.S === "counter")).toEqual({ id: { S: "counter" }, n: { N: "60" } });
    expect(before.b.map((i) => i.id?.S)).not.toContain("never");
  });

  it("compaction every few writes: one snapshot and one log at a time, and a restore gives the same tables", async () => {
    const dataDir = join(root, "compact");
    const { moto: m, client } = await moto({ dataDir, compactEvery: 7 });
    await createTable(client, "a");
    for (let i = 0; i < 50; i++) await client.send(bump(`k${i % 9}`));
    const files = readdirSync(dataDir).filter((f) => f !== "LOCK");
    expect(files.filter((f) => f.startsWith("snapshot-")).length).toBeLessThanOrEqual(2);
    expect(files.filter((f) => f.startsWith("wal-")).length).toBeLessThanOrEqual(2);
    // Binary attributes, top level and nested (a task's deflated report is one), in the snapshot too.
    const blob = Uint8Array.from([0, 1, 2, 250, 255]);
    await client.send(
      new PutItemCommand({
        TableName: "a",
        Item: { id: { S: "bin" }, z: { B: blob }, m: { M: { z: { B: blob } } }, l: { L: [{ B: blob }] } },
      }),
    );
    for (let i = 0; i < 7; i++) await client.send(bump("after-bin"));
    const before = await scan(client, "a");
    await killAndRestart(m);
    expect(await scan(client, "a")).toEqual(before);
    expect(before.find((i) => i.id?.S === "bin")?.z).toEqual({ B: blob });
    expect(before.reduce((n, i) => n + Number((i.n as { N: string } | undefined)?.N ?? 0), 0)).toBe(57);
  });

  it("SIGTERM leaves a snapshot and an empty log; a torn last line is dropped; the restored stream is new and empty", async () => {
    const dataDir = join(root, "term");
    let { moto: m, client } = await moto({ dataDir });
    await createTable(client, "a");
    for (let i = 0; i < 5; i++) await client.send(bump("x"));
    const firstArn = (await client.send(new DescribeTableCommand({ TableName: "a" }))).Table?.LatestStreamArn;
    await m.stop();
    const files = readdirSync(dataDir).sort();
    expect(files).toEqual([
      "LOCK",
      expect.stringMatching(/^snapshot-\d{8}\.json$/),
      expect.stringMatching(/^wal-\d{8}\.jsonl$/),
    ]);
    const wal = join(dataDir, files[2]!);
    expect(readFileSync(wal, "utf8")).toBe("");
    // A crash mid-append: half an entry, never acknowledged.
    appendFileSync(wal, '{"path":"/","headers":{"X-Amz-Target":"DynamoDB_20120810.PutItem"');

    const lines: string[] = [];
    ({ moto: m, client } = await moto({ dataDir, log: (l) => lines.push(l) }));
    expect(lines).toEqual([
      expect.stringMatching(/^flow-moto: restored 1 items and replayed 0 logged writes from .* in \d+ ms$/),
    ]);
    expect(await scan(client, "a")).toEqual([{ id: { S: "x" }, n: { N: "5" } }]);
    const described = await client.send(new DescribeTableCommand({ TableName: "a" }));
    expect(described.Table?.LatestStreamArn).not.toBe(firstArn);
    // …and empty: the restore wrote nothing a stream reader would take for a new change.
    const streams = async <T>(operation: string, body: unknown): Promise<T> => {
      const res = await fetch(m.endpoint, {
        method: "POST",
        headers: {
          "content-type": "application/x-amz-json-1.0",
          "x-amz-target": `DynamoDBStreams_20120810.${operation}`,
          authorization:
            "AWS4-HMAC-SHA256 Credential=test/20200101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=x",
        },
        body: JSON.stringify(body),
      });
      return (await res.json()) as T;
    };
    const arn = described.Table?.LatestStreamArn;
    const shards = await streams<{ StreamDescription: { Shards: { ShardId: string }[] } }>("DescribeStream", {
      StreamArn: arn,
    });
    const iterator = await streams<{ ShardIterator: string }>("GetShardIterator", {
      StreamArn: arn,
      ShardId: shards.StreamDescription.Shards[0]?.ShardId,
      ShardIteratorType: "TRIM_HORIZON",
    });
    const records = await streams<{ Records: unknown[] }>("GetRecords", {
      ShardIterator: iterator.ShardIterator,
    });
    expect(records.Records).toEqual([]);
  });

  it("one moto per data dir: a second one refuses it, naming the owner", async () => {
    const dataDir = join(root, "twice");
    const { moto: first } = await moto({ dataDir });
    await expect(startLocalMoto({ dataDir })).rejects.toThrow(
      `flow-moto: ${dataDir} is in use by another moto (pid ${first.pid()})`,
    );
  }, 60_000);
});
