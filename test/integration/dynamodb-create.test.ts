/**
 * The commit-marker protocol of createRun, proven by failing it at every write: whatever call k
 * fails, readers see either the whole run with all its targets or nothing at all, and the orphans
 * of a failed create are swept (as DynamoDB TTL would delete them).
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { type DynamoDBDocumentClient, ScanCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { sweepOrphans } from "../../local/orphan-sweep.js";
import { documentClient } from "../../src/adapters/dynamodb/db.js";
import type { TableNames } from "../../src/adapters/dynamodb/index.js";
import { DynamoRunStore } from "../../src/adapters/dynamodb/run-store.js";
import type { Run, Target } from "../../src/domain/model.js";
import { runWithTargets, uuid } from "../support/dynamodb-fixtures.js";
import { freshTables, testClient } from "../support/moto.js";
import { testEndpoint } from "../support/test-endpoint.js";

let client: DynamoDBClient;
let names: TableNames;
let drop: () => Promise<void>;
let doc: DynamoDBDocumentClient;
const page = { offset: 0, limit: 100 };
const DAY_MS = 24 * 3600 * 1000;

beforeAll(async () => {
  client = testClient(testEndpoint());
  ({ names, drop } = await freshTables(client, "create"));
  doc = documentClient(client);
});
afterAll(async () => {
  await drop();
  client.destroy();
});

/** A document client whose k-th send (1-based) throws, as a crash or a network failure would. */
function failingAt(k: number): { doc: DynamoDBDocumentClient; calls: () => number } {
  let calls = 0;
  const wrapped = Object.create(doc) as DynamoDBDocumentClient;
  wrapped.send = ((command: Parameters<DynamoDBDocumentClient["send"]>[0]) => {
    calls++;
    if (calls === k) return Promise.reject(new Error(`injected failure at call ${k}`));
    return doc.send(command as never);
  }) as DynamoDBDocumentClient["send"];
  return { doc: wrapped, calls: () => calls };
}

async function rawTargets(runId: string, tables: TableNames = names): Promise<Record<string, unknown>[]> {
  const out = await doc.send(
    new ScanCommand({
      TableName: tables.targets,
      FilterExpression: "runId = :r",
      ExpressionAttributeValues: { ":r": runId },
    }),
  );
  return out.Items ?? [];
}

async function expectInvisible(store: DynamoRunStore, run: Run, targets: Target[]): Promise<void> {
  expect(await store.getRun(run.id)).toBeUndefined();
  expect(await store.listTargets(run.id, { phaseFrom: 0, phaseTo: 9, page })).toBeUndefined();
  for (const t of targets) expect(await store.getTarget(run.id, t.id)).toBeUndefined();
  expect((await store.listRuns(() => true, page)).runs.map((r) => r.id)).not.toContain(run.id);
  expect(await store.listActiveRunIds()).not.toContain(run.id);
}

async function expectComplete(store: DynamoRunStore, run: Run, targets: Target[]): Promise<void> {
  expect(await store.getRun(run.id)).toEqual(run);
  const listed = await store.listTargets(run.id, { phaseFrom: 0, phaseTo: 9, page });
  expect(listed?.targets).toEqual(targets);
  expect(await store.listActiveRunIds()).toContain(run.id);
}

