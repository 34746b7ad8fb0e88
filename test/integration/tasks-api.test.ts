/**
 * The TasksApi on the local stack: UpgradeFirmware's conflict strategies (REJECT fails fast and
 * takes nothing; QUEUE waits for the rack up to the queue timeout), credentials that reach the BMC
 * only sealed, GetTasksByIDs, ListTasks filters, pagination and with_report.
 */

import { ScanCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { itemToTask } from "../../src/adapters/dynamodb/items.js";
import type { UpdateCommand } from "../../src/domain/bmc-protocol.js";
import { decodeBmcCommand } from "../../src/domain/bmc-protocol-decode.js";
import { BMC_CMD_TOPIC_FILTER } from "../../src/domain/bmc-topics.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import { parseReport } from "../../src/domain/task-report.js";
import { CREDENTIAL_CANARY } from "../support/credential-canary.js";
import {
  type Harness,
  HEALTHY_FLEET_SETTINGS,
  id,
  queriesOf,
  rack,
  startHarness,
  until,
  upgradeRequest,
  waitForTask,
} from "./child-task-harness.js";

const P = "ab000000";
const racks: InventoryRack[] = [1, 2, 3, 4, 5, 6].map((n) =>
  rack(P, n, [
    { type: "COMPUTE", count: 2 },
    { type: "POWERSHELF", count: 1 },
  ]),
);
const SECRET = CREDENTIAL_CANARY;

let h: Harness;
const commands: UpdateCommand[] = [];
beforeAll(async () => {
  h = await startHarness({
    label: "tapi",
    racks,
    settings: HEALTHY_FLEET_SETTINGS,
    fleet: { defaults: { outcome: "succeed", updateMs: 40 }, racks: {}, components: {} },
  });
  await h.broker.subscribe(BMC_CMD_TOPIC_FILTER, (_topic, payload) => {
    const decoded = decodeBmcCommand(payload);
    if (decoded.ok && decoded.value.type === "update") commands.push(decoded.value);
  });
});
afterAll(async () => {
  await h?.close();
});

describe("UpgradeFirmware", () => {
  it("REJECT: a busy rack fails the whole request with FailedPrecondition, creating no task and leaving no lock", async () => {
    await h.stores.locks.acquire(id(P, 2, 0), "someone-else", 60_000, Date.now());
    const before = await h.child.tasksApi.listTasks({
      activeOnly: false,
      withReport: false,
      page: { offset: 0, limit: 100 },
    });
    await expect(
      h.child.tasksApi.upgradeFirmware(
        upgradeRequest([id(P, 1, 0), id(P, 2, 0)], {
          queueOptions: { conflictStrategy: "REJECT", queueTimeoutSeconds: 0 },
        }),
      ),
    ).rejects.toMatchObject({
      code: "FAILED_PRECONDITION",
      message: `failed to create task for required rack ${id(P, 2, 0)}: rack ${id(P, 2, 0)} already has a conflicting task: rack conflict`,
    });
    expect(await h.stores.locks.get(id(P, 1, 0))).toBeUndefined();
    const after = await h.child.tasksApi.listTasks({
      activeOnly: false,
      withReport: false,
      page: { offset: 0, limit: 100 },
    });
    expect(after.total).toBe(before.total);
    await h.stores.locks.release(id(P, 2, 0), "someone-else");
  });

  it("QUEUE: the task WAITS while the rack is busy, then runs once it is free", async () => {
    // This task's execution is the only one, so every AcquireLock counted from here is its own.
    await h.child.idle();
    const steps = (name: string) => h.child.executor.stats().byStep[name] ?? 0;
    const polled = steps("acquireLock");
    await h.stores.locks.acquire(id(P, 3, 0), "someone-else", 60_000, Date.now());
    const { taskIds } = await h.child.tasksApi.upgradeFirmware(
      upgradeRequest([id(P, 3, 0)], { queueOptions: { conflictStrategy: "QUEUE", queueTimeoutSeconds: 30 } }),
    );
    const waiting = await waitForTask(h, taskIds[0]!, (t) => t.status === "WAITING");
    expect(waiting.message).toBe(`waiting for rack ${id(P, 3, 0)} to be free`);
    expect(waiting.queueExpiresAt).toBe(waiting.createdAt + 30_000);
    // A third AcquireLock means the first two found the rack held and sent the task back to wait.
    await until("three lock polls", () => steps("acquireLock") >= polled + 3);
    // No BMC was asked anything while the task waited.
    expect(await queriesOf(h, taskIds[0]!)).toBeUndefined();
    expect((await h.child.tasksApi.getTasks(taskIds))[0]?.status).toBe("WAITING");
    await h.stores.locks.release(id(P, 3, 0), "someone-else");
    const done = await waitForTask(h, taskIds[0]!);
    expect(done).toMatchObject({ status: "COMPLETED", message: "upgraded 3 components to 2.0.0" });
  });

  it("QUEUE: a rack still busy at the queue timeout fails the task with QueueTimeout", async () => {
    await h.stores.locks.acquire(id(P, 4, 0), "someone-else", 60_000, Date.now());
    const { taskIds } = await h.child.tasksApi.upgradeFirmware(
      upgradeRequest([id(P, 4, 0)], { queueOptions: { conflictStrategy: "QUEUE", queueTimeoutSeconds: 1 } }),
    );
    const task = await waitForTask(h, taskIds[0]!);
    expect(task).toMatchObject({
      status: "FAILED",
      message: `rack ${id(P, 4, 0)} stayed busy with another task until the queue timeout expired`,
    });
    expect(await h.stores.locks.get(id(P, 4, 0))).toMatchObject({ owner: "someone-else" });
    await h.stores.locks.release(id(P, 4, 0), "someone-else");
  });

  it("credentials reach each BMC only sealed, and never appear in a task, a report, a request record or the secret item", async () => {
    const { taskIds } = await h.child.tasksApi.upgradeFirmware(
      upgradeRequest([id(P, 5, 0)], { authentication: { kind: "perComponent", compute: SECRET } }),
    );
    const task = await waitForTask(h, taskIds[0]!);
    expect(task.status).toBe("COMPLETED");
    const mine = commands.filter((c) => c.taskId === task.id);
    expect(mine).toHaveLength(3);
    const compute = mine.filter((c) => c.auth !== undefined);
    // Only the two COMPUTE trays get a credential (per-component auth names none for POWERSHELF).
    expect(compute).toHaveLength(2);
    for (const c of compute) {
      expect(c.auth?.keyId).toBe("local-aes-256-gcm");
      expect(Buffer.from(c.auth!.ciphertext, "base64").toString("latin1")).not.toContain(SECRET);
    }
    // Each blob opens for its own BMC and request only (the context is bound in).
    const trays = racks[4]!.components.filter((x) => x.type === "COMPUTE").map((x) => x.id);
    const openers = await Promise.all(
      compute.map(async (c) => {
        const blob = Buffer.from(c.auth!.ciphertext, "base64");
        const opens: string[] = [];
        for (const tray of trays) {
          const plain = await h.cipher
            .decrypt(blob, `bmc:${racks[4]!.id}:${tray}:${c.requestId}`)
            .catch(() => undefined);
          if (plain !== undefined) opens.push(`${tray}=${Buffer.from(plain).toString("utf8")}`);
        }
        return opens;
      }),
    );
    expect(openers.flat().sort()).toEqual(trays.map((t) => `${t}=${SECRET}`).sort());
    expect(openers.every((o) => o.length === 1)).toBe(true);
    const listed = await h.child.tasksApi.listTasks({
      activeOnly: false,
      withReport: true,
      page: { offset: 0, limit: 100 },
    });
    expect(JSON.stringify(listed)).not.toContain(SECRET);
    const raw = await h.stores.doc.send(new ScanCommand({ TableName: h.names.tasks }));
    // Every byte stored, and the task items as read (their deflated reports inflated).
    const text = JSON.stringify(raw.Items, (_k, v) =>
      v instanceof Uint8Array ? Buffer.from(v).toString("latin1") : v,
    );
    expect(text).not.toContain(SECRET);
    const tasksRead = (raw.Items ?? []).filter((i) => i.executorType !== undefined).map(itemToTask);
    expect(tasksRead.map((t) => t.id)).toContain(task.id);
    expect(JSON.stringify(tasksRead)).not.toContain(SECRET);
    expect(raw.Items?.some((i) => i.id === `secret#${task.id}`)).toBe(true);
  });

  it("a request without target_spec is InvalidArgument; an unknown rack is NotFound", async () => {
    await expect(
      h.child.tasksApi.upgradeFirmware({ ...upgradeRequest([]), targetSpec: undefined } as never),
    ).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: "target_spec: target_spec is required" });
    await expect(h.child.tasksApi.upgradeFirmware(upgradeRequest([id(P, 99, 0)]))).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
  });
});

