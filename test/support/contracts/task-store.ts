/**
 * The TaskStore contract (src/app/ports.ts), run against the in-memory fake and DynamoDB on moto.
 * Listings are narrowed to the case's own rack or component, so a store shared with other suites
 * does not disturb them.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { ListTasksOptions, TaskStore } from "../../../src/app/ports.js";
import type { Task } from "../../../src/domain/task.js";
import { uuid } from "../dynamodb-fixtures.js";

const ALL = { offset: 0, limit: 100 };

/** Task n of the contract cases (and of the DynamoDB store tests): its own id, component and execution. */
export function task(n: number, overrides: Partial<Task> = {}): Task {
  return {
    id: uuid(n, "7a5c0000"),
    operation: "UpgradeFirmware",
    rackId: uuid(1, "aaaaaaaa"),
    componentIds: [uuid(n, "cccccccc")],
    description: "fw",
    executorType: "STEP_FUNCTIONS",
    executionId: `arn:aws:states:us-east-1:000000000000:execution:child:${n}`,
    status: "PENDING",
    message: "",
    createdAt: 1_000 + n,
    updatedAt: 1_000 + n,
    report: "{}",
    ...overrides,
  };
}

export function describeTaskStoreContract(name: string, setup: () => Promise<{ tasks: TaskStore }>): void {
  describe(`TaskStore contract: ${name}`, () => {
    let tasks: TaskStore;
    beforeAll(async () => {
      ({ tasks } = await setup());
    });

    it("createTask then getTasks: field for field, in the order asked, unknown ids skipped", async () => {
      const a = task(1, { startedAt: 5, finishedAt: 9, status: "COMPLETED", appliedRuleId: uuid(3) });
      const b = task(2, { queueExpiresAt: 77, runId: uuid(4), targetId: uuid(5) });
      expect(await tasks.createTask(a)).toEqual({ created: true, task: a });
      expect(await tasks.createTask(b)).toEqual({ created: true, task: b });
      expect(await tasks.getTasks([b.id, uuid(999), a.id])).toEqual([b, a]);
      await expect(tasks.createTask({ ...a, description: "again" })).rejects.toMatchObject({
        code: "ALREADY_EXISTS",
      });
      expect(await tasks.getTasks([a.id])).toEqual([a]);
    });

    it("one idempotency key, two concurrent creates → one task, both answers name it", async () => {
      const key = "operation-run-target:contract-1";
      const outcomes = await Promise.all([
        tasks.createTask(task(10, { idempotencyKey: key })),
        tasks.createTask(task(11, { idempotencyKey: key })),
      ]);
      const created = outcomes.filter((o) => o.created);
      expect(created).toHaveLength(1);
      const winner = created[0]!.task;
      expect(outcomes.map((o) => o.task.id)).toEqual([winner.id, winner.id]);
      expect(await tasks.getTaskByIdempotencyKey(key)).toEqual(winner);
      const loser = winner.id === uuid(10, "7a5c0000") ? uuid(11, "7a5c0000") : uuid(10, "7a5c0000");
      expect(await tasks.getTasks([loser])).toEqual([]);
      expect(await tasks.getTaskByIdempotencyKey("operation-run-target:none")).toBeUndefined();
    });

    it("listTasks: newest first (ties by id descending), active only, by component, total before paging", async () => {
      const rack = uuid(2, "bbbbbbbb");
      const component = uuid(2, "dddddddd");
      const t1 = task(21, { rackId: rack, status: "COMPLETED" });
      const t2 = task(22, {
        rackId: rack,
        status: "RUNNING",
        componentIds: [uuid(1, "dddddddd"), component],
      });
      const t3 = task(23, { rackId: rack, status: "WAITING" });
      const t4 = task(24, { rackId: rack, status: "PENDING", createdAt: t3.createdAt });
      for (const t of [t1, t2, t3, t4]) await tasks.createTask(t);
      const ids = async (o: ListTasksOptions) => (await tasks.listTasks(o)).tasks.map((t) => t.id);
      expect(await ids({ rackId: rack, activeOnly: false, page: ALL })).toEqual([t4.id, t3.id, t2.id, t1.id]);
      expect(await ids({ rackId: rack, activeOnly: true, page: ALL })).toEqual([t4.id, t3.id, t2.id]);
      expect(await ids({ componentId: component, activeOnly: false, page: ALL })).toEqual([t2.id]);
      expect(await ids({ componentId: component, activeOnly: true, page: ALL })).toEqual([t2.id]);
      expect(
        await tasks.listTasks({ rackId: rack, activeOnly: false, page: { offset: 1, limit: 2 } }),
      ).toEqual({
        tasks: [t3, t2],
        total: 4,
      });
    });

    it("saveTask replaces the task on the version read; 'stale' writes nothing; a finished task leaves the active listing", async () => {
      const rack = uuid(3, "bbbbbbbb");
      const t = task(31, { rackId: rack, status: "RUNNING" });
      await tasks.createTask(t);
      const done: Task = { ...t, status: "COMPLETED", finishedAt: 2000, updatedAt: 2000, report: '{"v":1}' };
      expect(await tasks.saveTask(done, t.updatedAt)).toBe("saved");
      expect(await tasks.saveTask({ ...t, status: "FAILED", updatedAt: 2001 }, t.updatedAt)).toBe("stale");
      expect(await tasks.getTasks([t.id])).toEqual([done]);
      expect((await tasks.listTasks({ rackId: rack, activeOnly: true, page: ALL })).total).toBe(0);
      expect(await tasks.saveTask(task(32), 1)).toBe("not-found");
    });
  });
}
