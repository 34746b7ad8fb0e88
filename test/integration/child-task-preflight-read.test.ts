/**
 * CheckPreflight's read on DynamoDB (moto), request by request: AcquireLock, which has read the
 * task, carries the keys of every image the task may flash in the preflight's state
 * (`imageKeys`), and the check reads its task, the BMCs' answers (`q`), its update set's first
 * record (`u`), the rack's item and those images in ONE BatchGetItem across the Tasks and
 * Inventory tables (DynamoFirmwareImageStore.getImagesWithRackAndTask), where it was two (the
 * task with its sets, then the rack with the images). What the old two reads decided is decided
 * the same from the one, each case checked against the two reads on the same tables (a catalog
 * without the method, `apart`, or a state without the keys):
 * - a done check: the same plan (the images frozen, where each component is in the rack's
 *   item), one request fewer; a state without the keys, an event without the rack or a catalog
 *   without the method: the two reads as before;
 * - a poll that finds answers missing: one request, as before (the rack and the images read for
 *   nothing in it: their read units, printed), the keys kept for the next poll;
 * - readiness from the inventory, the power shelf of a rack cycle, an image not registered,
 *   keys that do not cover the needs (planImages reads the catalog itself), a rack the task does
 *   not name, an unknown rack, a missing task, an ended task;
 * - a retried check (the same plan, the same one read), a task that moved between the read and
 *   the report's write (retried on a fresh read), a cancel meanwhile (no plan, nothing written).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DynamoCommandSetStore } from "../../src/adapters/dynamodb/command-set-store.js";
import { DynamoFirmwareImageStore } from "../../src/adapters/dynamodb/image-store.js";
import type { DynamoStores, TableNames } from "../../src/adapters/dynamodb/index.js";
import type { StepDeps } from "../../src/app/child-task/deps.js";
import { acquireLockAndAsk, checkQueries } from "../../src/app/child-task/preflight.js";
import {
  DEFAULT_CHILD_TASK_SETTINGS,
  type PreflightResult,
  type PreflightState,
} from "../../src/app/child-task/settings.js";
import { silentLogger } from "../../src/app/observability.js";
import { entryKey, newEntry, queryAddress } from "../../src/domain/command-sets.js";
import { type FirmwareImage, plannedImage } from "../../src/domain/firmware-images.js";
import type { InventoryComponent } from "../../src/domain/inventory.js";
import type { ComponentType } from "../../src/domain/model.js";
import type { OperationRule, RuleStep } from "../../src/domain/operation-rules.js";
import type { Task } from "../../src/domain/task.js";
import { initialReport, parseReport, serializeReport } from "../../src/domain/task-report.js";
import { pendingTask } from "../support/domain-fixtures.js";
import { imageRecord } from "../support/memory-images.js";
import { freshStores } from "../support/moto.js";
import { testEndpoint } from "../support/test-endpoint.js";
import {
  type Harness,
  HEALTHY_FLEET_SETTINGS,
  id,
  rack,
  SMALL_RACK,
  SUCCEEDING_FLEET,
  startHarness,
  upgradeRequest,
  waitForTask,
} from "./child-task-harness.js";

let client: DynamoDBClient;
let names: TableNames;
let stores: DynamoStores;
let drop: () => Promise<void>;
/** The catalog without getImagesWithRackAndTask (told the Inventory table alone): the two reads. */
let apart: DynamoFirmwareImageStore;

/** One request as the endpoint saw it: its command, the tables it read, the read units it cost. */
interface Sent {
  command: string;
  tables: string[];
  readUnits?: number;
}
let sent: Sent[] = [];

beforeAll(async () => {
  ({ client, names, stores, drop } = await freshStores(testEndpoint(), "pfread"));
  apart = new DynamoFirmwareImageStore(stores.doc, { inventory: names.inventory });
  // Each request's tables, and a BatchGetItem's read units (asked for here, on the wire only).
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { RequestItems?: Record<string, unknown>; ReturnConsumedCapacity?: string };
      const command = context.commandName ?? "?";
      if (command === "BatchGetItemCommand") input.ReturnConsumedCapacity = "TOTAL";
      const one: Sent = { command, tables: Object.keys(input.RequestItems ?? {}).map(tableOf) };
      sent.push(one);
      const out = await next(args);
      const used = (out.output as { ConsumedCapacity?: { CapacityUnits?: number }[] }).ConsumedCapacity;
      if (Array.isArray(used)) one.readUnits = used.reduce((n, c) => n + (c.CapacityUnits ?? 0), 0);
      return out;
    },
    { step: "initialize", name: "preflightReadRecorder" },
  );
}, 60_000);
afterAll(() => drop());

