/**
 * What only the DynamoDB run store can show: credentials encrypted at rest (raw items), the refusal
 * without a cipher, and claims under real contention. Everything else RunStore promises is the
 * contract suite, run against this store in test/integration/store-contracts.test.ts.
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { ScanCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createDynamoStores,
  type DynamoStores,
  LocalAesGcmCipher,
  type TableNames,
} from "../../src/adapters/dynamodb/index.js";
import { DynamoRunStore } from "../../src/adapters/dynamodb/run-store.js";
import { readyTargets, runWithTargets, uuid } from "../support/dynamodb-fixtures.js";
import { freshTables, testClient } from "../support/moto.js";
import { testEndpoint } from "../support/test-endpoint.js";

let client: DynamoDBClient;
let names: TableNames;
let drop: () => Promise<void>;
let stores: DynamoStores;
const cipher = new LocalAesGcmCipher(Buffer.alloc(32, 7));
const page = { offset: 0, limit: 100 };

beforeAll(async () => {
  client = testClient(testEndpoint());
  ({ names, drop } = await freshTables(client, "runs"));
  stores = createDynamoStores(client, names, { cipher });
});
afterAll(async () => {
  await drop();
  client.destroy();
});

describe("run store: credentials at rest", () => {
  it("firmware credentials are stored encrypted: no raw item holds them, getRunSecrets decrypts them", async () => {
    const { run, targets } = runWithTargets(uuid(3, "10000000"));
    run.config.operation.firmware.authentication = { kind: "shared", secret: "hunter2-very-secret" };
    await stores.runs.createRun(run, targets);
    const read = await stores.runs.getRun(run.id);
    expect(read?.config.operation.firmware.authentication).toBeUndefined();
    expect(JSON.stringify(read)).not.toContain("hunter2");
    const raw = await stores.doc.send(new ScanCommand({ TableName: names.runs }));
    expect(
      JSON.stringify(raw.Items, (_k, v) => (v instanceof Uint8Array ? Buffer.from(v).toString("latin1") : v)),
    ).not.toContain("hunter2");
    expect(await stores.runs.getRunSecrets(run.id)).toEqual({
      kind: "shared",
      secret: "hunter2-very-secret",
    });
    expect(await stores.runs.getRunSecrets(uuid(1, "10000000"))).toBeUndefined();
  });

  it("a run with credentials is refused when no cipher is configured", async () => {
    const plain = new DynamoRunStore(stores.doc, names);
    const { run, targets } = runWithTargets(uuid(4, "10000000"));
    run.config.operation.firmware.authentication = { kind: "perComponent", compute: "x" };
    await expect(plain.createRun(run, targets)).rejects.toThrow(
      "firmware credentials need a cipher; none is configured",
    );
  });
});

describe("run store: claims under contention", () => {
  const now = 1_700_000_100_000;

  it("16 concurrent claimers on a run with max 3: exactly 3 claimed, inFlight 3, in each of 2 rounds", async () => {
    // Own small tables: moto copies a table per transaction, so contention on a big one is slow.
    const own = await freshTables(client, "claim");
    const s = createDynamoStores(client, own.names);
    const { run, targets } = runWithTargets(uuid(1, "50000000"), { phaseSizes: [7], maxConcurrent: 3 });
    await s.runs.createRun(run, targets);
    for (let round = 0; round < 2; round++) {
      const t = now + round * 10;
      const claimer = async () => {
        const outcomes: string[] = [];
        for (const target of await readyTargets(s.runs, run.id, 0, t, 20)) {
          const outcome = await s.runs.claimTarget(target, 30_000, t);
          outcomes.push(outcome);
          if (outcome === "claimed" || outcome === "slots-full") break;
        }
        return outcomes;
      };
      const results = (await Promise.all(Array.from({ length: 16 }, claimer))).flat();
      const claimed = (await s.runs.listTargets(run.id, {
        phaseFrom: 0,
        phaseTo: 0,
        status: "CLAIMED",
        page,
      }))!;
      expect(results.filter((o) => o === "claimed")).toHaveLength(3);
      expect(claimed.total).toBe(3);
      expect((await s.runs.getRun(run.id))?.inFlight).toBe(3);
      // Finish them, freeing the slots for the next round.
      for (const target of claimed.targets) {
        expect(await s.runs.recordOutcome(run.id, target.id, "COMPLETED", "", t + 1)).toBe("recorded");
      }
      expect((await s.runs.getRun(run.id))?.inFlight).toBe(0);
    }
    expect((await s.runs.getRun(run.id))?.counters).toEqual([
      { completed: 6, failed: 0, terminated: 0, skipped: 0 },
    ]);
    await own.drop();
  });
});