describe("GetTasksByIDs and ListTasks", () => {
  it("GetTasksByIDs answers in the order asked, unknown ids skipped", async () => {
    const { taskIds } = await h.child.tasksApi.upgradeFirmware(upgradeRequest([id(P, 6, 0), id(P, 1, 0)]));
    await Promise.all(taskIds.map((t) => waitForTask(h, t)));
    const got = await h.child.tasksApi.getTasks([
      taskIds[1]!,
      "ab000000-0000-4000-8000-999999999999",
      taskIds[0]!,
    ]);
    expect(got.map((t) => t.id)).toEqual([taskIds[1], taskIds[0]]);
    expect(got.map((t) => t.rackId)).toEqual([id(P, 1, 0), id(P, 6, 0)]);
    expect(got[0]).toMatchObject({
      operation: "UpgradeFirmware",
      executorType: "STEP_FUNCTIONS",
      description: "integration",
    });
    expect(got[0]?.executionId).toBe(
      `arn:aws:states:us-east-1:000000000000:execution:flow-child-task:${taskIds[1]}`,
    );
  });

  it("ListTasks: by rack, by component, active only, newest first, paged, report only with with_report", async () => {
    const all = await h.child.tasksApi.listTasks({
      activeOnly: false,
      withReport: false,
      page: { offset: 0, limit: 100 },
    });
    expect(all.total).toBe(all.tasks.length);
    expect(all.tasks.every((t) => t.report === "")).toBe(true);
    const created = all.tasks.map((t) => t.createdAt);
    expect([...created].sort((a, b) => b - a)).toEqual(created);

    const rack1 = await h.child.tasksApi.listTasks({
      rackId: id(P, 1, 0),
      activeOnly: false,
      withReport: true,
      page: { offset: 0, limit: 10 },
    });
    expect(rack1.total).toBe(1);
    expect(parseReport(rack1.tasks[0]!.report).components.map((c) => c.status)).toEqual([
      "COMPLETED",
      "COMPLETED",
      "COMPLETED",
    ]);

    const byComponent = await h.child.tasksApi.listTasks({
      componentId: id(P, 5, 1),
      activeOnly: false,
      withReport: false,
      page: { offset: 0, limit: 10 },
    });
    expect(byComponent.tasks.map((t) => t.rackId)).toEqual([id(P, 5, 0)]);

    const page = await h.child.tasksApi.listTasks({
      activeOnly: false,
      withReport: false,
      page: { offset: 1, limit: 2 },
    });
    expect(page.total).toBe(all.total);
    expect(page.tasks.map((t) => t.id)).toEqual(all.tasks.slice(1, 3).map((t) => t.id));

    const active = await h.child.tasksApi.listTasks({
      activeOnly: true,
      withReport: false,
      page: { offset: 0, limit: 100 },
    });
    expect(active.total).toBe(0);
  });
});

