/**
 * The step logic's pure parts: poll backoff, error text from both Step Functions flavours, which
 * credential a BMC gets, report order, derived ids, and recordTaskOutcome's once-only contract
 * (with in-memory stores typed from the ports).
 */
import { describe, expect, it } from "vitest";
import type { RackLockStore, RunStore, TaskStore } from "../../src/app/ports.js";
import {
  type ChildTaskSettings,
  causeText,
  completionMessage,
  DEFAULT_CHILD_TASK_SETTINGS,
  initialReport,
  nextWaitSeconds,
  parseReport,
  queryRequestId,
  recordTaskOutcome,
  secretFor,
  serializeReport,
} from "../../src/app/task-steps.js";
import { taskIdForKey } from "../../src/app/tasks.js";
import type { Task } from "../../src/domain/model.js";
import { isUuid } from "../../src/domain/uuid.js";

const settings: ChildTaskSettings = { ...DEFAULT_CHILD_TASK_SETTINGS, pollSeconds: 10, maxPollSeconds: 60 };

describe("nextWaitSeconds", () => {
  it.each([
    [0, 1_000_000, 10],
    [1, 1_000_000, 20],
    [2, 1_000_000, 40],
    [3, 1_000_000, 60],
    [40, 1_000_000, 60],
    [3, 15_500, 16],
    [0, 200, 1],
    [0, -5_000, 1],
  ])("after %i polls with %i ms left: %i s", (polls, left, expected) => {
    expect(nextWaitSeconds(settings, polls, 1_000 + left, 1_000)).toBe(expected);
  });
});

describe("causeText", () => {
  it("reads the Lambda error document AWS puts in Cause, keeping our own messages as they are", () => {
    const cause = JSON.stringify({
      errorType: "BmcTimeout",
      errorMessage: "component c (COMPUTE): hung",
      trace: ["x"],
    });
    expect(causeText({ Error: "BmcTimeout", Cause: cause })).toBe("component c (COMPUTE): hung");
  });
  it("reads the plain message aws-local-stepfunctions puts there", () => {
    expect(causeText({ Error: "VersionMismatch", Cause: "component c (NVSWITCH): runs 1" })).toBe(
      "component c (NVSWITCH): runs 1",
    );
  });
  it("prefixes foreign errors with their name, and copes with missing parts", () => {
    expect(causeText({ Error: "States.Timeout", Cause: "Task timed out" })).toBe(
      "States.Timeout: Task timed out",
    );
    expect(causeText({ Error: "TypeError", Cause: '{"errorMessage":"x is undefined"}' })).toBe(
      "TypeError: x is undefined",
    );
    expect(causeText({ Error: "Lambda.Unknown" })).toBe("Lambda.Unknown");
    expect(causeText({ Error: "X", Cause: "{not json" })).toBe("X: {not json");
    expect(causeText(undefined)).toBe("unknown error");
  });
});

describe("secretFor", () => {
  it("shared credentials go to every BMC, per-component ones to their type only", () => {
    expect(secretFor({ kind: "shared", secret: "s" }, "CDU")).toBe("s");
    const per = { kind: "perComponent" as const, compute: "c", nvswitch: "n", powershelf: "p" };
    expect(
      ["COMPUTE", "NVSWITCH", "POWERSHELF", "TORSWITCH", "UMS", "CDU"].map((t) => secretFor(per, t as never)),
    ).toEqual(["c", "n", "p", undefined, undefined, undefined]);
    expect(secretFor(undefined, "COMPUTE")).toBeUndefined();
  });
});

describe("reports and ids", () => {
  it("the initial report lists components in upgrade order (POWERSHELF, NVSWITCH, COMPUTE, CDU, UMS, TORSWITCH), then by id", () => {
    const report = initialReport(
      [
        { id: "b", type: "COMPUTE" },
        { id: "t", type: "TORSWITCH" },
        { id: "a", type: "COMPUTE" },
        { id: "u", type: "UMS" },
        { id: "p", type: "POWERSHELF" },
        { id: "d", type: "CDU" },
        { id: "n", type: "NVSWITCH" },
      ],
      "2.0.0",
      false,
    );
    expect(report.components.map((c) => c.id)).toEqual(["p", "n", "a", "b", "d", "u", "t"]);
    expect(parseReport(serializeReport(report))).toEqual(report);
    expect(() => parseReport('{"v":2}')).toThrow("task report version 2 is not supported");
  });

  it("task ids derived from idempotency keys are stable UUIDs (version 8), distinct per key", () => {
    const a = taskIdForKey("operation-run-target:t-1");
    expect(taskIdForKey("operation-run-target:t-1")).toBe(a);
    expect(taskIdForKey("operation-run-target:t-2")).not.toBe(a);
    expect(isUuid(a)).toBe(true);
    expect(a[14]).toBe("8");
    expect("89ab").toContain(a[19]);
    expect(queryRequestId("t", "c")).toMatch(/^qry-[0-9a-f]{32}$/);
    expect(queryRequestId("t", "c")).not.toBe(queryRequestId("t", "d"));
  });

  it("completion messages count upgraded and skipped components", () => {
    const report = initialReport(
      [
        { id: "a", type: "COMPUTE" },
        { id: "b", type: "COMPUTE" },
      ],
      "2.0.0",
      false,
    );
    report.components[0]!.status = "COMPLETED";
    report.components[1]!.status = "SKIPPED";
    expect(completionMessage({ report: serializeReport(report) } as Task)).toBe(
      "upgraded 1 component to 2.0.0 (1 already at 2.0.0)",
    );
    report.components[0]!.status = "SKIPPED";
    expect(completionMessage({ report: serializeReport(report) } as Task)).toBe(
      "all 2 components already at 2.0.0",
    );
    expect(completionMessage({ report: "garbage" } as Task)).toBe("completed");
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
    const deps = {
      tasks: tasks as TaskStore,
      runs,
      locks: locks as RackLockStore,
      clock: () => 5_000,
      waker: { wake: async (r: string) => void woken.push(r) },
      metrics: { add: (name: string, value: number) => metrics.push(`${name}=${value}`), flush: () => {} },
    };
    return { deps, stored, outcomes, released, woken, metrics };
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
    expect(ended).toMatchObject({
      status: "TERMINATED",
      message: "task cancelled",
      finishedAt: 5_000,
      updatedAt: 5_000,
    });
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
