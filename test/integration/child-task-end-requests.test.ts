/**
 * A run child's end on DynamoDB (moto), request by request: the task's ending, its target's
 * outcome, the run's counters, the rack lock's release AND the versions it verified on the rack's
 * inventory item in ONE TransactWriteItems (DynamoTaskStore.saveTaskWithOutcomeAndVersions), where
 * it was that transaction and an UpdateItem of the rack. And every case where the inventory cannot
 * go in with the ending, each ending as it did before the fold: an import that moved the
 * components or a rack item gone (the ending written without them, then the rack read and written
 * as without), a task that moved (read again; what is newly verified computed again), a cancel
 * decided meanwhile, a target not in flight or a lock another task's (the ending in turn, the
 * versions after it), repeats (nothing written twice), a store without the fold and a plan that
 * does not say where every component is.
 *
 * The calls are made as the last wave's check makes them: the task and its update set as it read
 * them (`read`, `readUpdates`), so what is counted is the end's own requests.
 */
import { randomUUID } from "node:crypto";
import { DeleteCommand } from "@aws-sdk/lib-dynamodb";
import { describe, expect, it } from "vitest";
import { DynamoFirmwareRecorder } from "../../src/adapters/dynamodb/firmware-version-recorder.js";
import { rackPk } from "../../src/adapters/dynamodb/items.js";
import { type OutcomeDeps, recordTaskOutcome } from "../../src/app/child-task/outcome.js";
import { lineLogger } from "../../src/app/observability.js";
import type { FirmwareVersionRecorder, TaskStore } from "../../src/app/ports.js";
import { type CommandSet, entryKey, updateAddress } from "../../src/domain/command-sets.js";
import { StoreUnavailableError } from "../../src/domain/errors.js";
import type { Target } from "../../src/domain/model.js";
import type { Task } from "../../src/domain/task.js";
import {
  completionMessage,
  initialReport,
  parseReport,
  serializeReport,
} from "../../src/domain/task-report.js";
import { runningTask } from "../support/domain-fixtures.js";
import { runWithTargets } from "../support/dynamodb-fixtures.js";
import { countedStores } from "../support/moto.js";

const db = countedStores("end");

const T0 = 1_700_000_000_001;
const NOW = T0 + 100_000;
const TX = "TransactWriteItemsCommand";

/** A run child at its last check: RUNNING, its target SUBMITTED, its lock held, both components' updates verified. */
interface Child {
  task: Task;
  set: CommandSet;
  runId: string;
  target: Target;
  /** c-0, c-1: the task's components, at indexes 1 and 2 of the rack's item (index 0 is another's). */
  ids: [string, string];
  other: string;
  /** Where the preflight saw them: the plan's `inventoryAt`. */
  at: Record<string, number>;
}

async function child(): Promise<Child> {
  const runId = randomUUID();
  const { run, targets } = runWithTargets(runId, { phaseSizes: [1], createdAt: T0 - 1 });
  await db.stores.runs.createRun(run, targets);
  const target = targets[0] as Target;
  expect((await db.stores.runs.claimTargets([target], 30_000, T0)).outcome).toBe("claimed");
  const taskId = randomUUID();
  expect(await db.stores.runs.recordSubmitted(runId, target.id, taskId, T0)).toBe("recorded");
  const rackId = randomUUID();
  const ids: [string, string] = [randomUUID(), randomUUID()];
  const other = randomUUID();
  await db.stores.inventory.upsertRacks([
    {
      id: rackId,
      name: `rack-${rackId.slice(0, 8)}`,
      components: [other, ...ids].map((id) => ({ id, type: "COMPUTE", firmwareVersion: "1.0.0" })),
    },
  ]);
  const report = initialReport(
    ids.map((id) => ({ id, type: "COMPUTE" as const })),
    "2.0.0",
    false,
  );
  for (const c of report.components) c.status = "UPDATING";
  const task = runningTask({
    id: taskId,
    rackId,
    componentIds: ids,
    runId,
    targetId: target.id,
    targetPhaseIndex: 0,
    report: serializeReport(report),
    createdAt: T0,
    updatedAt: T0,
    startedAt: T0,
  });
  expect((await db.stores.tasks.createTask(task)).created).toBe(true);
  expect(await db.stores.locks.acquire(rackId, taskId, 600_000, T0)).toBe("acquired");
  const set: CommandSet = {
    taskId,
    family: "u",
    entries: Object.fromEntries(
      ids.map((id) => [
        entryKey(updateAddress(taskId, 0), id),
        {
          sentAt: T0 + 10,
          deadline: T0 + 60_000,
          ackedAt: T0 + 20,
          result: { ok: true, version: "2.0.0" },
          resultAt: T0 + 2_000,
        },
      ]),
    ),
  };
  return { task, set, runId, target, ids, other, at: { [ids[0]]: 1, [ids[1]]: 2 } };
}

