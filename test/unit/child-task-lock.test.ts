/**
 * The rack lock taken once per task: a wave's step renews it only when the step could outlast the
 * lease AcquireLock granted (src/app/child-task/lock.ts), on an in-memory lock store that counts
 * its takes; and AcquireLock takes none for a task whose ending was decided.
 */
import { describe, expect, it } from "vitest";
import type { StepDeps } from "../../src/app/child-task/deps.js";
import { knownLeaseEnd, lockTtlMs, renewLockIfNeeded } from "../../src/app/child-task/lock.js";
import { recordOutcome } from "../../src/app/child-task/outcome.js";
import { acquireLockAndAsk } from "../../src/app/child-task/preflight.js";
import { DEFAULT_CHILD_TASK_SETTINGS } from "../../src/app/child-task/settings.js";
import { silentLogger } from "../../src/app/observability.js";
import type { BmcAddress } from "../../src/domain/bmc-topics.js";
import { rackConflictMessage } from "../../src/domain/step-errors.js";
import type { Task } from "../../src/domain/task.js";
import { initialReport, serializeReport } from "../../src/domain/task-report.js";
import { runningTask } from "../support/domain-fixtures.js";
import { memoryCommandSetStore, memoryLockStore, memoryTaskStore } from "../support/memory-child-task.js";

const settings = { ...DEFAULT_CHILD_TASK_SETTINGS };
const STARTED = 1_000_000;
const components = Array.from({ length: 39 }, (_, i) => `c-${i}`);
// The whole task (39 components, 8 at a time): (5 × 1800 + 60 + 60 + 300) s.
const WHOLE = lockTtlMs(settings, 39);
// One wave of 8 at the default update timeout: (1800 + 60 + 60 + 300) s.
const WAVE = lockTtlMs(settings, 8);

const task = (overrides: Partial<Task> = {}): Task =>
  runningTask({ componentIds: components, updatedAt: STARTED, startedAt: STARTED, ...overrides });

async function harness(running: Task = task()) {
  const inner = memoryLockStore();
  const tasks = memoryTaskStore();
  await tasks.createTask(running);
  const takes: { owner: string; ttlMs: number; now: number }[] = [];
  const locks = {
    ...inner,
    acquire: async (rackId: string, owner: string, ttlMs: number, now: number) => {
      takes.push({ owner, ttlMs, now });
      return inner.acquire(rackId, owner, ttlMs, now);
    },
  };
  // AcquireLock's take, at the task's start.
  await inner.acquire("r-1", "t-1", WHOLE, STARTED);
  return { deps: { locks, tasks } as unknown as StepDeps, takes, locks: inner };
}

const wave = { components: 8, timeoutSeconds: settings.updateTimeoutSeconds };
/** The holder as the plan carries it: the task's known lease (undefined: not known). */
const holder = (t: Task) => ({ taskId: t.id, rackId: t.rackId, leaseEnd: knownLeaseEnd(t, settings) });

