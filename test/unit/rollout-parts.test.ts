/**
 * The rollout benchmark's parts (bench/lib/rollout-parts.ts): each state an execution enters is
 * counted to the part it works for, so the per-part table adds up as the definition runs. Both
 * waits (AwaitWave and its twin AwaitNextWave) are their wave's; AlreadyFinished is the outcome's
 * after the waves (reached from a judge's OutcomeRecorded, whose input has the wave, or a check's
 * `ended`) and the lock's when the task ended before it ran. The receiver's writes that store
 * no result and no answer (acknowledgements, progress) are a row of their own.
 */
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { describe, expect, it } from "vitest";
import { PART, PartLabeller, partOfCall } from "../../bench/lib/rollout-parts.js";
import { DynamoCommandSetStore } from "../../src/adapters/dynamodb/command-set-store.js";
import type { EntryWrite } from "../../src/domain/command-sets.js";

const groups = [{ stage: 0, name: "compute", steps: [{ action: "UPDATE_FIRMWARE" }] }];
const cursor = { group: 0, wave: 0, step: 0 };
const wave = { stage: 0, step: 0, action: "UPDATE_FIRMWARE", cursor };

describe("the rollout benchmark's parts of the states entered", () => {
  it("AwaitWave and AwaitNextWave are both their wave's", () => {
    const parts = new PartLabeller();
    const input = { plan: { groups, cursor, wave } };
    const awaitWave = parts.ofState("t1", "AwaitWave", input);
    expect(awaitWave).toMatch(/^wave 1 \(compute\)/);
    expect(parts.ofState("t1", "AwaitNextWave", input)).toBe(awaitWave);
  });

  it("AlreadyFinished: the outcome's after the waves (a judge's OutcomeRecorded, a check's `ended`), the lock's before any", () => {
    const parts = new PartLabeller();
    expect(parts.ofState("t1", "AlreadyFinished", { plan: { groups, cursor, wave } })).toBe(PART.outcome);
    expect(
      parts.ofState("t1", "AlreadyFinished", { plan: { groups, cursor, wave, ended: "COMPLETED" } }),
    ).toBe(PART.outcome);
    expect(parts.ofState("t2", "AlreadyFinished", { plan: { status: "finished" } })).toBe(PART.lock);
  });
});

describe("the rollout benchmark's row of a BMC reports' write", () => {
  // The UpdateItem the adapter sends for a batch's writes, as the benchmark's meter sees it.
  const inputOf = async (family: "u" | "q", writes: Record<string, EntryWrite>) => {
    const sent: Record<string, unknown>[] = [];
    const doc = {
      send: async (command: { input: Record<string, unknown> }) => {
        sent.push(command.input);
        return {};
      },
    } as unknown as DynamoDBDocumentClient;
    await new DynamoCommandSetStore(doc, "Tasks").record("t1", family, writes);
    expect(sent).toHaveLength(1);
    return sent[0] as Record<string, unknown>;
  };
  const rowOf = async (family: "u" | "q", writes: Record<string, EntryWrite>) =>
    partOfCall(PART.reports, "UpdateItem", await inputOf(family, writes));
  const result = { value: { ok: true as const, version: "2.0.0" }, at: 900 };

  it("acknowledgements and progress alone: their own row; with a result or an answer: BMC reports", async () => {
    expect(await rowOf("u", { a: { ackedAt: 100 } })).toBe(PART.news);
    expect(await rowOf("u", { a: { ackedAt: 100, progress: { percent: 25, at: 100 } } })).toBe(PART.news);
    expect(await rowOf("u", { a: { progress: { percent: 50, at: 300 } }, b: { ackedAt: 310 } })).toBe(
      PART.news,
    );
    expect(await rowOf("u", { a: { result }, b: { progress: { percent: 50, at: 300 } } })).toBe(PART.reports);
    expect(await rowOf("u", { a: { ackedAt: 100, result } })).toBe(PART.reports);
    expect(await rowOf("q", { a: { status: { version: "1.0.0" } } })).toBe(PART.reports);
  });
});
