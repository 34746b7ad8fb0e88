/**
 * CheckPreflight's last write on DynamoDB (moto), request by request: a run child's report (each
 * component's version before) and the versions its run's target keeps for a rollback go in ONE
 * TransactWriteItems (DynamoTaskStore.saveTaskWithPriorVersions), where they were a PutItem of the
 * task and an UpdateItem of the target. What the two writes guaranteed, the transaction keeps:
 *   - the target's versions are set once, in any state: a retried or re-driven preflight (which
 *     may read versions a flash already changed) saves its report, the target keeps the first;
 *   - a target that is gone fails the step TaskMisconfigured, and nothing is written;
 *   - a task that moved meanwhile is read again and written again, the versions with it;
 *   - a task that ended meanwhile (an operator's cancel) writes nothing, on the task or its target;
 *   - a task that is no run child, and a store without the transaction: the writes as before.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { DynamoCommandSetStore } from "../../src/adapters/dynamodb/command-set-store.js";
import type { StepDeps } from "../../src/app/child-task/deps.js";
import { recordTaskOutcome } from "../../src/app/child-task/outcome.js";
import { checkQueries } from "../../src/app/child-task/preflight.js";
import { DEFAULT_CHILD_TASK_SETTINGS } from "../../src/app/child-task/settings.js";
import { silentLogger } from "../../src/app/observability.js";
import type { TaskStore } from "../../src/app/ports.js";
import { entryKey, newEntry, queryAddress } from "../../src/domain/command-sets.js";
import type { PriorVersion, Target } from "../../src/domain/model.js";
import type { Task } from "../../src/domain/task.js";
import { parseReport } from "../../src/domain/task-report.js";
import { pendingTask } from "../support/domain-fixtures.js";
import { runWithTargets, uuid } from "../support/dynamodb-fixtures.js";
import { imageRecord } from "../support/memory-images.js";
import { countedStores } from "../support/moto.js";

const db = countedStores("priors");

beforeAll(async () => {
  await db.stores.images.registerImage(imageRecord({ componentType: "COMPUTE", version: "2.0.0" }));
});

const settings = { ...DEFAULT_CHILD_TASK_SETTINGS };
const CREATED = 1_700_000_000_000;
const AT = CREATED + 1;
const NOW = AT + 10;

/** The versions c-0 and c-1 ran before, as the target keeps them. */
const priorsOf = (c0: string, c1: string): PriorVersion[] => [
  { componentId: "c-0", type: "COMPUTE", version: c0, targetVersion: "2.0.0" },
  { componentId: "c-1", type: "COMPUTE", version: c1, targetVersion: "2.0.0" },
];

const stored = async (id: string) => (await db.stores.tasks.getTasks([id]))[0] as Task;
const versionsBefore = (t: Task) => parseReport(t.report).components.map((c) => c.versionBefore);

/**
 * Case `n`: a RUNNING task of two COMPUTE components on a rack of its own, a run child of a
 * SUBMITTED target (unless `child` is false), its BMCs' answers to the first ask stored.
 */
async function runChild(n: number, child = true) {
  const { run, targets } = runWithTargets(uuid(n, "9f000000"), { phaseSizes: [1], createdAt: CREATED });
  await db.stores.runs.createRun(run, targets);
  const target = targets[0] as Target;
  const task = pendingTask({
    id: uuid(n, "9fa50000"),
    rackId: randomUUID(),
    status: "RUNNING",
    startedAt: AT,
    updatedAt: AT,
    ...(child ? { runId: run.id, targetId: target.id, targetPhaseIndex: 0 } : {}),
  });
  expect(await db.stores.runs.claimTarget(target, 60_000, AT)).toBe("claimed");
  expect(await db.stores.runs.recordSubmitted(run.id, target.id, task.id, AT)).toBe("recorded");
  await db.stores.tasks.createTask(task);
  await db.stores.inventory.upsertRacks([
    {
      id: task.rackId,
      name: `rack-${n}`,
      components: [
        { id: "c-0", type: "COMPUTE" },
        { id: "c-1", type: "COMPUTE" },
      ],
    },
  ]);
  const q = queryAddress(task.id, 0);
  await commands().open(
    task.id,
    "q",
    Object.fromEntries(
      task.componentIds.map((id) => newEntry(q, id, { sentAt: AT, deadline: NOW + 60_000 })),
    ),
  );
  await answer(task, "1.0.0", "1.1.0");
  return { run, target, task };
}

