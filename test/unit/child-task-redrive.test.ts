/**
 * Re-driving a task whose execution was lost, on in-memory stores typed from the ports: what
 * prepareRedrive writes to the task and its command sets, and how finishLostOutcomes records a
 * target whose task ended unrecorded.
 */
import { describe, expect, it } from "vitest";
import { finishLostOutcomes, prepareRedrive, type RedriveDeps } from "../../src/app/child-task/redrive.js";
import { taskIdForKey } from "../../src/app/child-task/task-service.js";
import {
  type RackLockStore,
  type RunStore,
  type TaskStore,
  targetIdempotencyKey,
} from "../../src/app/ports.js";
import { type CommandEntry, entryKey, queryAddress, updateAddress } from "../../src/domain/command-sets.js";
import type { Target } from "../../src/domain/model.js";
import type { Task } from "../../src/domain/task.js";
import {
  initialReport,
  parseReport,
  serializeReport,
  type TaskReport,
} from "../../src/domain/task-report.js";
import { runningTask } from "../support/domain-fixtures.js";
import { memoryCommandSetStore } from "../support/memory-child-task.js";

function memoryTasks(initial: Task[]) {
  const tasks = new Map(initial.map((t) => [t.id, structuredClone(t)]));
  const store: Pick<TaskStore, "getTasks" | "saveTask"> = {
    getTasks: async (ids) => ids.flatMap((id) => (tasks.has(id) ? [structuredClone(tasks.get(id)!)] : [])),
    saveTask: async (task, expected) => {
      const current = tasks.get(task.id);
      if (current === undefined) return "not-found";
      if (current.updatedAt !== expected) return "stale";
      tasks.set(task.id, structuredClone(task));
      return "saved";
    },
  };
  return { tasks, store };
}

function task(report: TaskReport, overrides: Partial<Task> = {}): Task {
  return runningTask({
    componentIds: report.components.map((c) => c.id),
    updatedAt: 10,
    report: serializeReport(report),
    runId: "run-1",
    targetId: "tg-1",
    ...overrides,
  });
}

/** Commands of task t-1 already sent: family → component → what its entry holds besides its window. */
type Sent = { q?: Record<string, Partial<CommandEntry>>; u?: Record<string, Partial<CommandEntry>> };

async function deps(tasks: Task[], sent: Sent = {}) {
  const t = memoryTasks(tasks);
  const r = memoryCommandSetStore();
  for (const [family, address] of [
    ["q", queryAddress("t-1", 0)],
    ["u", updateAddress("t-1", 0)],
  ] as const) {
    const entries = Object.entries(sent[family] ?? {});
    if (entries.length === 0) continue;
    await r.open(
      "t-1",
      family,
      Object.fromEntries(
        entries.map(([componentId, over]) => [
          entryKey(address, componentId),
          { sentAt: 1_000, deadline: 61_000, publishedAt: 1_001, ...over },
        ]),
      ),
    );
  }
  const outcomes: { targetId: string; status: string; message: string }[] = [];
  const released: string[] = [];
  const d: RedriveDeps = {
    tasks: t.store as TaskStore,
    commands: r,
    runs: {
      recordOutcome: async (_runId, targetId, status, message) => {
        outcomes.push({ targetId, status, message });
        return "recorded";
      },
    },
    locks: {
      release: async (_rack: string, owner: string) => {
        released.push(owner);
        return "released";
      },
    } as unknown as RackLockStore,
    firmware: { record: async () => {} },
    clock: () => 100_000,
  };
  return { d, t, r, outcomes, released };
}

