/**
 * The rollout benchmark's parts (bench/lib/rollout-parts.ts): each state an execution enters is
 * counted to the part it works for, so the per-part table adds up as the definition runs. Both
 * waits (AwaitWave and its twin AwaitNextWave) are their wave's; AlreadyFinished is the outcome's
 * after the waves (reached from a judge's OutcomeRecorded, whose input has the wave, or a check's
 * `ended`) and the lock's when the task ended before it ran.
 */
import { describe, expect, it } from "vitest";
import { PART, PartLabeller } from "../../bench/lib/rollout-parts.js";

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
