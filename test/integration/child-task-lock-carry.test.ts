/**
 * AcquireLock from the task its execution's input carries (ChildTaskInput.task, lock.ts
 * `carriedTask`), on DynamoDB (moto), request by request. The submitter holds the task item it
 * just created (version included) when it starts the execution, so a task's start is ONE
 * TransactWriteItems (the lock and the task RUNNING, pinned on that version) where it was a read
 * and that transaction. The guarantees of the read hold:
 * - the fold: the stored task, the lock and the step's answer are what the read gives;
 * - an input without a task (a submitter from before, a task too large to carry) or with another
 *   task's: read as before;
 * - a carried task that is stale (a cancel ended it, or decided its ending, after its submission;
 *   its version moved for another reason): the write is refused, the task read again, and the
 *   answer is the read's (finished, TaskEnded; started from the stored task, what moved kept);
 * - a retried step after its write (stored RUNNING, carried PENDING): the take alone, started once;
 * - a carried task that would answer with no write (before its start_time, past its end_time) is
 *   not used: a task ended before its start_time finishes, it does not wait; one started in time
 *   whose window closed since takes its lock, it does not fail;
 * - a queued task on a held rack: one request a try; cancelled during the wait, the next try with
 *   the same input finishes (the loop ends) or fails with TaskEnded.
 * Requests are counted on the stores' client (countedStores), each step call apart. Through the
 * definition (the real ASL on the local stack, its input made by the product's submitter): the
 * input carries the task as created, AcquireLock's requests are [TransactWriteItems]; a queued
 * task whose rack stays held, ended in the store during its wait with no stop of its execution
 * (a cancel whose StopExecution never came), ends its execution by itself (AlreadyFinished).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DynamoCommandSetStore } from "../../src/adapters/dynamodb/command-set-store.js";
import { CARRIED_TASK_MAX_BYTES, childTaskInput } from "../../src/adapters/stepfunctions/sfn-executor.js";
import type { StepDeps } from "../../src/app/child-task/deps.js";
import { lockTtlMs, MSG_WINDOW_CLOSED_BEFORE_START } from "../../src/app/child-task/lock.js";
import { acquireLockAndAsk } from "../../src/app/child-task/preflight.js";
import { carriedImageKeys } from "../../src/app/child-task/preflight-read.js";
import {
  type AcquireLockResult,
  type ChildTaskInput,
  DEFAULT_CHILD_TASK_SETTINGS,
} from "../../src/app/child-task/settings.js";
import { silentLogger } from "../../src/app/observability.js";
import type { Task } from "../../src/domain/task.js";
import { initialReport, serializeReport } from "../../src/domain/task-report.js";
import { pendingTask } from "../support/domain-fixtures.js";
import { countedStores } from "../support/moto.js";
import {
  type Harness,
  HEALTHY_FLEET_SETTINGS,
  id,
  rack,
  SMALL_RACK,
  SUCCEEDING_FLEET,
  startHarness,
  until,
  upgradeRequest,
  waitForTask,
} from "./child-task-harness.js";

const db = countedStores("lockcarry");

const settings = { ...DEFAULT_CHILD_TASK_SETTINGS };
const NOW = 7_000_000;
const TTL = lockTtlMs(settings, 2);
const READ = "BatchGetItemCommand";
const START = "TransactWriteItemsCommand";
const TAKE = "PutItemCommand";
/** A refused transaction: the adapter's GetItem that tells 'stale' from 'not-found', then the re-read. */
const REFUSED = [START, "GetItemCommand", READ];

/** A task as its submitter created it: stored, and the very item it then starts the execution with. */
async function submitted(overrides: Partial<Task> = {}): Promise<Task> {
  const task = pendingTask({ id: randomUUID(), rackId: randomUUID(), ...overrides });
  await db.stores.tasks.createTask(task);
  return task;
}

/** The execution's input as AcquireLock gets it ($$.Execution.Input): through JSON, as Step Functions passes it. */
const inputOf = (task: Task): ChildTaskInput => JSON.parse(JSON.stringify(childTaskInput(task, settings)));

