/**
 * AcquireLock's start in one write: on a store with TaskStore.saveTaskWithLock, the rack's lock
 * and the task's RUNNING write are one call (one TransactWriteItems on DynamoDB), so the step is a
 * read and a write; the guarantees of the take as two calls hold:
 * - the lease is the whole task's (lockTtlMs), from the task's startedAt, which knownLeaseEnd
 *   counts from;
 * - a rack another task holds: nothing written, a QUEUE task waits (WAITING kept) until its queue
 *   timeout (QueueTimeout), a plain one fails with RackLockHeld;
 * - a retried AcquireLock (the task RUNNING) takes the lock again (the lease from now) and writes
 *   nothing;
 * - a task that moved between its read and the write (a cancel deciding its ending) is read again:
 *   no lock taken, TaskEnded; one that ended: finished, no lock.
 * Memory stores typed from the ports, every call recorded.
 */
import { describe, expect, it } from "vitest";
import type { StepDeps } from "../../src/app/child-task/deps.js";
import { knownLeaseEnd, lockTtlMs } from "../../src/app/child-task/lock.js";
import { acquireLockAndAsk } from "../../src/app/child-task/preflight.js";
import { DEFAULT_CHILD_TASK_SETTINGS } from "../../src/app/child-task/settings.js";
import { silentLogger } from "../../src/app/observability.js";
import type { RackLockStore, TaskStore } from "../../src/app/ports.js";
import { rackConflictMessage } from "../../src/domain/step-errors.js";
import type { Task } from "../../src/domain/task.js";
import { pendingTask } from "../support/domain-fixtures.js";
import { memoryCommandSetStore, memoryLockStore, memoryTaskStore } from "../support/memory-child-task.js";

const settings = { ...DEFAULT_CHILD_TASK_SETTINGS };
const NOW = 5_000_000;
const TTL = lockTtlMs(settings, 2);

/** `target`'s methods, each call pushed to `calls` as "<label>.<method>". */
function recorded<T extends object>(target: T, label: string, calls: string[]): T {
  return new Proxy(target, {
    get(obj, key, receiver) {
      const value = Reflect.get(obj, key, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.push(`${label}.${String(key)}`);
        return value.apply(obj, args);
      };
    },
  });
}

async function harness(task: Task, options: { joint?: boolean; before?: (t: TaskStore) => void } = {}) {
  const locks = memoryLockStore();
  const inner = memoryTaskStore(options.joint === false ? undefined : locks);
  await inner.createTask(task);
  const calls: string[] = [];
  const tasks = recorded(inner, "tasks", calls);
  const deps = {
    tasks,
    locks: recorded(locks, "locks", calls),
    commands: memoryCommandSetStore(),
    clock: () => NOW,
    logger: silentLogger,
    publisher: { publish: async () => {} },
  } as unknown as StepDeps;
  const step = {
    step: "acquireLock" as const,
    taskId: task.id,
    rackId: task.rackId,
    settings,
    ask: "wait" as const,
  };
  return {
    calls,
    locks: locks as RackLockStore,
    inner,
    run: () => acquireLockAndAsk(deps, step),
    stored: async () => (await inner.getTasks([task.id]))[0] as Task,
  };
}