/** c-0 and c-1 answer the first ask with these versions (again: a re-driven preflight's answers). */
async function answer(task: Task, c0: string, c1: string): Promise<void> {
  const q = queryAddress(task.id, 0);
  await commands().record(
    task.id,
    "q",
    {
      [entryKey(q, "c-0")]: { status: { version: c0 } },
      [entryKey(q, "c-1")]: { status: { version: c1 } },
    },
    {},
  );
}

const commands = () => new DynamoCommandSetStore(db.stores.doc, db.names.tasks);

/** CheckPreflight with every answer in, on `tasks` (the DynamoDB task store unless given). */
function check(task: Task, tasks: TaskStore = db.stores.tasks) {
  return checkQueries(
    {
      tasks,
      locks: db.stores.locks,
      commands: commands(),
      readiness: db.stores.readiness,
      images: db.stores.images,
      runs: db.stores.runs,
      clock: () => NOW,
      logger: silentLogger,
      publisher: { publish: async () => {} },
    } as unknown as StepDeps,
    {
      step: "checkQueries",
      taskId: task.id,
      rackId: task.rackId,
      settings,
      preflight: { done: false, deadline: NOW + 60_000, polls: 0, waitSeconds: 1 },
    },
  );
}

/** The DynamoDB task store with `change` in place of its methods (the rest its own). */
function taskStoreWith(change: Partial<TaskStore>): TaskStore {
  return Object.assign(Object.create(db.stores.tasks) as TaskStore, change);
}

/** The DynamoDB task store whose first saveTaskWithPriorVersions lets `meanwhile` run just before it. */
function racedBy(meanwhile: () => Promise<unknown>): TaskStore {
  let first = true;
  return taskStoreWith({
    async saveTaskWithPriorVersions(...args) {
      if (first) {
        first = false;
        await meanwhile();
      }
      return db.stores.tasks.saveTaskWithPriorVersions(...args);
    },
  });
}

/** A done preflight's reads before its write: the task with its answers, then the rack with the images. */
const READS = ["BatchGetItemCommand", "BatchGetItemCommand"];

