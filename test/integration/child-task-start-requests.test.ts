/**
 * The child task's start on DynamoDB (moto), request by request: AcquireLock is one read of the
 * task and ONE TransactWriteItems (the rack's lock and the task RUNNING, both or neither:
 * DynamoTaskStore.saveTaskWithLock), where it was a read and two writes; and what the
 * transaction answers: a task that moved → 'stale' (the lock not taken, whoever holds it), another
 * task's live lock → 'held' (nothing written), an expired one is taken, the task's own is extended.
 * CheckPreflight, once every answer is in: the task with its answers, then the rack's readiness and
 * the images of its updates in ONE BatchGetItem (DynamoFirmwareImageStore.getImagesWithRack;
 * they were a GetItem and a BatchGetItem), then the report's write.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { DynamoCommandSetStore } from "../../src/adapters/dynamodb/command-set-store.js";
import type { StepDeps } from "../../src/app/child-task/deps.js";
import { lockTtlMs } from "../../src/app/child-task/lock.js";
import { acquireLockAndAsk, checkQueries } from "../../src/app/child-task/preflight.js";
import { DEFAULT_CHILD_TASK_SETTINGS } from "../../src/app/child-task/settings.js";
import { silentLogger } from "../../src/app/observability.js";
import { entryKey, newEntry, queryAddress } from "../../src/domain/command-sets.js";
import { plannedImage } from "../../src/domain/firmware-images.js";
import { rackConflictMessage } from "../../src/domain/step-errors.js";
import type { Task } from "../../src/domain/task.js";
import { pendingTask } from "../support/domain-fixtures.js";
import { imageRecord } from "../support/memory-images.js";
import { countedStores } from "../support/moto.js";

const db = countedStores("start");

const settings = { ...DEFAULT_CHILD_TASK_SETTINGS };
const NOW = 7_000_000;
const TTL = lockTtlMs(settings, 2);

async function storedPendingTask(overrides: Partial<Task> = {}): Promise<Task> {
  const task = pendingTask({ id: randomUUID(), rackId: randomUUID(), ...overrides });
  await db.stores.tasks.createTask(task);
  return task;
}

const stored = async (id: string) => (await db.stores.tasks.getTasks([id]))[0] as Task;

function deps(): StepDeps {
  return {
    tasks: db.stores.tasks,
    locks: db.stores.locks,
    commands: new DynamoCommandSetStore(db.stores.doc, db.names.tasks),
    clock: () => NOW,
    logger: silentLogger,
    publisher: { publish: async () => {} },
  } as unknown as StepDeps;
}

describe("AcquireLock on DynamoDB: one read and one transaction", () => {
  it("a task's start: BatchGetItem (the task), TransactWriteItems (its lock and RUNNING), nothing else", async () => {
    const task = await storedPendingTask();
    db.sent.length = 0;
    const out = await acquireLockAndAsk(deps(), {
      step: "acquireLock",
      taskId: task.id,
      rackId: task.rackId,
      settings,
      ask: "wait",
    });
    expect(out).toMatchObject({ status: "acquired", unsent: true });
    expect(db.sent).toEqual(["BatchGetItemCommand", "TransactWriteItemsCommand"]);
    expect(await stored(task.id)).toMatchObject({ status: "RUNNING", startedAt: NOW, updatedAt: NOW });
    expect(await db.stores.locks.get(task.rackId)).toEqual({ owner: task.id, expiresAt: NOW + TTL });

    // Retried (the task RUNNING): the take alone (PutItem), the task not written.
    db.sent.length = 0;
    await acquireLockAndAsk(deps(), {
      step: "acquireLock",
      taskId: task.id,
      rackId: task.rackId,
      settings,
      ask: "wait",
    });
    expect(db.sent).toEqual(["BatchGetItemCommand", "PutItemCommand"]);
    expect(await stored(task.id)).toMatchObject({ status: "RUNNING", updatedAt: NOW });
  });

  it("a rack another task holds: RackLockHeld, the task still PENDING, the other's lock as it was", async () => {
    const task = await storedPendingTask();
    await db.stores.locks.acquire(task.rackId, "t-other", 600_000, NOW - 1);
    await expect(
      acquireLockAndAsk(deps(), { step: "acquireLock", taskId: task.id, rackId: task.rackId, settings }),
    ).rejects.toMatchObject({ name: "RackLockHeld", message: rackConflictMessage(task.rackId) });
    expect(await stored(task.id)).toMatchObject({ status: "PENDING", updatedAt: 10 });
    expect(await db.stores.locks.get(task.rackId)).toEqual({
      owner: "t-other",
      expiresAt: NOW - 1 + 600_000,
    });
  });
});

describe("CheckPreflight on DynamoDB: the rack's readiness and the images in one BatchGetItem", () => {
  it("a done preflight: the task with its answers (one read), the rack and every image (one read), the report (one write); the plan's images as registered; a component's readiness read with them", async () => {
    const task = await storedPendingTask({ status: "RUNNING", startedAt: NOW });
    await db.stores.inventory.upsertRacks([
      {
        id: task.rackId,
        name: "rack-start",
        components: [
          { id: "c-0", type: "COMPUTE" },
          { id: "c-1", type: "COMPUTE" },
        ],
      },
    ]);
    const image = imageRecord({ componentType: "COMPUTE", version: "2.0.0" });
    await db.stores.images.registerImage(image);
    const commands = new DynamoCommandSetStore(db.stores.doc, db.names.tasks);
    const q = queryAddress(task.id, 0);
    await commands.open(
      task.id,
      "q",
      Object.fromEntries(
        task.componentIds.map((id) => newEntry(q, id, { sentAt: NOW - 10, deadline: NOW + 60_000 })),
      ),
    );
    await commands.record(
      task.id,
      "q",
      Object.fromEntries(task.componentIds.map((id) => [entryKey(q, id), { status: { version: "1.0.0" } }])),
    );
    const check = () =>
      checkQueries(
        {
          ...deps(),
          commands,
          readiness: db.stores.readiness,
          images: db.stores.images,
          runs: { recordPriorVersions: async () => "recorded" },
        } as unknown as StepDeps,
        {
          step: "checkQueries",
          taskId: task.id,
          rackId: task.rackId,
          settings,
          preflight: { done: false, deadline: NOW + 60_000, polls: 0, waitSeconds: 1 },
          sendFirst: "wait",
        },
      );
    db.sent.length = 0;
    const plan = await check();
    expect(db.sent).toEqual(["BatchGetItemCommand", "BatchGetItemCommand", "PutItemCommand"]);
    expect(plan.groups?.map((g) => [g.componentIds, g.facts?.images])).toEqual([
      [["c-0", "c-1"], [plannedImage(image)]],
    ]);

    // Not ready in the inventory: the same one read says so.
    await db.stores.readiness.setReadiness("c-1", { state: "MAINTENANCE", reason: "in maintenance" });
    const rack = await db.stores.images.getImagesWithRack([image], task.rackId);
    expect(rack.components.find((c) => c.id === "c-1")?.readiness).toEqual({
      state: "MAINTENANCE",
      reason: "in maintenance",
    });
    expect(rack.images).toEqual([image]);
  });
});

describe("DynamoTaskStore.saveTaskWithLock", () => {
  const started = (t: Task): Task => ({ ...t, status: "RUNNING", startedAt: NOW, updatedAt: NOW });

  it("saved: the task and the lock; the task's own lock is extended", async () => {
    const task = await storedPendingTask();
    await db.stores.locks.acquire(task.rackId, task.id, 1000, NOW - 500);
    expect(await db.stores.tasks.saveTaskWithLock(started(task), 10, TTL, NOW)).toBe("saved");
    expect(await stored(task.id)).toMatchObject({ status: "RUNNING" });
    expect(await db.stores.locks.get(task.rackId)).toEqual({ owner: task.id, expiresAt: NOW + TTL });
  });

  it("held: another task's live lock, nothing written; an expired one (its holder crashed) is taken", async () => {
    const task = await storedPendingTask();
    await db.stores.locks.acquire(task.rackId, "t-other", 1000, NOW);
    expect(await db.stores.tasks.saveTaskWithLock(started(task), 10, TTL, NOW)).toBe("held");
    expect(await stored(task.id)).toMatchObject({ status: "PENDING", updatedAt: 10 });
    expect(await db.stores.tasks.saveTaskWithLock(started(task), 10, TTL, NOW + 1000)).toBe("saved");
    expect(await db.stores.locks.get(task.rackId)).toEqual({ owner: task.id, expiresAt: NOW + 1000 + TTL });
  });

  it("stale (the task moved), whoever holds the lock: nothing written, the lock not taken; not-found", async () => {
    const task = await storedPendingTask();
    expect(await db.stores.tasks.saveTaskWithLock(started(task), 9, TTL, NOW)).toBe("stale");
    expect(await db.stores.locks.get(task.rackId)).toBeUndefined();
    await db.stores.locks.acquire(task.rackId, "t-other", 1000, NOW);
    expect(await db.stores.tasks.saveTaskWithLock(started(task), 9, TTL, NOW)).toBe("stale");
    expect(await stored(task.id)).toMatchObject({ status: "PENDING", updatedAt: 10 });
    expect(await db.stores.tasks.saveTaskWithLock(started({ ...task, id: randomUUID() }), 10, TTL, NOW)).toBe(
      "not-found",
    );
  });
});
