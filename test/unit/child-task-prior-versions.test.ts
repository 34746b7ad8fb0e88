/**
 * The preflight keeps each component's version before the run flashes it on the run's target
 * (RunStore.recordPriorVersions), with the version it is flashed to and its sub-targets, before
 * the first flash; a re-driven preflight, which may read versions a flash already changed, keeps
 * the first. Memory stores typed from the ports.
 */
import { describe, expect, it } from "vitest";
import type { StepDeps } from "../../src/app/child-task/deps.js";
import { checkQueries } from "../../src/app/child-task/preflight.js";
import { DEFAULT_CHILD_TASK_SETTINGS } from "../../src/app/child-task/settings.js";
import { silentLogger } from "../../src/app/observability.js";
import { entryKey, newEntry, queryAddress } from "../../src/domain/command-sets.js";
import { priorVersionsOf } from "../../src/domain/prior-versions.js";
import { initialReport, serializeReport } from "../../src/domain/task-report.js";
import { runningTask } from "../support/domain-fixtures.js";
import { memoryCommandSetStore, memoryTaskStore } from "../support/memory-child-task.js";
import { everyImage } from "../support/memory-images.js";
import { MemoryRunStore } from "../support/memory-stores.js";
import { runInState } from "../support/run-states.js";

const RUN = "00000000-0000-4000-8000-0000000000a1";

function reportFor() {
  return initialReport(
    [
      { id: "c1", type: "COMPUTE", subTargets: ["bmc", "bios"] },
      { id: "c2", type: "COMPUTE", targetVersion: "2.5.0" },
      { id: "p1", type: "POWERSHELF" },
    ],
    "2.0.0",
    false,
  );
}

/** A run child whose target is SUBMITTED, its BMCs answering `answers` to the preflight query. */
async function preflight(
  runs: MemoryRunStore,
  targetId: string,
  answers: Record<string, string>,
  commands = memoryCommandSetStore(),
) {
  const task = runningTask({
    componentIds: ["c1", "c2", "p1"],
    updatedAt: 1_000,
    report: serializeReport(reportFor()),
    runId: RUN,
    targetId,
  });
  const tasks = memoryTaskStore();
  await tasks.createTask(task);
  const q = queryAddress(task.id, 0);
  const window = { sentAt: 1_000, deadline: 60_000 };
  await commands.open(
    task.id,
    "q",
    Object.fromEntries(Object.keys(answers).map((id) => newEntry(q, id, window))),
  );
  for (const [id, version] of Object.entries(answers)) {
    await commands.record(task.id, "q", { [entryKey(q, id)]: { status: { version } } });
  }
  const deps = {
    tasks,
    commands,
    runs,
    clock: () => 2_000,
    logger: silentLogger,
    images: everyImage,
    readiness: { rackComponents: async () => [] },
  } as unknown as StepDeps;
  const result = await checkQueries(deps, {
    step: "checkQueries",
    taskId: task.id,
    settings: DEFAULT_CHILD_TASK_SETTINGS,
    preflight: { done: false, deadline: 60_000, polls: 0, waitSeconds: 1 },
  });
  return result;
}

async function storeWithTarget() {
  const runs = new MemoryRunStore();
  const { run, targets } = runInState(RUN, { phases: [["SUBMITTED"]] });
  await runs.createRun(run, targets);
  return { runs, targetId: targets[0]!.id };
}

describe("prior versions kept on the run's target by the preflight", () => {
  it("every answered component: its version before, the version it is flashed to, its sub-targets", async () => {
    const { runs, targetId } = await storeWithTarget();
    await preflight(runs, targetId, { c1: "1.0.0", c2: "2.5.0", p1: "0.9" });
    expect((await runs.getTarget(RUN, targetId))?.priorVersions).toEqual([
      { componentId: "p1", type: "POWERSHELF", version: "0.9", targetVersion: "2.0.0" },
      {
        componentId: "c1",
        type: "COMPUTE",
        version: "1.0.0",
        targetVersion: "2.0.0",
        subTargets: ["bmc", "bios"],
      },
      // Already at its target (the preflight skips its flash): still what it ran before the run.
      { componentId: "c2", type: "COMPUTE", version: "2.5.0", targetVersion: "2.5.0" },
    ]);
  });

  it("written before the first flash: no update command exists when the target receives them", async () => {
    const { runs, targetId } = await storeWithTarget();
    const commands = memoryCommandSetStore();
    let updatesAtWrite: unknown = "not called";
    runs.interleave("recordPriorVersions", async () => {
      updatesAtWrite = await commands.get("t-1", "u");
    });
    const result = await preflight(runs, targetId, { c1: "1.0.0", c2: "1.0.0", p1: "0.9" }, commands);
    expect(updatesAtWrite).toBeUndefined();
    expect(result.groups?.map((g) => g.componentIds)).toEqual([["p1"], ["c1", "c2"]]);
    expect(runs.calls.of("recordPriorVersions")).toBe(1);
  });

  it("a re-driven preflight reading versions a flash changed keeps the first ones", async () => {
    const { runs, targetId } = await storeWithTarget();
    await preflight(runs, targetId, { c1: "1.0.0", c2: "1.0.0", p1: "0.9" });
    await preflight(runs, targetId, { c1: "2.0.0", c2: "1.0.0", p1: "2.0.0" });
    const priors = (await runs.getTarget(RUN, targetId))?.priorVersions ?? [];
    expect(priors.map((p) => [p.componentId, p.version])).toEqual([
      ["p1", "0.9"],
      ["c1", "1.0.0"],
      ["c2", "1.0.0"],
    ]);
  });

  it("a run child whose target is gone fails the preflight with TaskMisconfigured", async () => {
    const { runs } = await storeWithTarget();
    await expect(
      preflight(runs, "00000000-0000-4000-8000-00000000ffff", { c1: "1", c2: "1", p1: "1" }),
    ).rejects.toMatchObject({
      name: "TaskMisconfigured",
      message: "task t-1: its run's target 00000000-0000-4000-8000-00000000ffff is gone",
    });
  });

  it("priorVersionsOf: components whose BMC never answered are left out", () => {
    const report = reportFor();
    report.components[0]!.versionBefore = "0.9";
    expect(priorVersionsOf(report)).toEqual([
      { componentId: "p1", type: "POWERSHELF", version: "0.9", targetVersion: "2.0.0" },
    ]);
  });
});
