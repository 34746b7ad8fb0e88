/**
 * The image keys AcquireLock carries in the preflight's state (`imageKeys`, preflight.ts
 * `startPreflight`), so that CheckPreflight reads its task, the answers, the rack and the images
 * in one request: every candidate key of every component still PENDING at its target (a
 * component already done is not flashed again), each once; none for a report AcquireLock cannot
 * read (the check fails the task, as it did, and AcquireLock still takes the lock) or for more
 * keys than one BatchGetItem holds beside the task, its sets and the rack (MAX_CARRIED_IMAGE_KEYS);
 * and what they add to the state (Step Functions' payload limit is 256 KB): a 39-BMC rack of the
 * demo fleet's shape, and the most a state carries. Memory stores typed from the ports.
 */
import { describe, expect, it } from "vitest";
import { DEMO_RACK_SHAPE } from "../../local/demo-fleet.js";
import type { StepDeps } from "../../src/app/child-task/deps.js";
import { acquireLockAndAsk } from "../../src/app/child-task/preflight.js";
import { MAX_CARRIED_IMAGE_KEYS } from "../../src/app/child-task/preflight-read.js";
import { DEFAULT_CHILD_TASK_SETTINGS, type PreflightState } from "../../src/app/child-task/settings.js";
import { silentLogger } from "../../src/app/observability.js";
import type { ComponentType } from "../../src/domain/model.js";
import type { Task } from "../../src/domain/task.js";
import { initialReport, serializeReport, type TaskReport } from "../../src/domain/task-report.js";
import { pendingTask } from "../support/domain-fixtures.js";
import { memoryCommandSetStore, memoryLockStore, memoryTaskStore } from "../support/memory-child-task.js";
import { everyImage } from "../support/memory-images.js";

type Component = { id: string; type: ComponentType; subTargets?: string[]; targetVersion?: string };

/** AcquireLock (the definition's: `ask` "wait") on a PENDING task of these components; its state. */
async function lockedState(task: Task): Promise<PreflightState & { status: string }> {
  const tasks = memoryTaskStore();
  await tasks.createTask(task);
  const deps = {
    tasks,
    commands: memoryCommandSetStore(),
    locks: memoryLockStore(),
    clock: () => 2_000,
    logger: silentLogger,
    images: everyImage,
    publisher: { publish: async () => {} },
  } as unknown as StepDeps;
  return (await acquireLockAndAsk(deps, {
    step: "acquireLock",
    taskId: task.id,
    rackId: task.rackId,
    settings: DEFAULT_CHILD_TASK_SETTINGS,
    ask: "wait",
  })) as PreflightState & { status: string };
}

function taskOf(components: readonly Component[], edit: (r: TaskReport) => void = () => {}): Task {
  const report = initialReport(
    components.map(({ targetVersion: _, ...c }) => c),
    "2.0.0",
    false,
  );
  for (const c of report.components) {
    const own = components.find((x) => x.id === c.id)?.targetVersion;
    if (own !== undefined) c.targetVersion = own;
  }
  edit(report);
  return pendingTask({ componentIds: components.map((c) => c.id), report: serializeReport(report) });
}

/** A rack of the demo fleet's shape: 39 BMCs of six types. */
const DEMO_RACK: Component[] = DEMO_RACK_SHAPE.flatMap(({ type, count, tag }) =>
  Array.from({ length: count }, (_, i) => ({ id: `${tag}-${i + 1}`, type })),
);

/** What `imageKeys` adds to the state's JSON: `,"imageKeys":[...]`. */
const bytesOf = (keys: readonly string[] | undefined) =>
  keys === undefined ? 0 : Buffer.byteLength(`,${JSON.stringify({ imageKeys: keys }).slice(1, -1)}`);

describe("AcquireLock's image keys", () => {
  it("every candidate key of every PENDING component at its target, each once (a part's and its whole component's)", async () => {
    const state = await lockedState(
      taskOf([
        { id: "c1", type: "COMPUTE" },
        { id: "c2", type: "COMPUTE", subTargets: ["bios"] },
        { id: "c3", type: "COMPUTE", targetVersion: "2.1.0" },
        { id: "p1", type: "POWERSHELF" },
      ]),
    );
    expect(state.status).toBe("acquired");
    expect([...(state.imageKeys ?? [])].sort()).toEqual(
      ["COMPUTE#2.0.0#", "COMPUTE#2.0.0#bios", "COMPUTE#2.1.0#", "POWERSHELF#2.0.0#"].sort(),
    );
  });

  it("a component no longer PENDING (done by an attempt before) is not flashed again: its key is left out", async () => {
    const state = await lockedState(
      taskOf(
        [
          { id: "c1", type: "COMPUTE" },
          { id: "p1", type: "POWERSHELF" },
        ],
        (r) => {
          const shelf = r.components.find((c) => c.id === "p1");
          if (shelf !== undefined) shelf.status = "COMPLETED";
        },
      ),
    );
    expect(state.imageKeys).toEqual(["COMPUTE#2.0.0#"]);
  });

  it("a report AcquireLock cannot read: no keys (the check fails the task as before), the lock still taken", async () => {
    const state = await lockedState(pendingTask({ report: "not a report" }));
    expect(state.status).toBe("acquired");
    expect(state).not.toHaveProperty("imageKeys");
  });

  it(`at most ${MAX_CARRIED_IMAGE_KEYS} keys (one BatchGetItem's 100 with the task, q, u and the rack); more: none, the check's two reads`, async () => {
    const at = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        id: `c${i}`,
        type: "COMPUTE" as const,
        targetVersion: `3.0.${i}`,
      }));
    expect((await lockedState(taskOf(at(MAX_CARRIED_IMAGE_KEYS)))).imageKeys).toHaveLength(
      MAX_CARRIED_IMAGE_KEYS,
    );
    expect(await lockedState(taskOf(at(MAX_CARRIED_IMAGE_KEYS + 1)))).not.toHaveProperty("imageKeys");
  });

  it("what they add to the state: a 39-BMC rack at one version, six keys, under 150 bytes; the most a state carries, under 16 KB", async () => {
    const rack = await lockedState(taskOf(DEMO_RACK));
    expect(rack.imageKeys).toHaveLength(6);
    const demo = bytesOf(rack.imageKeys);
    // Every type flashed by a part of its own too (two keys a need): twice as many.
    const parts = await lockedState(taskOf(DEMO_RACK.map((c) => ({ ...c, subTargets: ["bmc"] }))));
    expect(parts.imageKeys).toHaveLength(12);
    // The most: MAX_CARRIED_IMAGE_KEYS keys, each at a version of 128 characters (the longest).
    const longest = Array.from({ length: MAX_CARRIED_IMAGE_KEYS }, (_, i) => ({
      id: `c${i}`,
      type: "POWERSHELF" as const,
      targetVersion: `${i}.`.padEnd(128, "9"),
    }));
    const most = await lockedState(taskOf(longest));
    expect(most.imageKeys).toHaveLength(MAX_CARRIED_IMAGE_KEYS);
    console.log(
      `imageKeys in the preflight's state: ${demo} bytes (39-BMC rack, one version), ${bytesOf(parts.imageKeys)} (with a part each), ${bytesOf(most.imageKeys)} at most (${MAX_CARRIED_IMAGE_KEYS} keys, 128-character versions)`,
    );
    expect(demo).toBeLessThan(150);
    expect(bytesOf(most.imageKeys)).toBeLessThan(16 * 1024);
  });
});
