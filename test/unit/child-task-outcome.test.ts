/**
 * The child task's outcome recorder, recordTaskOutcome, and its once-only contract (with in-memory
 * stores typed from the ports), and the task ids derived from idempotency keys. The pure parts
 * (report, verdict, errors) are tested in task-report, component-verdict and step-errors.test.ts.
 */
import { describe, expect, it } from "vitest";
import { recordTaskOutcome } from "../../src/app/child-task/outcome.js";
import { taskIdForKey } from "../../src/app/child-task/task-service.js";
import { lineLogger } from "../../src/app/observability.js";
import type { RackLockStore, RunStore, TaskStore } from "../../src/app/ports.js";
import { type CommandSet, entryKey, updateAddress } from "../../src/domain/command-sets.js";
import { DEFAULT_RULE } from "../../src/domain/operation-rules.js";
import type { Task } from "../../src/domain/task.js";
import {
  completionMessage,
  initialReport,
  parseReport,
  serializeReport,
} from "../../src/domain/task-report.js";
import { isUuid } from "../../src/domain/uuid.js";

describe("task ids", () => {
  it("task ids derived from idempotency keys are stable UUIDs (version 8), distinct per key", () => {
    const a = taskIdForKey("operation-run-target:t-1");
    expect(taskIdForKey("operation-run-target:t-1")).toBe(a);
    expect(taskIdForKey("operation-run-target:t-2")).not.toBe(a);
    expect(isUuid(a)).toBe(true);
    expect(a[14]).toBe("8");
    expect("89ab").toContain(a[19]);
  });
});

