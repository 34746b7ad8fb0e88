import { createHash } from "node:crypto";
import { deflateRawSync } from "node:zlib";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { GetCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installCapacityMeter } from "../../bench/lib/capacity-meter.js";
import { createDynamoStores, type DynamoStores, type TableNames } from "../../src/adapters/dynamodb/index.js";
import { updateRequestId } from "../../src/domain/bmc-protocol.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import type { Target } from "../../src/domain/model.js";
import type { Task } from "../../src/domain/task.js";
import { task } from "../support/contracts/task-store.js";
import { runWithTargets, uuid } from "../support/dynamodb-fixtures.js";
import { freshStores, testClient } from "../support/moto.js";
import { testEndpoint } from "../support/test-endpoint.js";

let names: TableNames;
let drop: () => Promise<void>;
let stores: DynamoStores;
const page = { offset: 0, limit: 100 };

beforeAll(async () => {
  ({ names, stores, drop } = await freshStores(testEndpoint(), "stores"));
});
afterAll(() => drop());

describe("task store", () => {
  it("round trip: getTasks returns tasks in the order asked, unknown ids skipped", async () => {
    const a = task(1, { startedAt: 5, finishedAt: 9, status: "COMPLETED", appliedRuleId: uuid(3) });
    const b = task(2, { queueExpiresAt: 77, runId: uuid(4), targetId: uuid(5) });
    expect(await stores.tasks.createTask(a)).toEqual({ created: true, task: a });
    expect(await stores.tasks.createTask(b)).toEqual({ created: true, task: b });
    expect(await stores.tasks.getTasks([b.id, uuid(999), a.id])).toEqual([b, a]);
  });

  it("a task item stored compact: the report deflated with a dictionary of what it repeats, the ids 16 bytes each; items written before read as they are", async () => {
    // Ids as random as real ones (the fixture's patterned ones deflate well without help).
    const hashed = (i: number) => {
      const h = createHash("sha256").update(`component ${i}`).digest("hex");
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
    };
    const components = Array.from({ length: 39 }, (_, i) => ({
      id: hashed(i),
      type: "COMPUTE",
      status: "COMPLETED",
      versionBefore: "1.0.0",
      versionAfter: "2.0.0",
      requestId: updateRequestId(uuid(3, "7a5c0000"), hashed(i), 0, 2),
      startedAt: 1_764_400_000_000 + i,
      finishedAt: 1_764_400_610_000 + i,
    }));
    const report = JSON.stringify({ v: 2, targetVersion: "2.0.0", components });
    const t = task(3, { report, componentIds: components.map((c) => c.id) });
    await stores.tasks.createTask(t);
    const raw = await stores.doc.send(new GetCommand({ TableName: names.tasks, Key: { id: t.id } }));
    const item = raw.Item as Record<string, unknown>;
    expect([item.report, item.reportZ, item.reportZd, item.componentIds]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    // Deflated with what it repeats as the dictionary (its keys, the ids and their request ids'
    // entry keys): well under what deflate makes of it with the ids alone (the layout before).
    const idsAlone = deflateRawSync(report, { dictionary: Buffer.from(t.componentIds.join("")) });
    expect((item.reportZ2 as Uint8Array).length).toBeLessThan(idsAlone.length * 0.7);
    // The ids as a binary set of 16 bytes each, and their order a byte each.
    expect([...(item.componentIdSet as Set<Uint8Array>)].map((b) => b.length)).toEqual(Array(39).fill(16));
    expect((item.componentOrder as Uint8Array).length).toBe(39);
    expect(await stores.tasks.getTasks([t.id])).toEqual([t]);
    // A component filter still finds it (on the ids as read).
    const listed = await stores.tasks.listTasks({
      rackId: t.rackId,
      componentId: components[7]!.id,
      activeOnly: false,
      page,
    });
    expect(listed.tasks.map((x) => x.id)).toEqual([t.id]);
    // As items were written before: the ids as a list or packed in one binary, and the report as
    // text or plain deflate.
    const { reportZ2: _d, componentIdSet: _s, componentOrder: _o, ...bare } = item;
    const before = { ...bare, componentIds: t.componentIds };
    const packed = Buffer.from(t.componentIds.map((id) => id.replaceAll("-", "")).join(""), "hex");
    for (const [n, stored] of [
      [4, { report: '{"v":1}' }],
      [5, { reportZ: deflateRawSync('{"v":1}') }],
      [7, { reportZd: deflateRawSync('{"v":1}', { dictionary: Buffer.from(t.componentIds.join("")) }) }],
      [8, { report: '{"v":1}', componentIds: undefined, componentIdsB: packed }],
    ] as const) {
      const old = { ...before, ...stored, id: uuid(n, "7a5c0000") };
      await stores.doc.send(new PutCommand({ TableName: names.tasks, Item: old }));
      expect(await stores.tasks.getTasks([old.id])).toEqual([{ ...t, id: old.id, report: '{"v":1}' }]);
    }
    // Ids that are not all UUIDs stay a list (read as they are).
    const odd = task(6, { componentIds: ["tray-1", uuid(6, "cccccccc")] });
    await stores.tasks.createTask(odd);
    const oddItem = await stores.doc.send(new GetCommand({ TableName: names.tasks, Key: { id: odd.id } }));
    expect(oddItem.Item?.componentIds).toEqual(["tray-1", uuid(6, "cccccccc")]);
    expect(await stores.tasks.getTasks([odd.id])).toEqual([odd]);
  });

  it("the same idempotency key twice → one task; the repeat returns the first task", async () => {
    const key = "operation-run-target:t-1";
    const first = task(10, { idempotencyKey: key });
    const second = task(11, { idempotencyKey: key });
    const outcomes = await Promise.all([stores.tasks.createTask(first), stores.tasks.createTask(second)]);
    const created = outcomes.filter((o) => o.created);
    expect(created).toHaveLength(1);
    const winner = created[0]!.task;
    expect(outcomes.map((o) => o.task.id)).toEqual([winner.id, winner.id]);
    expect(await stores.tasks.getTaskByIdempotencyKey(key)).toEqual(winner);
    const loser = winner.id === first.id ? second : first;
    expect(await stores.tasks.getTasks([loser.id])).toEqual([]);
    expect(await stores.tasks.getTaskByIdempotencyKey("nope")).toBeUndefined();
  });

  it("createTaskWithLock: the task and its rack's lock together; a held rack writes neither; a task under the key answers, the lock not taken", async () => {
    const rack = uuid(13, "bbbbbbbb");
    const key = "operation-run-target:t-lock";
    const mine = task(131, { rackId: rack, idempotencyKey: key });
    expect(await stores.tasks.createTaskWithLock(mine, 60_000, 5_000)).toEqual({ created: true, task: mine });
    expect(await stores.locks.get(rack)).toEqual({ owner: mine.id, expiresAt: 65_000 });
    // The same key again (a retry), now with the lock expired and taken by another task.
    expect(await stores.locks.acquire(rack, "task-other", 60_000, 70_000)).toBe("acquired");
    expect(
      await stores.tasks.createTaskWithLock(task(132, { rackId: rack, idempotencyKey: key }), 60_000, 71_000),
    ).toEqual({
      created: false,
      task: mine,
    });
    expect(await stores.locks.get(rack)).toEqual({ owner: "task-other", expiresAt: 130_000 });
    // Another key on the held rack: 'held', and no task, no key item.
    const blocked = task(133, { rackId: rack, idempotencyKey: "operation-run-target:t-other" });
    expect(await stores.tasks.createTaskWithLock(blocked, 60_000, 72_000)).toBe("held");
    expect(await stores.tasks.getTasks([blocked.id])).toEqual([]);
    expect(await stores.tasks.getTaskByIdempotencyKey("operation-run-target:t-other")).toBeUndefined();
    // Without a key: held → 'held'; free (expired) → created with the lock.
    expect(await stores.tasks.createTaskWithLock(task(134, { rackId: rack }), 60_000, 72_000)).toBe("held");
    const plain = task(135, { rackId: rack });
    expect(await stores.tasks.createTaskWithLock(plain, 60_000, 130_000)).toEqual({
      created: true,
      task: plain,
    });
    expect((await stores.locks.get(rack))?.owner).toBe(plain.id);
  });

  it("8 concurrent createTaskWithLock for one rack under different keys: one task, its lock; the others 'held'", async () => {
    const rack = uuid(14, "bbbbbbbb");
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        stores.tasks.createTaskWithLock(
          task(140 + i, { rackId: rack, idempotencyKey: `operation-run-target:t-race-${i}` }),
          60_000,
          0,
        ),
      ),
    );
    const created = outcomes.filter((o) => o !== "held" && o.created);
    expect(created).toHaveLength(1);
    expect(outcomes.filter((o) => o === "held")).toHaveLength(7);
    const winner = (created[0] as { task: Task }).task;
    expect(await stores.locks.get(rack)).toEqual({ owner: winner.id, expiresAt: 60_000 });
  });

  it("saveTaskWithOutcome: the task's ending, its target's outcome, the run's counters and the lock's release in one write; a moved task, a target not in flight or another task's lock writes nothing", async () => {
    const { run, targets } = runWithTargets(uuid(21, "ca000000"), { phaseSizes: [1, 2] });
    await stores.runs.createRun(run, targets);
    const [, a, b] = targets as [Target, Target, Target];
    const at = run.createdAt + 1;
    expect((await stores.runs.claimTargets([a, b], 30_000, at)).outcome).toBe("claimed");
    expect(await stores.runs.recordSubmitted(run.id, a.id, uuid(151, "7a5c0000"), at)).toBe("recorded");
    const running = task(151, { runId: run.id, targetId: a.id, targetPhaseIndex: 1, status: "RUNNING" });
    await stores.tasks.createTask(running);
    const done = {
      ...running,
      status: "COMPLETED" as const,
      message: "upgraded",
      updatedAt: running.updatedAt + 5,
    };
    const outcome = {
      runId: run.id,
      targetId: a.id,
      phaseIndex: 1,
      status: "COMPLETED" as const,
      message: "upgraded",
      now: at + 5,
    };
    // A stale version: nothing written, the target still SUBMITTED.
    expect(await stores.tasks.saveTaskWithOutcome(done, running.updatedAt - 1, outcome)).toBe("stale");
    expect((await stores.runs.getTarget(run.id, a.id))?.status).toBe("SUBMITTED");
    // The rack's lock another task's: nothing written, the lock left alone.
    const rack = running.rackId;
    expect(await stores.locks.acquire(rack, "task-other", 60_000, at)).toBe("acquired");
    expect(await stores.tasks.saveTaskWithOutcome(done, running.updatedAt, outcome)).toBe("separately");
    expect((await stores.runs.getTarget(run.id, a.id))?.status).toBe("SUBMITTED");
    expect(await stores.locks.release(rack, "task-other")).toBe("released");
    expect(await stores.locks.acquire(rack, running.id, 60_000, at)).toBe("acquired");
    expect(await stores.tasks.saveTaskWithOutcome(done, running.updatedAt, outcome)).toBe("saved");
    expect(await stores.locks.get(rack)).toBeUndefined();
    expect(await stores.tasks.getTasks([running.id])).toEqual([done]);
    expect(await stores.runs.getTarget(run.id, a.id)).toMatchObject({
      status: "COMPLETED",
      message: "upgraded",
      updatedAt: at + 5,
    });
    expect(await stores.runs.getRun(run.id)).toMatchObject({
      inFlight: 1,
      counters: [
        { completed: 0, failed: 0, terminated: 0, skipped: 0 },
        { completed: 1, failed: 0, terminated: 0, skipped: 0 },
      ],
    });
    // Once more (a redelivered ending): the target is no longer in flight, nothing is written.
    const again = { ...done, updatedAt: done.updatedAt + 1 };
    expect(await stores.tasks.saveTaskWithOutcome(again, done.updatedAt, outcome)).toBe("separately");
    expect(await stores.tasks.getTasks([running.id])).toEqual([done]);
    // A wrong phase is not in flight either; an unknown task is not found.
    const other = task(152, { runId: run.id, targetId: b.id, targetPhaseIndex: 0, status: "RUNNING" });
    await stores.tasks.createTask(other);
    expect(
      await stores.tasks.saveTaskWithOutcome({ ...other, updatedAt: other.updatedAt + 1 }, other.updatedAt, {
        ...outcome,
        targetId: b.id,
        phaseIndex: 0,
      }),
    ).toBe("separately");
    expect(
      await stores.tasks.saveTaskWithOutcome(task(153, { updatedAt: 2 }), 1, { ...outcome, targetId: b.id }),
    ).toBe("not-found");
    expect((await stores.runs.getRun(run.id))?.inFlight).toBe(1);
  });

  it("listTasks: by rack newest first, active only, by component, and paging with total", async () => {
    const rack = uuid(2, "bbbbbbbb");
    const t1 = task(21, { rackId: rack, status: "COMPLETED" });
    const t2 = task(22, {
      rackId: rack,
      status: "RUNNING",
      componentIds: [uuid(1, "dddddddd"), uuid(2, "dddddddd")],
    });
    const t3 = task(23, { rackId: rack, status: "PENDING" });
    for (const t of [t1, t2, t3]) await stores.tasks.createTask(t);
    const ids = async (o: Parameters<typeof stores.tasks.listTasks>[0]) =>
      (await stores.tasks.listTasks(o)).tasks.map((t) => t.id);
    expect(await ids({ rackId: rack, activeOnly: false, page })).toEqual([t3.id, t2.id, t1.id]);
    expect(await ids({ rackId: rack, activeOnly: true, page })).toEqual([t3.id, t2.id]);
    expect(await ids({ componentId: uuid(2, "dddddddd"), activeOnly: false, page })).toEqual([t2.id]);
    expect(
      await stores.tasks.listTasks({ rackId: rack, activeOnly: false, page: { offset: 1, limit: 1 } }),
    ).toMatchObject({
      tasks: [t2],
      total: 3,
    });
    const allActive = await stores.tasks.listTasks({ activeOnly: true, page });
    expect(allActive.tasks.every((t) => ["PENDING", "RUNNING", "WAITING"].includes(t.status))).toBe(true);
    expect(allActive.tasks.map((t) => t.id)).toEqual(expect.arrayContaining([t2.id, t3.id]));
  });

  it("saveTask: a finished task leaves the rack's active index; a stale save writes nothing", async () => {
    const rack = uuid(3, "bbbbbbbb");
    const t = task(31, { rackId: rack, status: "RUNNING" });
    await stores.tasks.createTask(t);
    const done: Task = { ...t, status: "COMPLETED", finishedAt: 2000, updatedAt: 2000 };
    expect(await stores.tasks.saveTask(done, t.updatedAt)).toBe("saved");
    expect(await stores.tasks.saveTask({ ...t, status: "FAILED", updatedAt: 2001 }, t.updatedAt)).toBe(
      "stale",
    );
    expect(await stores.tasks.getTasks([t.id])).toEqual([done]);
    expect((await stores.tasks.listTasks({ rackId: rack, activeOnly: true, page })).total).toBe(0);
    expect(await stores.tasks.saveTask(task(32), 1)).toBe("not-found");
  });
});