describe("createRun: commit marker with transactions of 4 items, 10 targets", () => {
  // 4-item transactions: pre-commit chunks [check, t0..t2], [check, t3..t5], [check, t6];
  // commit [run, t7..t9]; seal t0..t6 (7 updates) then the run (1). 12 calls in all.
  const maxTransactionItems = 4;
  const COMMIT_CALL = 4;
  const TOTAL_CALLS = 12;

  it("a clean create makes 12 calls and leaves no target with a TTL", async () => {
    const { run, targets } = runWithTargets(uuid(1000, "c0000000"), { phaseSizes: [4, 6] });
    const probe = failingAt(0);
    const store = new DynamoRunStore(probe.doc, names, { maxTransactionItems });
    await store.createRun(run, targets);
    expect(probe.calls()).toBe(TOTAL_CALLS);
    await expectComplete(store, run, targets);
    expect((await rawTargets(run.id)).filter((i) => i.expiresAt !== undefined)).toEqual([]);
  });

  for (let k = 1; k <= TOTAL_CALLS; k++) {
    const committed = k > COMMIT_CALL;
    it(`failure at call ${k} → ${committed ? "the whole run, sealed by the next read" : "no run, no targets; the sweep deletes the orphans"}`, async () => {
      const { run, targets } = runWithTargets(uuid(k, "c0000000"), { phaseSizes: [4, 6] });
      const failing = new DynamoRunStore(failingAt(k).doc, names, { maxTransactionItems });
      const reader = new DynamoRunStore(doc, names, { maxTransactionItems });
      if (committed) {
        // Past the commit the create has succeeded; only the seal was interrupted.
        await failing.createRun(run, targets);
        await expectComplete(reader, run, targets); // getRun's read-repair finishes the seal
        expect((await rawTargets(run.id)).filter((i) => i.expiresAt !== undefined)).toEqual([]);
        expect(await sweepOrphans({ doc, runs: reader }, names, run.createdAt + 2 * DAY_MS)).toEqual({
          deleted: 0,
          sealed: 0,
        });
        expect((await rawTargets(run.id)).length).toBe(10);
        return;
      }
      await expect(failing.createRun(run, targets)).rejects.toThrow(`injected failure at call ${k}`);
      await expectInvisible(reader, run, targets);
      const orphans = await rawTargets(run.id);
      // Calls before k each wrote a chunk of 3 pre-commit targets (the 3rd chunk holds 1).
      expect(orphans.length).toBe(Math.min(7, 3 * (k - 1)));
      for (const o of orphans) expect(o.expiresAt).toBe(Math.floor(run.createdAt / 1000) + 24 * 3600);
      // Before the TTL: nothing is swept (a create in progress is never disturbed).
      expect(await sweepOrphans({ doc, runs: reader }, names, run.createdAt + DAY_MS - 1000)).toMatchObject({
        deleted: 0,
      });
      const swept = await sweepOrphans({ doc, runs: reader }, names, run.createdAt + DAY_MS + 1000);
      expect(swept.deleted).toBeGreaterThanOrEqual(orphans.length);
      expect(await rawTargets(run.id)).toEqual([]);
      await expectInvisible(reader, run, targets);
    });
  }
});

describe("createRun: DynamoDB's real limits", () => {
  // Own tables: moto deep-copies the table for every item of a transaction, so a 100-item
  // transaction on a table that already holds hundreds of items takes seconds.
  let own: { names: TableNames; drop: () => Promise<void> };
  beforeEach(async () => {
    own = await freshTables(client, "limits");
  });
  afterEach(() => own.drop());

  it("100 targets commit in 2 transactions (1 pre-commit target) and read back complete", async () => {
    const { run, targets } = runWithTargets(uuid(1, "c1000000"), { phaseSizes: [40, 60] });
    const probe = failingAt(0);
    const store = new DynamoRunStore(probe.doc, own.names);
    await store.createRun(run, targets);
    expect(probe.calls()).toBe(4); // [check, t0], [run, t1..t99], seal t0, seal the run
    await expectComplete(store, run, targets);
    const raw = await rawTargets(run.id, own.names);
    expect(raw.length).toBe(100);
    expect(raw.filter((i) => i.expiresAt !== undefined)).toEqual([]);
  });

  it("99 targets commit in ONE transaction and never carry a TTL", async () => {
    const { run, targets } = runWithTargets(uuid(2, "c1000000"), { phaseSizes: [99] });
    const probe = failingAt(0);
    const store = new DynamoRunStore(probe.doc, own.names);
    await store.createRun(run, targets);
    expect(probe.calls()).toBe(1);
    await expectComplete(store, run, targets);
  });
});

