/**
 * The local stand-in for the Lambda event source mapping on DynamoDB streams: for each table,
 * DescribeTable → LatestStreamArn, DescribeStream → shards, GetShardIterator (LATEST or
 * TRIM_HORIZON), then GetRecords every ~100 ms following NextShardIterator, handing each non-empty
 * batch to the SAME handler the Lambda runs, in Lambda's event shape (`eventSourceARN` added,
 * `ApproximateCreationDateTime` as epoch seconds).
 *
 * Like the mapping: records of a shard are delivered in order; a batch whose handler throws is
 * retried whole, and `batchItemFailures` retries from the lowest failed sequence number; after
 * `maxRetries` the batch is skipped with a log line (the DLQ's role in AWS). Shard rollover: a shard
 * whose NextShardIterator is null is finished; its children are found by re-describing the stream
 * and read from TRIM_HORIZON, so nothing written after the rollover is skipped.
 *
 * Idle cost (opt-in, `maxIdleIntervalMs`): a loop whose round read nothing waits twice as long
 * before the next, up to that bound; a round with records, or a `nudge()` (the caller wrote: the
 * local stack nudges after every write its own DynamoDB clients make, local/write-nudges.ts),
 * puts it back to `intervalMs`. A nudge wakes a waiting loop, and a loop that is reading reads
 * again right after, at once or, with `nudgeDelayMs`, that much later, so that the writes of a
 * burst are one read; a write the caller made is read at most `nudgeDelayMs` after it is
 * acknowledged, and a write made by anyone else within the backed-off wait. Only a full batch, or
 * new shards, are followed by a read at once. DescribeStream (new shards) runs when a shard ends,
 * and otherwise once every `describeEveryMs` of the clock's time, however long the loop's turns
 * are.
 *
 * A store that cannot be read (down, or restarted) is one state, not a stream of errors: one log
 * line when reading starts failing, backoff up to 5 s between attempts, one line when it reads
 * again; and a table whose stream was replaced meanwhile (a restored store) is followed onto its
 * new stream (`onStreamReplaced`).
 *
 * Local only: the DynamoDB Streams API is called as plain JSON over HTTP (X-Amz-Target
 * DynamoDBStreams_20120810.*) because the project does not depend on
 * @aws-sdk/client-dynamodb-streams; moto does not check request signatures.
 *
 * moto quirk this can work around (`reacquireAfterEmptyRead`, for plain `moto_server` only): a
 * stock moto TransactWriteItems that is cancelled (any failed condition, e.g. a claim that lost a
 * race) restores the whole table from a deep copy, stream shard included, so every shard iterator
 * issued before then reads a dead copy and returns no records, ever. The poller always knows the
 * last sequence number it read (at start with LATEST it fast-forwards through the shard to learn
 * it), so with the option it takes a fresh AFTER_SEQUENCE_NUMBER iterator after every empty
 * GetRecords; nothing is skipped or delivered twice by that. The project's moto launcher
 * (local/moto.ts) replaces that transaction, so it needs no re-take.
 */
import { DescribeTableCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from "aws-lambda";
import type { Clock } from "../src/app/ports.js";
import { errorBodyText } from "./error-body-text.js";

export interface StreamPollerOptions {
  client: DynamoDBClient;
  /** One table, or several (each with its own stream). */
  tableName?: string;
  tableNames?: string[];
  handler: (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse | undefined>;
  /** The endpoint serving the Streams API; default: the client's endpoint. */
  endpoint?: string;
  /** Where to start on the shards present at start (default LATEST); later shards: TRIM_HORIZON. */
  startingPosition?: "LATEST" | "TRIM_HORIZON";
  /** The wait between rounds that read nothing (default 100 ms); with `maxIdleIntervalMs`, the first of them. */
  intervalMs?: number;
  /**
   * Back off while idle: each round that reads nothing doubles the wait before the next, from
   * `intervalMs` up to this; records or a `nudge()` put it back to `intervalMs`. Absent: every
   * wait is `intervalMs`. Only for a caller that nudges after its own writes: anyone else's
   * writes are read up to this much later.
   */
  maxIdleIntervalMs?: number;
  /**
   * How long after a `nudge()` the loop reads (default 0: at once). Writes come in bursts (a
   * dispatcher pass, a recorded outcome and its events): nudges within this time are one read,
   * not one each. A nudge never makes a wait longer; this is the most it delays a nudged read.
   */
  nudgeDelayMs?: number;
  /**
   * How often each stream is described for new shards besides when a shard ends (default 60 s).
   * DynamoDB opens new shards as it closes old ones, and a shard that ends is described at once;
   * this is only a backstop.
   */
  describeEveryMs?: number;
  /** The clock the loops wait on and time DescribeStream by (default: the platform's timers). */
  clock?: Clock;
  batchSize?: number;
  maxRetries?: number;
  /**
   * Take a fresh iterator after every empty read (the moto quirk in the module comment). Only
   * plain `moto_server` needs it: the project's moto launcher replaces the transaction that
   * orphans iterators, and DynamoDB and LocalStack never do. Default false: every re-take is one
   * more request on the stand-in, ten a second per table.
   */
  reacquireAfterEmptyRead?: boolean;
  /**
   * A table's stream was replaced (the store was restored: new ARN, new sequence numbers); the
   * poller reads the new one from its start, and whatever changed before it existed needs a pass
   * (the stack runs one).
   */
  onStreamReplaced?: (table: string) => void;
  log?: (line: string) => void;
}

export interface StreamPoller {
  stop(): Promise<void>;
  /**
   * Something may have been written to `table` (absent: to any of the poller's tables): its loop
   * reads now if it is waiting, or once more right after the read it is making, and is back at
   * `intervalMs`. A table the poller does not read is ignored.
   */
  nudge(table?: string): void;
  /**
   * `reads`: GetRecords calls made by the loops (not counting the start's fast-forward);
   * `describes`: DescribeStream calls after the start; `nudges`: nudges that named a polled table.
   */
  readonly stats: {
    batches: number;
    records: number;
    retries: number;
    dropped: number;
    reads: number;
    describes: number;
    nudges: number;
  };
}

interface RawRecord {
  eventID?: string;
  eventName?: "INSERT" | "MODIFY" | "REMOVE";
  eventVersion?: string;
  eventSource?: string;
  awsRegion?: string;
  dynamodb?: Record<string, unknown> & {
    ApproximateCreationDateTime?: number | string;
    SequenceNumber?: string;
  };
}

interface ShardState {
  shardId: string;
  iterator: string | undefined;
  lastSequence: string | undefined;
  finished: boolean;
}

export async function startStreamPoller(options: StreamPollerOptions): Promise<StreamPoller> {
  const log = options.log ?? (() => {});
  const endpoint = options.endpoint ?? (await clientEndpoint(options.client));
  const intervalMs = options.intervalMs ?? 100;
  const batchSize = options.batchSize ?? 100;
  const maxRetries = options.maxRetries ?? 5;
  const reacquireAfterEmpty = options.reacquireAfterEmptyRead ?? false;
  const maxIdleIntervalMs = Math.max(intervalMs, options.maxIdleIntervalMs ?? intervalMs);
  const nudgeDelayMs = Math.max(0, options.nudgeDelayMs ?? 0);
  const describeEveryMs = options.describeEveryMs ?? DESCRIBE_EVERY_MS;
  const clock = options.clock ?? platformTimers;
  const sleep = (ms: number) => new Promise<void>((resolve) => clock.after(ms, resolve));
  const stats = { batches: 0, records: 0, retries: 0, dropped: 0, reads: 0, describes: 0, nudges: 0 };
  /** Each table's loop's wake-up (see `nudge`). */
  const wakers = new Map<string, () => void>();
  const tables = [
    ...(options.tableNames ?? []),
    ...(options.tableName === undefined ? [] : [options.tableName]),
  ];
  if (tables.length === 0) throw new TypeError("startStreamPoller needs tableName or tableNames");

  const call = async <T>(operation: string, body: unknown): Promise<T> => {
    const response = await fetch(endpoint, {
      method: "POST",
      headers: {
        "content-type": "application/x-amz-json-1.0",
        "x-amz-target": `DynamoDBStreams_20120810.${operation}`,
        authorization:
          "AWS4-HMAC-SHA256 Credential=local/20200101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=local",
      },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${operation} failed: HTTP ${response.status} ${errorBodyText(text)}`);
    return JSON.parse(text) as T;
  };

  let stopped = false;
  const latestStreamArn = async (table: string): Promise<string> => {
    const described = await options.client.send(new DescribeTableCommand({ TableName: table }));
    const streamArn = described.Table?.LatestStreamArn;
    if (streamArn === undefined) throw new Error(`table ${table} has no stream`);
    return streamArn;
  };
  const loops = await Promise.all(
    tables.map(async (table) => pollStream(table, await latestStreamArn(table))),
  );

  async function pollStream(table: string, firstArn: string): Promise<() => Promise<void>> {
    let streamArn = firstArn;
    let shards = new Map<string, ShardState>();
    /** Adds the shards the stream has that the loop does not know yet; returns how many. */
    const discover = async (initial: boolean): Promise<number> => {
      let start: string | undefined;
      let added = 0;
      do {
        const out = await call<{
          StreamDescription: { Shards?: { ShardId: string }[]; LastEvaluatedShardId?: string };
        }>(
          "DescribeStream",
          start === undefined
            ? { StreamArn: streamArn }
            : { StreamArn: streamArn, ExclusiveStartShardId: start },
        );
        for (const shard of out.StreamDescription.Shards ?? []) {
          if (shards.has(shard.ShardId)) continue;
          const state: ShardState = {
            shardId: shard.ShardId,
            iterator: undefined,
            lastSequence: undefined,
            finished: false,
          };
          state.iterator = await reacquire(streamArn, state);
          if (initial && (options.startingPosition ?? "LATEST") === "LATEST") await fastForward(state);
          shards.set(shard.ShardId, state);
          added += 1;
        }
        start = out.StreamDescription.LastEvaluatedShardId;
      } while (start !== undefined);
      return added;
    };
    /** LATEST, but knowing the last sequence number: read to the end without delivering. */
    const fastForward = async (state: ShardState) => {
      for (;;) {
        if (state.iterator === undefined) return;
        const out = await call<{ Records?: RawRecord[]; NextShardIterator?: string | null }>("GetRecords", {
          ShardIterator: state.iterator,
          Limit: 1000,
        });
        const records = out.Records ?? [];
        if (records.length > 0) state.lastSequence = records[records.length - 1]?.dynamodb?.SequenceNumber;
        if (out.NextShardIterator === null || out.NextShardIterator === undefined) {
          state.finished = true;
          return;
        }
        state.iterator = out.NextShardIterator;
        if (records.length === 0) return;
      }
    };
    await discover(true);

    const deliver = async (records: DynamoDBRecord[]): Promise<void> => {
      let pending = records;
      for (let attempt = 0; pending.length > 0; attempt++) {
        let failedFrom: string | undefined;
        try {
          const result = await options.handler({ Records: pending });
          const ids = (result?.batchItemFailures ?? []).map((f) => f.itemIdentifier);
          failedFrom = ids.length === 0 ? undefined : ids.reduce((a, b) => (compareSeq(a, b) <= 0 ? a : b));
          if (failedFrom === undefined) return;
        } catch (error) {
          log(`stream poller: handler failed: ${error instanceof Error ? error.message : String(error)}`);
          failedFrom = pending[0]?.dynamodb?.SequenceNumber;
        }
        if (attempt >= maxRetries) {
          stats.dropped += pending.length;
          log(`stream poller: giving up on ${pending.length} records after ${attempt + 1} attempts`);
          return;
        }
        stats.retries += 1;
        const from = failedFrom;
        pending =
          from === undefined
            ? pending
            : pending.filter((r) => compareSeq(r.dynamodb?.SequenceNumber ?? "0", from) >= 0);
        await sleep(Math.min(1000, 50 * 2 ** attempt));
      }
    };

    // Unreadable (the store is down, or came back with a new stream): one line when it starts,
    // one when it ends, backoff in between, never a line per attempt.
    let failures = 0;
    // A restored store gives the table a new stream (new ARN, sequence numbers from the start),
    // while an iterator taken on the old ARN may still read (moto finds the table by name): so
    // after any failure the ARN is checked again. The project's moto launcher starts a restored
    // table's stream empty, so reading the new one from its start (discover, not initial:
    // TRIM_HORIZON) delivers exactly what was written since; `onStreamReplaced` asks for a pass
    // too, for any other endpoint.
    const followReplacedStream = async () => {
      const arn = await latestStreamArn(table).catch(() => undefined);
      if (arn === undefined || arn === streamArn) return;
      streamArn = arn;
      shards = new Map();
      await discover(false).catch(() => undefined);
      log(`stream poller: ${table}: the store has a new stream (restored); reading it from its start`);
      options.onStreamReplaced?.(table);
    };
    const failed = async (what: string, error: unknown) => {
      failures += 1;
      if (failures === 1) {
        log(
          `stream poller: ${table}: ${what} failed (${error instanceof Error ? error.message : String(error)}); backing off until it answers`,
        );
      }
      await sleep(Math.min(MAX_BACKOFF_MS, intervalMs * 2 ** Math.min(failures, 10)));
      if (!stopped) await followReplacedStream();
    };
    const recovered = async () => {
      if (failures === 0) return;
      await followReplacedStream();
      log(`stream poller: ${table}: stream readable again after ${failures} failed attempt(s)`);
      failures = 0;
    };

    // Waits: `nudged` is set by a nudge during the round (read again, after nudgeDelayMs) and
    // cleared as a round starts, before its first read, so a write acknowledged before then is in
    // that read. A nudge during a wait brings its end forward to nudgeDelayMs from then, never
    // later than it was.
    let nudged = false;
    let shorten: (() => void) | undefined;
    let idleWaitMs = intervalMs;
    wakers.set(table, () => {
      nudged = true;
      shorten?.();
    });
    const wait = (ms: number) =>
      new Promise<void>((resolve) => {
        if (stopped) return resolve();
        let endsAt = clock.now() + ms;
        let cancel = clock.after(ms, () => end());
        const end = () => {
          shorten = undefined;
          cancel();
          resolve();
        };
        shorten = () => {
          if (nudgeDelayMs === 0 || stopped) return end();
          const nudgedEnd = clock.now() + nudgeDelayMs;
          if (nudgedEnd >= endsAt) return;
          endsAt = nudgedEnd;
          cancel();
          cancel = clock.after(nudgeDelayMs, () => end());
        };
      });

    let describedAt = clock.now();
    let shardFinished = false;
    const loop = (async () => {
      while (!stopped) {
        let idle = true;
        let full = false;
        let failedNow = false;
        nudged = false;
        for (const shard of shards.values()) {
          if (shard.finished || shard.iterator === undefined || stopped) continue;
          try {
            stats.reads += 1;
            const out = await call<{ Records?: RawRecord[]; NextShardIterator?: string | null }>(
              "GetRecords",
              {
                ShardIterator: shard.iterator,
                Limit: batchSize,
              },
            );
            const records = (out.Records ?? []).map((r) => toLambdaRecord(r, streamArn));
            if (records.length > 0) {
              idle = false;
              full ||= records.length >= batchSize;
              stats.batches += 1;
              stats.records += records.length;
              await deliver(records);
              shard.lastSequence =
                records[records.length - 1]?.dynamodb?.SequenceNumber ?? shard.lastSequence;
            }
            if (out.NextShardIterator === null || out.NextShardIterator === undefined) {
              shard.finished = true;
              shardFinished = true;
            } else if (records.length === 0 && reacquireAfterEmpty) {
              // See the module comment: the iterator may point at a table copy moto discarded.
              shard.iterator = await reacquire(streamArn, shard);
            } else shard.iterator = out.NextShardIterator;
          } catch (error) {
            failedNow = true;
            await failed(`GetRecords on ${shard.shardId}`, error);
            if (shards.get(shard.shardId) === shard) {
              shard.iterator = await reacquire(streamArn, shard).catch(() => shard.iterator);
            }
            break;
          }
        }
        if ((shardFinished || clock.now() - describedAt >= describeEveryMs) && !stopped && !failedNow) {
          describedAt = clock.now();
          shardFinished = false;
          stats.describes += 1;
          await discover(false).then(
            // New shards (an ended one's children) are read at once.
            (added) => {
              full ||= added > 0;
            },
            async (error: unknown) => {
              failedNow = true;
              await failed("DescribeStream", error);
            },
          );
        }
        if (!failedNow) await recovered();
        if (stopped || failedNow || full) continue;
        // Records, or a write the caller made: the backoff starts again from intervalMs. A round
        // that read records but not a full batch reads the rest (what was written after it) when
        // a nudge or intervalMs says, not at once.
        if (!idle || nudged) idleWaitMs = intervalMs;
        if (nudged) {
          if (nudgeDelayMs > 0) await wait(nudgeDelayMs);
          continue;
        }
        await wait(idleWaitMs);
        idleWaitMs = nudged ? intervalMs : Math.min(maxIdleIntervalMs, idleWaitMs * 2);
      }
    })();
    return () => loop;
  }

  /** After an expired or invalid iterator: continue right after the last delivered record. */
  async function reacquire(streamArn: string, shard: ShardState): Promise<string | undefined> {
    const body =
      shard.lastSequence === undefined
        ? { StreamArn: streamArn, ShardId: shard.shardId, ShardIteratorType: "TRIM_HORIZON" }
        : {
            StreamArn: streamArn,
            ShardId: shard.shardId,
            ShardIteratorType: "AFTER_SEQUENCE_NUMBER",
            SequenceNumber: shard.lastSequence,
          };
    return (await call<{ ShardIterator?: string }>("GetShardIterator", body)).ShardIterator;
  }

  return {
    stats,
    nudge(table) {
      if (stopped) return;
      if (table === undefined) {
        stats.nudges += 1;
        for (const wake of wakers.values()) wake();
        return;
      }
      const wake = wakers.get(table);
      if (wake === undefined) return;
      stats.nudges += 1;
      wake();
    },
    async stop() {
      stopped = true;
      for (const wake of wakers.values()) wake();
      await Promise.all(loops.map((wait) => wait()));
    },
  };
}

/** A raw Streams API record → Lambda's event record (what the Lambda handler receives). */
export function toLambdaRecord(raw: RawRecord, streamArn: string): DynamoDBRecord {
  const data = { ...(raw.dynamodb ?? {}) } as Record<string, unknown>;
  const created = data.ApproximateCreationDateTime as unknown;
  if (created instanceof Date) data.ApproximateCreationDateTime = Math.floor(created.getTime() / 1000);
  else if (created !== undefined) data.ApproximateCreationDateTime = Math.floor(Number(created));
  return { ...raw, dynamodb: data, eventSourceARN: streamArn } as DynamoDBRecord;
}

/** Sequence numbers are decimal strings of up to 40 digits: compare by length, then lexically. */
function compareSeq(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

async function clientEndpoint(client: DynamoDBClient): Promise<string> {
  const provider = (
    client.config as {
      endpoint?: () => Promise<{ protocol: string; hostname: string; port?: number; path: string }>;
    }
  ).endpoint;
  if (provider === undefined)
    throw new Error("stream poller: the DynamoDB client has no explicit endpoint; pass `endpoint`");
  const e = await provider();
  return `${e.protocol}//${e.hostname}${e.port === undefined ? "" : `:${e.port}`}${e.path}`;
}

/** The longest pause between two attempts on an unreadable stream. */
const MAX_BACKOFF_MS = 5_000;

/** How often each stream is described for new shards by default (a shard that ended: at once). */
const DESCRIBE_EVERY_MS = 60_000;

/** The default clock: plain timers that keep the process alive while the poller waits. */
const platformTimers: Clock = {
  now: () => Date.now(),
  after(ms, fire) {
    const timer = setTimeout(fire, Math.max(0, ms));
    return () => clearTimeout(timer);
  },
};
