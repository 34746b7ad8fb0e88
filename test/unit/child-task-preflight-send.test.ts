/**
 * CheckPreflight with `sendFirst: "wait"` (the definition's) makes the task's first step, and
 * AwaitWave sends it with its token in one write; with `sendFirst: true` (the definition before)
 * it starts the task's first step in the same call:
 * the first wave's commands written and published, the plan returned with that wave pending, so
 * the execution goes straight to AwaitWave. Exactly once: a retried check sends the same command
 * under the same request id (one entry, which a BMC does not act on twice); a cancel that closed the
 * task's sets makes it fail with TaskEnded having sent nothing; without `sendFirst` (the
 * definitions before, whose SendWave state follows) it sends nothing.
 *
 * The images a task's updates carry are looked up once, here: one read of the catalog for every
 * update the task will send (every stage's), frozen into each flash group's facts, so the flash
 * steps only presign; an image the catalog lacks fails the check with TaskMisconfigured before
 * anything is sent (a lookup per step failed only at its stage, after the earlier stages were
 * flashed); a plan made before the images were frozen reads the catalog at each flash step, as it
 * did. Memory stores typed from the ports.
 */
import { describe, expect, it } from "vitest";
import type { StepDeps } from "../../src/app/child-task/deps.js";
import { checkQueries } from "../../src/app/child-task/preflight.js";
import {
  DEFAULT_CHILD_TASK_SETTINGS,
  type SendNext,
  type UpgradeGroup,
} from "../../src/app/child-task/settings.js";
import { awaitWave, sendWave } from "../../src/app/child-task/waves.js";
import { silentLogger } from "../../src/app/observability.js";
import type { FirmwareImageStore } from "../../src/app/ports.js";
import type { BmcCommand, UpdateCommand } from "../../src/domain/bmc-protocol.js";
import {
  commandRequestId,
  entryKey,
  newEntry,
  queryAddress,
  updateAddress,
} from "../../src/domain/command-sets.js";
import {
  type FirmwareImage,
  type ImageKey,
  imageKeyId,
  plannedImage,
} from "../../src/domain/firmware-images.js";
import { initialReport, serializeReport } from "../../src/domain/task-report.js";
import { runningTask } from "../support/domain-fixtures.js";
import {
  memoryCommandSetStore,
  memoryLockStore,
  memoryTaskStore,
  recordingOpens,
} from "../support/memory-child-task.js";
import { everyImage, imageRecord, MemoryFirmwareImageStore } from "../support/memory-images.js";

const report = initialReport(
  [
    { id: "c1", type: "COMPUTE" },
    { id: "c2", type: "COMPUTE", subTargets: ["bios"] },
    { id: "p1", type: "POWERSHELF" },
  ],
  "2.0.0",
  false,
);
const task = runningTask({
  componentIds: ["c1", "c2", "p1"],
  updatedAt: 1_000,
  startedAt: 1_000,
  report: serializeReport(report),
});

/** The rack's inventory, its components in this order (the plan keeps where each is). */
const RACK = [
  { id: "x9", type: "CDU" as const },
  { id: "p1", type: "POWERSHELF" as const },
  { id: "c2", type: "COMPUTE" as const },
  { id: "c1", type: "COMPUTE" as const },
];

