/**
 * The local stream poller idles cheaply (local/stream-poller.ts `maxIdleIntervalMs`) without
 * reading anything later than it must: on moto's real streams, its waits run on moved timers
 * (test/support/moved-timers.ts), so the count of GetRecords over a stretch of time is exact and
 * nothing here waits on the wall clock.
 *
 * - idle, the wait doubles from `intervalMs` to `maxIdleIntervalMs` (and stays at `intervalMs`
 *   without the option); DescribeStream follows the clock's time, not the loop's turns: once a
 *   minute by default, and at once when a shard ends (a Streams API of the test's own, as moto's
 *   one shard never ends), whose child is then read from its start;
 * - a write reported by `reportWrites` (local/write-nudges.ts) wakes a backed-off loop at once:
 *   the record arrives while the moved clock stands still, and the wait is back at `intervalMs`;
 * - a nudge that comes while a GetRecords is in flight (the write landed after the read) makes the
 *   loop read again at once instead of waiting (the Streams API here goes through a forwarding
 *   proxy that writes and nudges between moto's answer and the poller's receiving it);
 * - with `nudgeDelayMs`, the nudges of a burst are one read, that long after the first, and a
 *   nudge never makes a wait longer; a round whose records were not a full batch is followed by a
 *   wait, not by a read at once;
 * - a write nobody reports (another client) is still delivered, by the backed-off read.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";
import type { DynamoDBRecord } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type StreamPoller, startStreamPoller } from "../../local/stream-poller.js";
import { reportWrites } from "../../local/write-nudges.js";
import type { TableNames } from "../../src/adapters/dynamodb/index.js";
import { freshStores, testClient } from "../support/moto.js";
import { type MovedTimers, movedTimers } from "../support/moved-timers.js";
import { until } from "../support/poll.js";
import { testEndpoint } from "../support/test-endpoint.js";

let client: DynamoDBClient;
let names: TableNames;
let drop: () => Promise<void>;

beforeAll(async () => {
  ({ client, names, drop } = await freshStores(testEndpoint(), "idlepoll"));
});
afterAll(() => drop());

interface Polling {
  poller: StreamPoller;
  timers: MovedTimers;
  received: DynamoDBRecord[];
  /** Every idle wait the loop asked for, in order. */
  waits: number[];
}

/** A poller on the runs table whose waits are moved timers. */
async function polling(
  options: {
    maxIdleIntervalMs?: number;
    nudgeDelayMs?: number;
    describeEveryMs?: number;
    endpoint?: string;
  } = {},
): Promise<Polling> {
  const timers = movedTimers();
  const received: DynamoDBRecord[] = [];
  const poller = await startStreamPoller({
    client,
    tableName: names.runs,
    handler: async (event) => {
      received.push(...event.Records);
      return { batchItemFailures: [] };
    },
    intervalMs: 100,
    ...options,
    clock: timers,
  });
  return { poller, timers, received, waits: [] };
}

/** Waits until the loop asks for its next wait, notes it, and ends it by moving the clock. */
async function nextWait(p: Polling): Promise<number> {
  const wait = await until(`idle wait ${p.waits.length + 1}`, () => {
    const armed = p.timers.armed();
    return armed.length === 1 ? armed[0] : undefined;
  });
  p.waits.push(wait);
  return wait;
}

/** Moves the clock through `ms` of idle waits; the waits asked for are in `p.waits`. */
async function idleFor(p: Polling, ms: number): Promise<void> {
  let moved = 0;
  while (moved < ms) {
    const wait = await nextWait(p);
    p.timers.advance(wait);
    moved += wait;
  }
}

/**
 * The Streams API forwarded to moto; `afterAnswer` (when set) runs once moto has answered a
 * GetRecords and before the poller receives the answer.
 */
