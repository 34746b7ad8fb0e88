/**
 * The local stream poller idles cheaply (local/stream-poller.ts `maxIdleIntervalMs`) without
 * reading anything later than it must: on moto's real streams, its waits run on moved timers
 * (test/support/moved-timers.ts), so the count of GetRecords over a stretch of time is exact and
 * nothing here waits on the wall clock.
 *
 * - idle, the wait doubles from `intervalMs` to `maxIdleIntervalMs` (and stays at `intervalMs`
 *   without the option); DescribeStream follows the clock's time, not the loop's turns;
 * - a write reported by `reportWrites` (local/write-nudges.ts) wakes a backed-off loop at once:
 *   the record arrives while the moved clock stands still, and the wait is back at `intervalMs`;
 * - a nudge that comes while a GetRecords is in flight (the write landed after the read) makes the
 *   loop read again at once instead of waiting (the Streams API here goes through a forwarding
 *   proxy that writes and nudges between moto's answer and the poller's receiving it);
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
async function polling(options: { maxIdleIntervalMs?: number; endpoint?: string } = {}): Promise<Polling> {
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

const putRun = (writer: DynamoDBClient, runId: string) =>
  writer.send(new PutItemCommand({ TableName: names.runs, Item: { runId: { S: runId } } }));

const runIds = (records: DynamoDBRecord[]) => records.map((r) => r.dynamodb?.Keys?.runId?.S);

describe("stream poller: idle backoff", () => {
  it("an idle loop doubles its wait up to maxIdleIntervalMs: 14 GetRecords in 10.5 s, not 105", async () => {
    const p = await polling({ maxIdleIntervalMs: 1_000 });
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
      // The eleventh round came 1 s after the start: the one DescribeStream so far.
      expect(p.poller.stats.describes).toBe(1);
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
      // The held empty read, the one that found the write, and the empty one after records.
      expect(p.poller.stats.reads).toBe(reads + 3);
    } finally {
      writer.destroy();
      await p.poller.stop();
      await proxy.close();
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