describe("prepareRedrive", () => {
  it("UPDATING back to PENDING; commands without their answer are sent again with a fresh window; answered ones are left", async () => {
    const report = initialReport(
      [
        { id: "c1", type: "COMPUTE" },
        { id: "c2", type: "COMPUTE" },
      ],
      "2.0.0",
      false,
    );
    report.components[0]!.status = "UPDATING";
    report.components[0]!.requestId = "upd-c1";
    report.components[1]!.status = "UPDATING";
    report.components[1]!.requestId = "upd-c2";
    const { d, t, r } = await deps([task(report)], {
      q: { c1: { status: { version: "1.0.0" } }, c2: { status: { version: "1.0.0" } } },
      u: { c1: { result: { ok: true, version: "2.0.0" } }, c2: { ackedAt: 1_002 } },
    });
    expect(await prepareRedrive(d, task(report))).toEqual({ status: "redrive", reopened: 2, resent: 1 });
    const stored = parseReport(t.tasks.get("t-1")!.report);
    expect(stored.components.map((c) => [c.status, c.requestId])).toEqual([
      ["PENDING", "upd-c1"],
      ["PENDING", "upd-c2"],
    ]);
    const updates = await r.get("t-1", "u");
    expect(updates?.entries[entryKey(updateAddress("t-1", 0), "c2")]).toEqual({
      sentAt: 100_000,
      deadline: 160_000,
      ackedAt: 1_002,
    });
    expect(updates?.entries[entryKey(updateAddress("t-1", 0), "c1")]?.publishedAt).toBe(1_001);
    // The answered queries are not sent again.
    const queries = await r.get("t-1", "q");
    expect(queries?.entries[entryKey(queryAddress("t-1", 0), "c1")]?.publishedAt).toBe(1_001);
  });

  it("commands in a part of the update set are sent again there, those of the first record there", async () => {
    const report = initialReport(
      [
        { id: "c1", type: "COMPUTE" },
        { id: "c2", type: "POWERSHELF" },
      ],
      "2.0.0",
      false,
    );
    const { d, r } = await deps([task(report)], { u: { c1: { ackedAt: 1_002 } } });
    const P = updateAddress("t-1", 0, 0);
    await r.open(
      "t-1",
      "u",
      { [entryKey(P, "c2")]: { sentAt: 1_000, deadline: 61_000, publishedAt: 1_001 } },
      0,
    );
    expect(await prepareRedrive(d, task(report))).toEqual({ status: "redrive", reopened: 0, resent: 2 });
    expect((await r.get("t-1", "u", 0))?.entries[entryKey(P, "c2")]).toEqual({
      sentAt: 100_000,
      deadline: 160_000,
    });
    expect((await r.get("t-1", "u"))?.entries[entryKey(updateAddress("t-1", 0), "c1")]).toEqual({
      sentAt: 100_000,
      deadline: 160_000,
      ackedAt: 1_002,
    });
  });

  it("a task whose components already failed ends FAILED with FinishWave's message, target and lock included", async () => {
    const report = initialReport([{ id: "c1", type: "COMPUTE" }], "2.0.0", false);
    report.components[0]!.status = "FAILED";
    report.components[0]!.error = {
      name: "BmcUpdateFailed",
      message: "component c1 (COMPUTE): BMC reported FLASH_FAILED",
    };
    const { d, t, outcomes, released } = await deps([task(report)]);
    expect(await prepareRedrive(d, task(report))).toEqual({ status: "ended", reopened: 0, resent: 0 });
    expect(t.tasks.get("t-1")).toMatchObject({
      status: "FAILED",
      message: "component c1 (COMPUTE): BMC reported FLASH_FAILED",
    });
    expect(outcomes).toEqual([
      { targetId: "tg-1", status: "FAILED", message: "component c1 (COMPUTE): BMC reported FLASH_FAILED" },
    ]);
    expect(released).toEqual(["t-1"]);
  });

  it("a task whose ending was decided (a cancel that died before it ended the task) ends with it, target and lock included", async () => {
    const report = initialReport([{ id: "c1", type: "COMPUTE" }], "2.0.0", false);
    report.components[0]!.status = "UPDATING";
    const cancelled = task(report, {
      ending: { status: "TERMINATED", message: "task cancelled", at: 50_000 },
    });
    const { d, t, r, outcomes, released } = await deps([cancelled], {
      u: { c1: { ackedAt: 1_100, deadline: 200_000 } },
    });
    expect(await prepareRedrive(d, cancelled)).toEqual({ status: "ended", reopened: 0, resent: 0 });
    const ended = t.tasks.get("t-1");
    expect(ended).toMatchObject({ status: "TERMINATED", message: "task cancelled" });
    expect(ended?.ending).toBeUndefined();
    expect(parseReport(ended?.report ?? "").components.map((c) => c.status)).toEqual(["TERMINATED"]);
    expect(outcomes).toEqual([{ targetId: "tg-1", status: "TERMINATED", message: "task cancelled" }]);
    expect(released).toEqual(["t-1"]);
    // Nothing is sent again: the update set is closed, its command left as it was.
    expect((await r.getUpdates("t-1", []))?.closedAt).toBe(100_000);
    expect(
      (await r.getUpdates("t-1", []))?.entries[entryKey(updateAddress("t-1", 0), "c1")]?.publishedAt,
    ).toBe(1_001);
  });

  it("a terminal task, or one with an unreadable report, is left to itself", async () => {
    const report = initialReport([{ id: "c1", type: "COMPUTE" }], "2.0.0", false);
    const done = await deps([task(report, { status: "COMPLETED" })]);
    expect(await prepareRedrive(done.d, task(report, { status: "COMPLETED" }))).toEqual({
      status: "ended",
      reopened: 0,
      resent: 0,
    });
    const garbled = task(report, { report: "{not json" });
    const g = await deps([garbled]);
    expect(await prepareRedrive(g.d, garbled)).toEqual({ status: "redrive", reopened: 0, resent: 0 });
    expect(g.t.tasks.get("t-1")?.report).toBe("{not json");
  });
});