function deps(
  c: Child,
  options: { tasks?: TaskStore; firmware?: FirmwareVersionRecorder; lines?: string[] } = {},
): OutcomeDeps {
  return {
    tasks: options.tasks ?? db.stores.tasks,
    runs: db.stores.runs,
    locks: db.stores.locks,
    // The update set as the check read it; an ending from outside closes it (nothing to close here).
    commands: {
      get: async () => undefined,
      getUpdates: async (taskId) => (taskId === c.task.id ? c.set : undefined),
      close: async () => {},
    },
    firmware: options.firmware ?? new DynamoFirmwareRecorder(db.stores.doc, db.names.inventory),
    clock: () => NOW,
    logger: lineLogger((line) => options.lines?.push(line)),
  };
}

/** The last check's success: COMPLETED, from the execution itself, where the plan saw each component. */
const success = (c: Child, inventoryAt: Record<string, number> | null = c.at) => ({
  status: "COMPLETED" as const,
  message: completionMessage,
  fromOutside: false,
  ...(inventoryAt === null ? {} : { inventoryAt }),
});

/** The end as the last check makes it (the task and its set as read), counting its requests. */
async function end(c: Child, d: OutcomeDeps = deps(c), read: Task = c.task, outcome = success(c)) {
  db.sent.length = 0;
  const task = await recordTaskOutcome(d, c.task.id, outcome, read, { set: c.set });
  return { task, sent: [...db.sent] };
}

/** The rack's versions, by component id. */
async function versions(rackId: string): Promise<Record<string, string | undefined>> {
  const [rack] = await db.stores.inventory.getRacksByIds([rackId]);
  return Object.fromEntries((rack?.components ?? []).map((x) => [x.id, x.firmwareVersion]));
}

/** Ended once: the task as `status`, its target too, the run's counters moved once, the lock released. */
async function endedOnce(c: Child, status: "COMPLETED" | "TERMINATED"): Promise<void> {
  const [task] = await db.stores.tasks.getTasks([c.task.id]);
  expect(task?.status).toBe(status);
  expect((await db.stores.runs.getTarget(c.runId, c.target.id))?.status).toBe(status);
  const run = await db.stores.runs.getRun(c.runId);
  expect(run?.inFlight).toBe(0);
  expect(run?.counters[0]).toEqual({
    completed: status === "COMPLETED" ? 1 : 0,
    failed: 0,
    terminated: status === "TERMINATED" ? 1 : 0,
    skipped: 0,
  });
  expect(await db.stores.locks.get(c.task.rackId)).toBeUndefined();
}

/** The store as it was before the fold: saveTaskWithOutcome, no saveTaskWithOutcomeAndVersions. */
const withoutFold = (): TaskStore =>
  Object.assign(Object.create(db.stores.tasks) as TaskStore, { saveTaskWithOutcomeAndVersions: undefined });