const tableOf = (name: string) =>
  name === names.tasks ? "Tasks" : name === names.inventory ? "Inventory" : name;
const commands = (list = sent) => list.map((s) => s.command.replace(/Command$/, ""));
const settings = { ...DEFAULT_CHILD_TASK_SETTINGS };
const NOW = 9_000_000;

/** The task's components: two COMPUTE trays (one flashed by its BIOS part) and a power shelf. */
const COMPONENTS = [
  { id: "c-0", type: "COMPUTE" as ComponentType },
  { id: "c-1", type: "COMPUTE" as ComponentType, subTargets: ["bios"] },
  { id: "s-0", type: "POWERSHELF" as ComponentType },
];
/** The rack's inventory, in this order (the plan keeps where each component is). */
const RACK: InventoryComponent[] = [
  { id: "x-9", type: "CDU" },
  { id: "s-0", type: "POWERSHELF" },
  { id: "c-1", type: "COMPUTE" },
  { id: "c-0", type: "COMPUTE" },
];
const COMPUTE = imageRecord({ componentType: "COMPUTE", version: "2.0.0" });
const SHELF = imageRecord({ componentType: "POWERSHELF", version: "2.0.0" });

const step = (action: RuleStep["action"], extra: Partial<RuleStep> = {}): RuleStep => ({
  action,
  timeoutSeconds: 0,
  sleepSeconds: 0,
  ...extra,
});
/** Every component flashed, then the whole rack AC-cycled through its power shelf. */
const RACK_CYCLE: OperationRule = {
  id: "d7000000-0000-4000-8000-000000000001",
  version: 1,
  name: "whole rack",
  description: "",
  stages: [
    {
      name: "all",
      componentTypes: ["POWERSHELF", "COMPUTE"],
      maxParallel: 6,
      steps: [step("UPDATE_FIRMWARE"), step("AC_CYCLE", { acScope: "RACK" }), step("WAIT_BRING_UP")],
    },
  ],
  readinessTimeoutSeconds: 0,
  createdAt: 1,
};

beforeAll(async () => {
  await stores.images.registerImage(COMPUTE);
  await stores.images.registerImage(SHELF);
}, 60_000);

function deps(images: StepDeps["images"] = stores.images, tasks: StepDeps["tasks"] = stores.tasks): StepDeps {
  return {
    tasks,
    locks: stores.locks,
    commands: new DynamoCommandSetStore(stores.doc, names.tasks),
    readiness: stores.readiness,
    images,
    runs: { recordPriorVersions: async () => "recorded" },
    clock: () => NOW,
    logger: silentLogger,
    publisher: { publish: async () => {} },
  } as unknown as StepDeps;
}

/**
 * A task started by AcquireLock on its own rack (`rack`: its inventory; undefined: no rack item),
 * its BMCs' answers to the first ask stored (`answers`: id → version; absent: not answered).
 * Returns the task as stored and the preflight's state as AcquireLock returned it.
 */
async function started(
  options: {
    rack?: InventoryComponent[] | undefined;
    answers?: Record<string, string>;
    rule?: OperationRule;
    components?: typeof COMPONENTS;
    version?: string;
  } = {},
): Promise<{ task: Task; state: PreflightState }> {
  const components = options.components ?? COMPONENTS;
  const pending = pendingTask({
    id: randomUUID(),
    rackId: randomUUID(),
    componentIds: components.map((c) => c.id),
    report: serializeReport(initialReport(components, options.version ?? "2.0.0", false)),
    ...(options.rule === undefined ? {} : { rule: options.rule }),
  });
  await stores.tasks.createTask(pending);
  const rack = "rack" in options ? options.rack : RACK;
  if (rack !== undefined)
    await stores.inventory.upsertRacks([
      { id: pending.rackId, name: `r-${pending.rackId}`, components: rack },
    ]);
  const out = await acquireLockAndAsk(deps(), {
    step: "acquireLock",
    taskId: pending.id,
    rackId: pending.rackId,
    settings,
    ask: "wait",
  });
  expect(out.status).toBe("acquired");
  const { status: _, ...state } = out as PreflightState & { status: string };
  // AwaitPreflight's write: every component's query, then the answers the BMCs gave.
  const sets = new DynamoCommandSetStore(stores.doc, names.tasks);
  const q = queryAddress(pending.id, 0);
  await sets.open(
    pending.id,
    "q",
    Object.fromEntries(components.map((c) => newEntry(q, c.id, { sentAt: NOW, deadline: NOW + 60_000 }))),
  );
  const answers = options.answers ?? Object.fromEntries(components.map((c) => [c.id, "1.0.0"]));
  if (Object.keys(answers).length > 0)
    await sets.record(
      pending.id,
      "q",
      Object.fromEntries(
        Object.entries(answers).map(([id, version]) => [entryKey(q, id), { status: { version } }]),
      ),
    );
  return { task: (await stores.tasks.getTasks([pending.id]))[0] as Task, state };
}