describe("inventory store", () => {
  const racks: InventoryRack[] = [
    {
      id: uuid(2, "1ac00000"),
      name: "rack-b",
      externalId: "EXT-B",
      nvlDomain: { id: uuid(1, "d0000000"), name: "nvl-1" },
      location: { datacenter: "dc1", row: "A", position: 2 },
      components: [
        { id: uuid(21, "c0c00000"), type: "COMPUTE", externalId: "SN-21", firmwareVersion: "1.0" },
        { id: uuid(22, "c0c00000"), type: "NVSWITCH" },
      ],
    },
    {
      id: uuid(1, "1ac00000"),
      name: "rack-a",
      nvlDomain: { id: uuid(1, "d0000000"), name: "nvl-1" },
      components: [{ id: uuid(11, "c0c00000"), type: "COMPUTE", externalId: "SN-11" }],
    },
    { id: uuid(3, "1ac00000"), name: "rack-c", externalId: "EXT-C", components: [] },
  ];
  beforeAll(() => stores.inventory.upsertRacks(racks));

  it("loadAll returns every rack, sorted by id, field for field", async () => {
    expect(await stores.inventory.loadAll()).toEqual([racks[1], racks[0], racks[2]]);
  });

  it("lookups by id, name, external id and NVLink domain (id or name)", async () => {
    const ids = (rs: InventoryRack[]) => rs.map((r) => r.name);
    expect(ids(await stores.inventory.getRacksByIds([racks[2]!.id, uuid(9), racks[0]!.id]))).toEqual([
      "rack-c",
      "rack-b",
    ]);
    expect(ids(await stores.inventory.getRacksByNames(["rack-a", "nope"]))).toEqual(["rack-a"]);
    expect(ids(await stores.inventory.getRacksByExternalIds(["EXT-C", "EXT-B"]))).toEqual([
      "rack-c",
      "rack-b",
    ]);
    expect(ids(await stores.inventory.getRacksByNvlDomain({ by: "id", id: uuid(1, "d0000000") }))).toEqual([
      "rack-a",
      "rack-b",
    ]);
    expect(ids(await stores.inventory.getRacksByNvlDomain({ by: "name", name: "nvl-1" }))).toEqual([
      "rack-a",
      "rack-b",
    ]);
    expect(await stores.inventory.getRacksByNvlDomain({ by: "name", name: "nvl-9" })).toEqual([]);
  });

  it("lookups by component id and by component (type, external id)", async () => {
    const byComponent = await stores.inventory.getRacksByComponentIds([
      uuid(22, "c0c00000"),
      uuid(11, "c0c00000"),
      uuid(99),
    ]);
    expect([...byComponent].map(([c, r]) => [c, r.name]).sort()).toEqual([
      [uuid(11, "c0c00000"), "rack-a"],
      [uuid(22, "c0c00000"), "rack-b"],
    ]);
    expect(
      (await stores.inventory.getRacksByComponentExternalId("COMPUTE", "SN-21")).map((r) => r.name),
    ).toEqual(["rack-b"]);
    expect(await stores.inventory.getRacksByComponentExternalId("NVSWITCH", "SN-21")).toEqual([]);
  });

  it("a (type, external id) two components share finds both racks; a moved component only its new one", async () => {
    const twin: InventoryRack = {
      id: uuid(4, "1ac00000"),
      name: "rack-d",
      components: [{ id: uuid(41, "c0c00000"), type: "COMPUTE", externalId: "SN-21" }],
    };
    await stores.inventory.upsertRacks([twin]);
    expect(
      (await stores.inventory.getRacksByComponentExternalId("COMPUTE", "SN-21")).map((r) => r.name),
    ).toEqual(["rack-b", "rack-d"]);
    // rack-d re-imported with its component renumbered: its old pointer stays, but no longer matches.
    await stores.inventory.upsertRacks([
      { ...twin, components: [{ id: uuid(42, "c0c00000"), type: "COMPUTE", externalId: "SN-42" }] },
    ]);
    expect(
      (await stores.inventory.getRacksByComponentExternalId("COMPUTE", "SN-21")).map((r) => r.name),
    ).toEqual(["rack-b"]);
    await stores.inventory.upsertRacks([{ ...twin, components: [] }]);
  });

  it("the scope index: racks in id order with their component ids by type, read until `limit` qualify", async () => {
    const all = await stores.inventory.listScopeRacks(() => true, 100);
    expect(all.map((r) => r.name)).toEqual(["rack-a", "rack-b", "rack-c", "rack-d"]);
    expect(all[1]).toEqual({
      id: racks[0]!.id,
      name: "rack-b",
      externalId: "EXT-B",
      components: [
        { id: uuid(21, "c0c00000"), type: "COMPUTE" },
        { id: uuid(22, "c0c00000"), type: "NVSWITCH" },
      ],
    });
    const seen: string[] = [];
    const withNvSwitch = await stores.inventory.listScopeRacks((rack) => {
      seen.push(rack.name);
      return rack.components.some((c) => c.type === "NVSWITCH");
    }, 1);
    expect(withNvSwitch.map((r) => r.name)).toEqual(["rack-b"]);
    // Stopped at the first qualifying rack: rack-c and rack-d were never looked at.
    expect(seen).toEqual(["rack-a", "rack-b"]);
  });

  it("a re-import moving a component to another rack answers with the new rack", async () => {
    const moved: InventoryRack = {
      ...racks[2]!,
      components: [{ id: uuid(11, "c0c00000"), type: "COMPUTE", externalId: "SN-11" }],
    };
    const emptied: InventoryRack = { ...racks[1]!, components: [] };
    await stores.inventory.upsertRacks([moved, emptied]);
    expect(
      (await stores.inventory.getRacksByComponentIds([uuid(11, "c0c00000")])).get(uuid(11, "c0c00000"))?.name,
    ).toBe("rack-c");
    await stores.inventory.upsertRacks(racks);
  });
});

