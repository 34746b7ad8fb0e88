import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { ScanCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  createDynamoStores,
  type DynamoStores,
  LocalAesGcmCipher,
  type TableNames,
} from "../../src/adapters/dynamodb/index.js";
import { DynamoRunStore } from "../../src/adapters/dynamodb/run-store.js";
import type { Run, Target } from "../../src/domain/model.js";
import { readyTargets, runWithTargets, uuid } from "../support/dynamodb-fixtures.js";
import { freshTables, testClient } from "../support/moto.js";

let client: DynamoDBClient;
let names: TableNames;
let drop: () => Promise<void>;
let stores: DynamoStores;
const cipher = new LocalAesGcmCipher(Buffer.alloc(32, 7));
const page = { offset: 0, limit: 100 };
const all = () => true;

beforeAll(async () => {
  client = testClient(inject("awsEndpoint"));
  ({ names, drop } = await freshTables(client, "runs"));
  stores = createDynamoStores(client, names, { cipher });
});
afterAll(async () => {
  await drop();
  client.destroy();
});

describe("run store: round trips", () => {
  it("a created run and its targets read back field for field", async () => {
    const { run, targets } = runWithTargets(uuid(1, "10000000"));
    run.startedAt = run.createdAt + 5;
    targets[0]!.taskId = uuid(9);
    await stores.runs.createRun(run, targets);
    expect(await stores.runs.getRun(run.id)).toEqual(run);
    for (const t of targets) expect(await stores.runs.getTarget(run.id, t.id)).toEqual(t);
    expect(await stores.runs.getRun(uuid(404))).toBeUndefined();
  });

  it("creating the same run id twice fails with ALREADY_EXISTS and leaves the first intact", async () => {
    const { run, targets } = runWithTargets(uuid(2, "10000000"));
    await stores.runs.createRun(run, targets);
    await expect(stores.runs.createRun({ ...run, name: "other" }, targets)).rejects.toMatchObject({
      code: "ALREADY_EXISTS",
    });
    expect((await stores.runs.getRun(run.id))?.name).toBe(run.name);
  });

  it("firmware credentials are stored encrypted, left out of the run's configuration, and read back by getRunSecrets", async () => {
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

describe("run store: listRuns", () => {
  let tables: { names: TableNames; drop: () => Promise<void> };
  let s: DynamoStores;
  const ids = [uuid(1, "20000000"), uuid(2, "20000000"), uuid(3, "20000000"), uuid(4, "20000000")];
  beforeAll(async () => {
    tables = await freshTables(client, "list");
    s = createDynamoStores(client, tables.names);
    // createdAt: ids[0] oldest; ids[1] and ids[2] tie; ids[3] newest.
    const created = [1000, 2000, 2000, 3000];
    for (const [i, id] of ids.entries()) {
      const { run, targets } = runWithTargets(id, {
        createdAt: created[i]!,
        name: i % 2 === 0 ? "even" : "odd",
      });
      await s.runs.createRun(run, targets);
    }
  });
  afterAll(() => tables.drop());

  it("newest first, ties by id descending, total before paging", async () => {
    const { runs, total } = await s.runs.listRuns(all, page);
    expect(runs.map((r) => r.id)).toEqual([ids[3], ids[2], ids[1], ids[0]]);
    expect(total).toBe(4);
  });

  it("offset 1 limit 2 → the 2nd and 3rd newest, total still 4", async () => {
    const { runs, total } = await s.runs.listRuns(all, { offset: 1, limit: 2 });
    expect(runs.map((r) => r.id)).toEqual([ids[2], ids[1]]);
    expect(total).toBe(4);
  });

  it("the filter sees name, status and kind; total counts matches only", async () => {
    const seen: string[] = [];
    const { runs, total } = await s.runs.listRuns(
      (e) => {
        seen.push(`${e.name}/${e.status}/${e.operationKind}`);
        return e.name === "odd";
      },
      { offset: 0, limit: 1 },
    );
    expect(runs.map((r) => r.id)).toEqual([ids[3]]);
    expect(total).toBe(2);
    expect(seen).toContain("odd/PENDING/upgradeFirmware");
  });

  it("an offset past the end is an empty page with the full total", async () => {
    expect(await s.runs.listRuns(all, { offset: 10, limit: 5 })).toEqual({ runs: [], total: 4 });
  });
});

describe("run store: listTargets", () => {
  const runId = uuid(1, "30000000");
  let targets: Target[];
  beforeAll(async () => {
    const made = runWithTargets(runId, { phaseSizes: [2, 3, 2] });
    targets = made.targets;
    await stores.runs.createRun(made.run, targets);
    await stores.runs.recordOutcome(runId, targets[3]!.id, "FAILED", "boom", 2_000_000_000_000);
  });

  it("phase range 0..1 → the first five targets in phase-then-sequence order", async () => {
    const res = await stores.runs.listTargets(runId, { phaseFrom: 0, phaseTo: 1, page });
    expect(res?.targets.map((t) => t.sequenceIndex)).toEqual([0, 1, 2, 3, 4]);
    expect(res?.total).toBe(5);
  });

  it("phase 2 only, and a status filter", async () => {
    expect(
      (await stores.runs.listTargets(runId, { phaseFrom: 2, phaseTo: 2, page }))?.targets.map(
        (t) => t.sequenceIndex,
      ),
    ).toEqual([5, 6]);
    const failed = await stores.runs.listTargets(runId, { phaseFrom: 0, phaseTo: 2, status: "FAILED", page });
    expect(failed?.targets.map((t) => [t.sequenceIndex, t.status, t.message])).toEqual([
      [3, "FAILED", "boom"],
    ]);
    expect(failed?.total).toBe(1);
  });

  it("pagination: offset 2 limit 2 of all seven → sequences 2 and 3, total 7", async () => {
    const res = await stores.runs.listTargets(runId, {
      phaseFrom: 0,
      phaseTo: 2,
      page: { offset: 2, limit: 2 },
    });
    expect(res?.targets.map((t) => t.sequenceIndex)).toEqual([2, 3]);
    expect(res?.total).toBe(7);
  });

  it("an empty phase range (COMPLETED_PHASES in phase 0) is empty; an unknown run is undefined", async () => {
    expect(await stores.runs.listTargets(runId, { phaseFrom: 0, phaseTo: -1, page })).toEqual({
      targets: [],
      total: 0,
    });
    expect(await stores.runs.listTargets(uuid(77), { phaseFrom: 0, phaseTo: 2, page })).toBeUndefined();
  });
});

describe("run store: saveRun and the active index", () => {
  it("PENDING and RUNNING are active; PAUSED and terminal are not", async () => {
    const { run, targets } = runWithTargets(uuid(1, "40000000"));
    await stores.runs.createRun(run, targets);
    expect(await stores.runs.listActiveRunIds()).toContain(run.id);

    const transitions: [Run["status"], boolean][] = [
      ["RUNNING", true],
      ["PAUSED", false],
      ["RUNNING", true],
      ["COMPLETED", false],
    ];
    let current = run;
    for (const [status, active] of transitions) {
      const next: Run = { ...current, status, updatedAt: current.updatedAt + 1 };
      expect(await stores.runs.saveRun(next, current.updatedAt)).toBe("saved");
      expect((await stores.runs.listActiveRunIds()).includes(run.id)).toBe(active);
      current = next;
    }
    expect(await stores.runs.getRun(run.id)).toMatchObject({
      status: "COMPLETED",
      updatedAt: current.updatedAt,
    });
  });

  it("a save against an old updatedAt is 'stale' and writes nothing; an unknown run is 'not-found'", async () => {
    const { run, targets } = runWithTargets(uuid(2, "40000000"));
    await stores.runs.createRun(run, targets);
    const first: Run = {
      ...run,
      status: "RUNNING",
      startedAt: run.createdAt + 1,
      updatedAt: run.updatedAt + 1,
    };
    expect(await stores.runs.saveRun(first, run.updatedAt)).toBe("saved");
    const second: Run = { ...run, status: "CANCELLED", updatedAt: run.updatedAt + 2 };
    expect(await stores.runs.saveRun(second, run.updatedAt)).toBe("stale");
    expect(await stores.runs.getRun(run.id)).toMatchObject({
      status: "RUNNING",
      startedAt: run.createdAt + 1,
    });
    expect(await stores.runs.saveRun({ ...run, id: uuid(5, "49999999") }, run.updatedAt)).toBe("not-found");
  });

  it("saveRun never overwrites counters or inFlight moved by target transitions", async () => {
    const { run, targets } = runWithTargets(uuid(3, "40000000"));
    await stores.runs.createRun(run, targets);
    await stores.runs.recordOutcome(run.id, targets[0]!.id, "COMPLETED", "", run.createdAt + 1);
    // A gate evaluator holding the run as read BEFORE the outcome saves a status change.
    expect(
      await stores.runs.saveRun({ ...run, status: "RUNNING", updatedAt: run.updatedAt + 5 }, run.updatedAt),
    ).toBe("saved");
    expect((await stores.runs.getRun(run.id))?.counters[0]).toEqual({
      completed: 1,
      failed: 0,
      terminated: 0,
      skipped: 0,
    });
  });
});

describe("run store: claims, transitions and counters", () => {
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
  });

  it("a paused run is 'run-not-active'; a target read before someone else claimed it is 'lost-race'", async () => {
    const { run, targets } = runWithTargets(uuid(2, "50000000"), { phaseSizes: [3] });
    await stores.runs.createRun(run, targets);
    expect(await stores.runs.claimTarget(targets[0]!, 30_000, now)).toBe("claimed");
    expect(await stores.runs.claimTarget(targets[0]!, 30_000, now)).toBe("lost-race");
    expect(
      await stores.runs.saveRun({ ...run, status: "PAUSED", updatedAt: run.updatedAt + 1 }, run.updatedAt),
    ).toBe("saved");
    expect(await stores.runs.claimTarget(targets[1]!, 30_000, now)).toBe("run-not-active");
    expect((await stores.runs.getTarget(run.id, targets[1]!.id))?.status).toBe("PENDING");
    expect((await stores.runs.getRun(run.id))?.inFlight).toBe(1);
  });

  it("an expired claim is ready again and re-claiming it takes no second slot", async () => {
    const { run, targets } = runWithTargets(uuid(3, "50000000"), { phaseSizes: [2], maxConcurrent: 1 });
    await stores.runs.createRun(run, targets);
    expect(await stores.runs.claimTarget(targets[0]!, 1000, now)).toBe("claimed");
    expect((await readyTargets(stores.runs, run.id, 0, now + 500, 10)).map((t) => t.id)).toEqual([
      targets[1]!.id,
    ]);
    expect(await stores.runs.claimTarget(targets[1]!, 1000, now + 500)).toBe("slots-full");
    const ready = await readyTargets(stores.runs, run.id, 0, now + 1000, 10);
    expect(ready.map((t) => [t.id, t.status])).toEqual([
      [targets[0]!.id, "CLAIMED"],
      [targets[1]!.id, "PENDING"],
    ]);
    expect(await stores.runs.claimTarget(ready[0]!, 1000, now + 1000)).toBe("claimed");
    expect((await stores.runs.getRun(run.id))?.inFlight).toBe(1);
  });

  it("the claim queue (a sparse index) holds exactly the targets not yet handed to a task: held ones all, PENDING ones up to the limit", async () => {
    const { run, targets } = runWithTargets(uuid(16, "50000000"), { phaseSizes: [6, 2], maxConcurrent: 3 });
    await stores.runs.createRun(run, targets);
    const ids = (list: Target[]) => list.map((t) => t.id);
    const [t0, t1, t2, t3, t4, t5, t6] = targets as [Target, Target, Target, Target, Target, Target, Target];
    expect(await stores.runs.listQueuedTargets(run.id, 0, 2)).toEqual({ held: [], pending: [t0, t1] });
    expect(ids((await stores.runs.listQueuedTargets(run.id, 0, 100)).pending)).toEqual(
      ids(targets.slice(0, 6)),
    );
    expect((await stores.runs.listQueuedTargets(run.id, 0, 0)).pending).toEqual([]);
    expect(ids((await stores.runs.listQueuedTargets(run.id, 1, 5)).pending)).toEqual([t6.id, targets[7]!.id]);

    // t0 claimed then submitted (leaves the queue), t1 claimed (held), t2 claimed then blocked
    // (held), t3 claimed then completed (leaves), t4 skipped while PENDING (leaves).
    expect(await stores.runs.claimTargets([t0, t1, t2], 30_000, now)).toMatchObject({ outcome: "claimed" });
    expect(await stores.runs.recordSubmitted(run.id, t0.id, uuid(60, "99999999"), now + 1)).toBe("recorded");
    const blocked = { message: "rack busy", retryAt: now + 5000, conflictAttempts: 1, firstBlockedAt: now };
    expect(await stores.runs.recordBlocked(run.id, t2.id, blocked, now + 1)).toBe("recorded");
    expect(await stores.runs.claimTarget(t3, 30_000, now + 2)).toBe("claimed");
    expect(await stores.runs.recordOutcome(run.id, t3.id, "COMPLETED", "done", now + 3)).toBe("recorded");
    expect(await stores.runs.skipTargets(run.id, [t4.id], "cancelled", now + 4)).toBe(1);

    const queue = await stores.runs.listQueuedTargets(run.id, 0, 10);
    expect(queue.held.map((t) => [t.id, t.status])).toEqual([
      [t1.id, "CLAIMED"],
      [t2.id, "BLOCKED"],
    ]);
    expect(ids(queue.pending)).toEqual([t5.id]);
    // The queue's targets are whole: they read back exactly as getTarget reads them.
    expect(queue.held[1]).toEqual(await stores.runs.getTarget(run.id, t2.id));
    // The ready targets come from the same queue: t2 is ready only at its retry, t1 after its lease.
    expect(ids(await readyTargets(stores.runs, run.id, 0, now + 10, 10))).toEqual([t5.id]);
    expect(ids(await readyTargets(stores.runs, run.id, 0, now + 5000, 10))).toEqual([t2.id, t5.id]);
    expect(ids(await readyTargets(stores.runs, run.id, 0, now + 30_000, 2))).toEqual([t1.id, t2.id]);
  });

  it("submitted → recorded once; a repeat with the same task id is 'already-recorded'", async () => {
    const { run, targets } = runWithTargets(uuid(4, "50000000"), { phaseSizes: [1] });
    await stores.runs.createRun(run, targets);
    const task = uuid(44, "99999999");
    expect(await stores.runs.recordSubmitted(run.id, targets[0]!.id, task, now)).toBe("lost-race");
    await stores.runs.claimTarget(targets[0]!, 30_000, now);
    expect(await stores.runs.recordSubmitted(run.id, targets[0]!.id, task, now + 1)).toBe("recorded");
    expect(await stores.runs.recordSubmitted(run.id, targets[0]!.id, task, now + 2)).toBe("already-recorded");
    expect(await stores.runs.getTarget(run.id, targets[0]!.id)).toMatchObject({
      status: "SUBMITTED",
      taskId: task,
      message: "submitted",
    });
    expect((await stores.runs.getTarget(run.id, targets[0]!.id))?.leaseExpiresAt).toBeUndefined();
    expect(await stores.runs.recordSubmitted(run.id, uuid(1, "deadbeef"), task, now)).toBe("not-found");
  });

  it("blocked releases the slot, keeps the backoff state, and is ready again at retryAt", async () => {
    const { run, targets } = runWithTargets(uuid(5, "50000000"), { phaseSizes: [1] });
    await stores.runs.createRun(run, targets);
    await stores.runs.claimTarget(targets[0]!, 30_000, now);
    const blocked = { message: "rack busy", retryAt: now + 2000, conflictAttempts: 1, firstBlockedAt: now };
    expect(await stores.runs.recordBlocked(run.id, targets[0]!.id, blocked, now)).toBe("recorded");
    expect(await stores.runs.recordBlocked(run.id, targets[0]!.id, blocked, now)).toBe("lost-race");
    expect((await stores.runs.getRun(run.id))?.inFlight).toBe(0);
    expect(await readyTargets(stores.runs, run.id, 0, now + 1999, 10)).toEqual([]);
    const [again] = await readyTargets(stores.runs, run.id, 0, now + 2000, 10);
    expect(again).toMatchObject({
      status: "BLOCKED",
      conflictAttempts: 1,
      firstBlockedAt: now,
      retryAt: now + 2000,
    });
    expect(await stores.runs.claimTarget(again!, 30_000, now + 2000)).toBe("claimed");
    expect(await stores.runs.getTarget(run.id, targets[0]!.id)).toMatchObject({
      conflictAttempts: 1,
      firstBlockedAt: now,
    });
  });

  it("recordOutcome under 10 concurrent repeats: one 'recorded', counter +1, inFlight -1 exactly once", async () => {
    const { run, targets } = runWithTargets(uuid(6, "50000000"), { phaseSizes: [1, 2] });
    await stores.runs.createRun(run, targets);
    const target = targets[2]!; // phase 1
    await stores.runs.claimTarget(target, 30_000, now);
    await stores.runs.recordSubmitted(run.id, target.id, uuid(1, "77777777"), now);
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        stores.runs.recordOutcome(run.id, target.id, i % 2 === 0 ? "FAILED" : "TERMINATED", "x", now + 1),
      ),
    );
    expect(outcomes.filter((o) => o === "recorded")).toHaveLength(1);
    expect(outcomes.filter((o) => o === "already-recorded")).toHaveLength(9);
    const after = await stores.runs.getRun(run.id);
    expect(after?.inFlight).toBe(0);
    const phase1 = after!.counters[1]!;
    expect(phase1.failed + phase1.terminated).toBe(1);
    expect(after?.counters[0]).toEqual({ completed: 0, failed: 0, terminated: 0, skipped: 0 });
    expect(await stores.runs.recordOutcome(run.id, uuid(3, "deadbeef"), "FAILED", "", now)).toBe("not-found");
  });

  it("skipTargets moves each non-terminal target once to SKIPPED, freeing a claimed one's slot", async () => {
    const { run, targets } = runWithTargets(uuid(7, "50000000"), { phaseSizes: [3] });
    await stores.runs.createRun(run, targets);
    await stores.runs.claimTarget(targets[0]!, 30_000, now);
    await stores.runs.recordOutcome(run.id, targets[1]!.id, "COMPLETED", "", now);
    const moved = await stores.runs.skipTargets(
      run.id,
      targets.map((t) => t.id),
      "not started: operation run cancelled",
      now + 1,
    );
    expect(moved).toBe(2);
    const after = await stores.runs.getRun(run.id);
    expect(after?.inFlight).toBe(0);
    expect(after?.counters[0]).toEqual({ completed: 1, failed: 0, terminated: 0, skipped: 2 });
    expect(await stores.runs.getTarget(run.id, targets[2]!.id)).toMatchObject({
      status: "SKIPPED",
      message: "not started: operation run cancelled",
    });
  });
});