/** CheckPreflight as the definition runs it (the rack in its event), its requests recorded. */
async function check(
  task: Pick<Task, "id" | "rackId">,
  preflight: PreflightState,
  options: { images?: StepDeps["images"]; rackId?: string | undefined; tasks?: StepDeps["tasks"] } = {},
): Promise<{ out: PreflightResult; sent: Sent[] }> {
  sent = [];
  const rackId = "rackId" in options ? options.rackId : task.rackId;
  const out = await checkQueries(deps(options.images, options.tasks), {
    step: "checkQueries",
    taskId: task.id,
    ...(rackId === undefined ? {} : { rackId }),
    settings,
    preflight,
    sendFirst: "wait",
  });
  return { out, sent };
}

/** A check's outcome, thrown or returned, to compare the one read's with the two reads'. */
const outcome = (p: Promise<{ out: PreflightResult }>) =>
  p.then(
    ({ out }) => ({ out }),
    (err: Error) => ({ error: `${err.name}: ${err.message}` }),
  );

const ONE_READ: Sent = { command: "BatchGetItemCommand", tables: ["Inventory", "Tasks"] };
const byTables = (s: Sent) => ({ command: s.command, tables: [...s.tables].sort() });

describe("AcquireLock carries the image keys", () => {
  it("every candidate key of every component to its target, each once (a part's and its whole component's), in the report's order", async () => {
    const { state } = await started();
    expect(state.imageKeys).toEqual(["POWERSHELF#2.0.0#", "COMPUTE#2.0.0#", "COMPUTE#2.0.0#bios"]);
  });
});

describe("a done check: one BatchGetItem across both tables, the same plan as the two reads", () => {
  it("the task, its answers, the rack and the images in ONE request, then the report's write", async () => {
    const { task, state } = await started();
    const one = await check(task, state);
    expect(one.sent.map(byTables)).toEqual([ONE_READ, { command: "PutItemCommand", tables: [] }]);
    expect(one.out.groups?.map((g) => [g.componentIds, g.facts?.images, g.facts?.inventoryAt])).toEqual([
      [["s-0"], [plannedImage(SHELF)], { "s-0": 1 }],
      [["c-0", "c-1"], [plannedImage(COMPUTE)], { "c-0": 3, "c-1": 2 }],
    ]);
    expect(one.out.wave).toBeDefined();

    // The same check through the two reads (a catalog without the method): the same plan.
    const two = await check(task, state, { images: apart });
    expect(commands(two.sent)).toEqual(["BatchGetItem", "BatchGetItem", "PutItem"]);
    expect(two.sent.map((s) => s.tables)).toEqual([["Tasks"], ["Inventory"], []]);
    expect(two.out).toEqual(one.out);
  });

  it("a state without the keys (an execution started before them) or an event without the rack: the two reads, the same plan", async () => {
    const { task, state } = await started();
    const { imageKeys: _, ...before } = state;
    const withoutKeys = await check(task, before);
    expect(commands(withoutKeys.sent)).toEqual(["BatchGetItem", "BatchGetItem", "PutItem"]);
    const withoutRack = await check(task, state, { rackId: undefined });
    expect(commands(withoutRack.sent)).toEqual(["BatchGetItem", "BatchGetItem", "PutItem"]);
    const folded = await check(task, state);
    expect(folded.sent.map(byTables)[0]).toEqual(ONE_READ);
    expect(withoutKeys.out).toEqual(folded.out);
    expect(withoutRack.out).toEqual(folded.out);
  });

  it("a retried check (the same event): the same plan, from the same one read", async () => {
    const { task, state } = await started();
    const first = await check(task, state);
    const again = await check(task, state);
    expect(commands(again.sent)).toEqual(["BatchGetItem", "PutItem"]);
    expect(again.out).toEqual(first.out);
  });
});