describe("CheckPreflight of a run child on DynamoDB: the report and the target's prior versions in one transaction", () => {
  it("one TransactWriteItems, not a PutItem and an UpdateItem: the report with each version before, the target with them, nothing else of it changed", async () => {
    const { run, target, task } = await runChild(1);
    const before = await db.stores.runs.getTarget(run.id, target.id);
    db.sent.length = 0;
    const plan = await check(task);
    expect(db.sent).toEqual([...READS, "TransactWriteItemsCommand"]);
    expect(plan.groups?.map((g) => g.componentIds)).toEqual([["c-0", "c-1"]]);
    const saved = await stored(task.id);
    expect(saved.updatedAt).toBe(NOW);
    expect(versionsBefore(saved)).toEqual(["1.0.0", "1.1.0"]);
    expect(await db.stores.runs.getTarget(run.id, target.id)).toEqual({
      ...before,
      priorVersions: priorsOf("1.0.0", "1.1.0"),
    });
  });

  it("the same step on a store without the transaction: the PutItem, then the UpdateItem, as before (one request more)", async () => {
    const { run, target, task } = await runChild(2);
    db.sent.length = 0;
    await check(task, taskStoreWith({ saveTaskWithPriorVersions: undefined }));
    expect(db.sent).toEqual([...READS, "PutItemCommand", "UpdateItemCommand"]);
    expect(versionsBefore(await stored(task.id))).toEqual(["1.0.0", "1.1.0"]);
    expect((await db.stores.runs.getTarget(run.id, target.id))?.priorVersions).toEqual(
      priorsOf("1.0.0", "1.1.0"),
    );
  });

  it("retried or re-driven, the target's versions already kept: the report saved in one request, the target keeps the versions it had", async () => {
    const { run, target, task } = await runChild(3);
    // What an earlier preflight kept, before a flash that the BMCs' answers now show.
    const first = priorsOf("0.9.0", "0.9.1");
    expect(await db.stores.runs.recordPriorVersions(run.id, target.id, first)).toBe("recorded");
    for (const _ of [1, 2]) {
      const read = await stored(task.id);
      db.sent.length = 0;
      await check(read);
      expect(db.sent).toEqual([...READS, "TransactWriteItemsCommand"]);
      expect(versionsBefore(await stored(task.id))).toEqual(["1.0.0", "1.1.0"]);
      expect((await db.stores.runs.getTarget(run.id, target.id))?.priorVersions).toEqual(first);
    }
  });

  it("a target in another state (already ended) takes them as recordPriorVersions would, nothing else of it changed", async () => {
    const { run, target, task } = await runChild(4);
    expect(await db.stores.runs.recordOutcome(run.id, target.id, "FAILED", "boom", AT + 1)).toBe("recorded");
    const before = await db.stores.runs.getTarget(run.id, target.id);
    db.sent.length = 0;
    await check(task);
    expect(db.sent).toEqual([...READS, "TransactWriteItemsCommand"]);
    expect(await db.stores.runs.getTarget(run.id, target.id)).toEqual({
      ...before,
      priorVersions: priorsOf("1.0.0", "1.1.0"),
    });
  });

  it("its run's target gone: TaskMisconfigured, and nothing written (the task as it was, no target made)", async () => {
    const { run, task } = await runChild(5);
    const gone = uuid(5, "dead0000");
    const orphan = { ...task, targetId: gone };
    await db.stores.tasks.saveTask({ ...orphan, updatedAt: AT + 1 }, AT);
    const read = await stored(task.id);
    db.sent.length = 0;
    await expect(check(read)).rejects.toMatchObject({
      name: "TaskMisconfigured",
      message: `task ${task.id}: its run's target ${gone} is gone`,
    });
    expect(db.sent).toEqual([...READS, "TransactWriteItemsCommand"]);
    expect(await stored(task.id)).toEqual(read);
    expect(await db.stores.runs.getTarget(run.id, gone)).toBeUndefined();
  });

  it("the task moved meanwhile: the transaction writes nothing, the task is read again, and the report and the versions go in the next", async () => {
    const { run, target, task } = await runChild(6);
    let from = 0;
    const moved = racedBy(async () => {
      expect(await db.stores.tasks.saveTask({ ...task, message: "moved", updatedAt: AT + 5 }, AT)).toBe(
        "saved",
      );
      from = db.sent.length;
    });
    db.sent.length = 0;
    await check(task, moved);
    expect(db.sent.slice(from)).toEqual([
      "TransactWriteItemsCommand",
      // Cancelled on the task's condition: why (the task is there, it moved), then read again.
      "GetItemCommand",
      "BatchGetItemCommand",
      "TransactWriteItemsCommand",
    ]);
    const saved = await stored(task.id);
    expect(saved).toMatchObject({ message: "moved", updatedAt: NOW });
    expect(versionsBefore(saved)).toEqual(["1.0.0", "1.1.0"]);
    expect((await db.stores.runs.getTarget(run.id, target.id))?.priorVersions).toEqual(
      priorsOf("1.0.0", "1.1.0"),
    );
  });

  it("an operator's cancel ended the task meanwhile: the transaction writes nothing, the task read again is ended, nothing more is written", async () => {
    const { run, target, task } = await runChild(7);
    let from = 0;
    const cancelled = racedBy(async () => {
      await recordTaskOutcome(
        {
          tasks: db.stores.tasks,
          runs: db.stores.runs,
          locks: db.stores.locks,
          commands: commands(),
          firmware: { record: async () => {} },
          clock: () => NOW - 5,
        },
        task.id,
        { status: "TERMINATED", message: "task cancelled" },
      );
      from = db.sent.length;
    });
    db.sent.length = 0;
    const plan = await check(task, cancelled);
    expect(db.sent.slice(from)).toEqual([
      "TransactWriteItemsCommand",
      "GetItemCommand",
      "BatchGetItemCommand",
    ]);
    expect(plan.groups).toEqual([]);
    const ended = await stored(task.id);
    expect(ended).toMatchObject({ status: "TERMINATED", message: "task cancelled" });
    expect(versionsBefore(ended)).toEqual([undefined, undefined]);
    const after = await db.stores.runs.getTarget(run.id, target.id);
    expect(after).toMatchObject({ status: "TERMINATED", message: "task cancelled" });
    expect(after?.priorVersions).toBeUndefined();
  });

  it("a task that is no run child: its report alone (one PutItem), the store's transaction unused", async () => {
    const { run, target, task } = await runChild(8, false);
    db.sent.length = 0;
    await check(task);
    expect(db.sent).toEqual([...READS, "PutItemCommand"]);
    expect(versionsBefore(await stored(task.id))).toEqual(["1.0.0", "1.1.0"]);
    expect((await db.stores.runs.getTarget(run.id, target.id))?.priorVersions).toBeUndefined();
  });

  it("a task already ended when read: nothing written, on the task or its target", async () => {
    const { run, target, task } = await runChild(9);
    const failed = {
      ...task,
      status: "FAILED" as const,
      message: "boom",
      finishedAt: AT + 1,
      updatedAt: AT + 1,
    };
    expect(await db.stores.tasks.saveTask(failed, AT)).toBe("saved");
    db.sent.length = 0;
    await check(failed);
    expect(db.sent.filter((c) => !c.startsWith("BatchGet") && !c.startsWith("Get"))).toEqual([]);
    expect(await stored(task.id)).toEqual(failed);
    expect((await db.stores.runs.getTarget(run.id, target.id))?.priorVersions).toBeUndefined();
  });
});

