/**
 * ListTasks by component, against moto, through the task service: the component's rack is
 * resolved in the inventory and only that rack's tasks are read, the component filter runs in the
 * store (`contains` on the ids' binary set), and only the matches come out; items written with
 * the ids as a list or packed in one binary still list. Measured by the items each Query
 * evaluated (ScannedCount) and returned, with tasks on four racks.
 */
import {
  BatchGetCommand,
  type DynamoDBDocumentClient,
  PutCommand,
  QueryCommand,
} from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { documentClient } from "../../src/adapters/dynamodb/db.js";
import type { TableNames } from "../../src/adapters/dynamodb/index.js";
import { DynamoInventoryStore } from "../../src/adapters/dynamodb/inventory-store.js";
import { taskToItem } from "../../src/adapters/dynamodb/items.js";
import { DynamoTaskStore } from "../../src/adapters/dynamodb/task-store.js";
import type { TasksApi } from "../../src/app/api.js";
import { createTaskService } from "../../src/app/child-task/task-service.js";
import type { Task } from "../../src/domain/task.js";
import { task } from "../support/contracts/task-store.js";
import { componentId, rackGroup } from "../support/fixtures-inventory.js";
import { everyImage } from "../support/memory-images.js";
import { freshTables, testClient } from "../support/moto.js";
import { testEndpoint } from "../support/test-endpoint.js";

const unused = () => {
  throw new Error("not used by this test");
};

interface Reads {
  /** Items the Queries evaluated (read and billed), summed. */
  scanned: number;
  /** Items the Queries returned. */
  returned: number;
  /** Items BatchGetItem returned. */
  fetched: number;
}
const reads: Reads = { scanned: 0, returned: 0, fetched: 0 };

/** A document client that adds up what its Queries read and return, and what BatchGets fetch. */
function counting(doc: DynamoDBDocumentClient): DynamoDBDocumentClient {
  const wrapped = Object.create(doc) as DynamoDBDocumentClient;
  wrapped.send = (async (command: Parameters<DynamoDBDocumentClient["send"]>[0]) => {
    const out = (await doc.send(command as never)) as {
      ScannedCount?: number;
      Items?: unknown[];
      Responses?: Record<string, unknown[]>;
    };
    if (command instanceof QueryCommand) {
      reads.scanned += out.ScannedCount ?? 0;
      reads.returned += out.Items?.length ?? 0;
    }
    if (command instanceof BatchGetCommand) {
      for (const items of Object.values(out.Responses ?? {})) reads.fetched += items.length;
    }
    return out;
  }) as DynamoDBDocumentClient["send"];
  return wrapped;
}

const group = rackGroup(0x7c, { name: "bycomp", count: 4, types: ["COMPUTE", "COMPUTE", "NVSWITCH"] });
const racks = group.ids;
/** The component listed: rack 2's second COMPUTE. */
const C = componentId(0x7c, 2, 1);
const PER_RACK = 8;

let names: TableNames;
let drop: () => Promise<void>;
let api: TasksApi;
/** Rack 2's tasks that hold C, newest first. */
let holding: string[];