const stored = async (id: string) => (await db.stores.tasks.getTasks([id]))[0] as Task;

/** A save of `task` as another writer makes it (a cancel, the dispatcher), pinned on what it was. */
async function moved(task: Task, change: Partial<Task>): Promise<Task> {
  const before = await stored(task.id);
  const next = { ...before, ...change, updatedAt: before.updatedAt + 10 };
  expect(await db.stores.tasks.saveTask(next, before.updatedAt)).toBe("saved");
  return next;
}

/** `clock`: a fixed instant, or a clock of the test's own. */
function deps(clock: number | (() => number) = NOW): StepDeps {
  return {
    tasks: db.stores.tasks,
    locks: db.stores.locks,
    commands: new DynamoCommandSetStore(db.stores.doc, db.names.tasks),
    clock: typeof clock === "number" ? () => clock : clock,
    logger: silentLogger,
    publisher: { publish: async () => {} },
  } as unknown as StepDeps;
}

/**
 * One AcquireLock (the definition's event: `ask` "wait", the input from the context object; `input`
 * undefined: the definitions before, which pass none): its answer or error, and its requests.
 */
async function acquire(task: Task, input: ChildTaskInput | undefined, clock: number | (() => number) = NOW) {
  db.sent.length = 0;
  const event = {
    step: "acquireLock" as const,
    taskId: task.id,
    rackId: task.rackId,
    settings,
    ask: "wait" as const,
    ...(input === undefined ? {} : { input }),
  };
  const settled: { out?: AcquireLockResult; error?: { name: string; message: string } } =
    await acquireLockAndAsk(deps(clock), event).then(
      (out) => ({ out }),
      (error: Error) => ({ error: { name: error.name, message: error.message } }),
    );
  return { ...settled, sent: [...db.sent] };
}

/** A stored task with what names it made alike, to compare two tasks' outcomes. */
const alike = (t: Task) => ({ ...t, id: "T", rackId: "R" });

describe("the fold: a submitted task's AcquireLock is ONE TransactWriteItems", () => {
  it("carried: the transaction alone; the stored task, the lock and the answer are what a read gives", async () => {
    const carried = await submitted();
    const read = await submitted();
    const fromInput = await acquire(carried, inputOf(carried));
    expect(fromInput.sent).toEqual([START]);
    const fromRead = await acquire(read, undefined);
    expect(fromRead.sent).toEqual([READ, START]);

    expect(fromInput.out).toMatchObject({ status: "acquired", unsent: true, asked: ["c-0", "c-1"] });
    expect(fromInput.out).toEqual(fromRead.out);
    expect(await stored(carried.id)).toMatchObject({ status: "RUNNING", startedAt: NOW, updatedAt: NOW });
    expect(alike(await stored(carried.id))).toEqual(alike(await stored(read.id)));
    expect(await db.stores.locks.get(carried.rackId)).toEqual({ owner: carried.id, expiresAt: NOW + TTL });
    expect(await db.stores.locks.get(read.rackId)).toEqual({ owner: read.id, expiresAt: NOW + TTL });
  });

  it("an input without a task (a submitter from before, a task too large), or with another task's: read as before", async () => {
    const task = await submitted();
    const { task: _, ...older } = inputOf(task);
    expect(older).not.toHaveProperty("task");
    expect((await acquire(task, older)).sent).toEqual([READ, START]);
    expect(await stored(task.id)).toMatchObject({ status: "RUNNING", startedAt: NOW });

    const other = await submitted();
    const mine = await submitted();
    const crossed = await acquire(mine, { ...inputOf(mine), task: other });
    expect(crossed.sent).toEqual([READ, START]);
    expect(await stored(mine.id)).toMatchObject({ status: "RUNNING" });
    expect(await stored(other.id)).toMatchObject({ status: "PENDING", updatedAt: 10 });
    expect(await db.stores.locks.get(other.rackId)).toBeUndefined();

    const large = await submitted({ description: "x".repeat(CARRIED_TASK_MAX_BYTES) });
    const input = inputOf(large);
    expect(input).not.toHaveProperty("task");
    expect((await acquire(large, input)).sent).toEqual([READ, START]);
  });
});