describe("finishLostOutcomes", () => {
  it("records, from its task, the outcome of a CLAIMED or SUBMITTED target whose task has ended; running tasks are left alone", async () => {
    const report = serializeReport(initialReport([{ id: "c1", type: "COMPUTE" }], "2.0.0", false));
    const claimedTaskId = taskIdForKey(targetIdempotencyKey("tg-claimed"));
    const { d, outcomes } = await deps([
      task(initialReport([], "2.0.0", false), {
        id: "t-done",
        status: "COMPLETED",
        message: "upgraded 1 component to 2.0.0",
        report,
        targetId: "tg-submitted",
      }),
      task(initialReport([], "2.0.0", false), {
        id: claimedTaskId,
        status: "FAILED",
        message: "preflight failed",
        report,
        targetId: "tg-claimed",
      }),
      task(initialReport([], "2.0.0", false), {
        id: "t-running",
        status: "RUNNING",
        report,
        targetId: "tg-running",
      }),
    ]);
    const targets: Partial<Target>[] = [
      { id: "tg-submitted", status: "SUBMITTED", taskId: "t-done" },
      { id: "tg-claimed", status: "CLAIMED" },
      { id: "tg-running", status: "SUBMITTED", taskId: "t-running" },
    ];
    const runs: Pick<RunStore, "listActiveRunIds" | "getRun" | "listTargets"> = {
      listActiveRunIds: async () => ["run-1", "run-gone"],
      getRun: async (id) => (id === "run-1" ? ({ id, currentPhaseIndex: 0 } as never) : undefined),
      listTargets: async (_runId, options) => {
        const matching = targets.filter((t) => t.status === options.status) as Target[];
        return { targets: matching, total: matching.length };
      },
    };
    expect(await finishLostOutcomes({ ...d, runs: { ...d.runs, ...runs } })).toBe(2);
    expect(outcomes).toEqual([
      { targetId: "tg-claimed", status: "FAILED", message: "preflight failed" },
      { targetId: "tg-submitted", status: "COMPLETED", message: "upgraded 1 component to 2.0.0" },
    ]);
  });
});
