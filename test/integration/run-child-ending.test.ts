/**
 * A run child's ending on DynamoDB (moto), as the outcome recorder writes it: the task, its
 * target, the run's counters and the rack lock's release in ONE transaction
 * (TaskStore.saveTaskWithOutcome). Racing
 * recorders (the last state, a cancel, an execution-status reconcile) must leave the task and its
 * target with the same outcome, counted once; a target the recorder cannot write with the task
 * (not in flight) takes the two writes in turn, as before.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DynamoStores } from "../../src/adapters/dynamodb/index.js";
import { recordTaskOutcome } from "../../src/app/child-task/outcome.js";
import type { RunWaker } from "../../src/app/ports.js";
import type { Target } from "../../src/domain/model.js";
import type { Task } from "../../src/domain/task.js";
import type { TaskOutcomeStatus } from "../../src/domain/task-report.js";
import { runWithTargets, uuid } from "../support/dynamodb-fixtures.js";
import { freshStores } from "../support/moto.js";
import { testEndpoint } from "../support/test-endpoint.js";

let drop: () => Promise<void>;
let stores: DynamoStores;

beforeAll(async () => {
  ({ stores, drop } = await freshStores(testEndpoint(), "ending"));
});
afterAll(() => drop());

const ZERO = { completed: 0, failed: 0, terminated: 0, skipped: 0 };

/** Ends `task` COMPLETED: its target COMPLETED with the message, phase 1 counted once, the slot freed. */
async function completesOnce(run: { id: string }, target: Target, task: Task, at: number, woken: string[]) {
  expect(
    await recordTaskOutcome(deps(at, woken), task.id, { status: "COMPLETED", message: "done" }),
  ).toMatchObject({ status: "COMPLETED" });
  expect(await stores.runs.getTarget(run.id, target.id)).toMatchObject({
    status: "COMPLETED",
    message: "done",
  });
  expect(await stores.runs.getRun(run.id)).toMatchObject({
    inFlight: 0,
    counters: [ZERO, { ...ZERO, completed: 1 }],
  });
}

async function runChild(n: number, targetStatus: "SUBMITTED" | "CLAIMED") {
  const { run, targets } = runWithTargets(uuid(n, "e0000000"), { phaseSizes: [1, 1] });
  await stores.runs.createRun(run, targets);
  const target = targets[1] as Target;
  const at = run.createdAt + 1;
  expect(await stores.runs.claimTarget(target, 30_000, at)).toBe("claimed");
  const taskId = uuid(n, "7a5c0e00");
  if (targetStatus === "SUBMITTED")
    expect(await stores.runs.recordSubmitted(run.id, target.id, taskId, at)).toBe("recorded");
  const task: Task = {
    id: taskId,
    operation: "UpgradeFirmware",
    // A rack of its own per case: the lock cases leave locks behind.
    rackId: uuid(n, "aaaa0e00"),
    componentIds: [],
    description: "fw",
    executorType: "STEP_FUNCTIONS",
    executionId: "",
    status: "RUNNING",
    message: "",
    createdAt: at,
    updatedAt: at,
    report: "{}",
    runId: run.id,
    targetId: target.id,
    targetPhaseIndex: 1,
  };
  expect((await stores.tasks.createTask(task)).created).toBe(true);
  expect(await stores.locks.acquire(task.rackId, task.id, 60_000, at)).toBe("acquired");
  return { run, target, task, at };
}

function deps(at: number, woken: string[]) {
  const waker: RunWaker = { wake: async (runId) => void woken.push(runId) };
  return {
    tasks: stores.tasks,
    runs: stores.runs,
    locks: stores.locks,
    // These tasks flash nothing: no update set, no versions.
    commands: { get: async () => undefined, getUpdates: async () => undefined, close: async () => {} },
    firmware: { record: async () => {} },
    clock: () => at + 10,
    waker,
  };
}

describe("a run child's ending", () => {
  it("8 racing recorders with different outcomes: the task and its target agree, counted once, one wake-up, the lock released", async () => {
    const { run, target, task, at } = await runChild(1, "SUBMITTED");
    const woken: string[] = [];
    const statuses: TaskOutcomeStatus[] = ["COMPLETED", "TERMINATED", "FAILED", "COMPLETED"];
    const ended = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        recordTaskOutcome(deps(at, woken), task.id, { status: statuses[i % 4]!, message: `ending ${i}` }),
      ),
    );
    const [stored] = await stores.tasks.getTasks([task.id]);
    expect(new Set(ended.map((t) => `${t.status} ${t.message}`))).toEqual(
      new Set([`${stored!.status} ${stored!.message}`]),
    );
    expect(await stores.runs.getTarget(run.id, target.id)).toMatchObject({
      status: stored!.status,
      message: stored!.message,
    });
    const field = { COMPLETED: "completed", FAILED: "failed", TERMINATED: "terminated" }[
      stored!.status as "COMPLETED" | "FAILED" | "TERMINATED"
    ];
    expect(await stores.runs.getRun(run.id)).toMatchObject({
      inFlight: 0,
      counters: [ZERO, { ...ZERO, [field]: 1 }],
    });
    expect(woken).toEqual([run.id]);
    expect(await stores.locks.get(task.rackId)).toBeUndefined();
  });

  it("a target already ended (a cancel skipped it first): the task ends alone, nothing counted twice, no wake-up", async () => {
    const { run, target, task, at } = await runChild(2, "CLAIMED");
    expect(
      await stores.runs.recordOutcome(
        run.id,
        target.id,
        "SKIPPED",
        "not started: operation run cancelled",
        at + 2,
      ),
    ).toBe("recorded");
    const woken: string[] = [];
    const ended = await recordTaskOutcome(deps(at, woken), task.id, {
      status: "TERMINATED",
      message: "stopped",
    });
    expect(ended).toMatchObject({ status: "TERMINATED", message: "stopped" });
    expect((await stores.tasks.getTasks([task.id]))[0]).toMatchObject({ status: "TERMINATED" });
    expect(await stores.runs.getTarget(run.id, target.id)).toMatchObject({ status: "SKIPPED" });
    expect(await stores.runs.getRun(run.id)).toMatchObject({
      inFlight: 0,
      counters: [ZERO, { ...ZERO, skipped: 1 }],
    });
    expect(woken).toEqual([]);
  });

  it("the rack's lock already another task's (this one's expired): the task and target end, the other's lock stays", async () => {
    const { run, target, task, at } = await runChild(4, "SUBMITTED");
    expect(await stores.locks.acquire(task.rackId, "task-next", 60_000, at + 60_000)).toBe("acquired");
    const woken: string[] = [];
    await completesOnce(run, target, task, at, woken);
    expect((await stores.locks.get(task.rackId))?.owner).toBe("task-next");
    expect(woken).toEqual([run.id]);
  });

  it("a task frozen before its target's phase was (no targetPhaseIndex): the two writes in turn, the same result", async () => {
    const { run, target, task, at } = await runChild(3, "SUBMITTED");
    const { targetPhaseIndex: _, ...legacy } = task;
    const [current] = await stores.tasks.getTasks([task.id]);
    expect(await stores.tasks.saveTask({ ...legacy, updatedAt: at + 1 }, current!.updatedAt)).toBe("saved");
    const woken: string[] = [];
    await completesOnce(run, target, task, at, woken);
    expect(woken).toEqual([run.id]);
  });
});