describe("a task's rack external id", () => {
  it("is frozen from the inventory when the task is made, and looked up for a task made before it was", async () => {
    const { taskIds } = await h.child.tasksApi.upgradeFirmware(upgradeRequest([id(P, 3, 0)]));
    await waitForTask(h, taskIds[0]!);
    const [stored] = await h.stores.tasks.getTasks([taskIds[0]!]);
    expect(stored?.rackExternalId).toBe("EXT-ab-3");
    const [got] = await h.child.tasksApi.getTasks([taskIds[0]!]);
    expect(got?.rackExternalId).toBe("EXT-ab-3");

    // A task item written before external ids were frozen on tasks has none of its own.
    const { rackExternalId: _frozen, ...before } = stored!;
    const legacy = { ...before, id: "ab000000-0000-4000-8000-00000000aaaa" };
    delete legacy.idempotencyKey;
    await h.stores.tasks.createTask(legacy);
    expect((await h.stores.tasks.getTasks([legacy.id]))[0]).not.toHaveProperty("rackExternalId");
    const listed = await h.child.tasksApi.listTasks({
      rackId: id(P, 3, 0),
      activeOnly: false,
      withReport: false,
      page: { offset: 0, limit: 10 },
    });
    expect(listed.tasks.map((t) => [t.id, t.rackExternalId])).toEqual(
      expect.arrayContaining([
        [taskIds[0], "EXT-ab-3"],
        [legacy.id, "EXT-ab-3"],
      ]),
    );
  });
});
