/**
 * The command-set store on DynamoDB (moto): what the port promises, proven on the real adapter.
 * An entry keeps its first window; a batch of report writes is one conditional UpdateItem, all or
 * nothing, and a refused one returns what is stored; expressions too long for one request are
 * split; reopen gives entries a new window and forgets their publication; a closed set takes no
 * new entry.
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installCapacityMeter } from "../../bench/lib/capacity-meter.js";
import { DynamoCommandSetStore } from "../../src/adapters/dynamodb/command-set-store.js";
import type { TableNames } from "../../src/adapters/dynamodb/index.js";
import { DynamoTaskStore } from "../../src/adapters/dynamodb/task-store.js";
import { createReportRecorder } from "../../src/app/child-task/receiving.js";
import {
  commandRequestId,
  type EntryWrite,
  entryKey,
  heartbeatDue,
  newEntry,
  queryAddress,
  updateAddress,
  verifyAddress,
} from "../../src/domain/command-sets.js";
import { runningTask } from "../support/domain-fixtures.js";
import { uuid } from "../support/dynamodb-fixtures.js";
import { freshTables, testClient } from "../support/moto.js";
import { testEndpoint } from "../support/test-endpoint.js";

let client: DynamoDBClient;
let names: TableNames;
let drop: () => Promise<void>;
let store: DynamoCommandSetStore;

beforeAll(async () => {
  client = testClient(testEndpoint());
  ({ names, drop } = await freshTables(client, "cmdsets"));
  store = new DynamoCommandSetStore(DynamoDBDocumentClient.from(client), names.tasks);
});
afterAll(async () => {
  await drop();
  client.destroy();
});

const ok = { value: { ok: true as const, version: "2.0.0" }, at: 50 };

/** The task's update set with c1's and c2's first update, sent at 1, deadline 100. */
const openTwo = (taskId: string) => {
  const a = updateAddress(taskId, 0);
  return store.open(
    taskId,
    "u",
    Object.fromEntries([
      newEntry(a, "c1", { sentAt: 1, deadline: 100 }),
      newEntry(a, "c2", { sentAt: 1, deadline: 100 }),
    ]),
  );
};

