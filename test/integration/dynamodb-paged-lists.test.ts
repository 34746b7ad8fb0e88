/**
 * Lists page in the store (src/adapters/dynamodb/paged-query.ts), against moto: a 10,000-target
 * run read page by page costs a request or two a page, each asking for no more than the page
 * (Limit), never the whole run; a cold jump to a far offset skips with COUNT queries that transfer
 * no item; the total comes from the run's phase sizes, or a COUNT with a status filter. ListRacks
 * reads the racks' index a page at a time and the page's racks by key, never a Scan; ListTasks
 * pages too.
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { BatchWriteCommand, type DynamoDBDocumentClient, QueryCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { documentClient } from "../../src/adapters/dynamodb/db.js";
import type { TableNames } from "../../src/adapters/dynamodb/index.js";
import { DynamoInventoryStore } from "../../src/adapters/dynamodb/inventory-store.js";
import { targetToItem } from "../../src/adapters/dynamodb/items.js";
import { DynamoRunStore } from "../../src/adapters/dynamodb/run-store.js";
import { DynamoTaskStore } from "../../src/adapters/dynamodb/task-store.js";
import type { Run, Target } from "../../src/domain/model.js";
import { runningTask } from "../support/domain-fixtures.js";
import { runWithTargets, uuid } from "../support/dynamodb-fixtures.js";
import { freshTables, testClient } from "../support/moto.js";
import { testEndpoint } from "../support/test-endpoint.js";

const TARGETS = 10_000;
const PAGE = 1000;

interface Sent {
  select: string | undefined;
  limit: number | undefined;
  items: number;
}

let client: DynamoDBClient;
let names: TableNames;
let drop: () => Promise<void>;
let store: DynamoRunStore;
let run: Run;
let targets: Target[];
const sent: Sent[] = [];
/** The name of every command the recording client sent. */
const commands: string[] = [];

/** A document client that records every Query it sends: Select, Limit, and how many items came back. */
function recording(doc: DynamoDBDocumentClient): DynamoDBDocumentClient {
  const wrapped = Object.create(doc) as DynamoDBDocumentClient;
  wrapped.send = (async (command: Parameters<DynamoDBDocumentClient["send"]>[0]) => {
    commands.push(command.constructor.name);
    const out = (await doc.send(command as never)) as { Items?: unknown[] };
    if (command instanceof QueryCommand) {
      sent.push({ select: command.input.Select, limit: command.input.Limit, items: out.Items?.length ?? 0 });
    }
    return out;
  }) as DynamoDBDocumentClient["send"];
  return wrapped;
}

beforeAll(async () => {
  client = testClient(testEndpoint());
  const tables = await freshTables(client, "paged");
  drop = tables.drop;
  names = tables.names;
  const doc = documentClient(client);
  ({ run, targets } = runWithTargets(uuid(1, "9a9e0000"), { phaseSizes: [4000, 6000] }));
  // All but the last hundred targets are written as a sealed create leaves them, 25 to a batch: the
  // create's own transactions of 100 took over two minutes on moto. The create then commits the
  // run with the last hundred, as it does for any run.
  const early = targets.slice(0, TARGETS - 100);
  const batches: Target[][] = [];
  for (let i = 0; i < early.length; i += 25) batches.push(early.slice(i, i + 25));
  for (let i = 0; i < batches.length; i += 8) {
    await Promise.all(
      batches.slice(i, i + 8).map((batch) =>
        doc.send(
          new BatchWriteCommand({
            RequestItems: {
              [tables.names.targets]: batch.map((t) => ({ PutRequest: { Item: targetToItem(t) } })),
            },
          }),
        ),
      ),
    );
  }
  const outcome = await new DynamoRunStore(doc, tables.names).createRun(run, targets.slice(TARGETS - 100));
  expect(outcome.outcome).toBe("created");
  store = new DynamoRunStore(recording(doc), tables.names);
}, 300_000);

afterAll(async () => {
  await drop();
  client.destroy();
});

const options = (offset: number, extra: { status?: Target["status"]; phaseSizes?: number[] } = {}) => ({
  phaseFrom: 0,
  phaseTo: 1,
  page: { offset, limit: PAGE },
  knownCommitted: true,
  ...extra,
});