describe("a poll that finds answers missing", () => {
  it("one request, as with the two reads; the rack and the images read in it, unused; the keys kept for the next poll", async () => {
    const { task, state } = await started({ answers: { "c-0": "1.0.0" } });
    const { unsent: _, ...afterWait } = state;
    const one = await check(task, afterWait);
    expect(one.sent.map(byTables)).toEqual([ONE_READ]);
    expect(one.out).toMatchObject({ done: false, polls: 1, imageKeys: state.imageKeys });
    const two = await check(task, afterWait, { images: apart });
    expect(two.sent.map((s) => s.tables)).toEqual([["Tasks"]]);
    expect(two.out).toEqual(one.out);
    // What reading the rack and its images for nothing costs (strongly consistent: 1 unit per
    // item up to 4 KB, each item rounded up on its own).
    console.log(
      `a poll with answers missing: ${one.sent[0]?.readUnits} read units with the rack and ${state.imageKeys?.length} image keys, ${two.sent[0]?.readUnits} without`,
    );
    if (one.sent[0]?.readUnits !== undefined && two.sent[0]?.readUnits !== undefined)
      expect(one.sent[0].readUnits).toBeGreaterThan(two.sent[0].readUnits);
  });
});

describe("what the rack read decides, decided the same from the one read", () => {
  it("readiness: a component the inventory has in maintenance keeps the preflight waiting, as with the two reads; ready again, it is done", async () => {
    const { task, state } = await started();
    await stores.readiness.setReadiness("c-1", { state: "MAINTENANCE", reason: "in maintenance" });
    const one = await check(task, state);
    expect(one.sent.map(byTables)[0]).toEqual(ONE_READ);
    expect(commands(one.sent).filter((c) => c === "BatchGetItem")).toHaveLength(1);
    expect(one.out).toMatchObject({
      done: false,
      readyDeadline: NOW + settings.readinessTimeoutSeconds * 1000,
    });
    expect(one.out.groups).toBeUndefined();
    const two = await check(task, state, { images: apart });
    expect(two.out).toEqual(one.out);

    await stores.readiness.setReadiness("c-1", undefined);
    const ready = await check(task, one.out);
    expect(ready.sent.map(byTables)[0]).toEqual(ONE_READ);
    expect(ready.out.done).toBe(true);
  });

  it("a rack cycle's power shelf: found in the one read; a rack without one fails NoPowerShelf, as with the two reads", async () => {
    const withShelf = await started({ rule: RACK_CYCLE });
    const one = await check(withShelf.task, withShelf.state);
    expect(one.out.done).toBe(true);
    expect(one.out.groups?.[0]?.componentIds).toEqual(["s-0", "c-0", "c-1"]);

    const computeOnly = COMPONENTS.filter((c) => c.type === "COMPUTE");
    const noShelf = await started({
      rule: RACK_CYCLE,
      components: computeOnly,
      rack: RACK.filter((c) => c.type !== "POWERSHELF"),
    });
    const failed = await outcome(check(noShelf.task, noShelf.state));
    expect(failed).toEqual({
      error: expect.stringMatching(
        new RegExp(`^NoPowerShelf: rack ${noShelf.task.rackId} has no POWERSHELF`),
      ),
    });
    expect(commands(sent)).toEqual(["BatchGetItem", "PutItem"]);
    expect(await outcome(check(noShelf.task, noShelf.state, { images: apart }))).toEqual(failed);
  });

  it("an unknown rack (no item): no readiness, no positions, as with the two reads", async () => {
    const { task, state } = await started({ rack: undefined });
    const one = await check(task, state);
    expect(one.sent.map(byTables)[0]).toEqual(ONE_READ);
    expect(one.out.groups?.map((g) => g.facts?.inventoryAt)).toEqual([undefined, undefined]);
    expect((await check(task, state, { images: apart })).out).toEqual(one.out);
  });

  it("a rack the task does not name (an input that names another): not used, the task's read as without the keys", async () => {
    const { task, state } = await started();
    const other = await started({ rack: [{ id: "c-0", type: "COMPUTE" }] });
    const out = await check(task, state, { rackId: other.task.rackId });
    expect(out.sent.map(byTables)).toEqual([
      ONE_READ,
      { command: "BatchGetItemCommand", tables: ["Inventory"] },
      { command: "PutItemCommand", tables: [] },
    ]);
    expect(out.out).toEqual((await check(task, state)).out);
  });
});

