/**
 * CheckPreflight with `sendFirst` (the definition's) starts the task's first step in the same call:
 * the first wave's commands written and published, the plan returned with that wave pending, so
 * the execution goes straight to AwaitWave. Exactly once: a retried check sends the same command
 * under the same request id (one entry, which a BMC does not act on twice); a cancel that closed the
 * task's sets makes it fail with TaskEnded having sent nothing; without `sendFirst` (the
 * definitions before, whose SendWave state follows) it sends nothing. Memory stores typed from
 * the ports.
 */
import { describe, expect, it } from "vitest";
import type { StepDeps } from "../../src/app/child-task/deps.js";
import { checkQueries } from "../../src/app/child-task/preflight.js";
import { DEFAULT_CHILD_TASK_SETTINGS } from "../../src/app/child-task/settings.js";
import { silentLogger } from "../../src/app/observability.js";
import type { BmcCommand, UpdateCommand } from "../../src/domain/bmc-protocol.js";
import {
  commandRequestId,
  entryKey,
  newEntry,
  queryAddress,
  updateAddress,
} from "../../src/domain/command-sets.js";
import { initialReport, serializeReport } from "../../src/domain/task-report.js";
import { runningTask } from "../support/domain-fixtures.js";
import { memoryCommandSetStore, memoryLockStore, memoryTaskStore } from "../support/memory-child-task.js";
import { everyImage } from "../support/memory-images.js";

const report = initialReport(
  [
    { id: "c1", type: "COMPUTE" },
    { id: "p1", type: "POWERSHELF" },
  ],
  "2.0.0",
  false,
);
const task = runningTask({
  componentIds: ["c1", "p1"],
  updatedAt: 1_000,
  startedAt: 1_000,
  report: serializeReport(report),
});

/** A task whose BMCs both answered the preflight's query with 1.0.0 (both to flash). */
async function answered() {
  const tasks = memoryTaskStore();
  await tasks.createTask(task);
  const commands = memoryCommandSetStore();
  const q = queryAddress(task.id, 0);
  const window = { sentAt: 1_000, deadline: 60_000 };
  await commands.open(
    task.id,
    "q",
    Object.fromEntries([newEntry(q, "c1", window), newEntry(q, "p1", window)]),
  );
  for (const id of ["c1", "p1"]) {
    await commands.record(task.id, "q", { [entryKey(q, id)]: { status: { version: "1.0.0" } } });
  }
  const published: { componentId: string; command: BmcCommand }[] = [];
  const deps = {
    tasks,
    commands,
    locks: memoryLockStore(),
    runs: { getRunSecrets: async () => undefined },
    secrets: { get: async () => undefined },
    sealer: { seal: async (secret: string) => ({ sealed: `sealed:${secret}` }) },
    publisher: {
      publish: async ({ componentId }: { componentId: string }, command: BmcCommand) =>
        void published.push({ componentId, command }),
    },
    images: everyImage,
    imageUrls: {
      presignGet: async (key: string, seconds: number) => `https://images.example/${key}?expires=${seconds}`,
    },
    clock: () => 2_000,
    logger: silentLogger,
    readiness: { notReady: async () => new Map() },
  } as unknown as StepDeps;
  const check = (sendFirst: boolean) =>
    checkQueries(deps, {
      step: "checkQueries",
      taskId: task.id,
      rackId: task.rackId,
      settings: DEFAULT_CHILD_TASK_SETTINGS,
      preflight: { done: false, deadline: 60_000, polls: 0, waitSeconds: 1 },
      ...(sendFirst ? { sendFirst } : {}),
    });
  return { deps, commands, published, check };
}

describe("CheckPreflight starts the task's first step (sendFirst)", () => {
  it("a done preflight sends the first wave's update and returns the plan with it pending; a retried check sends it again under the same request id, one entry", async () => {
    const h = await answered();
    const plan = await h.check(true);
    // The default rule's first stage is the power shelf's: its update, one component.
    expect(plan).toMatchObject({
      done: true,
      cursor: { group: 0, wave: 0, step: 0, attempt: 0, more: true, retry: false },
      wave: { componentIds: ["p1"], action: "UPDATE_FIRMWARE", done: false, polls: 0, part: 0 },
    });
    expect(plan.wave?.awaitSeconds).toBeGreaterThan(0);
    const address = updateAddress(task.id, 0, 0);
    const requestId = commandRequestId(address, "p1");
    expect(
      h.published.map((p) => [p.componentId, p.command.type, (p.command as UpdateCommand).requestId]),
    ).toEqual([["p1", "update", requestId]]);
    const set = await h.commands.get(task.id, "u", 0);
    expect(Object.keys(set?.entries ?? {})).toEqual([entryKey(address, "p1")]);

    // The Lambda retried (it crashed after publishing): the same plan, the same command again.
    const again = await h.check(true);
    expect(again).toEqual(plan);
    expect(h.published.map((p) => (p.command as UpdateCommand).requestId)).toEqual([requestId, requestId]);
    expect(Object.keys((await h.commands.get(task.id, "u", 0))?.entries ?? {})).toEqual([
      entryKey(address, "p1"),
    ]);
  });

  it("without sendFirst (the definitions before) a done preflight sends nothing and returns no wave", async () => {
    const h = await answered();
    const plan = await h.check(false);
    expect(plan).toMatchObject({ done: true, cursor: { more: true } });
    expect(plan.wave).toBeUndefined();
    expect(h.published).toEqual([]);
    expect(await h.commands.get(task.id, "u", 0)).toBeUndefined();
  });

  it("a task ended from outside (its sets closed by the cancel) fails with TaskEnded, having sent nothing", async () => {
    const h = await answered();
    // As recordTaskOutcome closes them: every part the plan can use (the rule has six stages).
    await h.commands.close(task.id, 1_500, [0, 1, 2, 3, 4, 5]);
    await expect(h.check(true)).rejects.toMatchObject({
      name: "TaskEnded",
      message: `task ${task.id} already ended`,
    });
    expect(h.published).toEqual([]);
  });
});
