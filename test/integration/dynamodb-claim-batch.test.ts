/**
 * Batch claims under real contention on DynamoDB. What claimTargets promises case by case (all or
 * nothing, expired claims taking no slot, the outcomes) is the RunStore contract suite, run
 * against this store in test/integration/store-contracts.test.ts.
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDynamoStores, type DynamoStores } from "../../src/adapters/dynamodb/index.js";
import { readyTargets, runWithTargets, uuid } from "../support/dynamodb-fixtures.js";
import { freshTables, testClient } from "../support/moto.js";
import { testEndpoint } from "../support/test-endpoint.js";

let client: DynamoDBClient;
const page = { offset: 0, limit: 100 };
const now = 1_700_000_100_000;

beforeAll(() => {
  client = testClient(testEndpoint());
});
afterAll(() => {
  client.destroy();
});

async function inFlight(s: DynamoStores, runId: string): Promise<number | undefined> {
  return (await s.runs.getRun(runId))?.inFlight;
}

describe("run store: claimTargets under contention", () => {
  it("8 concurrent batch claimers on a run with max 5 never hold more than 5, and inFlight matches", async () => {
    // Own small tables: moto copies a table per transaction, so contention on a big one is slow.
    const own = await freshTables(client, "batchrace");
    const s = createDynamoStores(client, own.names);
    const { run, targets } = runWithTargets(uuid(8, "b1000000"), { phaseSizes: [16], maxConcurrent: 5 });
    await s.runs.createRun(run, targets);
    for (let round = 0; round < 2; round++) {
      const t = now + round * 10;
      // Claimer i asks for 1 to 3 targets from its own offset: batches overlap some of the time,
      // and together they ask for far more than 5 slots.
      const claimer = async (i: number) => {
        const outcomes: string[] = [];
        for (let attempt = 0; attempt < 3; attempt++) {
          const ready = await readyTargets(s.runs, run.id, 0, t, 20);
          const batch = ready.slice(i % ready.length, (i % ready.length) + 1 + (i % 3));
          const { outcome } = await s.runs.claimTargets(batch, 30_000, t);
          outcomes.push(outcome);
          if (outcome !== "lost-race") break;
        }
        return outcomes;
      };
      const outcomes = (await Promise.all(Array.from({ length: 8 }, (_, i) => claimer(i)))).flat();
      const claimed = (await s.runs.listTargets(run.id, {
        phaseFrom: 0,
        phaseTo: 0,
        status: "CLAIMED",
        page,
      }))!;
      expect(outcomes).toContain("claimed");
      expect(claimed.total).toBeGreaterThan(0);
      expect(claimed.total).toBeLessThanOrEqual(5);
      expect(await inFlight(s, run.id)).toBe(claimed.total);
      // What is left is exactly the free slots: one more than that is refused, exactly that fits.
      const free = 5 - claimed.total;
      const rest = await readyTargets(s.runs, run.id, 0, t, 20);
      expect((await s.runs.claimTargets(rest.slice(0, free + 1), 30_000, t)).outcome).toBe("slots-full");
      if (free > 0)
        expect((await s.runs.claimTargets(rest.slice(0, free), 30_000, t)).outcome).toBe("claimed");
      expect(await inFlight(s, run.id)).toBe(5);
      // Finish them all, freeing the slots for the next round.
      const held = (await s.runs.listTargets(run.id, { phaseFrom: 0, phaseTo: 0, status: "CLAIMED", page }))!;
      for (const target of held.targets) {
        expect(await s.runs.recordOutcome(run.id, target.id, "COMPLETED", "", t + 1)).toBe("recorded");
      }
      expect(await inFlight(s, run.id)).toBe(0);
    }
    expect((await s.runs.getRun(run.id))?.counters).toEqual([
      { completed: 10, failed: 0, terminated: 0, skipped: 0 },
    ]);
    await own.drop();
  });
});