describe("images", () => {
  it("an image not registered fails the check with TaskMisconfigured, as with the two reads, before anything is sent", async () => {
    const { task, state } = await started({ version: "7.7.7" });
    const failed = await outcome(check(task, state));
    expect(failed).toEqual({ error: expect.stringMatching(/^TaskMisconfigured: .*COMPUTE 7\.7\.7/) });
    expect(commands(sent)).toEqual(["BatchGetItem", "PutItem"]);
    expect(await outcome(check(task, state, { images: apart }))).toEqual(failed);
  });

  it("keys that do not cover what the plan flashes: planImages reads the catalog itself, the plan's images as registered", async () => {
    const { task, state } = await started();
    const { out, sent: asked } = await check(task, { ...state, imageKeys: ["COMPUTE#2.0.0#"] });
    // The one read, the report's write, then the catalog's read of every image the plan flashes.
    expect(asked.map(byTables)).toEqual([
      ONE_READ,
      { command: "PutItemCommand", tables: [] },
      { command: "BatchGetItemCommand", tables: ["Inventory"] },
    ]);
    expect(out.groups?.map((g) => g.facts?.images)).toEqual([[plannedImage(SHELF)], [plannedImage(COMPUTE)]]);
  });
});

describe("the task: missing, ended, moved, cancelled meanwhile", () => {
  it("a missing task: TaskNotFound, as with the two reads", async () => {
    const { task, state } = await started();
    const gone = { id: randomUUID(), rackId: task.rackId };
    expect(await outcome(check(gone, state))).toEqual({ error: `TaskNotFound: task ${gone.id} not found` });
    expect(commands(sent)).toEqual(["BatchGetItem"]);
    expect(await outcome(check(gone, state, { images: apart }))).toEqual({
      error: `TaskNotFound: task ${gone.id} not found`,
    });
  });

  it("an ended task (cancelled before the check): no plan, nothing written, as with the two reads", async () => {
    const { task, state } = await started();
    await stores.tasks.saveTask(
      { ...task, status: "TERMINATED", updatedAt: task.updatedAt + 1 },
      task.updatedAt,
    );
    const one = await check(task, state);
    expect(commands(one.sent)).toEqual(["BatchGetItem"]);
    expect(one.out).toMatchObject({ done: true, groups: [] });
    expect(one.out.wave).toBeUndefined();
    expect((await check(task, state, { images: apart })).out).toEqual(one.out);
  });

  /** The catalog's one read, then `meanwhile` (another writer) before the check goes on. */
  const thenMeanwhile = (meanwhile: () => Promise<void>): StepDeps["images"] => ({
    getImages: (keys) => stores.images.getImages(keys),
    getImagesWithRackAndTask: async (...args) => {
      const read = await stores.images.getImagesWithRackAndTask!(...args);
      await meanwhile();
      return read;
    },
  });

  it("a task that moved between the read and the report's write: the write is refused, read again and made; the plan as planned", async () => {
    const { task, state } = await started();
    const moved = thenMeanwhile(async () => {
      const [now] = await stores.tasks.getTasks([task.id]);
      await stores.tasks.saveTask(
        { ...(now as Task), message: "moved", updatedAt: NOW - 1 },
        (now as Task).updatedAt,
      );
    });
    const { out, sent: asked } = await check(task, state, { images: moved });
    // The one read, the other writer's read and write, the refused write (and the store's look
    // at why: the task is there, moved), a fresh read, the write.
    expect(commands(asked)).toEqual([
      "BatchGetItem",
      "BatchGetItem",
      "PutItem",
      "PutItem",
      "GetItem",
      "BatchGetItem",
      "PutItem",
    ]);
    expect(out.groups?.map((g) => g.componentIds)).toEqual([["s-0"], ["c-0", "c-1"]]);
    const [stored] = await stores.tasks.getTasks([task.id]);
    expect(stored).toMatchObject({ message: "moved", updatedAt: NOW });
    expect(parseReport((stored as Task).report).components.map((c) => c.versionBefore)).toEqual([
      "1.0.0",
      "1.0.0",
      "1.0.0",
    ]);
  });

  it("a cancel between the read and the report's write: the task ended, no plan, no step made, the ending kept", async () => {
    const { task, state } = await started();
    const cancel = thenMeanwhile(async () => {
      const [now] = await stores.tasks.getTasks([task.id]);
      await stores.tasks.saveTask(
        { ...(now as Task), status: "TERMINATED", message: "cancelled", updatedAt: NOW - 1 },
        (now as Task).updatedAt,
      );
    });
    const { out } = await check(task, state, { images: cancel });
    expect(out).toMatchObject({ done: true, groups: [] });
    expect(out.wave).toBeUndefined();
    expect((await stores.tasks.getTasks([task.id]))[0]).toMatchObject({
      status: "TERMINATED",
      message: "cancelled",
    });
  });
});

