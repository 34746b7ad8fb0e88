/**
 * The preflight's plan puts each stage's updates in its part of the update set
 * (src/domain/command-sets.ts), unless updates were sent before parts: a task re-driven across
 * the deploy keeps them in the set's first record, so every update keeps its entry and its request
 * id (a BMC that has it answers from memory and flashes nothing again). Memory stores typed from
 * the ports.
 */
import { describe, expect, it } from "vitest";
import type { StepDeps } from "../../src/app/child-task/deps.js";
import { checkQueries } from "../../src/app/child-task/preflight.js";
import { DEFAULT_CHILD_TASK_SETTINGS } from "../../src/app/child-task/settings.js";
import { silentLogger } from "../../src/app/observability.js";
import { entryKey, newEntry, queryAddress, updateAddress } from "../../src/domain/command-sets.js";
import { initialReport, serializeReport } from "../../src/domain/task-report.js";
import { runningTask } from "../support/domain-fixtures.js";
import { memoryCommandSetStore, memoryTaskStore } from "../support/memory-child-task.js";
import { everyImage } from "../support/memory-images.js";

const report = initialReport(
  [
    { id: "c1", type: "COMPUTE" },
    { id: "p1", type: "POWERSHELF" },
  ],
  "2.0.0",
  false,
);
const task = runningTask({ componentIds: ["c1", "p1"], updatedAt: 1_000, report: serializeReport(report) });

async function preflightWith(sentBefore: boolean) {
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
  if (sentBefore) {
    await commands.open(
      task.id,
      "u",
      Object.fromEntries([newEntry(updateAddress(task.id, 0), "c1", window)]),
    );
  }
  const deps = {
    tasks,
    commands,
    clock: () => 2_000,
    logger: silentLogger,
    images: everyImage,
    readiness: { rackComponents: async () => [] },
  } as unknown as StepDeps;
  return checkQueries(deps, {
    step: "checkQueries",
    taskId: task.id,
    settings: DEFAULT_CHILD_TASK_SETTINGS,
    preflight: { done: false, deadline: 60_000, polls: 0, waitSeconds: 1 },
  });
}

describe("the preflight's plan and the update set's parts", () => {
  it("each group's updates in its stage's part", async () => {
    const plan = await preflightWith(false);
    expect(plan.groups?.map((g) => [g.name, g.stage, g.part])).toEqual([
      ["powershelf", 0, 0],
      ["compute", 2, 2],
    ]);
  });

  it("updates sent before parts (the set's first record holds entries): no group has a part", async () => {
    const plan = await preflightWith(true);
    expect(plan.groups?.map((g) => [g.name, g.stage, g.part])).toEqual([
      ["powershelf", 0, undefined],
      ["compute", 2, undefined],
    ]);
  });
});