describe("a carried task that is stale: the write refused, the task read again, the read's answer", () => {
  it("cancelled after its submission (TERMINATED): finished, no lock taken, the task as the cancel left it", async () => {
    const task = await submitted();
    const ended = await moved(task, { status: "TERMINATED", message: "task cancelled", finishedAt: NOW - 1 });
    const carried = await acquire(task, inputOf(task));
    expect(carried).toEqual({ out: { status: "finished" }, sent: REFUSED });
    expect(await acquire(task, undefined)).toEqual({ out: { status: "finished" }, sent: [READ] });
    expect(await stored(task.id)).toEqual(ended);
    expect(await db.stores.locks.get(task.rackId)).toBeUndefined();
  });

  it("its ending decided by a cancel after its submission: TaskEnded, no lock taken, nothing written", async () => {
    const task = await submitted();
    const ending = await moved(task, { ending: { status: "TERMINATED", message: "cancelled", at: NOW - 1 } });
    const error = { name: "TaskEnded", message: `task ${task.id} is being ended (TERMINATED)` };
    expect(await acquire(task, inputOf(task))).toEqual({ error, sent: REFUSED });
    expect(await acquire(task, undefined)).toEqual({ error, sent: [READ] });
    expect(await stored(task.id)).toEqual(ending);
    expect(await db.stores.locks.get(task.rackId)).toBeUndefined();
  });

  it("moved for another reason (its execution id saved): started from the task as stored, what moved kept", async () => {
    const task = await submitted();
    await moved(task, { executionId: "arn:aws:states:us-east-1:0:execution:m:saved-since" });
    const carried = await acquire(task, inputOf(task));
    expect(carried.out).toMatchObject({ status: "acquired" });
    expect(carried.sent).toEqual([...REFUSED, START]);
    expect(await stored(task.id)).toMatchObject({
      status: "RUNNING",
      startedAt: NOW,
      executionId: "arn:aws:states:us-east-1:0:execution:m:saved-since",
    });
    expect(await db.stores.locks.get(task.rackId)).toEqual({ owner: task.id, expiresAt: NOW + TTL });
  });

  it("carried with its ending decided (a re-submission's), ended since: finished, as a read answers, not TaskEnded", async () => {
    const task = await submitted();
    const ending = await moved(task, { ending: { status: "TERMINATED", message: "cancelled", at: NOW - 1 } });
    await moved(task, { status: "TERMINATED", message: "cancelled", finishedAt: NOW - 1 });
    expect(await acquire(task, inputOf(ending))).toEqual({ out: { status: "finished" }, sent: [READ] });
  });

  it("gone (its item deleted): TaskNotFound, as a read answers", async () => {
    const task = pendingTask({ id: randomUUID(), rackId: randomUUID() });
    const error = { name: "TaskNotFound", message: `task ${task.id} not found` };
    expect(await acquire(task, inputOf(task))).toEqual({ error, sent: [START, "GetItemCommand"] });
    expect(await acquire(task, undefined)).toEqual({ error, sent: [READ] });
    expect(await db.stores.locks.get(task.rackId)).toBeUndefined();
  });
});

