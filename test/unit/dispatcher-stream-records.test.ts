/**
 * The stream path: raw DynamoDB stream records decoded into StreamChanges (the adapter), which
 * changes wake which run, and batches: one pass per run, failures reported by sequence number.
 */
import type { DynamoDBRecord } from "aws-lambda";
import { describe, expect, it } from "vitest";
import {
  decodeStreamEvent,
  decodeStreamRecord,
  streamBatchHandler,
} from "../../src/adapters/dynamodb/stream-records.js";
import { createStreamEvaluator, runToWake, type StreamChange } from "../../src/app/stream-evaluator.js";

type Image = Record<string, { S: string }>;

function record(
  eventName: "INSERT" | "MODIFY" | "REMOVE",
  keys: { runId: string; targetId?: string },
  oldStatus?: string,
  newStatus?: string,
  seq = "100",
): DynamoDBRecord {
  const Keys: Image = { runId: { S: keys.runId } };
  if (keys.targetId !== undefined) Keys.targetId = { S: keys.targetId };
  const image = (status: string): Image => ({ ...Keys, status: { S: status } });
  return {
    eventName,
    dynamodb: {
      Keys,
      SequenceNumber: seq,
      ...(oldStatus === undefined ? {} : { OldImage: image(oldStatus) }),
      ...(newStatus === undefined ? {} : { NewImage: image(newStatus) }),
    },
  };
}

const T = { runId: "r1", targetId: "t1" };
/** The whole path a record takes: decoded by the adapter, then judged by the evaluator. */
const wake = (rec: DynamoDBRecord): string | undefined => {
  const change = decodeStreamRecord(rec);
  return change === undefined ? undefined : runToWake(change);
};
const R = { runId: "r1" };

describe("stream evaluator: which records wake a run", () => {
  const cases: [string, DynamoDBRecord, string | undefined][] = [
    ["target SUBMITTED → COMPLETED", record("MODIFY", T, "SUBMITTED", "COMPLETED"), "r1"],
    ["target CLAIMED → FAILED (rejected submission)", record("MODIFY", T, "CLAIMED", "FAILED"), "r1"],
    ["target PENDING → TERMINATED (cancel)", record("MODIFY", T, "PENDING", "TERMINATED"), "r1"],
    ["target CLAIMED → BLOCKED (slot freed by a conflict)", record("MODIFY", T, "CLAIMED", "BLOCKED"), "r1"],
    ["target PENDING → CLAIMED", record("MODIFY", T, "PENDING", "CLAIMED"), undefined],
    ["target CLAIMED → SUBMITTED", record("MODIFY", T, "CLAIMED", "SUBMITTED"), undefined],
    [
      "target COMPLETED → COMPLETED (seal, message)",
      record("MODIFY", T, "COMPLETED", "COMPLETED"),
      undefined,
    ],
    ["target INSERT (run creation)", record("INSERT", T, undefined, "PENDING"), undefined],
    ["target REMOVE (orphan sweep)", record("REMOVE", T, "PENDING", undefined), undefined],
    ["run INSERT, PENDING (a new run starts at once)", record("INSERT", R, undefined, "PENDING"), "r1"],
    ["run key-only INSERT (moto's first record of an upsert)", record("INSERT", R), undefined],
    ["run PAUSED → RUNNING (resume, advance)", record("MODIFY", R, "PAUSED", "RUNNING"), "r1"],
    [
      "run PENDING → RUNNING (the dispatcher's own first claim)",
      record("MODIFY", R, "PENDING", "RUNNING"),
      "r1",
    ],
    ["run RUNNING → RUNNING (message or counters)", record("MODIFY", R, "RUNNING", "RUNNING"), undefined],
    ["run RUNNING → PAUSED", record("MODIFY", R, "RUNNING", "PAUSED"), undefined],
    ["run RUNNING → COMPLETED", record("MODIFY", R, "RUNNING", "COMPLETED"), undefined],
  ];
  for (const [name, rec, expected] of cases) {
    it(`${name} → ${expected ?? "ignored"}`, () => {
      expect(wake(rec)).toBe(expected);
    });
  }

  it("a record without keys is ignored", () => {
    expect(wake({ eventName: "MODIFY" })).toBeUndefined();
  });
});

