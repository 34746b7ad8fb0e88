/**
 * An execution that started before operation rules keeps its definition and its state across a
 * deploy: the steps read that state as the default rule's, and pass today's through unchanged.
 * One that started before AcquireLock sent the preflight's queries still runs its SendQueries state,
 * which sends the queries not answered yet again, under the same request ids and deadline.
 */
import { describe, expect, it } from "vitest";
import type { StepDeps } from "../../src/app/child-task/deps.js";
import {
  currentCursor,
  currentGroups,
  currentWave,
  DEFAULT_CHILD_TASK_SETTINGS,
  type UpgradeGroup,
  type WaveCursor,
  type WaveState,
} from "../../src/app/child-task/settings.js";
import { createTaskSteps } from "../../src/app/child-task/steps.js";
import { checkWave } from "../../src/app/child-task/wave-check.js";
import { nextCursor } from "../../src/app/child-task/wave-cursor.js";
import type { BmcCommand } from "../../src/domain/bmc-protocol.js";
import type { BmcAddress } from "../../src/domain/bmc-topics.js";
import { initialReport, serializeReport } from "../../src/domain/task-report.js";
import { runningTask } from "../support/domain-fixtures.js";
import { memoryCommandSetStore, memoryLockStore, memoryTaskStore } from "../support/memory-child-task.js";

const settings = { ...DEFAULT_CHILD_TASK_SETTINGS, maxParallel: 2 };