describe("rack lock store", () => {
  const rack = uuid(1, "10c10000");

  it("acquire, held by another, re-acquire extends, release by owner only", async () => {
    expect(await stores.locks.acquire(rack, "task-a", 60_000, 0)).toBe("acquired");
    expect(await stores.locks.acquire(rack, "task-b", 60_000, 10_000)).toBe("held");
    expect(await stores.locks.acquire(rack, "task-a", 60_000, 20_000)).toBe("acquired");
    expect(await stores.locks.get(rack)).toEqual({ owner: "task-a", expiresAt: 80_000 });
    expect(await stores.locks.release(rack, "task-b")).toBe("not-held");
    expect(await stores.locks.release(rack, "task-a")).toBe("released");
    expect(await stores.locks.release(rack, "task-a")).toBe("not-held");
    expect(await stores.locks.get(rack)).toBeUndefined();
  });

  it("an expired lock is taken over; the old owner's release then leaves it alone", async () => {
    const r = uuid(2, "10c10000");
    expect(await stores.locks.acquire(r, "task-a", 1_000, 0)).toBe("acquired");
    expect(await stores.locks.acquire(r, "task-b", 1_000, 1_000)).toBe("acquired");
    expect(await stores.locks.release(r, "task-a")).toBe("not-held");
    expect((await stores.locks.get(r))?.owner).toBe("task-b");
  });

  it("8 concurrent acquirers of a free rack: exactly one wins", async () => {
    const r = uuid(3, "10c10000");
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, i) => stores.locks.acquire(r, `task-${i}`, 60_000, 0)),
    );
    expect(outcomes.filter((o) => o === "acquired")).toHaveLength(1);
  });
});