describe("AcquireLock: the lock and the RUNNING write in one call", () => {
  it("a task's start is one read and one write (saveTaskWithLock): no separate take, no separate save", async () => {
    const h = await harness(pendingTask());
    expect(await h.run()).toMatchObject({ status: "acquired", unsent: true, asked: ["c-0", "c-1"] });
    expect(h.calls).toEqual(["tasks.getTasks", "tasks.saveTaskWithLock"]);
    const task = await h.stored();
    expect(task).toMatchObject({ status: "RUNNING", startedAt: NOW, message: "", updatedAt: NOW });
    // The lease the lock holds is the one the plan counts on, from the same instant.
    expect(await h.locks.get("r-1")).toEqual({ owner: "t-1", expiresAt: NOW + TTL });
    expect(knownLeaseEnd(task, settings)).toBe(NOW + TTL - 60_000);
  });

  it("a store without it: the take, then the write, as before (two calls)", async () => {
    const h = await harness(pendingTask(), { joint: false });
    expect(await h.run()).toMatchObject({ status: "acquired" });
    expect(h.calls).toEqual(["tasks.getTasks", "locks.acquire", "tasks.saveTask"]);
    expect(await h.stored()).toMatchObject({ status: "RUNNING", startedAt: NOW });
    expect(await h.locks.get("r-1")).toEqual({ owner: "t-1", expiresAt: NOW + TTL });
  });

  it("a retried AcquireLock (the task RUNNING): the take alone, the lease from now; nothing written", async () => {
    const h = await harness(pendingTask({ status: "RUNNING", startedAt: NOW - 1000, updatedAt: NOW - 1000 }));
    expect(await h.run()).toMatchObject({ status: "acquired" });
    expect(h.calls).toEqual(["tasks.getTasks", "locks.acquire"]);
    expect(await h.stored()).toMatchObject({
      status: "RUNNING",
      startedAt: NOW - 1000,
      updatedAt: NOW - 1000,
    });
    expect(await h.locks.get("r-1")).toEqual({ owner: "t-1", expiresAt: NOW + TTL });
  });

  it("a QUEUE task on a busy rack: nothing written, WAITING kept, it waits; after its queue timeout, QueueTimeout", async () => {
    const queued = pendingTask({ status: "WAITING", queueExpiresAt: NOW + 25_000 });
    const h = await harness(queued);
    await h.locks.acquire("r-1", "t-other", 600_000, NOW - 1);
    expect(await h.run()).toEqual({ status: "waiting", waitSeconds: 25 });
    expect(h.calls).toEqual(["tasks.getTasks", "tasks.saveTaskWithLock"]);
    expect(await h.stored()).toEqual(queued);
    expect(await h.locks.get("r-1")).toMatchObject({ owner: "t-other" });

    const late = await harness(pendingTask({ status: "WAITING", queueExpiresAt: NOW }));
    await late.locks.acquire("r-1", "t-other", 600_000, NOW - 1);
    await expect(late.run()).rejects.toMatchObject({
      name: "QueueTimeout",
      message: "rack r-1 stayed busy with another task until the queue timeout expired",
    });
    expect(await late.stored()).toMatchObject({ status: "WAITING" });
  });

  it("a plain task on a busy rack: RackLockHeld, nothing written", async () => {
    const h = await harness(pendingTask());
    await h.locks.acquire("r-1", "t-other", 600_000, NOW - 1);
    await expect(h.run()).rejects.toMatchObject({
      name: "RackLockHeld",
      message: rackConflictMessage("r-1"),
    });
    expect(await h.stored()).toMatchObject({ status: "PENDING", updatedAt: 10 });
  });

  it("a lock whose holder crashed (its lease ran out) is taken, with the task's start", async () => {
    const h = await harness(pendingTask());
    await h.locks.acquire("r-1", "t-crashed", 1000, NOW - 1000);
    expect(await h.run()).toMatchObject({ status: "acquired" });
    expect(await h.locks.get("r-1")).toEqual({ owner: "t-1", expiresAt: NOW + TTL });
    expect(await h.stored()).toMatchObject({ status: "RUNNING" });
  });

  it.each([
    [
      "its ending decided (a cancel)",
      { ending: { status: "TERMINATED" as const, message: "task cancelled", at: NOW - 1 } },
      { rejects: { name: "TaskEnded", message: "task t-1 is being ended (TERMINATED)" } },
    ],
    ["ended", { status: "TERMINATED" as const, finishedAt: NOW - 1 }, { result: { status: "finished" } }],
  ])(
    "a task %s between its read and the write: read again, no lock taken, nothing written",
    async (_what, moved, expected) => {
      const h = await harness(pendingTask());
      // The cancel lands after AcquireLock's read: the read returns the task as it was.
      const original = h.inner.getTasks.bind(h.inner);
      let reads = 0;
      h.inner.getTasks = async (ids) => {
        const out = await original(ids);
        if (reads++ === 0) {
          const [t] = out;
          await h.inner.saveTask({ ...(t as Task), ...moved, updatedAt: 11 }, 10);
        }
        return out;
      };
      const outcome = h.run();
      if ("rejects" in expected) await expect(outcome).rejects.toMatchObject(expected.rejects);
      else expect(await outcome).toEqual(expected.result);
      expect(h.calls).toEqual(["tasks.getTasks", "tasks.saveTaskWithLock", "tasks.getTasks"]);
      expect(await h.locks.get("r-1")).toBeUndefined();
      expect(await h.stored()).toMatchObject({ updatedAt: 11, ...moved });
    },
  );
});