describe("stream records: decoding", () => {
  it("a target record → its run, the statuses before and after, the sequence number", () => {
    expect(decodeStreamRecord(record("MODIFY", T, "SUBMITTED", "COMPLETED", "100"))).toEqual({
      kind: "target",
      runId: "r1",
      eventName: "MODIFY",
      oldStatus: "SUBMITTED",
      newStatus: "COMPLETED",
      sequenceNumber: "100",
    });
  });

  it("a run record; images without a status leave the statuses out", () => {
    expect(decodeStreamRecord(record("INSERT", R, undefined, undefined, "7"))).toEqual({
      kind: "run",
      runId: "r1",
      eventName: "INSERT",
      sequenceNumber: "7",
    });
    expect(decodeStreamRecord({ eventName: "MODIFY", dynamodb: { Keys: { runId: { S: "r2" } } } })).toEqual({
      kind: "run",
      runId: "r2",
      eventName: "MODIFY",
    });
  });

  it("records without a run key or an event name are dropped", () => {
    expect(decodeStreamRecord({ eventName: "MODIFY" })).toBeUndefined();
    expect(
      decodeStreamRecord({ eventName: "MODIFY", dynamodb: { Keys: { other: { S: "x" } } } }),
    ).toBeUndefined();
    expect(decodeStreamRecord({ dynamodb: { Keys: { runId: { S: "r1" } } } })).toBeUndefined();
    expect(
      decodeStreamEvent({ Records: [{ eventName: "MODIFY" }, record("MODIFY", R, "PAUSED", "RUNNING")] }),
    ).toEqual([
      {
        kind: "run",
        runId: "r1",
        eventName: "MODIFY",
        oldStatus: "PAUSED",
        newStatus: "RUNNING",
        sequenceNumber: "100",
      },
    ]);
  });
});

describe("stream evaluator: batches", () => {
  it("processes each run once per batch however many of its records the batch holds", async () => {
    const seen: string[] = [];
    const handle = streamBatchHandler(
      createStreamEvaluator({ process: async (runId) => void seen.push(runId) }),
    );
    const result = await handle({
      Records: [
        record("MODIFY", { runId: "a", targetId: "1" }, "SUBMITTED", "COMPLETED", "1"),
        record("MODIFY", { runId: "b", targetId: "2" }, "SUBMITTED", "FAILED", "2"),
        record("MODIFY", { runId: "a", targetId: "3" }, "SUBMITTED", "COMPLETED", "3"),
        record("MODIFY", { runId: "c", targetId: "4" }, "PENDING", "CLAIMED", "4"),
      ],
    });
    expect(seen.sort()).toEqual(["a", "b"]);
    expect(result).toEqual({ batchItemFailures: [] });
  });

  it("reports every record of a run whose pass failed, and only those", async () => {
    const handle = streamBatchHandler(
      createStreamEvaluator({
        process: async (runId) => {
          if (runId === "bad") throw new Error("ProvisionedThroughputExceededException");
        },
      }),
    );
    const result = await handle({
      Records: [
        record("MODIFY", { runId: "bad", targetId: "1" }, "SUBMITTED", "COMPLETED", "11"),
        record("MODIFY", { runId: "ok", targetId: "2" }, "SUBMITTED", "COMPLETED", "12"),
        record("MODIFY", { runId: "bad", targetId: "3" }, "SUBMITTED", "FAILED", "13"),
      ],
    });
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: "11" }, { itemIdentifier: "13" }]);
  });

  it("a failed change without a sequence number is not reported (nothing to name it by)", async () => {
    const evaluator = createStreamEvaluator({
      process: async () => {
        throw new Error("boom");
      },
    });
    const changes: StreamChange[] = [
      { kind: "target", runId: "r", eventName: "MODIFY", oldStatus: "SUBMITTED", newStatus: "FAILED" },
      { kind: "run", runId: "r", eventName: "INSERT", newStatus: "PENDING", sequenceNumber: "5" },
    ];
    expect(await evaluator.handle(changes)).toEqual({ failedSequenceNumbers: ["5"] });
  });

  it("needs something to process with", () => {
    expect(() => createStreamEvaluator({})).toThrow("createStreamEvaluator needs `process` or `dispatcher`");
  });
});