describe("DynamoCommandSetStore", () => {
  it("awaitAnswers stores the waiting execution's token and entries and reads the set back; a batch of results asks for the set after (returnSet)", async () => {
    const taskId = uuid(81, "7a5c0000");
    const a = updateAddress(taskId, 0);
    const [k1, k2] = [entryKey(a, "c1"), entryKey(a, "c2")];
    // No set yet: nothing to wait on.
    expect(await store.awaitAnswers(taskId, "u", { token: "tk-0", keys: [k1] })).toBeUndefined();
    expect(await store.get(taskId, "u")).toBeUndefined();
    await openTwo(taskId);
    await store.record(taskId, "u", { [k1]: { result: ok, ackedAt: 50 } });
    const waiting = await store.awaitAnswers(taskId, "u", { token: "tk-1", keys: [k1, k2] });
    expect(waiting?.wake).toEqual({ token: "tk-1", keys: [k1, k2] });
    // It sees what came before it: c1's result.
    expect(waiting?.entries[k1]?.resultAt).toBe(50);
    // The last result, written asking for the set: it comes back with the wait on it.
    const written = await store.record(
      taskId,
      "u",
      { [k2]: { result: ok, ackedAt: 51 } },
      { returnSet: true },
    );
    expect(written.outcome).toBe("written");
    expect(written.set?.wake?.token).toBe("tk-1");
    expect(written.set?.entries[k2]?.resultAt).toBe(50);
    // A later wait replaces it; the entries stay as they are.
    expect((await store.awaitAnswers(taskId, "u", { token: "tk-2", keys: [k2] }))?.wake).toEqual({
      token: "tk-2",
      keys: [k2],
    });
    expect(Object.keys((await store.get(taskId, "u"))?.entries ?? {}).sort()).toEqual([k1, k2].sort());
  });

  it("a wait's heartbeat and start are stored with it; a write of reports with heardAt stores its time and reads back the one before it, on the same UpdateItem (one request)", async () => {
    const taskId = uuid(82, "7a5c0000");
    const a = updateAddress(taskId, 0);
    const [k1, k2] = [entryKey(a, "c1"), entryKey(a, "c2")];
    await openTwo(taskId);
    const waiting = await store.awaitAnswers(taskId, "u", {
      token: "tk-h",
      keys: [k1, k2],
      heartbeatSeconds: 300,
      startedAt: 1_234,
    });
    expect(waiting?.wake).toEqual({ token: "tk-h", keys: [k1, k2], heartbeatSeconds: 300, startedAt: 1_234 });
    expect(waiting?.heard).toBeUndefined();
    const own = testClient(testEndpoint());
    const meter = installCapacityMeter(own);
    const metered = new DynamoCommandSetStore(DynamoDBDocumentClient.from(own), names.tasks);
    const first = await metered.record(
      taskId,
      "u",
      { [k1]: { ackedAt: 1_000 } },
      { returnSet: true, heardAt: 1_000 },
    );
    expect(first.set?.heard).toEqual({ at: 1_000 });
    const second = await metered.record(
      taskId,
      "u",
      { [k2]: { ackedAt: 61_000 } },
      { returnSet: true, heardAt: 61_000 },
    );
    expect(second.set?.heard).toEqual({ at: 61_000, before: 1_000 });
    expect(second.set?.wake?.heartbeatSeconds).toBe(300);
    expect(meter.snapshot().calls).toBe(2);
    own.destroy();
    // A write without heardAt leaves them as they are.
    await store.record(taskId, "u", { [k1]: { progress: { percent: 25, at: 70_000 } } });
    expect((await store.get(taskId, "u"))?.heard).toEqual({ at: 61_000, before: 1_000 });
  });

  it("concurrent writes of reports in one heartbeat interval, each from its own client: the store serializes them, and exactly one reads back a write before it in an earlier interval (heartbeatDue sends one)", async () => {
    const taskId = uuid(83, "7a5c0000");
    const a = updateAddress(taskId, 0);
    const ids = Array.from({ length: 6 }, (_, i) => uuid(i + 1, "c0c0c0c0"));
    await store.open(
      taskId,
      "u",
      Object.fromEntries(ids.map((id) => newEntry(a, id, { sentAt: 1, deadline: 900_000 }))),
    );
    const keys = ids.map((id) => entryKey(a, id));
    await store.awaitAnswers(taskId, "u", { token: "tk-c", keys, heartbeatSeconds: 300 });
    const clients = ids.map(() => testClient(testEndpoint()));
    const stores = clients.map((c) => new DynamoCommandSetStore(DynamoDBDocumentClient.from(c), names.tasks));
    // Six containers' batches of the same moment (each BMC's acknowledgement), sent at once.
    const moment = async (at: number, write: (k: string) => EntryWrite) =>
      Promise.all(
        stores.map(async (s, i) => {
          const key = keys[i] as string;
          const out = await s.record(taskId, "u", { [key]: write(key) }, { returnSet: true, heardAt: at });
          return heartbeatDue(out.set, [key]);
        }),
      );
    const acks = await moment(120_500, () => ({ ackedAt: 120_500 }));
    expect(acks.filter((token) => token === "tk-c")).toHaveLength(1);
    // The same in the next interval: one again.
    const progress = await moment(180_200, () => ({ progress: { percent: 25, at: 180_200 } }));
    expect(progress.filter((token) => token === "tk-c")).toHaveLength(1);
    for (const c of clients) c.destroy();
  });

  it("getMany: the family's sets of the tasks that have one, by task id, in one batch", async () => {
    const [t1, t2, t3] = [uuid(71, "7a5c0000"), uuid(72, "7a5c0000"), uuid(73, "7a5c0000")];
    for (const t of [t1, t2]) {
      await store.open(
        t,
        "u",
        Object.fromEntries([newEntry(updateAddress(t, 0), "c1", { sentAt: 1, deadline: 9 })]),
      );
    }
    await store.open(
      t3,
      "q",
      Object.fromEntries([newEntry(queryAddress(t3, 0), "c1", { sentAt: 1, deadline: 9 })]),
    );
    const sets = await store.getMany([t1, t2, t3, t1], "u");
    expect([...sets.keys()].sort()).toEqual([t1, t2].sort());
    expect(sets.get(t2)).toEqual(await store.get(t2, "u"));
    expect((await store.getMany([], "u")).size).toBe(0);
  });

  it("open: one write; an entry already there keeps its window and publication (a retried step)", async () => {
    const taskId = uuid(1, "7a5c0000");
    const a = updateAddress(taskId, 0);
    const first = await store.open(
      taskId,
      "u",
      Object.fromEntries([newEntry(a, "c1", { sentAt: 1, deadline: 100 })]),
    );
    expect(first.entries[entryKey(a, "c1")]).toEqual({ sentAt: 1, deadline: 100 });
    await store.markPublished(taskId, "u", [entryKey(a, "c1")], 2);
    const again = await store.open(
      taskId,
      "u",
      Object.fromEntries([
        newEntry(a, "c1", { sentAt: 9, deadline: 900 }),
        newEntry(a, "c2", { sentAt: 9, deadline: 900 }),
      ]),
    );
    expect(again).toEqual({
      taskId,
      family: "u",
      entries: {
        [entryKey(a, "c1")]: { sentAt: 1, deadline: 100, publishedAt: 2 },
        [entryKey(a, "c2")]: { sentAt: 9, deadline: 900 },
      },
    });
    expect(await store.get(taskId, "q")).toBeUndefined();
  });

  it("open with a wait: the entries and the waiting execution's token (and its heartbeat, when it has one) in ONE UpdateItem (a retried wait keeps the entries, replaces the token); a closed set takes neither; a set too large for one expression stores the token with its last", async () => {
    const taskId = uuid(93, "7a5c0000");
    const a = updateAddress(taskId, 0);
    const own = testClient(testEndpoint());
    const meter = installCapacityMeter(own);
    const waiting = new DynamoCommandSetStore(DynamoDBDocumentClient.from(own), names.tasks);
    const keys = [entryKey(a, "c1"), entryKey(a, "c2")];
    const entries = Object.fromEntries([
      newEntry(a, "c1", { sentAt: 1, deadline: 100 }),
      newEntry(a, "c2", { sentAt: 1, deadline: 100 }),
    ]);
    const first = await waiting.open(taskId, "u", entries, undefined, { token: "tk-1", keys });
    expect(meter.snapshot().calls).toBe(1);
    expect(first.wake).toEqual({ token: "tk-1", keys });
    expect(Object.keys(first.entries)).toEqual(keys);
    await waiting.markPublished(taskId, "u", [keys[0] as string], 2);
    const retried = await waiting.open(
      taskId,
      "u",
      Object.fromEntries([
        newEntry(a, "c1", { sentAt: 9, deadline: 900 }),
        newEntry(a, "c2", { sentAt: 9, deadline: 900 }),
      ]),
      undefined,
      { token: "tk-2", keys, heartbeatSeconds: 300, startedAt: 9 },
    );
    // A wave's wait is stored with its heartbeat (the first, as a preflight's, had none).
    expect(retried).toEqual({
      taskId,
      family: "u",
      wake: { token: "tk-2", keys, heartbeatSeconds: 300, startedAt: 9 },
      entries: {
        [keys[0] as string]: { sentAt: 1, deadline: 100, publishedAt: 2 },
        [keys[1] as string]: { sentAt: 1, deadline: 100 },
      },
    });
    // A part, closed: neither the entries nor the token.
    const p2 = updateAddress(taskId, 0, 2);
    await store.close(taskId, 40, [2]);
    const refused = await waiting.open(
      taskId,
      "u",
      Object.fromEntries([newEntry(p2, "c3", { sentAt: 50, deadline: 900 })]),
      2,
      { token: "tk-3", keys: [entryKey(p2, "c3")] },
    );
    expect(refused).toEqual({ taskId, family: "u", part: 2, entries: {}, closedAt: 40 });
    expect((await store.get(taskId, "u", 2))?.wake).toBeUndefined();
    // Many entries: several writes, the token with the last (stored once every entry is).
    const big = uuid(94, "7a5c0000");
    const b = updateAddress(big, 0);
    const ids = Array.from({ length: 150 }, (_, i) => uuid(i + 1, "dddddddd"));
    const before = meter.snapshot().calls;
    const all = await waiting.open(
      big,
      "u",
      Object.fromEntries(ids.map((id) => newEntry(b, id, { sentAt: 1, deadline: 100 }))),
      undefined,
      { token: "tk-big", keys: ids.map((id) => entryKey(b, id)) },
    );
    expect(meter.snapshot().calls - before).toBeGreaterThan(1);
    expect(Object.keys(all.entries)).toHaveLength(150);
    expect(all.wake?.token).toBe("tk-big");
    expect(all.wake?.keys).toHaveLength(150);
    own.destroy();
  });

  it("close: the update and verify sets take no new entry (open returns them as they are, as its refused write found them: one request); reports still land", async () => {
    const taskId = uuid(5, "7a5c0000");
    const a = updateAddress(taskId, 0);
    const key = entryKey(a, "c1");
    await store.open(taskId, "u", Object.fromEntries([newEntry(a, "c1", { sentAt: 1, deadline: 100 })]));
    await store.close(taskId, 40, []);
    await store.close(taskId, 41, []);
    const before = await store.get(taskId, "u");
    expect(before?.closedAt).toBe(40);
    const own = testClient(testEndpoint());
    const meter = installCapacityMeter(own);
    const refused = await new DynamoCommandSetStore(DynamoDBDocumentClient.from(own), names.tasks).open(
      taskId,
      "u",
      Object.fromEntries([newEntry(updateAddress(taskId, 1), "c1", { sentAt: 50, deadline: 900 })]),
    );
    expect(refused).toEqual(before);
    expect(meter.snapshot().calls).toBe(1);
    own.destroy();
    expect(Object.keys(refused.entries)).toEqual([key]);
    // The verify set had none: closed all the same, as a set of this task and family.
    const v = verifyAddress(taskId, 0, 1, 0);
    const verify = await store.open(
      taskId,
      "v",
      Object.fromEntries([newEntry(v, "c1", { sentAt: 50, deadline: 900 })]),
    );
    expect(verify).toEqual({ taskId, family: "v", entries: {}, closedAt: 40 });
    // What a BMC reports on a command already out is still stored.
    const written = await store.record(taskId, "u", { [key]: { result: ok } });
    expect(written.outcome).toBe("written");
    expect((await store.get(taskId, "u"))?.entries[key]?.resultAt).toBe(50);
    // Another task's sets are not closed.
    const other = uuid(6, "7a5c0000");
    const open = await store.open(
      other,
      "u",
      Object.fromEntries([newEntry(updateAddress(other, 0), "c1", { sentAt: 1, deadline: 9 })]),
    );
    expect(open.closedAt).toBeUndefined();
    expect(Object.keys(open.entries)).toHaveLength(1);
  });

  it("getWithTask: the task and its sets of the families asked for, in one strongly consistent BatchGetItem", async () => {
    const taskId = uuid(7, "7a5c0000");
    const doc = DynamoDBDocumentClient.from(client);
    const task = runningTask({ id: taskId, componentIds: ["c1"], updatedAt: 2, report: '{"components":[]}' });
    await new DynamoTaskStore(doc, names).createTask(task);
    const a = updateAddress(taskId, 0);
    await store.open(taskId, "u", Object.fromEntries([newEntry(a, "c1", { sentAt: 1, deadline: 9 })]));
    const own = testClient(testEndpoint());
    const sent: unknown[] = [];
    own.middlewareStack.add(
      (next) => async (args) => {
        sent.push(args.input);
        return next(args);
      },
      { step: "initialize" },
    );
    const read = await new DynamoCommandSetStore(DynamoDBDocumentClient.from(own), names.tasks).getWithTask(
      taskId,
      ["u", "v"],
    );
    expect(read.task).toEqual(task);
    expect(read.sets).toEqual({ u: await store.get(taskId, "u") });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ RequestItems: { [names.tasks]: { ConsistentRead: true } } });
    own.destroy();
    expect(await store.getWithTask(uuid(8, "7a5c0000"), ["u"])).toEqual({ task: undefined, sets: {} });
  });

  it("parts: a stage's entries in a record of their own; reports, waits and reads there; the whole set merged; closed with the set", async () => {
    const taskId = uuid(91, "7a5c0000");
    const doc = DynamoDBDocumentClient.from(client);
    const task = runningTask({
      id: taskId,
      componentIds: ["c1", "c2", "c3"],
      updatedAt: 2,
      report: '{"components":[]}',
    });
    await new DynamoTaskStore(doc, names).createTask(task);
    const first = updateAddress(taskId, 0);
    const [p1, p3] = [updateAddress(taskId, 0, 1), updateAddress(taskId, 0, 3)];
    // c1 sent before parts (the first record), c2 into part 1, c3 into part 3.
    await store.open(taskId, "u", Object.fromEntries([newEntry(first, "c1", { sentAt: 1, deadline: 90 })]));
    const opened = await store.open(
      taskId,
      "u",
      Object.fromEntries([newEntry(p1, "c2", { sentAt: 2, deadline: 90 })]),
      1,
    );
    expect(opened).toEqual({
      taskId,
      family: "u",
      part: 1,
      entries: { [entryKey(p1, "c2")]: { sentAt: 2, deadline: 90 } },
    });
    await store.open(taskId, "u", Object.fromEntries([newEntry(p3, "c3", { sentAt: 3, deadline: 90 })]), 3);
    const item = await doc.send(
      new GetCommand({ TableName: names.tasks, Key: { id: `cmds#${taskId}#u.3` } }),
    );
    expect(item.Item).toMatchObject({ taskId, family: "u", part: 3 });

    // Publication, the wait and a report land on the part, not on the first record.
    await store.markPublished(taskId, "u", [entryKey(p3, "c3")], 4, 3);
    const waiting = await store.awaitAnswers(taskId, "u", { token: "tk", keys: [entryKey(p3, "c3")] }, 3);
    expect(waiting?.wake).toEqual({ token: "tk", keys: [entryKey(p3, "c3")] });
    const written = await store.record(
      taskId,
      "u",
      { [entryKey(p3, "c3")]: { result: ok } },
      { returnSet: true, part: 3 },
    );
    expect(written.set?.entries[entryKey(p3, "c3")]).toMatchObject({
      publishedAt: 4,
      result: ok.value,
      resultAt: 50,
    });
    // An entry is found only in the record that holds it: the same report on another part is refused.
    expect(
      (await store.record(taskId, "u", { [entryKey(p1, "c3")]: { result: ok } }, { part: 1 })).outcome,
    ).toBe("refused");
    expect((await store.get(taskId, "u"))?.entries).toEqual({
      [entryKey(first, "c1")]: { sentAt: 1, deadline: 90 },
    });

    // The whole set: each entry with the part it is stored in; one strongly consistent read.
    const whole = {
      taskId,
      family: "u",
      entries: {
        [entryKey(first, "c1")]: { sentAt: 1, deadline: 90 },
        [entryKey(p1, "c2")]: { sentAt: 2, deadline: 90, part: 1 },
        [entryKey(p3, "c3")]: {
          sentAt: 3,
          deadline: 90,
          publishedAt: 4,
          result: ok.value,
          resultAt: 50,
          part: 3,
        },
      },
    };
    expect(await store.getUpdates(taskId, [0, 1, 2, 3, 4, 5])).toEqual(whole);
    expect((await store.getWithTask(taskId, ["u"], [1, 3])).sets.u).toEqual(whole);
    expect((await store.getMany([taskId], "u", [1, 3])).get(taskId)).toEqual(whole);

    // Closed with the set: no part takes a command again, created or not; reports still land.
    await store.close(taskId, 60, [0, 1, 2, 3, 4, 5]);
    const late = await store.open(
      taskId,
      "u",
      Object.fromEntries([newEntry(p3, "c9", { sentAt: 61, deadline: 90 })]),
      3,
    );
    expect(late.closedAt).toBe(60);
    expect(late.entries[entryKey(p3, "c9")]).toBeUndefined();
    expect(
      (
        await store.open(
          taskId,
          "u",
          Object.fromEntries([newEntry(updateAddress(taskId, 0, 5), "c9", { sentAt: 61, deadline: 90 })]),
          5,
        )
      ).closedAt,
    ).toBe(60);
    expect(
      (await store.record(taskId, "u", { [entryKey(p1, "c2")]: { result: ok } }, { part: 1 })).outcome,
    ).toBe("written");
    expect((await store.getUpdates(taskId, [0, 1, 2, 3, 4, 5]))?.closedAt).toBe(60);
  });

  it("an entry stores no component id (its key is the component's); one written before with `c` reads the same", async () => {
    const taskId = uuid(9, "7a5c0000");
    const a = updateAddress(taskId, 0);
    const key = entryKey(a, "c1");
    await store.open(taskId, "u", Object.fromEntries([newEntry(a, "c1", { sentAt: 1, deadline: 100 })]));
    const doc = DynamoDBDocumentClient.from(client);
    const stored = await doc.send(
      new GetCommand({ TableName: names.tasks, Key: { id: `cmds#${taskId}#u` } }),
    );
    expect(stored.Item?.[`e_${key}`]).toEqual({ s: 1, d: 100 });
    // As entries were written before 2026-12-01.
    await doc.send(
      new UpdateCommand({
        TableName: names.tasks,
        Key: { id: `cmds#${taskId}#u` },
        UpdateExpression: "SET #e = :e",
        ExpressionAttributeNames: { "#e": `e_${key}` },
        ExpressionAttributeValues: { ":e": { c: "c1", s: 1, d: 100, pb: 2 } },
      }),
    );
    expect((await store.get(taskId, "u"))?.entries[key]).toEqual({
      sentAt: 1,
      deadline: 100,
      publishedAt: 2,
    });
  });

  it("a refused write that does not read its record (marking an entry published that is not there) fails without the record on its error", async () => {
    const taskId = uuid(31, "7a5c0000");
    await openTwo(taskId);
    const refused = await store
      .markPublished(taskId, "u", ["000000000000"], 2)
      .then(() => undefined)
      .catch((error: unknown) => error as { name?: string; Item?: unknown });
    expect(refused?.name).toBe("ConditionalCheckFailedException");
    expect(refused?.Item).toBeUndefined();
  });

  it("record: all or nothing; a refused write returns the stored set as it found it (one request, no read), and the rest can then be written", async () => {
    const taskId = uuid(2, "7a5c0000");
    const a = updateAddress(taskId, 0);
    const [k1, k2] = [entryKey(a, "c1"), entryKey(a, "c2")];
    await openTwo(taskId);
    const written = await store.record(taskId, "u", {
      [k1]: { result: ok, ackedAt: 50 },
      [k2]: { progress: { percent: 30, at: 40 }, ackedAt: 40 },
    });
    // Written: the reply carries no item (the caller knows what it wrote); the store holds it.
    expect(written).toEqual({ outcome: "written" });
    const after = await store.get(taskId, "u");
    expect(after?.entries[k1]).toMatchObject({
      result: { ok: true, version: "2.0.0" },
      resultAt: 50,
      ackedAt: 50,
    });
    expect(after?.entries[k2]).toMatchObject({ progress: 30, progressAt: 40, ackedAt: 40 });
    // A second result for c1 (first wins) with a real change for c2: refused as a whole, the
    // record handed back by the refused write itself.
    const own = testClient(testEndpoint());
    const meter = installCapacityMeter(own);
    const refused = await new DynamoCommandSetStore(DynamoDBDocumentClient.from(own), names.tasks).record(
      taskId,
      "u",
      {
        [k1]: { result: { value: { ok: true, version: "9.9.9" }, at: 60 } },
        [k2]: { progress: { percent: 60, at: 61 } },
      },
    );
    if (refused.outcome !== "refused") throw new Error("a second result was written");
    expect(refused.set).toEqual(await store.get(taskId, "u"));
    expect(refused.set?.entries[k1]?.result).toEqual({ ok: true, version: "2.0.0" });
    expect(refused.set?.entries[k2]?.progress).toBe(30);
    expect(meter.snapshot().calls).toBe(1);
    own.destroy();
    // Progress only upwards; a lone ack only once; an entry that does not exist is refused.
    expect((await store.record(taskId, "u", { [k2]: { progress: { percent: 20, at: 62 } } })).outcome).toBe(
      "refused",
    );
    expect((await store.record(taskId, "u", { [k2]: { ackedAt: 63 } })).outcome).toBe("refused");
    expect((await store.record(taskId, "u", { nope: { ackedAt: 63 } })).outcome).toBe("refused");
    expect((await store.record(taskId, "u", { [k2]: { progress: { percent: 60, at: 61 } } })).outcome).toBe(
      "written",
    );
    expect((await store.get(taskId, "u"))?.entries[k2]).toMatchObject({
      progress: 60,
      progressAt: 61,
    });
    // No such set: refused without one.
    expect(await store.record(uuid(99, "7a5c0000"), "u", { [k1]: { ackedAt: 1 } })).toEqual({
      outcome: "refused",
    });
  });

  it("answers on a query set; reopen gives a new window and forgets the publication", async () => {
    const taskId = uuid(3, "7a5c0000");
    const a = updateAddress(taskId, 0);
    const k = entryKey(a, "c1");
    await store.open(taskId, "q", Object.fromEntries([newEntry(a, "c1", { sentAt: 1, deadline: 100 })]));
    await store.markPublished(taskId, "q", [k], 2);
    await store.reopen(taskId, "q", { [k]: { sentAt: 500, deadline: 599 } });
    expect((await store.get(taskId, "q"))?.entries[k]).toEqual({
      sentAt: 500,
      deadline: 599,
    });
    expect(
      (
        await store.record(taskId, "q", {
          [k]: { status: { version: "1.0.0", ready: false, reason: "host down" } },
        })
      ).outcome,
    ).toBe("written");
    expect((await store.record(taskId, "q", { [k]: { status: { version: "2.0.0" } } })).outcome).toBe(
      "refused",
    );
    expect((await store.get(taskId, "q"))?.entries[k]?.status).toEqual({
      version: "1.0.0",
      ready: false,
      reason: "host down",
    });
  });

  it("a set too large for one expression is written in several, each under DynamoDB's limits", async () => {
    const taskId = uuid(4, "7a5c0000");
    const a = updateAddress(taskId, 0);
    const ids = Array.from({ length: 150 }, (_, i) => uuid(i + 1, "cccccccc"));
    const own = testClient(testEndpoint());
    const meter = installCapacityMeter(own);
    const big = new DynamoCommandSetStore(DynamoDBDocumentClient.from(own), names.tasks);
    const set = await big.open(
      taskId,
      "u",
      Object.fromEntries(ids.map((id) => newEntry(a, id, { sentAt: 1, deadline: 100 }))),
    );
    expect(Object.keys(set.entries)).toHaveLength(150);
    const opened = meter.snapshot().calls;
    expect(opened).toBeGreaterThan(1);
    await big.markPublished(taskId, "u", Object.keys(set.entries), 2);
    const written = await big.record(
      taskId,
      "u",
      Object.fromEntries(Object.keys(set.entries).map((k) => [k, { result: ok, ackedAt: 50 }])),
    );
    expect(written.outcome).toBe("written");
    expect(
      Object.values((await big.get(taskId, "u"))?.entries ?? {}).every(
        (e) => e.publishedAt === 2 && e.resultAt === 50,
      ),
    ).toBe(true);
    own.destroy();
  });

  it("a set opened for a rack keeps that rack (the first open's) and takes reports only from that rack's topic; a set of before takes any", async () => {
    const taskId = uuid(1, "7a5c9100");
    const a = updateAddress(taskId, 0);
    const [k1, k2] = [entryKey(a, "c1"), entryKey(a, "c2")];
    const window = { sentAt: 1, deadline: 100 };
    const rack = uuid(1, "3f2a0000");
    const other = uuid(2, "3f2a0000");
    expect(
      (
        await store.open(
          taskId,
          "u",
          Object.fromEntries([newEntry(a, "c1", window)]),
          undefined,
          undefined,
          rack,
        )
      ).rackId,
    ).toBe(rack);
    // A later open (another wave) names no other rack over it.
    await store.open(
      taskId,
      "u",
      Object.fromEntries([newEntry(a, "c2", window)]),
      undefined,
      undefined,
      other,
    );
    expect((await store.get(taskId, "u"))?.rackId).toBe(rack);
    // From another rack's topic: refused, nothing stored, the set returned with its rack.
    const refused = await store.record(taskId, "u", { [k1]: { result: ok, ackedAt: 50 } }, { rackId: other });
    expect(refused.outcome).toBe("refused");
    expect(refused.set?.rackId).toBe(rack);
    expect(refused.set?.entries[k1]?.result).toBeUndefined();
    // From its own rack's topic, and from a v1-v3 topic (no rack): written.
    expect(
      (await store.record(taskId, "u", { [k1]: { result: ok, ackedAt: 50 } }, { rackId: rack })).outcome,
    ).toBe("written");
    expect((await store.record(taskId, "u", { [k2]: { ackedAt: 51 } })).outcome).toBe("written");
    // A set opened without a rack (before racks were kept) takes reports from any rack's topic.
    const before = uuid(2, "7a5c9100");
    const b = updateAddress(before, 0);
    await store.open(before, "u", Object.fromEntries([newEntry(b, "c1", window)]));
    expect(
      (await store.record(before, "u", { [entryKey(b, "c1")]: { ackedAt: 5 } }, { rackId: other })).outcome,
    ).toBe("written");
  });

  it("a wait's resume (AwaitWave's wave) is stored with its token by open and by awaitAnswers, handed back by reads and by a write of reports (returnSet); the next wait's replaces it, a wait without one drops it", async () => {
    const taskId = uuid(120, "7a5c0000");
    const a = updateAddress(taskId, 0, 0);
    const [k1, k2] = [entryKey(a, "c1"), entryKey(a, "c2")];
    const resume = {
      stage: 0,
      step: 0,
      action: "UPDATE_FIRMWARE",
      componentIds: ["c1"],
      versions: { c1: "2.0.0" },
      done: false,
      cursor: { group: 0, wave: 0, step: 0, attempt: 0, more: true, retry: false, waitSeconds: 0 },
      awaitSeconds: 300,
      awaitTimeoutSeconds: 1_805,
    };
    const opened = await store.open(
      taskId,
      "u",
      Object.fromEntries([newEntry(a, "c1", { sentAt: 1, deadline: 100 })]),
      0,
      { token: "tk-1", keys: [k1], heartbeatSeconds: 300, startedAt: 1, resume },
    );
    expect(opened.wake).toEqual({ token: "tk-1", keys: [k1], heartbeatSeconds: 300, startedAt: 1, resume });
    expect((await store.get(taskId, "u", 0))?.wake?.resume).toEqual(resume);
    // The write of the result that completes the wait hands the resume back with the set.
    const out = await store.record(taskId, "u", { [k1]: { result: ok } }, { returnSet: true, part: 0 });
    expect(out.set?.wake?.resume).toEqual(resume);
    // The next wave's wait, in the same record: its resume replaces the one before.
    const next = { ...resume, componentIds: ["c2"], cursor: { ...resume.cursor, wave: 1 } };
    await store.open(taskId, "u", Object.fromEntries([newEntry(a, "c2", { sentAt: 2, deadline: 200 })]), 0, {
      token: "tk-2",
      keys: [k2],
      resume: next,
    });
    expect((await store.get(taskId, "u", 0))?.wake).toEqual({ token: "tk-2", keys: [k2], resume: next });
    const again = await store.awaitAnswers(taskId, "u", { token: "tk-3", keys: [k2], resume }, 0);
    expect(again?.wake?.resume).toEqual(resume);
    // A wait of the definition before stores none: what was there is gone with the token it came with.
    await store.awaitAnswers(taskId, "u", { token: "tk-4", keys: [k2] }, 0);
    expect((await store.get(taskId, "u", 0))?.wake).toEqual({ token: "tk-4", keys: [k2] });
  });

  it("a wait's resume is stored deflated (binary, a wave's ids kept once), not as its JSON: 18 components' wave in under a third of its JSON's bytes", async () => {
    const taskId = uuid(121, "7a5c0000");
    const a = updateAddress(taskId, 0, 2);
    const ids = Array.from({ length: 18 }, (_, i) => uuid(i + 1, "c0a70000"));
    const resume = {
      stage: 2,
      step: 0,
      action: "UPDATE_FIRMWARE",
      componentIds: ids,
      types: Object.fromEntries(ids.map((c) => [c, "COMPUTE"])),
      versions: Object.fromEntries(ids.map((c) => [c, "1.2.3-build.45"])),
      done: false,
      cursor: { group: 2, wave: 0, step: 0, attempt: 0, more: true, retry: false, waitSeconds: 0 },
      awaitSeconds: 300,
      awaitTimeoutSeconds: 1_805,
    };
    const entries = Object.fromEntries(ids.map((c) => newEntry(a, c, { sentAt: 1, deadline: 100 })));
    await store.open(taskId, "u", entries, 2, {
      token: "tk-z",
      keys: [entryKey(a, ids[0] as string)],
      resume,
    });
    const raw = await DynamoDBDocumentClient.from(client).send(
      new GetCommand({ TableName: names.tasks, Key: { id: `cmds#${taskId}#u.2` } }),
    );
    const stored = (raw.Item?.w as { r?: unknown } | undefined)?.r;
    expect(stored).toBeInstanceOf(Uint8Array);
    const json = Buffer.byteLength(JSON.stringify(resume));
    expect(json).toBeGreaterThan(2_500);
    expect((stored as Uint8Array).length * 3).toBeLessThan(json);
    expect((await store.get(taskId, "u", 2))?.wake?.resume).toEqual(resume);
  });

  it("a redelivered batch of a step's results after the next step's wait stored its token in the same record wakes nothing: the wait woken is only ever the one whose keys were answered, with its own resume", async () => {
    const taskId = uuid(121, "7a5c0000");
    const a = updateAddress(taskId, 0, 0);
    const [k1, k2] = [entryKey(a, "c1"), entryKey(a, "c2")];
    const woken: { token: string; output: unknown }[] = [];
    const waker = {
      wake: async (token: string, output: unknown) => void woken.push({ token, output }),
      heartbeat: async () => {},
    };
    const result = (componentId: string) => ({
      message: {
        v: 1,
        type: "result",
        ok: true,
        version: "2.0.0",
        requestId: commandRequestId(a, componentId),
        componentId,
      },
      at: 10,
    });
    // Step 1 (c1) waits with its resume; its result wakes it with that resume and its answer.
    await store.open(
      taskId,
      "u",
      Object.fromEntries([newEntry(a, "c1", { sentAt: 1, deadline: 100_000 })]),
      0,
      { token: "tk-step1", keys: [k1], resume: { step: "one" } },
    );
    expect(await createReportRecorder(store, undefined, waker).record([result("c1")])).toEqual(["recorded"]);
    expect(woken.map((w) => w.token)).toEqual(["tk-step1"]);
    expect(woken[0]?.output).toMatchObject({ step: "one", answers: { entries: { [k1]: { resultAt: 10 } } } });
    // The judging wait sends step 2 (c2) into the same record, its token and resume replacing step 1's.
    await store.open(
      taskId,
      "u",
      Object.fromEntries([newEntry(a, "c2", { sentAt: 2, deadline: 100_000 })]),
      0,
      { token: "tk-step2", keys: [k2], resume: { step: "two" } },
    );
    // Step 1's batch again, to a receiver that never saw it (another container): nothing woken.
    expect(await createReportRecorder(store, undefined, waker).record([result("c1")])).toEqual(["ignored"]);
    expect(woken).toHaveLength(1);
    // Step 2's own result wakes step 2's wait, with step 2's resume and its answer alone.
    expect(await createReportRecorder(store, undefined, waker).record([result("c2")])).toEqual(["recorded"]);
    expect(woken.map((w) => w.token)).toEqual(["tk-step1", "tk-step2"]);
    const output = woken[1]?.output as { step: string; answers: { entries: Record<string, unknown> } };
    expect(output.step).toBe("two");
    expect(Object.keys(output.answers.entries)).toEqual([k2]);
  });
});