describe("a run child's end on DynamoDB: the verified versions in the ending's transaction", () => {
  it("ONE TransactWriteItems: the task, its target, the run's counters, the lock and the versions; a store without the fold makes it and an UpdateItem", async () => {
    const c = await child();
    const folded = await end(c);
    expect(folded.sent).toEqual([TX]);
    expect(folded.task.status).toBe("COMPLETED");
    expect(folded.task.message).toBe("upgraded 2 components to 2.0.0");
    await endedOnce(c, "COMPLETED");
    expect(await versions(c.task.rackId)).toEqual({
      [c.other]: "1.0.0",
      [c.ids[0]]: "2.0.0",
      [c.ids[1]]: "2.0.0",
    });

    const before = await child();
    const apart = await end(before, deps(before, { tasks: withoutFold() }));
    expect(apart.sent).toEqual([TX, "UpdateItemCommand"]);
    await endedOnce(before, "COMPLETED");
    expect(await versions(before.task.rackId)).toEqual({
      [before.other]: "1.0.0",
      [before.ids[0]]: "2.0.0",
      [before.ids[1]]: "2.0.0",
    });
    // One request fewer, the same items written.
    expect(apart.sent.length - folded.sent.length).toBe(1);
  });

  it("an import moved the components: the transaction refused by the inventory alone, the ending written without the versions, then the rack read and the versions written where it holds them now", async () => {
    const c = await child();
    // Re-imported in another order: c-1 at 0, another at 1, c-0 at 2.
    await db.stores.inventory.upsertRacks([
      {
        id: c.task.rackId,
        name: `rack-${c.task.rackId.slice(0, 8)}`,
        components: [c.ids[1], c.other, c.ids[0]].map((id) => ({
          id,
          type: "COMPUTE",
          firmwareVersion: "1.0.0",
        })),
      },
    ]);
    const { task, sent } = await end(c);
    expect(task.status).toBe("COMPLETED");
    expect(sent).toEqual([TX, TX, "GetItemCommand", "UpdateItemCommand"]);
    await endedOnce(c, "COMPLETED");
    const [rack] = await db.stores.inventory.getRacksByIds([c.task.rackId]);
    expect(rack?.components.map((x) => [x.id, x.firmwareVersion])).toEqual([
      [c.ids[1], "2.0.0"],
      [c.other, "1.0.0"],
      [c.ids[0], "2.0.0"],
    ]);
  });

  it("the rack's item gone: the ending written without the versions, nothing to write them on; an inventory that cannot be written is logged, the ending stands", async () => {
    const c = await child();
    await db.stores.doc.send(
      new DeleteCommand({ TableName: db.names.inventory, Key: { pk: rackPk(c.task.rackId) } }),
    );
    const { task, sent } = await end(c);
    expect(task.status).toBe("COMPLETED");
    expect(sent).toEqual([TX, TX, "GetItemCommand"]);
    await endedOnce(c, "COMPLETED");
    expect(await db.stores.inventory.getRacksByIds([c.task.rackId])).toEqual([]);

    // The recorder's table is not there: its failure is logged after the ending.
    const d = await child();
    await db.stores.doc.send(
      new DeleteCommand({ TableName: db.names.inventory, Key: { pk: rackPk(d.task.rackId) } }),
    );
    const lines: string[] = [];
    const failing = new DynamoFirmwareRecorder(db.stores.doc, `${db.names.inventory}-gone`);
    const ended = await end(d, deps(d, { firmware: failing, lines }));
    expect(ended.task.status).toBe("COMPLETED");
    await endedOnce(d, "COMPLETED");
    expect(lines.filter((l) => l.startsWith("error"))).toEqual([
      expect.stringContaining("could not record verified firmware versions on inventory"),
    ]);
  });

  it("a task that moved since the check read it: the transaction refused by the task (nothing written), the task read again, and what is newly verified computed again from it", async () => {
    const c = await child();
    // A write in between (stated here as one that found c-0 verified already, and wrote it so):
    // the retry's ending replaces that report, so only c-1 is new to inventory.
    const moved = structuredClone(c.task);
    const report = parseReport(moved.report);
    Object.assign(report.components.find((x) => x.id === c.ids[0]) as object, {
      status: "COMPLETED",
      versionAfter: "2.0.0",
    });
    moved.report = serializeReport(report);
    moved.updatedAt = T0 + 50;
    expect(await db.stores.tasks.saveTask(moved, T0)).toBe("saved");

    const { task, sent } = await end(c);
    expect(sent).toEqual([TX, "GetItemCommand", "BatchGetItemCommand", TX]);
    expect(task.status).toBe("COMPLETED");
    await endedOnce(c, "COMPLETED");
    expect(await versions(c.task.rackId)).toEqual({
      [c.other]: "1.0.0",
      [c.ids[0]]: "1.0.0",
      [c.ids[1]]: "2.0.0",
    });
  });

  it("a cancel decided on the task meanwhile: the retry ends it TERMINATED with the versions in one transaction; the cancel's own call then finds it ended and writes nothing", async () => {
    const c = await child();
    // The cancel's first write (its ending, decided on the task), then its close; the check's end
    // comes before the cancel's own ending.
    const decided = {
      ...structuredClone(c.task),
      ending: { status: "TERMINATED" as const, message: "cancelled by alice", at: T0 + 40 },
      updatedAt: T0 + 40,
    };
    expect(await db.stores.tasks.saveTask(decided, T0)).toBe("saved");

    const ended = await end(c);
    expect(ended.sent).toEqual([TX, "GetItemCommand", "BatchGetItemCommand", TX]);
    expect(ended.task).toMatchObject({ status: "TERMINATED", message: "cancelled by alice" });
    await endedOnce(c, "TERMINATED");
    expect(await versions(c.task.rackId)).toEqual({
      [c.other]: "1.0.0",
      [c.ids[0]]: "2.0.0",
      [c.ids[1]]: "2.0.0",
    });

    // The cancel goes on with the task as it read it: ended, it records nothing and writes nothing.
    db.sent.length = 0;
    const again = await recordTaskOutcome(
      deps(c),
      c.task.id,
      { status: "TERMINATED", message: "cancelled by alice" },
      decided,
    );
    expect(again.status).toBe("TERMINATED");
    // Its write is refused (the task moved), the task read again: ended. The target's outcome
    // tried (refused: not in flight, read), the release (not held); no inventory at all.
    expect(db.sent).toEqual([
      TX,
      "GetItemCommand",
      "BatchGetItemCommand",
      TX,
      "GetItemCommand",
      "DeleteItemCommand",
    ]);
    await endedOnce(c, "TERMINATED");
  });

  it("the target not in flight, or the lock another task's: the ending written in turn as before, and the versions still recorded where the plan saw them (and read first where an import moved them)", async () => {
    // The target ended already (a run's cancel recorded it).
    const c = await child();
    expect(
      await db.stores.runs.recordOutcome(c.runId, c.target.id, "TERMINATED", "run cancelled", T0 + 30),
    ).toBe("recorded");
    const ended = await end(c);
    expect(ended.task.status).toBe("COMPLETED");
    // The fold refused by the target; the task alone, the outcome tried (refused, the target read:
    // recorded already), the release beside the versions' write at the plan's indexes.
    expect(ended.sent).toEqual([
      TX,
      "PutItemCommand",
      TX,
      "GetItemCommand",
      "DeleteItemCommand",
      "UpdateItemCommand",
    ]);
    expect(await versions(c.task.rackId)).toEqual({
      [c.other]: "1.0.0",
      [c.ids[0]]: "2.0.0",
      [c.ids[1]]: "2.0.0",
    });
    expect((await db.stores.runs.getTarget(c.runId, c.target.id))?.status).toBe("TERMINATED");
    expect(await db.stores.locks.get(c.task.rackId)).toBeUndefined();

    // Another task holds the lock (this one's expired and was taken), and an import moved c-0 and c-1.
    const d = await child();
    await db.stores.locks.release(d.task.rackId, d.task.id);
    expect(await db.stores.locks.acquire(d.task.rackId, "t-other", 600_000, T0 + 5)).toBe("acquired");
    await db.stores.inventory.upsertRacks([
      {
        id: d.task.rackId,
        name: `rack-${d.task.rackId.slice(0, 8)}`,
        components: [d.ids[1], d.ids[0], d.other].map((id) => ({
          id,
          type: "COMPUTE",
          firmwareVersion: "1.0.0",
        })),
      },
    ]);
    const apart = await end(d);
    expect(apart.task.status).toBe("COMPLETED");
    expect(apart.sent).toEqual([
      TX,
      "PutItemCommand",
      TX,
      "DeleteItemCommand",
      "UpdateItemCommand",
      "GetItemCommand",
      "UpdateItemCommand",
    ]);
    expect((await db.stores.runs.getTarget(d.runId, d.target.id))?.status).toBe("COMPLETED");
    expect(await db.stores.locks.get(d.task.rackId)).toMatchObject({ owner: "t-other" });
    expect(await versions(d.task.rackId)).toEqual({
      [d.other]: "1.0.0",
      [d.ids[0]]: "2.0.0",
      [d.ids[1]]: "2.0.0",
    });
  });

  it("repeats write no inventory twice: a retried last state reads the rack and writes only what it lacks; an execution's end reconciled after writes nothing", async () => {
    const c = await child();
    expect((await end(c)).sent).toEqual([TX]);
    const [ended] = await db.stores.tasks.getTasks([c.task.id]);

    // RecordSuccess retried (the call that ended it crashed before answering): the rack read, nothing written.
    const retried = await end(c, deps(c), ended as Task);
    expect(retried.task.status).toBe("COMPLETED");
    // The target's outcome tried (refused, the target read: recorded), the release, the rack read.
    expect(retried.sent).toEqual([TX, "GetItemCommand", "DeleteItemCommand", "GetItemCommand"]);

    // The execution's end, reconciled from outside: the task ended, nothing recorded again.
    db.sent.length = 0;
    await recordTaskOutcome(deps(c), c.task.id, { status: "COMPLETED", message: "done" }, ended);
    expect(db.sent).toEqual([TX, "GetItemCommand", "DeleteItemCommand"]);
    await endedOnce(c, "COMPLETED");

    // An inventory reset in between (a re-import at 1.0.0): the repeat writes the version again.
    await db.stores.inventory.upsertRacks([
      {
        id: c.task.rackId,
        name: `rack-${c.task.rackId.slice(0, 8)}`,
        components: [c.other, ...c.ids].map((id) => ({ id, type: "COMPUTE", firmwareVersion: "1.0.0" })),
      },
    ]);
    expect((await end(c, deps(c), ended as Task)).sent).toEqual([
      TX,
      "GetItemCommand",
      "DeleteItemCommand",
      "GetItemCommand",
      "UpdateItemCommand",
    ]);
    expect(await versions(c.task.rackId)).toEqual({
      [c.other]: "1.0.0",
      [c.ids[0]]: "2.0.0",
      [c.ids[1]]: "2.0.0",
    });
  });

  it("a plan that does not say where every component is, or no plan at all: the ending alone, then the rack read and written, as before", async () => {
    const c = await child();
    const partial = await end(c, deps(c), c.task, success(c, { [c.ids[0]]: 1 }));
    expect(partial.sent).toEqual([TX, "GetItemCommand", "UpdateItemCommand"]);
    await endedOnce(c, "COMPLETED");
    expect(await versions(c.task.rackId)).toEqual({
      [c.other]: "1.0.0",
      [c.ids[0]]: "2.0.0",
      [c.ids[1]]: "2.0.0",
    });

    const d = await child();
    const none = await end(d, deps(d), d.task, success(d, null));
    expect(none.sent).toEqual([TX, "GetItemCommand", "UpdateItemCommand"]);
    await endedOnce(d, "COMPLETED");
  });

  it("the fold failing otherwise than on a condition: the ending written without the versions and the failure logged, the versions recorded after it; an unavailable store fails the call, nothing written, and its retry ends the task", async () => {
    // A request DynamoDB refuses outright (a ValidationException: moto accepts what the real one
    // refuses, e.g. two paths of one item that overlap), raised before it reaches the table.
    const refusing = (error: Error): TaskStore =>
      Object.assign(Object.create(db.stores.tasks) as TaskStore, {
        saveTaskWithOutcomeAndVersions: async () => {
          db.sent.push("(refused)");
          throw error;
        },
      });
    const c = await child();
    const lines: string[] = [];
    const invalid = Object.assign(new Error("Two document paths overlap"), { name: "ValidationException" });
    const ended = await end(c, deps(c, { tasks: refusing(invalid), lines }));
    expect(ended.task.status).toBe("COMPLETED");
    // The ending alone; the versions then read first (what was refused is not known).
    expect(ended.sent).toEqual(["(refused)", TX, "GetItemCommand", "UpdateItemCommand"]);
    await endedOnce(c, "COMPLETED");
    expect(lines.filter((l) => l.startsWith("error"))).toEqual([
      expect.stringContaining("could not end the task with its verified versions; ending it without them"),
    ]);
    expect(await versions(c.task.rackId)).toEqual({
      [c.other]: "1.0.0",
      [c.ids[0]]: "2.0.0",
      [c.ids[1]]: "2.0.0",
    });

    const d = await child();
    const down = new StoreUnavailableError("throttled", { cause: new Error("ThrottlingException") });
    await expect(end(d, deps(d, { tasks: refusing(down) }))).rejects.toBe(down);
    expect((await db.stores.tasks.getTasks([d.task.id]))[0]).toEqual(d.task);
    expect((await end(d)).sent).toEqual([TX]);
    await endedOnce(d, "COMPLETED");
  });
});