describe("capacity metering", () => {
  /** A client of its own on the test endpoint, with every request body it sends recorded. */
  function recordingClient(): { client: DynamoDBClient; bodies: string[] } {
    const own = testClient(testEndpoint());
    const bodies: string[] = [];
    own.middlewareStack.add(
      (next) => async (args) => {
        bodies.push(String((args.request as { body?: unknown }).body));
        return next(args);
      },
      { step: "finalizeRequest", name: "recordBody" },
    );
    return { client: own, bodies };
  }

  async function createGetClaim(on: DynamoStores, n: number): Promise<void> {
    const { run, targets } = runWithTargets(uuid(n, "ca000000"), { phaseSizes: [2] });
    await on.runs.createRun(run, targets);
    await on.runs.getRun(run.id);
    await on.runs.claimTarget(targets[0]!, 30_000, run.createdAt + 1);
  }

  it("the product's stores ask for no ConsumedCapacity; a metered client asks for INDEXES", async () => {
    const plain = recordingClient();
    await createGetClaim(createDynamoStores(plain.client, names), 1);
    expect(plain.bodies).toHaveLength(3);
    expect(plain.bodies.filter((b) => b.includes("ReturnConsumedCapacity"))).toEqual([]);
    plain.client.destroy();

    const metered = recordingClient();
    installCapacityMeter(metered.client);
    await createGetClaim(createDynamoStores(metered.client, names), 2);
    expect(metered.bodies).toHaveLength(3);
    for (const body of metered.bodies) expect(body).toContain('"ReturnConsumedCapacity":"INDEXES"');
    metered.client.destroy();
  });

  it("the meter records every call, by operation; reset empties it", async () => {
    const own = testClient(testEndpoint());
    const meter = installCapacityMeter(own);
    await createGetClaim(createDynamoStores(own, names), 3);
    const snap = meter.snapshot();
    expect(snap.calls).toBe(3); // create (1 transaction: 2 targets + run), get, claim (1 transaction)
    expect(Object.keys(snap.byOperation).sort()).toEqual(["GetItem", "TransactWriteItems"]);
    expect(snap.byOperation.TransactWriteItems?.calls).toBe(2);
    // moto reports capacity for GetItem only: 0.5 units (it ignores ConsistentRead), and counts
    // the two transactions as unreported.
    expect(snap.byOperation.GetItem).toEqual({ calls: 1, capacityUnits: 0.5 });
    expect(snap.unreportedCalls).toBe(2);
    meter.reset();
    expect(meter.snapshot()).toEqual({
      calls: 0,
      capacityUnits: 0,
      readCapacityUnits: 0,
      writeCapacityUnits: 0,
      byOperation: {},
      byTable: {},
      unreportedCalls: 0,
      preferReported: { capacityUnits: 0, readCapacityUnits: 0, writeCapacityUnits: 0 },
      byTag: {},
    });
    own.destroy();
  });
});