async function streamsProxy(): Promise<{
  endpoint: string;
  afterAnswer: (() => Promise<void>) | undefined;
  close(): Promise<void>;
}> {
  const proxy = {
    endpoint: "",
    afterAnswer: undefined as (() => Promise<void>) | undefined,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", async () => {
      const target = String(request.headers["x-amz-target"]);
      const answer = await fetch(testEndpoint(), {
        method: "POST",
        headers: {
          "content-type": String(request.headers["content-type"]),
          "x-amz-target": target,
          authorization: String(request.headers.authorization),
        },
        body: Buffer.concat(chunks),
      });
      const body = await answer.text();
      const hook = proxy.afterAnswer;
      if (target.endsWith(".GetRecords") && hook !== undefined) {
        proxy.afterAnswer = undefined;
        await hook();
      }
      response.writeHead(answer.status, { "content-type": "application/x-amz-json-1.0" }).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  proxy.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}

/**
 * A Streams API of its own (DynamoDB's contract, not moto's single shard that never ends): one
 * open shard until `endShard`, which gives it a last record, ends it and opens a child shard
 * holding one record. Iterators are `<shard>:<position>`.
 */
async function fakeStreams(): Promise<{
  endpoint: string;
  endShard(last: { runId: string }, first: { runId: string }): void;
  close(): Promise<void>;
}> {
  const shards: { id: string; records: { runId: string }[]; ended: boolean }[] = [
    { id: "shard-parent", records: [], ended: false },
  ];
  const answer = (operation: string, body: Record<string, unknown>): unknown => {
    if (operation === "DescribeStream")
      return { StreamDescription: { Shards: shards.map((shard) => ({ ShardId: shard.id })) } };
    if (operation === "GetShardIterator")
      return {
        ShardIterator: `${body.ShardId}:${body.ShardIteratorType === "AFTER_SEQUENCE_NUMBER" ? Number(body.SequenceNumber) : 0}`,
      };
    const [id, from] = String(body.ShardIterator).split(":");
    const shard = shards.find((s) => s.id === id);
    if (shard === undefined) throw new Error(`no shard ${id}`);
    const records = shard.records.slice(Number(from)).map((keys, i) => ({
      eventID: `${shard.id}-${Number(from) + i}`,
      eventName: "INSERT",
      dynamodb: { Keys: { runId: { S: keys.runId } }, SequenceNumber: String(Number(from) + i + 1) },
    }));
    const to = Number(from) + records.length;
    return {
      Records: records,
      NextShardIterator: shard.ended && to === shard.records.length ? null : `${id}:${to}`,
    };
  };
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const operation = String(request.headers["x-amz-target"]).split(".")[1] ?? "";
      const body = answer(operation, JSON.parse(Buffer.concat(chunks).toString() || "{}"));
      response.writeHead(200, { "content-type": "application/x-amz-json-1.0" }).end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    endShard(last, first) {
      const parent = shards[0]!;
      parent.records.push(last);
      parent.ended = true;
      shards.push({ id: "shard-child", records: [first], ended: false });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const putRun = (writer: DynamoDBClient, runId: string) =>
  writer.send(new PutItemCommand({ TableName: names.runs, Item: { runId: { S: runId } } }));

const runIds = (records: DynamoDBRecord[]) => records.map((r) => r.dynamodb?.Keys?.runId?.S);

describe("stream poller: idle backoff", () => {
  it("an idle loop doubles its wait up to maxIdleIntervalMs: 14 GetRecords in 10.5 s, not 105", async () => {
    const p = await polling({ maxIdleIntervalMs: 1_000, describeEveryMs: 1_000 });
    try {
      await idleFor(p, 10_000);
      // The first round's wait is the next to be asked for, after one more read.
      await nextWait(p);
      expect(p.waits).toEqual([
        100, 200, 400, 800, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000,
      ]);
      // One read a round (the table's one shard), the last of them before the wait just asked for.
      expect(p.poller.stats.reads).toBe(p.waits.length);
      // DescribeStream once per second of the clock's time (10.5 s moved), not per ten rounds.
      expect(p.poller.stats.describes).toBe(10);
      expect(p.received).toEqual([]);
    } finally {
      await p.poller.stop();
    }
  });

  it("without maxIdleIntervalMs every wait is intervalMs, as before", async () => {
    const p = await polling();
    try {
      await idleFor(p, 1_000);
      await nextWait(p);
      expect(p.waits).toEqual(Array(11).fill(100));
      expect(p.poller.stats.reads).toBe(11);
      // By default the stream is described once a minute (and when a shard ends): not yet.
      expect(p.poller.stats.describes).toBe(0);
    } finally {
      await p.poller.stop();
    }
  });

  it("a reported write wakes a backed-off loop at once, with the clock standing still, and the wait is back at intervalMs", async () => {
    const p = await polling({ maxIdleIntervalMs: 1_000 });
    const writer = testClient(testEndpoint());
    reportWrites(writer, (tables) => {
      for (const table of tables ?? []) p.poller.nudge(table);
    });
    try {
      await idleFor(p, 2_500);
      expect(await nextWait(p)).toBe(1_000);
      await putRun(writer, "nudged-1");
      // Only a nudge can end the armed wait: the moved clock does not move from here on.
      await until("the nudged write delivered", () => p.received.length === 1);
      expect(runIds(p.received)).toEqual(["nudged-1"]);
      expect(p.poller.stats.nudges).toBe(1);
      // Records read: the wait is intervalMs again, and doubles from there.
      expect(await nextWait(p)).toBe(100);
    } finally {
      writer.destroy();
      await p.poller.stop();
    }
  });

  it("a nudge for a table the poller does not read wakes nothing", async () => {
    const p = await polling({ maxIdleIntervalMs: 1_000 });
    try {
      await idleFor(p, 1_500);
      const wait = await nextWait(p);
      expect(wait).toBe(1_000);
      p.poller.nudge(names.targets);
      // Had the nudge woken the loop, its next wait would be back at intervalMs (100 ms).
      p.timers.advance(wait);
      expect(await nextWait(p)).toBe(1_000);
      expect(p.poller.stats.nudges).toBe(0);
      // The table it reads: woken, and back at intervalMs.
      p.poller.nudge(names.runs);
      expect(await nextWait(p)).toBe(100);
      expect(p.poller.stats.nudges).toBe(1);
    } finally {
      await p.poller.stop();
    }
  });

  it("a nudge while a GetRecords is in flight makes the loop read again at once, not after a wait", async () => {
    const proxy = await streamsProxy();
    const p = await polling({ maxIdleIntervalMs: 1_000, endpoint: proxy.endpoint });
    const writer = testClient(testEndpoint());
    try {
      await idleFor(p, 2_500);
      expect(await nextWait(p)).toBe(1_000);
      // The next read's answer (empty) is held while a write lands and is reported.
      proxy.afterAnswer = async () => {
        await putRun(writer, "in-flight-1");
        p.poller.nudge(names.runs);
      };
      const reads = p.poller.stats.reads;
      p.timers.advance(1_000);
      // Only a read right after the empty one finds the write: the moved clock stands still.
      await until("the write made during the read delivered", () => p.received.length === 1);
      expect(runIds(p.received)).toEqual(["in-flight-1"]);
      expect(await nextWait(p)).toBe(100);
      // The held empty read and the one that found the write; records that were not a full
      // batch are followed by a wait, not by another read at once.
      expect(p.poller.stats.reads).toBe(reads + 2);
    } finally {
      writer.destroy();
      await p.poller.stop();
      await proxy.close();
    }
  });

  it("with nudgeDelayMs, the nudges of a burst are one read, nudgeDelayMs after the first; a nudge never makes a wait longer", async () => {
    const p = await polling({ maxIdleIntervalMs: 1_000, nudgeDelayMs: 50 });
    const writer = testClient(testEndpoint());
    reportWrites(writer, (tables) => {
      for (const table of tables ?? []) p.poller.nudge(table);
    });
    try {
      await idleFor(p, 2_500);
      expect(await nextWait(p)).toBe(1_000);
      const reads = p.poller.stats.reads;
      await putRun(writer, "burst-1");
      // The armed 1 s wait now ends 50 ms after the nudge.
      expect(p.timers.armed()).toEqual([50]);
      p.timers.advance(20);
      await putRun(writer, "burst-2");
      await putRun(writer, "burst-3");
      // Later nudges neither push it back nor add a read.
      expect(p.timers.armed()).toEqual([30]);
      expect(p.poller.stats.reads).toBe(reads);
      p.timers.advance(30);
      await until("the burst delivered", () => p.received.length === 3);
      expect(runIds(p.received)).toEqual(["burst-1", "burst-2", "burst-3"]);
      expect(p.poller.stats).toMatchObject({ reads: reads + 1, batches: 1, nudges: 3 });
      // Not a full batch: the next read is intervalMs later, then the backoff doubles.
      expect(await nextWait(p)).toBe(100);
      p.timers.advance(100);
      expect(await nextWait(p)).toBe(200);
      // 20 ms before a wait ends, a nudge leaves it as it is (it would end 30 ms later).
      p.timers.advance(180);
      p.poller.nudge(names.runs);
      expect(p.timers.armed()).toEqual([20]);
      expect(p.poller.stats.reads).toBe(reads + 2);
    } finally {
      writer.destroy();
      await p.poller.stop();
    }
  });

  it("with nudgeDelayMs, a nudge while a GetRecords is in flight makes the loop read again nudgeDelayMs later", async () => {
    const proxy = await streamsProxy();
    const p = await polling({ maxIdleIntervalMs: 1_000, nudgeDelayMs: 50, endpoint: proxy.endpoint });
    const writer = testClient(testEndpoint());
    try {
      await idleFor(p, 2_500);
      expect(await nextWait(p)).toBe(1_000);
      proxy.afterAnswer = async () => {
        await putRun(writer, "in-flight-2");
        p.poller.nudge(names.runs);
      };
      const reads = p.poller.stats.reads;
      p.timers.advance(1_000);
      // The held read answered empty; the nudge during it asks for a read 50 ms later.
      expect(await nextWait(p)).toBe(50);
      expect(p.received).toEqual([]);
      p.timers.advance(50);
      await until("the write made during the read delivered", () => p.received.length === 1);
      expect(runIds(p.received)).toEqual(["in-flight-2"]);
      expect(p.poller.stats.reads).toBe(reads + 2);
    } finally {
      writer.destroy();
      await p.poller.stop();
      await proxy.close();
    }
  });

  it("DescribeStream: once a minute of the clock's time by default, and at once when a shard ends, whose child is then read from its start", async () => {
    const streams = await fakeStreams();
    const p = await polling({ maxIdleIntervalMs: 1_000, endpoint: streams.endpoint });
    try {
      await idleFor(p, 59_000);
      expect(p.poller.stats.describes).toBe(0);
      await idleFor(p, 1_000);
      await nextWait(p);
      expect(p.poller.stats.describes).toBe(1);
      // The shard gets a last record and ends; its child already has one.
      streams.endShard({ runId: "last-of-parent" }, { runId: "first-of-child" });
      p.poller.nudge(names.runs);
      await until("both records delivered", () => p.received.length === 2 && p.received);
      // The child was found by the DescribeStream the end of the parent made, at once.
      expect(runIds(p.received)).toEqual(["last-of-parent", "first-of-child"]);
      expect(p.poller.stats.describes).toBe(2);
    } finally {
      await p.poller.stop();
      await streams.close();
    }
  });

  it("a write nobody reports is delivered by the backed-off read, once its wait ends", async () => {
    const p = await polling({ maxIdleIntervalMs: 1_000 });
    const outsider = testClient(testEndpoint());
    try {
      await idleFor(p, 2_500);
      const wait = await nextWait(p);
      expect(wait).toBe(1_000);
      await putRun(outsider, "outside-1");
      p.timers.advance(wait);
      await until("the outside write delivered", () => p.received.length === 1);
      expect(runIds(p.received)).toEqual(["outside-1"]);
      expect(p.poller.stats.nudges).toBe(0);
    } finally {
      outsider.destroy();
      await p.poller.stop();
    }
  });
});