/** A task whose BMCs all answered the preflight's query with 1.0.0 (all to flash). */
async function answered(
  images: Pick<FirmwareImageStore, "getImages"> = everyImage,
  readiness: Partial<StepDeps["readiness"]> = { rackComponents: async () => RACK },
) {
  const tasks = memoryTaskStore();
  await tasks.createTask(task);
  const commands = memoryCommandSetStore();
  const q = queryAddress(task.id, 0);
  const window = { sentAt: 1_000, deadline: 60_000 };
  await commands.open(
    task.id,
    "q",
    Object.fromEntries(task.componentIds.map((id) => newEntry(q, id, window))),
  );
  for (const id of task.componentIds) {
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
    images,
    imageUrls: {
      presignGet: async (key: string, seconds: number) => `https://images.example/${key}?expires=${seconds}`,
    },
    clock: () => 2_000,
    logger: silentLogger,
    readiness,
  } as unknown as StepDeps;
  const check = (sendFirst: SendNext) =>
    checkQueries(deps, {
      step: "checkQueries",
      taskId: task.id,
      rackId: task.rackId,
      settings: DEFAULT_CHILD_TASK_SETTINGS,
      preflight: { done: false, deadline: 60_000, polls: 0, waitSeconds: 1 },
      ...(sendFirst !== false ? { sendFirst } : {}),
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

describe('CheckPreflight makes the task\'s first step for AwaitWave to send (sendFirst "wait")', () => {
  const waker = (woken: string[]) => ({
    wake: async (token: string) => void woken.push(token),
    heartbeat: async () => {},
    fail: async () => {},
  });

  it("the plan comes back with the first wave made (its window from the check's clock) and nothing written or sent; AwaitWave then writes its update with the token in one write and publishes it, as sendFirst true would have", async () => {
    const h = await answered();
    const plan = await h.check("wait");
    const deadline = 2_000 + DEFAULT_CHILD_TASK_SETTINGS.updateTimeoutSeconds * 1000;
    expect(plan).toMatchObject({
      done: true,
      cursor: { group: 0, wave: 0, step: 0, attempt: 0, more: true, retry: false },
      wave: { componentIds: ["p1"], action: "UPDATE_FIRMWARE", done: false, polls: 0, part: 0, unsent: true },
    });
    expect(plan.wave?.deadline).toBe(deadline);
    expect(plan.wave?.awaitSeconds).toBeGreaterThan(0);
    expect(plan.wave?.awaitTimeoutSeconds).toBe(DEFAULT_CHILD_TASK_SETTINGS.updateTimeoutSeconds);
    expect(h.published).toEqual([]);
    expect(await h.commands.get(task.id, "u", 0)).toBeUndefined();

    const { commands, opened } = recordingOpens(h.commands);
    const woken: string[] = [];
    const deps = {
      ...h.deps,
      commands,
      waveWaker: waker(woken),
    } as StepDeps;
    const address = updateAddress(task.id, 0, 0);
    const requestId = commandRequestId(address, "p1");
    expect(await awaitPlanned(deps, plan, "tk-1")).toEqual({ woken: false });
    // The wave's wait with its heartbeat (the wave's awaitSeconds: five of the longest polls), in the same write.
    expect(opened).toEqual([
      { token: "tk-1", keys: [entryKey(address, "p1")], heartbeatSeconds: 300, startedAt: 2_000 },
    ]);
    expect(
      h.published.map((p) => [p.componentId, p.command.type, (p.command as UpdateCommand).requestId]),
    ).toEqual([["p1", "update", requestId]]);
    const set = await h.commands.get(task.id, "u", 0);
    expect(set?.entries).toEqual({ [entryKey(address, "p1")]: { sentAt: 2_000, deadline } });
    expect(set?.wake).toEqual({
      token: "tk-1",
      keys: [entryKey(address, "p1")],
      heartbeatSeconds: 300,
      startedAt: 2_000,
    });
    expect(woken).toEqual([]);
  });

  it("a cancel between the check and the wait (the sets closed): the check makes the step, the wait fails with TaskEnded having written and sent nothing", async () => {
    const h = await answered();
    const plan = await h.check("wait");
    await h.commands.close(task.id, 2_500, [0, 1, 2, 3, 4, 5]);
    const deps = { ...h.deps, waveWaker: waker([]) } as StepDeps;
    await expect(awaitPlanned(deps, plan, "tk-2")).rejects.toMatchObject({
      name: "TaskEnded",
      message: `task ${task.id} already ended`,
    });
    expect(h.published).toEqual([]);
    const set = await h.commands.get(task.id, "u", 0);
    expect(set?.entries).toEqual({});
    expect(set?.wake).toBeUndefined();
  });
});

const COMPUTE = imageRecord({ componentType: "COMPUTE", version: "2.0.0" });
const BIOS = imageRecord({ componentType: "COMPUTE", version: "2.0.0", subTarget: "bios" });
const SHELF = imageRecord({ componentType: "POWERSHELF", version: "2.0.0" });

/** AwaitWave of the plan CheckPreflight returned (its first wave, made and not sent). */
const awaitPlanned = (deps: StepDeps, plan: Awaited<ReturnType<typeof checkQueries>>, token: string) =>
  awaitWave(deps, {
    step: "awaitWave",
    taskId: task.id,
    token,
    wave: plan.wave as NonNullable<typeof plan.wave>,
    rackId: task.rackId,
    settings: DEFAULT_CHILD_TASK_SETTINGS,
    groups: plan.groups ?? [],
    cursor: plan.cursor as NonNullable<typeof plan.cursor>,
  });

/** The update of group `g` (its first step), as SendWave starts it from the plan. */
const sendUpdate = (deps: StepDeps, groups: UpgradeGroup[], g: number) =>
  sendWave(deps, {
    step: "sendWave",
    taskId: task.id,
    rackId: task.rackId,
    settings: DEFAULT_CHILD_TASK_SETTINGS,
    groups,
    cursor: { group: g, wave: 0, step: 0, attempt: 0, more: true, retry: false, waitSeconds: 0 },
  });

/** Each update's image, by component, as published. */
const sentImages = (published: { componentId: string; command: BmcCommand }[]) =>
  Object.fromEntries(
    published
      .filter((p) => p.command.type === "update")
      .map((p) => [p.componentId, (p.command as UpdateCommand).image]),
  );

/** What an update carries of `image`: presigned for the update step's timeout. */
const sent = (image: FirmwareImage) => ({
  uri: `https://images.example/${image.objectKey}?expires=${DEFAULT_CHILD_TASK_SETTINGS.updateTimeoutSeconds}`,
  sha256: image.sha256,
  size: image.sizeBytes,
});

describe("a task's images are looked up once, by its preflight", () => {
  it("one read of the catalog for every stage's updates, each group's images frozen in its facts; the first step and every later flash step read nothing", async () => {
    const catalog = new MemoryFirmwareImageStore([COMPUTE, BIOS, SHELF]);
    const h = await answered(catalog);
    const plan = await h.check(true);
    expect(catalog.getCalls).toBe(1);
    // The default rule: the power shelf's stage, then the trays'; each keeps the images it
    // flashes (c2's one part takes its part's image), without who uploaded them or when.
    expect(plan.groups?.map((g) => [g.name, g.componentIds, g.facts?.images])).toEqual([
      ["powershelf", ["p1"], [plannedImage(SHELF)]],
      ["compute", ["c1", "c2"], [plannedImage(COMPUTE), plannedImage(BIOS)]],
    ]);
    expect(Object.keys(plannedImage(COMPUTE)).sort()).toEqual([
      "componentType",
      "objectKey",
      "sha256",
      "sizeBytes",
      "version",
    ]);
    // The first step, sent by the check: the shelf's update carries its image.
    expect(sentImages(h.published)).toEqual({ p1: sent(SHELF) });

    // The trays' update later, from the plan: no read of the catalog.
    await sendUpdate(h.deps, plan.groups ?? [], 1);
    expect(catalog.getCalls).toBe(1);
    expect(sentImages(h.published)).toEqual({ p1: sent(SHELF), c1: sent(COMPUTE), c2: sent(BIOS) });
  });

  it("an image the catalog lacks fails the check with TaskMisconfigured naming it, before anything is sent (the earlier stage's update too)", async () => {
    const catalog = new MemoryFirmwareImageStore([SHELF]);
    const h = await answered(catalog);
    await expect(h.check(true)).rejects.toMatchObject({
      name: "TaskMisconfigured",
      message:
        "no firmware image is registered for COMPUTE 2.0.0, COMPUTE 2.0.0 (bios, or the whole component); upload one with flowctl firmware upload",
    });
    expect(catalog.getCalls).toBe(1);
    expect(h.published).toEqual([]);
  });

  it("a plan made before the images were frozen (facts without them) reads the catalog at its flash step, as it did", async () => {
    const catalog = new MemoryFirmwareImageStore([COMPUTE, BIOS, SHELF]);
    const h = await answered(catalog);
    const plan = await h.check(true);
    const before = (plan.groups ?? []).map((g) => {
      const { images: _frozen, ...facts } = g.facts ?? { types: {}, versions: {} };
      return { ...g, facts };
    });
    await sendUpdate(h.deps, before, 1);
    expect(catalog.getCalls).toBe(2);
    expect(sentImages(h.published)).toEqual({ p1: sent(SHELF), c1: sent(COMPUTE), c2: sent(BIOS) });
  });
});

describe("the rack and the images in one read, where the catalog can (getImagesWithRack)", () => {
  /**
   * `catalog` reading the rack with the images (each call recorded with the keys it asked), and
   * the readiness store (its reads recorded): what the check reads and through which.
   */
  const both = (catalog: MemoryFirmwareImageStore, calls: string[][]) =>
    [
      {
        getImages: async (keys: readonly ImageKey[]) => {
          calls.push(["getImages", ...keys.map(imageKeyId)]);
          return catalog.getImages(keys);
        },
        getImagesWithRack: async (keys: readonly ImageKey[], _rackId: string) => {
          calls.push(["getImagesWithRack", ...keys.map(imageKeyId)]);
          return { images: await catalog.getImages(keys), components: RACK };
        },
      },
      {
        rackComponents: async () => {
          calls.push(["rackComponents"]);
          return RACK;
        },
      },
    ] as const;

  it("the check makes one read for the rack's readiness and every image the task may flash; no read of the catalog of its own; the plan as with two reads", async () => {
    const catalog = new MemoryFirmwareImageStore([COMPUTE, BIOS, SHELF]);
    const calls: string[][] = [];
    const h = await answered(...both(catalog, calls));
    const plan = await h.check(true);
    // Each key once: c1's image and c2's part's image (or its whole component's), the shelf's.
    expect(calls.map(([what, ...keys]) => [what, ...keys.sort()])).toEqual([
      ["getImagesWithRack", ...[COMPUTE, BIOS, SHELF].map(imageKeyId).sort()],
    ]);
    const twoReads = await (await answered(new MemoryFirmwareImageStore([COMPUTE, BIOS, SHELF]))).check(true);
    expect(plan).toEqual(twoReads);
    expect(sentImages(h.published)).toEqual({ p1: sent(SHELF) });
  });

  it("an image the catalog lacks fails the check with TaskMisconfigured naming it, from the same read, nothing sent", async () => {
    const catalog = new MemoryFirmwareImageStore([SHELF]);
    const calls: string[][] = [];
    const h = await answered(...both(catalog, calls));
    await expect(h.check(true)).rejects.toMatchObject({
      name: "TaskMisconfigured",
      message:
        "no firmware image is registered for COMPUTE 2.0.0, COMPUTE 2.0.0 (bios, or the whole component); upload one with flowctl firmware upload",
    });
    expect(calls.map((c) => c[0])).toEqual(["getImagesWithRack"]);
    expect(h.published).toEqual([]);
  });
});

describe("the plan keeps where each component is in the rack's inventory", () => {
  it("each group's facts: its components' indexes in the rack's components as the preflight read them (for the outcome's write of the verified versions without a read)", async () => {
    const plan = await (await answered()).check(true);
    expect(plan.groups?.map((g) => [g.name, g.facts?.inventoryAt])).toEqual([
      ["powershelf", { p1: 1 }],
      ["compute", { c1: 3, c2: 2 }],
    ]);
  });
});