describe("renewLockIfNeeded: the rack lock once per task", () => {
  it("the lease known from the task: startedAt + the whole task's ttl, less the grant's slack", () => {
    expect(WHOLE).toBe(9_420_000);
    expect(knownLeaseEnd(task(), settings)).toBe(STARTED + 9_420_000 - 60_000);
    expect(knownLeaseEnd(task({ startedAt: undefined }), settings)).toBeUndefined();
  });

  it("a wave the lease covers takes nothing: six waves of a rack, no request", async () => {
    const h = await harness();
    for (let w = 0; w < 6; w++) {
      expect(await renewLockIfNeeded(h.deps, holder(task()), settings, wave, STARTED + w * 60_000)).toBe(
        false,
      );
    }
    expect(h.takes).toEqual([]);
    expect(await h.locks.get("r-1")).toEqual({ owner: "t-1", expiresAt: STARTED + WHOLE });
  });

  it("a wave that could outlast the lease renews it for that wave at its worst", async () => {
    const h = await harness();
    // The last start the lease covers, then one ms later.
    const last = STARTED + WHOLE - 60_000 - WAVE;
    expect(await renewLockIfNeeded(h.deps, holder(task()), settings, wave, last)).toBe(false);
    expect(await renewLockIfNeeded(h.deps, holder(task()), settings, wave, last + 1)).toBe(true);
    expect(h.takes).toEqual([{ owner: "t-1", ttlMs: WAVE, now: last + 1 }]);
    expect(await h.locks.get("r-1")).toEqual({ owner: "t-1", expiresAt: last + 1 + WAVE });
  });

  it("a step with a longer timeout than the update's is covered at its own worst", async () => {
    const h = await harness();
    const long = { components: 8, timeoutSeconds: 9_000 };
    expect(await renewLockIfNeeded(h.deps, holder(task()), settings, long, STARTED)).toBe(true);
    expect(h.takes).toEqual([{ owner: "t-1", ttlMs: (9_000 + 420) * 1000, now: STARTED }]);
  });

  it("a task with no startedAt (its lease unknown) renews", async () => {
    const h = await harness();
    expect(
      await renewLockIfNeeded(h.deps, holder(task({ startedAt: undefined })), settings, wave, STARTED),
    ).toBe(true);
    expect(h.takes).toHaveLength(1);
  });

  it("a renewal that finds another task holding the rack fails with RackLockHeld", async () => {
    const h = await harness();
    const late = STARTED + WHOLE + 1;
    await h.locks.acquire("r-1", "t-other", WAVE, late);
    const err = await renewLockIfNeeded(h.deps, holder(task()), settings, wave, late).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ name: "RackLockHeld", message: rackConflictMessage("r-1") });
  });
});

describe("renewLockIfNeeded: a task a cancel ended while the step ran", () => {
  it.each([
    ["ended (TERMINATED)", { status: "TERMINATED" as const, endedAt: STARTED + 5 }],
    ["being ended", { ending: { status: "TERMINATED" as const, message: "cancelled", at: STARTED + 5 } }],
  ])("%s: the lock the cancel released is not kept (released again), TaskEnded", async (_what, ended) => {
    const h = await harness(task(ended as Partial<Task>));
    // The cancel released the lock; the step's renewal comes after.
    await h.locks.release("r-1", "t-1");
    const err = await renewLockIfNeeded(
      h.deps,
      holder(task({ startedAt: undefined })),
      settings,
      wave,
      STARTED,
    ).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: "TaskEnded", message: "task t-1 already ended" });
    expect(h.takes).toHaveLength(1);
    expect(await h.locks.get("r-1")).toBeUndefined();
  });
});

describe("AcquireLock: a task whose ending was decided", () => {
  it("takes no lock and asks nothing: TaskEnded, and RecordFailure ends it with that ending", async () => {
    const tasks = memoryTaskStore();
    const locks = memoryLockStore();
    const published: string[] = [];
    const ending = task({
      status: "PENDING",
      startedAt: undefined,
      report: serializeReport(initialReport([{ id: "c-0", type: "COMPUTE" }], "2.0.0", false)),
      componentIds: ["c-0"],
      ending: { status: "TERMINATED", message: "task cancelled", at: STARTED },
    });
    await tasks.createTask(ending);
    const deps = {
      tasks,
      locks,
      commands: memoryCommandSetStore(),
      clock: () => STARTED + 10,
      logger: silentLogger,
      firmware: { record: async () => {} },
      runs: { recordOutcome: async () => "recorded" as const },
      publisher: { publish: async ({ componentId }: BmcAddress) => void published.push(componentId) },
    } as unknown as StepDeps;
    const step = { step: "acquireLock" as const, taskId: "t-1", rackId: "r-1", settings };
    expect(await acquireLockAndAsk(deps, step).catch((e: unknown) => e)).toMatchObject({
      name: "TaskEnded",
      message: "task t-1 is being ended (TERMINATED)",
    });
    expect(await locks.get("r-1")).toBeUndefined();
    expect(published).toEqual([]);
    const recorded = await recordOutcome(deps, {
      step: "recordOutcome",
      taskId: "t-1",
      error: { Error: "TaskEnded", Cause: "task t-1 is being ended (TERMINATED)" },
    });
    expect(recorded).toEqual({ status: "TERMINATED" });
    expect((await tasks.getTasks(["t-1"]))[0]).toMatchObject({
      status: "TERMINATED",
      message: "task cancelled",
    });
  });
});