describe("a 10,000-target run's targets, page by page", () => {
  it("every target once, in order; each page a request or two asking for the page, never the run", async () => {
    sent.length = 0;
    const read: string[] = [];
    for (let offset = 0; offset < TARGETS; offset += PAGE) {
      const before = sent.length;
      const page = await store.listTargets(run.id, options(offset, { phaseSizes: run.phaseSizes }));
      expect(page?.total).toBe(TARGETS);
      expect(page?.targets).toHaveLength(PAGE);
      read.push(...(page?.targets ?? []).map((t) => t.id));
      const requests = sent.slice(before);
      expect(requests.length, `page at ${offset}: ${JSON.stringify(requests)}`).toBeLessThanOrEqual(2);
      for (const r of requests) {
        expect(r.select).toBeUndefined();
        expect(r.limit).toBeLessThanOrEqual(PAGE);
        expect(r.items).toBeLessThanOrEqual(PAGE);
      }
    }
    expect(read).toEqual(targets.map((t) => t.id));
    expect(sent.length).toBeLessThanOrEqual(2 * (TARGETS / PAGE));
  });

  it("a cold jump to a far offset skips with COUNT queries (no item transferred), then reads the page", async () => {
    const cold = new DynamoRunStore(recording(documentClient(client)), names);
    sent.length = 0;
    const page = await cold.listTargets(run.id, options(9000, { phaseSizes: run.phaseSizes }));
    expect(page?.targets.map((t) => t.id)).toEqual(targets.slice(9000).map((t) => t.id));
    const skips = sent.filter((r) => r.select === "COUNT");
    expect(skips.length).toBeGreaterThan(0);
    for (const r of skips) expect(r.items).toBe(0);
    expect(sent.filter((r) => r.select !== "COUNT").reduce((n, r) => n + r.items, 0)).toBe(PAGE);
    // The targets' keys and attributes are well under 1 MB per thousand: a handful of requests.
    expect(sent.length).toBeLessThanOrEqual(12);
  });

  it("with a status filter the total is counted in the store (COUNT, nothing transferred)", async () => {
    sent.length = 0;
    const page = await store.listTargets(run.id, { ...options(0), status: "PENDING" });
    expect(page?.total).toBe(TARGETS);
    expect(page?.targets).toHaveLength(PAGE);
    for (const r of sent.filter((q) => q.select === "COUNT")) expect(r.items).toBe(0);
    expect(sent.filter((r) => r.select !== "COUNT").reduce((n, r) => n + r.items, 0)).toBe(PAGE);
  });

  it("past the end: no targets, the total still right", async () => {
    const page = await store.listTargets(run.id, options(TARGETS, { phaseSizes: run.phaseSizes }));
    expect(page).toEqual({ targets: [], total: TARGETS });
  });
});

describe("ListRacks: from the racks' index, a page at a time", () => {
  it("pages of racks by id with the total; Query and BatchGetItem only, never a Scan", async () => {
    const racks = Array.from({ length: 30 }, (_, i) => ({
      id: uuid(i + 1, "7ac50000"),
      name: `paged-${i}`,
      components: [{ id: uuid(i + 1, "c0c50000"), type: "COMPUTE" as const }],
    }));
    const inventory = new DynamoInventoryStore(recording(documentClient(client)), names);
    await inventory.upsertRacks(racks);
    commands.length = 0;
    sent.length = 0;
    const seen: string[] = [];
    for (let offset = 0; offset < 30; offset += 7) {
      const page = await inventory.listRacks({ offset, limit: 7 });
      expect(page.total).toBe(30);
      seen.push(...page.racks.map((r) => r.id));
    }
    expect(seen).toEqual(racks.map((r) => r.id).sort());
    expect([...new Set(commands)].sort()).toEqual(["BatchGetCommand", "QueryCommand"]);
    for (const r of sent.filter((q) => q.select !== "COUNT")) expect(r.items).toBeLessThanOrEqual(7);
  });
});

describe("ListTasks: a page at a time", () => {
  it("a rack's tasks newest first in pages, each request asking for no more than the page", async () => {
    const tasksStore = new DynamoTaskStore(recording(documentClient(client)), names);
    const rack = uuid(99, "7a5c0000");
    const made = Array.from({ length: 30 }, (_, i) =>
      runningTask({ id: uuid(i + 1, "7a5c1000"), rackId: rack, createdAt: 1000 + i, updatedAt: 1000 + i }),
    );
    for (const t of made) await tasksStore.createTask(t);
    sent.length = 0;
    const seen: string[] = [];
    for (let offset = 0; offset < 30; offset += 7) {
      const page = await tasksStore.listTasks({
        rackId: rack,
        activeOnly: false,
        page: { offset, limit: 7 },
      });
      expect(page.total).toBe(30);
      seen.push(...page.tasks.map((t) => t.id));
    }
    expect(seen).toEqual(made.map((t) => t.id).reverse());
    for (const r of sent.filter((q) => q.select !== "COUNT")) {
      expect(r.limit).toBeLessThanOrEqual(7);
      expect(r.items).toBeLessThanOrEqual(7);
    }
  });
});