beforeAll(async () => {
  const client = testClient(testEndpoint());
  ({ names, drop } = await freshTables(client, "bycomp"));
  const doc = documentClient(client);
  const inventory = new DynamoInventoryStore(doc, names);
  await inventory.upsertRacks(group.racks);
  const tasks = new DynamoTaskStore(counting(doc), names);
  // PER_RACK tasks on each rack, alternating between the rack's first and second component (so
  // half of rack 2's hold C); the newest of rack 2's holding C still running.
  let n = 0;
  const made: Task[] = [];
  for (const [r, rackId] of racks.entries()) {
    for (let i = 0; i < PER_RACK; i++) {
      n++;
      const components = [componentId(0x7c, r, i % 2), componentId(0x7c, r, 2)];
      const status = r === 2 && i === PER_RACK - 1 ? "RUNNING" : "COMPLETED";
      made.push(task(7_000 + n, { rackId, componentIds: components, createdAt: 10_000 + n, status }));
    }
  }
  for (const t of made) await tasks.createTask(t);
  // Items as written before the binary set: C's ids as a list, and packed in one binary (one
  // holding C, one not), all on rack 2.
  const before = (t: Task, as: "list" | "packed") => {
    const { componentIdSet: _s, componentOrder: _o, ...item } = taskToItem({ ...t, status: "COMPLETED" });
    const packed = Buffer.from(t.componentIds.map((id) => id.replaceAll("-", "")).join(""), "hex");
    return as === "list" ? { ...item, componentIds: t.componentIds } : { ...item, componentIdsB: packed };
  };
  const old = [
    before(
      task(7_101, { rackId: racks[2], componentIds: [componentId(0x7c, 2, 2), C], createdAt: 9_001 }),
      "list",
    ),
    before(
      task(7_102, { rackId: racks[2], componentIds: [C, componentId(0x7c, 2, 2)], createdAt: 9_002 }),
      "packed",
    ),
    before(
      task(7_103, { rackId: racks[2], componentIds: [componentId(0x7c, 2, 0)], createdAt: 9_003 }),
      "packed",
    ),
  ];
  for (const item of old) await doc.send(new PutCommand({ TableName: names.tasks, Item: item }));
  const newer = made.filter((t) => t.rackId === racks[2] && t.componentIds.includes(C)).map((t) => t.id);
  holding = [...newer.reverse(), task(7_102).id, task(7_101).id];
  api = createTaskService({
    images: everyImage,
    tasks,
    runs: { recordOutcome: unused },
    locks: { acquire: unused, release: unused, get: unused } as never,
    inventory,
    secrets: { put: unused, get: unused },
    commands: { get: unused, getUpdates: unused, getMany: unused, close: unused },
    firmware: { record: unused },
    executor: { start: unused, stop: unused },
    clock: Date.now,
    newId: unused,
  }).api;
});
afterAll(() => drop());

const list = async (query: {
  componentId: string;
  rackId?: string;
  activeOnly?: boolean;
  offset?: number;
}) => {
  reads.scanned = reads.returned = reads.fetched = 0;
  const out = await api.listTasks({
    componentId: query.componentId,
    ...(query.rackId === undefined ? {} : { rackId: query.rackId }),
    activeOnly: query.activeOnly ?? false,
    withReport: false,
    page: { offset: query.offset ?? 0, limit: 2 },
  });
  return { ids: out.tasks.map((t) => t.id), total: out.total, reads: { ...reads } };
};

describe("ListTasks by component", () => {
  it("reads only the component's rack, returns only its tasks (and the packed items to match), newest first in pages; old formats list", async () => {
    // Rack 2 holds PER_RACK new items and 3 old ones; the other racks' 3 × PER_RACK are never read.
    const rackItems = PER_RACK + 3;
    const pages = [];
    for (let offset = 0; offset < holding.length; offset += 2)
      pages.push(await list({ componentId: C, offset }));
    expect(pages.flatMap((p) => p.ids)).toEqual(holding);
    for (const p of pages) {
      expect(p.total).toBe(holding.length);
      // Evaluated: rack 2's items. Returned: the matches and the two packed items (matched here).
      expect(p.reads).toEqual({
        scanned: rackItems,
        returned: holding.length - 1 + 2,
        fetched: p.ids.length,
      });
    }
  });

  it("with rack_id: the component's rack lists the same; another rack lists nothing (and reads only that rack)", async () => {
    const same = await list({ componentId: C, rackId: racks[2] });
    expect([same.ids, same.total]).toEqual([holding.slice(0, 2), holding.length]);
    const other = await list({ componentId: C, rackId: racks[1] });
    expect(other).toEqual({ ids: [], total: 0, reads: { scanned: PER_RACK, returned: 0, fetched: 0 } });
  });

  it("active only: the rack's active tasks holding it (activeByRack)", async () => {
    const active = await list({ componentId: C, activeOnly: true });
    expect(active).toEqual({ ids: [holding[0]], total: 1, reads: { scanned: 1, returned: 1, fetched: 1 } });
  });

  it("an unknown component lists nothing, as an unknown rack does, and reads no task", async () => {
    const unknown = componentId(0x7c, 9, 0);
    expect(await list({ componentId: unknown })).toEqual({
      ids: [],
      total: 0,
      reads: { scanned: 0, returned: 0, fetched: 0 },
    });
    const rack = await api.listTasks({
      rackId: group.racks[0]!.id.replace("-4000-", "-4999-"),
      activeOnly: false,
      withReport: false,
      page: { offset: 0, limit: 2 },
    });
    expect(rack).toEqual({ tasks: [], total: 0 });
  });
});