describe("a retried or re-driven AcquireLock", () => {
  it("retried after its write (stored RUNNING, carried PENDING): the take alone, the task started once", async () => {
    const task = await submitted();
    const input = inputOf(task);
    expect((await acquire(task, input)).sent).toEqual([START]);
    const retried = await acquire(task, input, NOW + 5000);
    expect(retried.out).toMatchObject({ status: "acquired" });
    expect(retried.sent).toEqual([...REFUSED, TAKE]);
    expect(await stored(task.id)).toMatchObject({ status: "RUNNING", startedAt: NOW, updatedAt: NOW });
    expect(await db.stores.locks.get(task.rackId)).toEqual({ owner: task.id, expiresAt: NOW + 5000 + TTL });
  });

  it("retried after the task moved on (its report since): the first ask made from the task as stored, not as carried", async () => {
    /** c-0 to 2.0.0 and c-1 to 3.0.0, those in `skipped` found at their target by the preflight. */
    const report = (skipped: string[] = []) => {
      const r = initialReport(
        [
          { id: "c-0", type: "COMPUTE", targetVersion: "2.0.0" },
          { id: "c-1", type: "COMPUTE", targetVersion: "3.0.0" },
        ],
        undefined,
        false,
      );
      for (const c of r.components) if (skipped.includes(c.id)) c.status = "SKIPPED";
      return serializeReport(r);
    };
    const task = await submitted({ report: report() });
    const input = inputOf(task);
    await moved(task, { status: "RUNNING", startedAt: NOW - 1000, report: report(["c-1"]) });
    const retried = await acquire(task, input);
    expect(retried.sent).toEqual([...REFUSED, TAKE]);
    expect(carriedImageKeys(task)).toEqual(["COMPUTE#2.0.0#", "COMPUTE#3.0.0#"]);
    expect(retried.out).toMatchObject({ status: "acquired", imageKeys: ["COMPUTE#2.0.0#"] });
  });

  it("a carried RUNNING task (a re-drive's): not used, the task read, the take alone", async () => {
    const task = await submitted({ status: "RUNNING", startedAt: NOW - 1000 });
    const redriven = await acquire(task, inputOf(task));
    expect(redriven.out).toMatchObject({ status: "acquired" });
    expect(redriven.sent).toEqual([READ, TAKE]);

    // Ended since (the take alone is not pinned on the task: a carried RUNNING one must not decide it).
    const ended = await submitted({ status: "RUNNING", startedAt: NOW - 1000 });
    await moved(ended, { status: "TERMINATED", message: "task cancelled", finishedAt: NOW - 1 });
    expect(await acquire(ended, inputOf(ended))).toEqual({ out: { status: "finished" }, sent: [READ] });
    expect(await db.stores.locks.get(ended.rackId)).toBeUndefined();
  });
});

describe("a store without saveTaskWithLock (the take and the write apart, the take not pinned)", () => {
  /** The adapter's task store less its transaction. */
  const apart = () => {
    const tasks = db.stores.tasks;
    return {
      getTasks: tasks.getTasks.bind(tasks),
      saveTask: tasks.saveTask.bind(tasks),
    };
  };

  it("the carried task is not used: read, then the take and the write; a cancelled one finishes, no lock taken", async () => {
    const run = async (task: Task) => {
      db.sent.length = 0;
      const out = await acquireLockAndAsk({ ...deps(), tasks: apart() } as unknown as StepDeps, {
        step: "acquireLock",
        taskId: task.id,
        rackId: task.rackId,
        settings,
        ask: "wait",
        input: inputOf(task),
      });
      return { out, sent: [...db.sent] };
    };
    const task = await submitted();
    const started = await run(task);
    expect(started.out).toMatchObject({ status: "acquired" });
    expect(started.sent).toEqual([READ, TAKE, TAKE]);
    expect(await stored(task.id)).toMatchObject({ status: "RUNNING", startedAt: NOW });

    const cancelled = await submitted();
    await moved(cancelled, { status: "TERMINATED", message: "task cancelled", finishedAt: NOW - 1 });
    expect(await run(cancelled)).toEqual({ out: { status: "finished" }, sent: [READ] });
    expect(await db.stores.locks.get(cancelled.rackId)).toBeUndefined();
  });
});