describe("DynamoTaskStore.saveTaskWithOutcomeAndVersions", () => {
  const done = (c: Child): Task => ({ ...c.task, status: "COMPLETED", message: "upgraded", updatedAt: NOW });
  const outcome = (c: Child) => ({
    runId: c.runId,
    targetId: c.target.id,
    phaseIndex: 0,
    status: "COMPLETED" as const,
    message: "upgraded",
    now: NOW,
  });
  const at = (c: Child, i0 = 1, i1 = 2) => [
    { componentId: c.ids[0], version: "2.0.0", at: i0 },
    { componentId: c.ids[1], version: "2.1.0", at: i1 },
  ];
  const untouched = async (c: Child) => {
    expect((await db.stores.tasks.getTasks([c.task.id]))[0]).toEqual(c.task);
    expect((await db.stores.runs.getTarget(c.runId, c.target.id))?.status).toBe("SUBMITTED");
    expect((await db.stores.runs.getRun(c.runId))?.inFlight).toBe(1);
    expect(await versions(c.task.rackId)).toEqual({
      [c.other]: "1.0.0",
      [c.ids[0]]: "1.0.0",
      [c.ids[1]]: "1.0.0",
    });
  };

  it("saved: the ending and each version at its index", async () => {
    const c = await child();
    expect(await db.stores.tasks.saveTaskWithOutcomeAndVersions(done(c), T0, outcome(c), at(c))).toBe(
      "saved",
    );
    await endedOnce(c, "COMPLETED");
    expect(await versions(c.task.rackId)).toEqual({
      [c.other]: "1.0.0",
      [c.ids[0]]: "2.0.0",
      [c.ids[1]]: "2.1.0",
    });
  });

  it("inventory-moved: an index that no longer holds its component, or no rack item; nothing written", async () => {
    const c = await child();
    expect(await db.stores.tasks.saveTaskWithOutcomeAndVersions(done(c), T0, outcome(c), at(c, 0, 2))).toBe(
      "inventory-moved",
    );
    await untouched(c);
    expect(await db.stores.locks.get(c.task.rackId)).toMatchObject({ owner: c.task.id });
    const gone = { ...done(c), rackId: randomUUID() };
    await db.stores.locks.acquire(gone.rackId, c.task.id, 600_000, T0);
    expect(await db.stores.tasks.saveTaskWithOutcomeAndVersions(gone, T0, outcome(c), at(c))).toBe(
      "inventory-moved",
    );
    await untouched(c);
  });

  it("the task's answer first, then the outcome's, whatever the inventory holds: stale, not-found, separately", async () => {
    const c = await child();
    const moved = at(c, 0, 1);
    expect(await db.stores.tasks.saveTaskWithOutcomeAndVersions(done(c), T0 - 1, outcome(c), moved)).toBe(
      "stale",
    );
    expect(
      await db.stores.tasks.saveTaskWithOutcomeAndVersions(
        { ...done(c), id: randomUUID() },
        T0,
        outcome(c),
        moved,
      ),
    ).toBe("not-found");
    expect(
      await db.stores.tasks.saveTaskWithOutcomeAndVersions(
        done(c),
        T0,
        { ...outcome(c), phaseIndex: 1 },
        moved,
      ),
    ).toBe("separately");
    await db.stores.locks.release(c.task.rackId, c.task.id);
    await db.stores.locks.acquire(c.task.rackId, "t-other", 600_000, T0);
    expect(await db.stores.tasks.saveTaskWithOutcomeAndVersions(done(c), T0, outcome(c), at(c))).toBe(
      "separately",
    );
    await untouched(c);
  });
});