describe("recordTaskOutcome", () => {
  function fakes(task: Task) {
    const stored = new Map([[task.id, structuredClone(task)]]);
    const outcomes: string[] = [];
    const released: string[] = [];
    const tasks: Pick<TaskStore, "getTasks" | "saveTask"> = {
      getTasks: async (ids) => ids.flatMap((i) => (stored.has(i) ? [structuredClone(stored.get(i)!)] : [])),
      saveTask: async (t, expected) => {
        const cur = stored.get(t.id);
        if (cur === undefined) return "not-found";
        if (cur.updatedAt !== expected) return "stale";
        stored.set(t.id, structuredClone(t));
        return "saved";
      },
    };
    const runs: Pick<RunStore, "recordOutcome"> = {
      recordOutcome: async (runId, targetId, status, message) => {
        const first = !outcomes.some((o) => o.startsWith(`${runId}/${targetId}`));
        outcomes.push(`${runId}/${targetId} ${status} ${message}`);
        return first ? "recorded" : "already-recorded";
      },
    };
    const locks: Pick<RackLockStore, "release"> = {
      release: async (rackId, owner) => {
        released.push(`${rackId}:${owner}`);
        return "released";
      },
    };
    const woken: string[] = [];
    const metrics: string[] = [];
    // Each close, with the task's status when it came (it must come before the ending).
    const closed: string[] = [];
    const deps = {
      tasks: tasks as TaskStore,
      runs,
      locks: locks as RackLockStore,
      commands: {
        get: async () => undefined,
        getUpdates: async () => undefined,
        close: async (id: string, _now: number, parts: readonly number[]) =>
          void closed.push(`${id} while ${stored.get(id)?.status}, parts ${parts.join(",")}`),
      },
      firmware: { record: async () => {} },
      clock: () => 5_000,
      waker: { wake: async (r: string) => void woken.push(r) },
      metrics: { add: (name: string, value: number) => metrics.push(`${name}=${value}`), flush: () => {} },
    };
    return { deps, stored, outcomes, released, woken, metrics, closed };
  }

  const report = initialReport(
    [
      { id: "p", type: "POWERSHELF" },
      { id: "c", type: "COMPUTE" },
    ],
    "2.0.0",
    false,
  );
  report.components[0]!.status = "COMPLETED";
  report.components[1]!.status = "UPDATING";
  const task: Task = {
    id: "task-1",
    operation: "UpgradeFirmware",
    rackId: "rack-1",
    componentIds: ["p", "c"],
    description: "",
    executorType: "STEP_FUNCTIONS",
    executionId: "arn",
    status: "RUNNING",
    message: "",
    createdAt: 1_000,
    updatedAt: 2_000,
    startedAt: 1_500,
    report: serializeReport(report),
    runId: "run-1",
    targetId: "target-1",
  };

  it("counts a recorded FAILED target once in TargetsFailed and BmcFailures, not again on a repeat", async () => {
    const { deps, metrics } = fakes(task);
    await recordTaskOutcome(deps, task.id, {
      status: "FAILED",
      message: "component c (COMPUTE): BMC reported failure",
    });
    await recordTaskOutcome(deps, task.id, { status: "FAILED", message: "again" });
    expect(metrics).toEqual(["TargetsFailed=1", "BmcFailures=1"]);
  });

  it("counts a recorded COMPLETED target in TargetsCompleted", async () => {
    const { deps, metrics } = fakes(task);
    await recordTaskOutcome(deps, task.id, { status: "COMPLETED", message: "done" });
    expect(metrics).toEqual(["TargetsCompleted=1"]);
  });

  it("ends the task, records its target, wakes the run and releases the lock; a second call keeps the first outcome", async () => {
    const f = fakes(task);
    const ended = await recordTaskOutcome(f.deps, task.id, {
      status: "TERMINATED",
      message: "task cancelled",
    });
    // The ending is decided on the task first (a write at 5 000), then recorded (one version later).
    expect(ended).toMatchObject({
      status: "TERMINATED",
      message: "task cancelled",
      finishedAt: 5_000,
      updatedAt: 5_001,
    });
    expect(ended.ending).toBeUndefined();
    expect(parseReport(ended.report).components.map((c) => [c.id, c.status])).toEqual([
      ["p", "COMPLETED"],
      ["c", "TERMINATED"],
    ]);
    expect(f.metrics).toEqual(["TargetsTerminated=1"]);
    const again = await recordTaskOutcome(f.deps, task.id, { status: "FAILED", message: "late failure" });
    expect(again).toEqual(ended);
    expect(f.outcomes).toEqual([
      "run-1/target-1 TERMINATED task cancelled",
      "run-1/target-1 TERMINATED task cancelled",
    ]);
    expect(f.released).toEqual(["rack-1:task-1", "rack-1:task-1"]);
    expect(f.woken).toEqual(["run-1"]);
  });

  it("an ending from outside the execution closes the task's command sets first; the last state's does not", async () => {
    const cancelled = fakes(task);
    await recordTaskOutcome(cancelled.deps, task.id, { status: "TERMINATED", message: "task cancelled" });
    // …with every part of its update set its rule may have (the default rule's six).
    expect(cancelled.closed).toEqual(["task-1 while RUNNING, parts 0,1,2,3,4,5"]);
    // Given the task as read, already ended: nothing to close.
    const ended = cancelled.stored.get(task.id) as Task;
    await recordTaskOutcome(cancelled.deps, task.id, { status: "FAILED", message: "late" }, ended);
    expect(cancelled.closed).toHaveLength(1);

    const ruled = fakes({
      ...task,
      rule: { ...DEFAULT_RULE, stages: DEFAULT_RULE.stages.slice(0, 2) } as never,
    });
    await recordTaskOutcome(ruled.deps, task.id, { status: "TERMINATED", message: "task cancelled" });
    expect(ruled.closed).toEqual(["task-1 while RUNNING, parts 0,1"]);

    const last = fakes(task);
    await recordTaskOutcome(last.deps, task.id, { status: "COMPLETED", message: "done", fromOutside: false });
    expect(last.closed).toEqual([]);
    expect(last.stored.get(task.id)?.status).toBe("COMPLETED");
  });

  it("a cancel decides its ending before it closes the sets: a step that finds them closed and records first records the cancel's TERMINATED, not its failure", async () => {
    const f = fakes(task);
    const step: Task[] = [];
    const deps = {
      ...f.deps,
      commands: {
        ...f.deps.commands,
        // The execution's step finds the sets closed (TaskEnded) and RecordFailure runs, between
        // the cancel's close and its own write.
        close: async () =>
          void step.push(
            await recordTaskOutcome(f.deps, task.id, {
              status: "FAILED",
              message: `task ${task.id} already ended`,
              fromOutside: false,
            }),
          ),
      },
    };
    const cancelled = await recordTaskOutcome(deps, task.id, {
      status: "TERMINATED",
      message: "task cancelled",
    });
    expect(step.map((t) => [t.status, t.message])).toEqual([["TERMINATED", "task cancelled"]]);
    expect(cancelled).toEqual(step[0]);
    expect(f.stored.get(task.id)).toMatchObject({ status: "TERMINATED", message: "task cancelled" });
    expect(f.stored.get(task.id)?.ending).toBeUndefined();
    expect(f.outcomes).toEqual([
      "run-1/target-1 TERMINATED task cancelled",
      "run-1/target-1 TERMINATED task cancelled",
    ]);
    expect(f.metrics).toEqual(["TargetsTerminated=1"]);
  });

  it("the first ending decided stays: a stop after a cancel keeps the cancel's, a task ended already keeps its own", async () => {
    const f = fakes(task);
    let stops = 0;
    const deps = {
      ...f.deps,
      commands: {
        ...f.deps.commands,
        // The execution stopped underneath while the cancel was between its decision and its end.
        close: async () => {
          if (stops++ > 0) return;
          await recordTaskOutcome(f.deps, task.id, { status: "FAILED", message: "task execution timed out" });
        },
      },
    };
    await recordTaskOutcome(deps, task.id, { status: "TERMINATED", message: "task cancelled" });
    expect(f.stored.get(task.id)).toMatchObject({ status: "TERMINATED", message: "task cancelled" });

    const done = fakes({ ...task, status: "COMPLETED", message: "upgraded 2 components to 2.0.0" });
    const kept = await recordTaskOutcome(done.deps, task.id, {
      status: "TERMINATED",
      message: "task cancelled",
    });
    expect(kept).toMatchObject({ status: "COMPLETED", message: "upgraded 2 components to 2.0.0" });
    expect(kept.ending).toBeUndefined();
    expect(done.closed).toEqual([]);
  });

  /** The task's update set: component c's update sent at 2 s, its success stored at 4 s. */
  const completedUpdate = (): CommandSet => ({
    taskId: task.id,
    family: "u",
    entries: {
      [entryKey(updateAddress(task.id, 0), "c")]: {
        sentAt: 2_000,
        deadline: 62_000,
        ackedAt: 2_100,
        result: { ok: true, version: "2.0.0" },
        resultAt: 4_000,
      },
    },
  });

  it("folds the update set in: what the BMCs reported becomes the report, the message counts it, inventory gets the versions once", async () => {
    const f = fakes(task);
    const set = completedUpdate();
    const recorded: string[] = [];
    const deps = {
      ...f.deps,
      commands: {
        get: async () => undefined,
        getUpdates: async (id: string) => (id === task.id ? set : undefined),
        close: async () => {},
      },
      firmware: {
        // With the task's status as stored when inventory is written: after its end, not before.
        record: async (rackId: string, versions: readonly { componentId: string; version: string }[]) =>
          void recorded.push(
            `${rackId}: ${versions.map((v) => `${v.componentId}@${v.version}`).join(",")} (task ${f.stored.get(task.id)?.status})`,
          ),
      },
    };
    const ended = await recordTaskOutcome(deps, task.id, {
      status: "COMPLETED",
      message: (t) => completionMessage(t),
    });
    expect(ended.message).toBe("upgraded 2 components to 2.0.0");
    expect(parseReport(ended.report).components.find((c) => c.id === "c")).toMatchObject({
      status: "COMPLETED",
      versionAfter: "2.0.0",
      startedAt: 2_000,
      finishedAt: 4_000,
    });
    // p was COMPLETED in the stored report already: only c is new to inventory. Once, not again
    // from outside (the execution-status path after an ending).
    expect(recorded).toEqual(["rack-1: c@2.0.0 (task COMPLETED)"]);
    await recordTaskOutcome(deps, task.id, { status: "COMPLETED", message: "again" });
    expect(recorded).toHaveLength(1);
    // The execution's own step finding the task ended (a retry after a crash between the end and
    // the inventory write): every verified version again; the recorder writes what is missing.
    await recordTaskOutcome(deps, task.id, { status: "COMPLETED", message: "retried", fromOutside: false });
    expect(recorded).toEqual(["rack-1: c@2.0.0 (task COMPLETED)", "rack-1: c@2.0.0 (task COMPLETED)"]);
  });

  it("the versions go where the plan says each component is in the inventory (no read there); a repeat passes none, so the recorder reads and writes only what is missing", async () => {
    const f = fakes(task);
    const set = completedUpdate();
    const at: (Readonly<Record<string, number>> | undefined)[] = [];
    const deps = {
      ...f.deps,
      commands: {
        get: async () => undefined,
        getUpdates: async (id: string) => (id === task.id ? set : undefined),
        close: async () => {},
      },
      firmware: {
        record: async (_rackId: string, _versions: unknown, where?: Readonly<Record<string, number>>) =>
          void at.push(where),
      },
    };
    const inventoryAt = { c: 5, p: 2 };
    const outcome = { status: "COMPLETED" as const, message: "done", fromOutside: false, inventoryAt };
    await recordTaskOutcome(deps, task.id, outcome);
    expect(at).toEqual([inventoryAt]);
    await recordTaskOutcome(deps, task.id, outcome);
    expect(at).toEqual([inventoryAt, undefined]);
  });

  it("inventory that cannot be written is logged and does not keep the task from ending", async () => {
    const f = fakes(task);
    const set = completedUpdate();
    const lines: string[] = [];
    const ended = await recordTaskOutcome(
      {
        ...f.deps,
        commands: { get: async () => undefined, getUpdates: async () => set, close: async () => {} },
        firmware: {
          record: async () => {
            throw new Error("inventory table gone");
          },
        },
        logger: lineLogger((line) => lines.push(line)),
      },
      task.id,
      { status: "COMPLETED", message: "done" },
    );
    expect(ended.status).toBe("COMPLETED");
    expect(f.released).toEqual(["rack-1:task-1"]);
    expect(lines.join("\n")).toContain("could not record verified firmware versions on inventory");
    expect(lines.join("\n")).toContain("inventory table gone");
  });

  it("a FAILED outcome marks components in flight FAILED and never-started ones NOT_ATTEMPTED", async () => {
    const pending = initialReport(
      [
        { id: "a", type: "COMPUTE" },
        { id: "b", type: "TORSWITCH" },
      ],
      "2.0.0",
      false,
    );
    pending.components[0]!.status = "UPDATING";
    const f = fakes({ ...task, report: serializeReport(pending) });
    const ended = await recordTaskOutcome(f.deps, task.id, { status: "FAILED", message: "x" });
    expect(parseReport(ended.report).components.map((c) => c.status)).toEqual(["FAILED", "NOT_ATTEMPTED"]);
  });
});