describe("a carried task that would answer with no write is not used: the task is read", () => {
  it("ended before its start_time: finished, not a wait; one not ended waits, as before (one read)", async () => {
    const startTime = NOW + 3_600_000;
    const cancelled = await submitted({ status: "WAITING", startTime });
    await moved(cancelled, { status: "TERMINATED", message: "task cancelled", finishedAt: NOW - 1 });
    expect(await acquire(cancelled, inputOf(cancelled))).toEqual({
      out: { status: "finished" },
      sent: [READ],
    });

    const waiting = await submitted({ status: "WAITING", startTime });
    expect(await acquire(waiting, inputOf(waiting))).toEqual({
      out: { status: "waiting", waitSeconds: 3600 },
      sent: [READ],
    });
    // Its start_time come: the carried task, one request.
    expect((await acquire(waiting, inputOf(waiting), startTime)).sent).toEqual([START]);
    expect(await stored(waiting.id)).toMatchObject({ status: "RUNNING", startedAt: startTime });
  });

  it("past its end_time: started in time (stored RUNNING) takes its lock; not started fails MaintenanceWindowClosed", async () => {
    const started = await submitted({ endTime: NOW - 1 });
    await moved(started, { status: "RUNNING", startedAt: NOW - 10_000 });
    const late = await acquire(started, inputOf(started));
    expect(late.out).toMatchObject({ status: "acquired" });
    expect(late.sent).toEqual([READ, TAKE]);

    // Decided at one instant: a clock that passes end_time between two reads does not fail a
    // carried task with no write (it was inside its window when it was taken to the write).
    const edge = await submitted({ endTime: NOW + 1 });
    let tick = NOW;
    const ticking = await acquire(edge, inputOf(edge), () => tick++);
    expect(ticking.out).toMatchObject({ status: "acquired" });
    expect(ticking.sent).toEqual([START]);

    const never = await submitted({ endTime: NOW - 1 });
    expect(await acquire(never, inputOf(never))).toEqual({
      error: { name: "MaintenanceWindowClosed", message: MSG_WINDOW_CLOSED_BEFORE_START },
      sent: [READ],
    });
    expect(await db.stores.locks.get(never.rackId)).toBeUndefined();
  });
});

describe("a queued task on a held rack (the lock-wait loop: the same input each try)", () => {
  async function queued() {
    const task = await submitted({ status: "WAITING", queueExpiresAt: NOW + 600_000 });
    // Held past the queue timeout.
    await db.stores.locks.acquire(task.rackId, "t-other", 6_000_000, NOW - 1);
    return { task, input: inputOf(task) };
  }

  it("waits with ONE request a try; cancelled during the wait, the next try finishes: the loop ends", async () => {
    const { task, input } = await queued();
    for (const at of [NOW, NOW + 30_000]) {
      expect(await acquire(task, input, at)).toEqual({
        out: { status: "waiting", waitSeconds: 30 },
        sent: [START],
      });
    }
    expect(await stored(task.id)).toMatchObject({ status: "WAITING", updatedAt: 10 });
    await moved(task, { status: "TERMINATED", message: "task cancelled", finishedAt: NOW + 40_000 });
    expect(await acquire(task, input, NOW + 60_000)).toEqual({ out: { status: "finished" }, sent: REFUSED });
    expect(await db.stores.locks.get(task.rackId)).toMatchObject({ owner: "t-other" });
  });

  it("its ending decided during the wait: the next try fails with TaskEnded (RecordFailure ends it)", async () => {
    const { task, input } = await queued();
    expect((await acquire(task, input)).out).toEqual({ status: "waiting", waitSeconds: 30 });
    await moved(task, { ending: { status: "TERMINATED", message: "cancelled", at: NOW + 1 } });
    expect(await acquire(task, input, NOW + 30_000)).toEqual({
      error: { name: "TaskEnded", message: `task ${task.id} is being ended (TERMINATED)` },
      sent: REFUSED,
    });
  });

  it("moved for another reason during the wait: read again, still held, waits; its queue timeout decided as a read would", async () => {
    const { task, input } = await queued();
    await moved(task, { executionId: "arn:aws:states:us-east-1:0:execution:m:saved-since" });
    expect(await acquire(task, input)).toEqual({
      out: { status: "waiting", waitSeconds: 30 },
      sent: [...REFUSED, START],
    });
    expect(await acquire(task, input, NOW + 600_000)).toEqual({
      error: {
        name: "QueueTimeout",
        message: `rack ${task.rackId} stayed busy with another task until the queue timeout expired`,
      },
      sent: [...REFUSED, START],
    });
    expect(await stored(task.id)).toMatchObject({ status: "WAITING" });
  });
});