describe("DynamoTaskStore.saveTaskWithPriorVersions", () => {
  it("a task that moved answers 'stale' before a target that is gone; an unknown task 'not-found'; nothing written either way", async () => {
    const { run, target, task } = await runChild(10);
    const next = { ...task, message: "next", updatedAt: AT + 1 };
    const priors = priorsOf("1.0.0", "1.1.0");
    const gone = { runId: run.id, targetId: uuid(10, "dead0000"), priors };
    expect(await db.stores.tasks.saveTaskWithPriorVersions(next, AT - 1, gone)).toBe("stale");
    expect(await db.stores.tasks.saveTaskWithPriorVersions(next, AT, gone)).toBe("target-gone");
    expect(
      await db.stores.tasks.saveTaskWithPriorVersions({ ...next, id: randomUUID() }, AT, {
        runId: run.id,
        targetId: target.id,
        priors,
      }),
    ).toBe("not-found");
    expect(await stored(task.id)).toEqual(task);
    expect((await db.stores.runs.getTarget(run.id, target.id))?.priorVersions).toBeUndefined();
    expect(await db.stores.runs.getTarget(run.id, gone.targetId)).toBeUndefined();
    expect(await db.stores.tasks.saveTaskWithPriorVersions(next, AT, { ...gone, targetId: target.id })).toBe(
      "saved",
    );
    expect(await stored(task.id)).toEqual(next);
    expect((await db.stores.runs.getTarget(run.id, target.id))?.priorVersions).toEqual(priors);
  });
});