describe("the image records as the one read returns them", () => {
  it("getImagesWithRackAndTask: the registered images of the keys (unknown ones left out), the rack's components, the task and its sets", async () => {
    const { task } = await started();
    sent = [];
    const read = await stores.images.getImagesWithRackAndTask!(
      ["COMPUTE#2.0.0#", "COMPUTE#2.0.0#bios", "POWERSHELF#2.0.0#", "NVSWITCH#1.0.0#"],
      task.rackId,
      { taskId: task.id, families: ["q", "u"] },
    );
    expect(sent.map(byTables)).toEqual([ONE_READ]);
    const byKey = (a: FirmwareImage, b: FirmwareImage) => a.componentType.localeCompare(b.componentType);
    expect([...read.images].sort(byKey)).toEqual([COMPUTE, SHELF]);
    expect(read.components.map((c) => c.id)).toEqual(RACK.map((c) => c.id));
    expect(read.task).toEqual(task);
    expect(Object.keys(read.sets)).toEqual(["q"]);
    expect(apart.getImagesWithRackAndTask).toBeUndefined();
  });
});

describe("through the definition (the real ASL on the local stack, the stores' own catalog)", () => {
  /** Each CheckPreflight: the image keys its event carried, and the requests it made. */
  const checks: { imageKeys?: string[]; sent: Sent[] }[] = [];
  const inCheck = new AsyncLocalStorage<Sent[]>();
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({
      label: "pfreadasl",
      racks: [rack("d7100000", 1, SMALL_RACK)],
      fleet: SUCCEEDING_FLEET,
      settings: HEALTHY_FLEET_SETTINGS,
      awaitTimeoutOverrideMs: 600_000,
      ownCatalog: true,
      aroundStep: (event, run) => {
        if (event.step !== "checkQueries") return run();
        const check = {
          ...(event.preflight.imageKeys ? { imageKeys: event.preflight.imageKeys } : {}),
          sent: [],
        };
        checks.push(check);
        return inCheck.run(check.sent, run);
      },
    });
    for (const { type } of SMALL_RACK)
      await h.stores.images.registerImage(imageRecord({ componentType: type, version: "2.0.0" }));
    h.client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { RequestItems?: Record<string, unknown> };
        inCheck.getStore()?.push({
          command: context.commandName ?? "?",
          tables: Object.keys(input.RequestItems ?? {})
            .map((t) => (t === h.names.tasks ? "Tasks" : t === h.names.inventory ? "Inventory" : t))
            .sort(),
        });
        return next(args);
      },
      { step: "initialize", name: "checkPreflightRecorder" },
    );
  }, 60_000);
  afterAll(() => h?.close());

  it("AcquireLock's keys reach CheckPreflight in $.plan: its one read, then the report's write; the task completes with the images registered", async () => {
    const { taskIds } = await h.child.tasksApi.upgradeFirmware(upgradeRequest([id("d7100000", 1, 0)]));
    const task = await waitForTask(h, taskIds[0] as string);
    expect(task.status).toBe("COMPLETED");
    expect(checks).toEqual([
      {
        imageKeys: ["POWERSHELF#2.0.0#", "NVSWITCH#2.0.0#", "COMPUTE#2.0.0#"],
        sent: [
          { command: "BatchGetItemCommand", tables: ["Inventory", "Tasks"] },
          { command: "PutItemCommand", tables: [] },
        ],
      },
    ]);
  });
});