describe("through the definition (the real ASL on the local stack, the submitter's input)", () => {
  const P = "1c0c0000";
  /** Each AcquireLock: its task, the input it got, its answer, the requests it made. */
  const calls: { taskId: string; input?: Partial<ChildTaskInput>; out?: unknown; sent: string[] }[] = [];
  const states = new Map<string, string[]>();
  const inLock = new AsyncLocalStorage<string[]>();
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({
      label: "lockcarryasl",
      racks: [rack(P, 1, SMALL_RACK), rack(P, 2, SMALL_RACK)],
      fleet: SUCCEEDING_FLEET,
      settings: HEALTHY_FLEET_SETTINGS,
      aroundStep: (event, run) => {
        if (event.step !== "acquireLock") return run();
        const call: (typeof calls)[number] = { taskId: event.taskId, sent: [] };
        if (event.input !== undefined) call.input = event.input;
        calls.push(call);
        return inLock.run(call.sent, async () => {
          const out = await run();
          call.out = out;
          return out;
        });
      },
      onStateEntered: (taskId, state) => states.set(taskId, [...(states.get(taskId) ?? []), state.name]),
    });
    h.client.middlewareStack.add(
      (next, context) => async (args) => {
        inLock.getStore()?.push(context.commandName ?? "?");
        return next(args);
      },
      { step: "initialize", name: "acquireLockRecorder" },
    );
  }, 60_000);
  afterAll(() => h?.close());

  it("a submitted task: the input carries it as created, AcquireLock's one request is the TransactWriteItems; it completes", async () => {
    const { taskIds } = await h.child.tasksApi.upgradeFirmware(upgradeRequest([id(P, 1, 0)]));
    const task = await waitForTask(h, taskIds[0] as string);
    expect(task.status).toBe("COMPLETED");
    const mine = calls.filter((c) => c.taskId === task.id);
    expect(mine.map((c) => c.sent)).toEqual([[START]]);
    expect(mine[0]?.input?.task).toMatchObject({
      id: task.id,
      rackId: id(P, 1, 0),
      status: "PENDING",
      updatedAt: task.createdAt,
    });
    expect(mine[0]?.out).toMatchObject({ status: "acquired" });
  });

  it("a queued task ended in the store during its wait (its execution not stopped): the next try finishes, the loop ends", async () => {
    await h.child.idle();
    const rackId = id(P, 2, 0);
    await h.stores.locks.acquire(rackId, "someone-else", 600_000, Date.now());
    const { taskIds } = await h.child.tasksApi.upgradeFirmware(
      upgradeRequest([rackId], { queueOptions: { conflictStrategy: "QUEUE", queueTimeoutSeconds: 600 } }),
    );
    const taskId = taskIds[0] as string;
    const mine = () => calls.filter((c) => c.taskId === taskId);
    const waited = () =>
      mine().filter((c) => (c.out as { status?: string } | undefined)?.status === "waiting");
    await until("two tries that found the rack held", () => waited().length >= 2);
    // Each try of the loop: the pinned write alone, from the same carried task.
    expect(waited().every((c) => c.sent.length === 1 && c.sent[0] === START)).toBe(true);
    expect(new Set(mine().map((c) => c.input?.task?.updatedAt)).size).toBe(1);

    const [task] = await h.stores.tasks.getTasks([taskId]);
    if (task === undefined) throw new Error("no task");
    const ended = {
      ...task,
      status: "TERMINATED" as const,
      message: "cancelled",
      updatedAt: task.updatedAt + 1,
    };
    expect(await h.stores.tasks.saveTask(ended, task.updatedAt)).toBe("saved");
    await until("the execution to end", () => h.child.executor.stats().running === 0);
    expect(mine().at(-1)).toMatchObject({ out: { status: "finished" }, sent: REFUSED });
    expect(mine().filter((c) => (c.out as { status?: string }).status === "finished")).toHaveLength(1);
    expect(states.get(taskId)?.at(-1)).toBe("AlreadyFinished");
    expect(await h.stores.locks.get(rackId)).toMatchObject({ owner: "someone-else" });
    await h.stores.locks.release(rackId, "someone-else");
  });
});