describe("child-task state from before operation rules", () => {
  it("old groups become one update step each, in waves of the deployment's maxParallel", () => {
    const old = [{ type: "NVSWITCH", componentIds: ["n1", "n2", "n3"] }] as unknown as UpgradeGroup[];
    const groups = currentGroups(old, settings);
    expect(groups).toEqual([
      {
        stage: 0,
        name: "nvswitch",
        componentIds: ["n1", "n2", "n3"],
        maxParallel: 2,
        steps: [{ action: "UPDATE_FIRMWARE", timeoutSeconds: 0, sleepSeconds: 0 }],
      },
    ]);
    expect(currentGroups(groups, settings)).toEqual(groups);
    // …and an old cursor walks them as the old loop did: wave 0, wave 1, then done.
    const cursor = currentCursor({ group: 0, wave: 0, more: true } as WaveCursor);
    expect(cursor).toEqual({
      group: 0,
      wave: 0,
      more: true,
      step: 0,
      attempt: 0,
      retry: false,
      waitSeconds: 0,
    });
    expect(nextCursor(groups, cursor)).toMatchObject({
      group: 0,
      wave: 1,
      step: 0,
      more: true,
      retry: false,
    });
    expect(nextCursor(groups, { ...cursor, wave: 1 })).toMatchObject({ group: 1, wave: 0, more: false });
  });

  it("an old wave is an update wave of one type and one version", () => {
    const old = {
      type: "COMPUTE",
      componentIds: ["a", "b"],
      targetVersion: "2.0",
      done: false,
      deadline: 9,
      polls: 1,
      waitSeconds: 5,
    } as unknown as WaveState;
    expect(currentWave(old, settings)).toMatchObject({
      action: "UPDATE_FIRMWARE",
      attempt: 0,
      stage: 0,
      step: 0,
      timeoutSeconds: settings.updateTimeoutSeconds,
      types: { a: "COMPUTE", b: "COMPUTE" },
      versions: { a: "2.0", b: "2.0" },
    });
    // A wave of this branch's first form (versions, no action) keeps its versions.
    const versioned = { ...old, versions: { a: "2.1", b: "2.2" } } as unknown as WaveState;
    expect(currentWave(versioned, settings).versions).toEqual({ a: "2.1", b: "2.2" });
    const current = currentWave(old, settings);
    expect(currentWave(current, settings)).toBe(current);
  });

  it("CheckWave ends a done wave in the same call and returns the plan; from the definition before (no plan), the wave alone", async () => {
    const groups: UpgradeGroup[] = [
      {
        stage: 0,
        name: "soak",
        componentIds: ["a"],
        maxParallel: 1,
        steps: [{ action: "SLEEP", timeoutSeconds: 0, sleepSeconds: 5 }],
      },
      {
        stage: 1,
        name: "compute",
        componentIds: ["b"],
        maxParallel: 1,
        steps: [{ action: "UPDATE_FIRMWARE", timeoutSeconds: 0, sleepSeconds: 0 }],
      },
    ];
    const cursor: WaveCursor = {
      group: 0,
      wave: 0,
      step: 0,
      attempt: 0,
      more: true,
      retry: false,
      waitSeconds: 0,
    };
    const wave: WaveState = {
      stage: 0,
      step: 0,
      action: "SLEEP",
      attempt: 0,
      timeoutSeconds: 5,
      componentIds: ["a"],
      types: { a: "COMPUTE" },
      versions: {},
      done: false,
      deadline: 5_000,
      polls: 0,
      waitSeconds: 5,
    };
    // A sleep's check reads and writes nothing: the clock is all it needs.
    const at = (now: number) => ({ clock: () => now }) as unknown as StepDeps;
    const base = { step: "checkWave" as const, taskId: "t", settings };
    const plan = { ...base, rackId: "r", groups, cursor, wave };
    expect(await checkWave(at(1_000), plan)).toEqual({
      groups,
      cursor,
      // The sleep's wait for a wake-up (there is none for a sleep) lasts what is left of it: its
      // heartbeat (nothing reports on a sleep) ends it there, its timeout a second later.
      wave: { ...wave, polls: 1, waitSeconds: 4, awaitSeconds: 4, awaitTimeoutSeconds: 5 },
    });
    const done = await checkWave(at(5_000), plan);
    expect(done).toMatchObject({
      groups,
      cursor: { group: 1, wave: 0, step: 0, more: true },
      wave: { done: true },
    });
    expect(await checkWave(at(5_000), { ...base, wave })).toMatchObject({ done: true, stage: 0 });
    expect(await checkWave(at(5_000), { ...base, wave })).not.toHaveProperty("cursor");
  });

  it("AcquireLock sends the preflight's queries; the SendQueries of the definition before sends the unanswered ones again, as they were", async () => {
    const tasks = memoryTaskStore();
    const published: { componentId: string; command: BmcCommand }[] = [];
    const report = initialReport(
      [
        { id: "a", type: "COMPUTE" },
        { id: "b", type: "NVSWITCH" },
      ],
      "2.0.0",
      false,
    );
    await tasks.createTask(
      runningTask({
        id: "t",
        rackId: "r",
        componentIds: ["a", "b"],
        status: "PENDING",
        report: serializeReport(report),
      }),
    );
    const steps = createTaskSteps({
      tasks,
      commands: memoryCommandSetStore(),
      locks: memoryLockStore(),
      publisher: {
        publish: async ({ componentId }: BmcAddress, command: BmcCommand) =>
          void published.push({ componentId, command }),
      },
      clock: () => 10_000,
    } as unknown as Parameters<typeof createTaskSteps>[0]);
    const base = { taskId: "t", settings };
    const locked = await steps.handle({ ...base, step: "acquireLock", rackId: "r" });
    expect(locked).toMatchObject({ status: "acquired", done: false, polls: 0, deadline: 70_000 });
    expect(published.map((p) => [p.componentId, p.command.type])).toEqual([
      ["a", "query"],
      ["b", "query"],
    ]);
    expect((await tasks.getTasks(["t"]))[0]?.status).toBe("RUNNING");
    // The definition before: its SendQueries state, after AcquireLock.
    const poll = await steps.handle({ ...base, step: "sendQueries" });
    expect(poll).toMatchObject({ done: false, deadline: 70_000 });
    // The same commands (request ids), which a BMC answers from what it knows.
    expect(published.slice(2)).toEqual(published.slice(0, 2));
  });
});
