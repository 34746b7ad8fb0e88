import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createDynamoStores, type DynamoStores, type TableNames } from "../../src/adapters/dynamodb/index.js";
import type { Target } from "../../src/domain/model.js";
import { readyTargets, runWithTargets, uuid } from "../support/dynamodb-fixtures.js";
import { freshTables, testClient } from "../support/moto.js";

let client: DynamoDBClient;
let names: TableNames;
let drop: () => Promise<void>;
let stores: DynamoStores;
const page = { offset: 0, limit: 100 };
const now = 1_700_000_100_000;

beforeAll(async () => {
  client = testClient(inject("awsEndpoint"));
  ({ names, drop } = await freshTables(client, "batch"));
  stores = createDynamoStores(client, names);
});
afterAll(async () => {
  await drop();
  client.destroy();
});

async function statuses(s: DynamoStores, runId: string, targets: Target[]): Promise<string[]> {
  return Promise.all(targets.map(async (t) => (await s.runs.getTarget(runId, t.id))?.status ?? "absent"));
}

async function inFlight(s: DynamoStores, runId: string): Promise<number | undefined> {
  return (await s.runs.getRun(runId))?.inFlight;
}

describe("run store: claimTargets claims a batch in one transaction", () => {
  it("claims every target of a batch that fits, and returns them as stored", async () => {
    const { run, targets } = runWithTargets(uuid(1, "b1000000"), { phaseSizes: [4], maxConcurrent: 3 });
    await stores.runs.createRun(run, targets);
    const result = await stores.runs.claimTargets(targets.slice(0, 3), 30_000, now);
    expect(result.outcome).toBe("claimed");
    expect(result.claimed.map((t) => t.id)).toEqual(targets.slice(0, 3).map((t) => t.id));
    for (const t of result.claimed) {
      expect(t).toMatchObject({ status: "CLAIMED", leaseExpiresAt: now + 30_000, updatedAt: now });
      expect(await stores.runs.getTarget(run.id, t.id)).toEqual(t);
    }
    expect(await inFlight(stores, run.id)).toBe(3);
  });

  it("a batch larger than the free slots is 'slots-full' and claims nothing (all or nothing)", async () => {
    const { run, targets } = runWithTargets(uuid(2, "b1000000"), { phaseSizes: [5], maxConcurrent: 3 });
    await stores.runs.createRun(run, targets);
    expect((await stores.runs.claimTargets(targets.slice(0, 2), 30_000, now)).outcome).toBe("claimed");
    // inFlight 2 of 3: two more do not fit, so neither is claimed.
    expect(await stores.runs.claimTargets(targets.slice(2, 4), 30_000, now)).toEqual({
      outcome: "slots-full",
      claimed: [],
    });
    expect(await statuses(stores, run.id, targets)).toEqual([
      "CLAIMED",
      "CLAIMED",
      "PENDING",
      "PENDING",
      "PENDING",
    ]);
    expect(await inFlight(stores, run.id)).toBe(2);
    // A batch bigger than the limit itself is refused without a write.
    expect((await stores.runs.claimTargets(targets.slice(2, 5), 30_000, now)).outcome).toBe("slots-full");
    // Exactly the free slot fits.
    expect((await stores.runs.claimTargets(targets.slice(2, 3), 30_000, now)).outcome).toBe("claimed");
    expect(await inFlight(stores, run.id)).toBe(3);
  });

  it("expired claims in a batch take no new slot", async () => {
    const { run, targets } = runWithTargets(uuid(3, "b1000000"), { phaseSizes: [3], maxConcurrent: 2 });
    await stores.runs.createRun(run, targets);
    expect((await stores.runs.claimTargets(targets.slice(0, 2), 1000, now)).outcome).toBe("claimed");
    const ready = await readyTargets(stores.runs, run.id, 0, now + 1000, 10);
    expect(ready.map((t) => t.status)).toEqual(["CLAIMED", "CLAIMED", "PENDING"]);
    // Two re-claims (k = 0) and one new target (k = 1) with inFlight 2 of 2: the new one does not fit.
    expect((await stores.runs.claimTargets(ready, 1000, now + 1000)).outcome).toBe("slots-full");
    expect((await stores.runs.getTarget(run.id, targets[0]!.id))?.leaseExpiresAt).toBe(now + 1000);
    // The two re-claims alone fit, and the count stays 2.
    const again = await stores.runs.claimTargets(ready.slice(0, 2), 1000, now + 1000);
    expect(again.outcome).toBe("claimed");
    expect(again.claimed.map((t) => t.leaseExpiresAt)).toEqual([now + 2000, now + 2000]);
    expect(await inFlight(stores, run.id)).toBe(2);
    // Mixed: after one finishes, one re-claim plus one new target takes exactly one slot.
    expect(await stores.runs.recordOutcome(run.id, targets[1]!.id, "COMPLETED", "", now + 1500)).toBe(
      "recorded",
    );
    const later = await readyTargets(stores.runs, run.id, 0, now + 2000, 10);
    expect(later.map((t) => [t.id, t.status])).toEqual([
      [targets[0]!.id, "CLAIMED"],
      [targets[2]!.id, "PENDING"],
    ]);
    expect((await stores.runs.claimTargets(later, 1000, now + 2000)).outcome).toBe("claimed");
    expect(await inFlight(stores, run.id)).toBe(2);
  });

  it("one target moved since it was read → 'lost-race', and none of the others is claimed", async () => {
    const { run, targets } = runWithTargets(uuid(4, "b1000000"), { phaseSizes: [3], maxConcurrent: 3 });
    await stores.runs.createRun(run, targets);
    const read = await readyTargets(stores.runs, run.id, 0, now, 10);
    expect(await stores.runs.claimTarget(read[1]!, 30_000, now)).toBe("claimed");
    expect(await stores.runs.claimTargets(read, 30_000, now)).toEqual({ outcome: "lost-race", claimed: [] });
    expect(await statuses(stores, run.id, targets)).toEqual(["PENDING", "CLAIMED", "PENDING"]);
    expect(await inFlight(stores, run.id)).toBe(1);
  });

  it("a paused run is 'run-not-active' and nothing moves, even for re-claims only", async () => {
    const { run, targets } = runWithTargets(uuid(5, "b1000000"), { phaseSizes: [3], maxConcurrent: 3 });
    await stores.runs.createRun(run, targets);
    expect((await stores.runs.claimTargets(targets.slice(0, 1), 1000, now)).outcome).toBe("claimed");
    expect(
      await stores.runs.saveRun({ ...run, status: "PAUSED", updatedAt: run.updatedAt + 1 }, run.updatedAt),
    ).toBe("saved");
    expect(await stores.runs.claimTargets(targets.slice(1), 30_000, now)).toEqual({
      outcome: "run-not-active",
      claimed: [],
    });
    const expired = await readyTargets(stores.runs, run.id, 0, now + 1000, 1);
    expect(expired.map((t) => t.status)).toEqual(["CLAIMED"]);
    expect((await stores.runs.claimTargets(expired, 1000, now + 1000)).outcome).toBe("run-not-active");
    expect(await statuses(stores, run.id, targets)).toEqual(["CLAIMED", "PENDING", "PENDING"]);
    expect(await inFlight(stores, run.id)).toBe(1);
  });

  it("refuses a batch that mixes runs or repeats a target", async () => {
    const a = runWithTargets(uuid(6, "b1000000"), { phaseSizes: [2] });
    const b = runWithTargets(uuid(7, "b1000000"), { phaseSizes: [1] });
    await expect(stores.runs.claimTargets([a.targets[0]!, b.targets[0]!], 1000, now)).rejects.toThrow(
      "claimTargets: targets of one run only",
    );
    await expect(stores.runs.claimTargets([a.targets[0]!, a.targets[0]!], 1000, now)).rejects.toThrow(
      "claimTargets: a target appears twice",
    );
    expect(await stores.runs.claimTargets([], 1000, now)).toEqual({ outcome: "claimed", claimed: [] });
  });

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
