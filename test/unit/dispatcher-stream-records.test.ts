import type { DynamoDBRecord } from "aws-lambda";
import { describe, expect, it } from "vitest";
import { createStreamEvaluator, runToWake } from "../../src/app/stream-evaluator.js";

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
      expect(runToWake(rec)).toBe(expected);
    });
  }

  it("a record without keys is ignored", () => {
    expect(runToWake({ eventName: "MODIFY" })).toBeUndefined();
  });
});

describe("stream evaluator: batches", () => {
  it("processes each run once per batch however many of its records the batch holds", async () => {
    const seen: string[] = [];
    const evaluator = createStreamEvaluator({ process: async (runId) => void seen.push(runId) });
    const result = await evaluator.handle({
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
    const evaluator = createStreamEvaluator({
      process: async (runId) => {
        if (runId === "bad") throw new Error("ProvisionedThroughputExceededException");
      },
    });
    const result = await evaluator.handle({
      Records: [
        record("MODIFY", { runId: "bad", targetId: "1" }, "SUBMITTED", "COMPLETED", "11"),
        record("MODIFY", { runId: "ok", targetId: "2" }, "SUBMITTED", "COMPLETED", "12"),
        record("MODIFY", { runId: "bad", targetId: "3" }, "SUBMITTED", "FAILED", "13"),
      ],
    });
    expect(result.batchItemFailures).toEqual([{ itemIdentifier: "11" }, { itemIdentifier: "13" }]);
  });

  it("needs something to process with", () => {
    expect(() => createStreamEvaluator({})).toThrow("createStreamEvaluator needs `process` or `dispatcher`");
  });
});