describe("createRun: the client request id commits with the run; the deadline can still stop it", () => {
  const maxTransactionItems = 4;
  const request = (id: string, expiresAt: number) => ({ id, fingerprint: `fp-${id}`, expiresAt });

  it("the id is written in the commit transaction (one target fewer there) and names the run until it expires", async () => {
    const { run, targets } = runWithTargets(uuid(1, "c2000000"), { phaseSizes: [4, 6] });
    const probe = failingAt(0);
    const store = new DynamoRunStore(probe.doc, names, { maxTransactionItems });
    const expiresAt = run.createdAt + DAY_MS;
    expect(await store.createRun(run, targets, { clientRequest: request("req-1", expiresAt) })).toEqual({
      outcome: "created",
    });
    // [check, t0..t2] ×2, [check, t6, t7], commit [run, request, t8, t9], seal t0..t7, seal the run.
    expect(probe.calls()).toBe(4 + 8 + 1);
    await expectComplete(store, run, targets);
    expect(await store.getClientRequest("req-1", run.createdAt)).toEqual({
      runId: run.id,
      fingerprint: "fp-req-1",
      expiresAt,
    });
    expect(await store.getClientRequest("req-1", expiresAt)).toBeUndefined();
    expect(await store.getClientRequest("req-unknown", run.createdAt)).toBeUndefined();
  });

  it("a second create with a live id commits nothing and says so; once expired the id is taken anew", async () => {
    const store = new DynamoRunStore(doc, names, { maxTransactionItems });
    const first = runWithTargets(uuid(2, "c2000000"), { phaseSizes: [2] });
    const second = runWithTargets(uuid(3, "c2000000"), { phaseSizes: [2] });
    const expiresAt = first.run.createdAt + 60_000;
    await store.createRun(first.run, first.targets, { clientRequest: request("req-2", expiresAt) });
    expect(
      await store.createRun(second.run, second.targets, { clientRequest: request("req-2", expiresAt) }),
    ).toEqual({ outcome: "request-id-taken" });
    await expectInvisible(store, second.run, second.targets);
    expect((await store.getClientRequest("req-2", first.run.createdAt))?.runId).toBe(first.run.id);

    const later = runWithTargets(uuid(4, "c2000000"), { phaseSizes: [2] });
    const laterRun = { ...later.run, createdAt: expiresAt, updatedAt: expiresAt };
    expect(
      await store.createRun(laterRun, later.targets, { clientRequest: request("req-2", expiresAt + 60_000) }),
    ).toEqual({ outcome: "created" });
    expect((await store.getClientRequest("req-2", expiresAt))?.runId).toBe(later.run.id);
  });

  it("mayCommit false right before the commit: nothing visible, the id not taken, the orphans expire", async () => {
    const { run, targets } = runWithTargets(uuid(5, "c2000000"), { phaseSizes: [4, 6] });
    const store = new DynamoRunStore(doc, names, { maxTransactionItems });
    let asked = 0;
    const outcome = await store.createRun(run, targets, {
      clientRequest: request("req-5", run.createdAt + DAY_MS),
      mayCommit: () => {
        asked++;
        return false;
      },
    });
    expect(outcome).toEqual({ outcome: "abandoned" });
    expect(asked).toBe(1);
    await expectInvisible(store, run, targets);
    expect(await store.getClientRequest("req-5", run.createdAt)).toBeUndefined();
    const orphans = await rawTargets(run.id);
    expect(orphans).toHaveLength(8);
    for (const o of orphans) expect(o.expiresAt).toBe(Math.floor(run.createdAt / 1000) + 24 * 3600);
    await sweepOrphans({ doc, runs: store }, names, run.createdAt + DAY_MS + 1000);
    expect(await rawTargets(run.id)).toEqual([]);
  });
});
