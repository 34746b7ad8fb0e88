/**
 * The receiving half of the child task: BMC reports as the IoT rule delivers them (recordBmcReport)
 * and execution endings as Step Functions reports them (reconcileExecutionEnd).
 */
import { describe, expect, it } from "vitest";
import { type ExecutionEnding, reconcileExecutionEnd } from "../../src/app/child-task/outcome.js";
import { createBmcResultReceiver, recordBmcReport } from "../../src/app/child-task/receiving.js";
import { lineLogger } from "../../src/app/observability.js";
import type { BmcRequestStore, RackLockStore, RunStore, TaskStore } from "../../src/app/ports.js";
import type { BmcEvent } from "../../src/domain/bmc-protocol.js";
import type { Task } from "../../src/domain/model.js";
import { initialReport, serializeReport } from "../../src/domain/task-report.js";

function requestsSpy() {
  const seen: { componentId: string; event: BmcEvent; now: number }[] = [];
  const store: BmcRequestStore = {
    open: async () => {
      throw new Error("not used");
    },
    markPublished: async () => {},
    recordEvent: async (componentId, event, now) => {
      seen.push({ componentId, event, now });
      return "recorded";
    },
    get: async () => new Map(),
    reopen: async () => "reopened",
  };
  return { store, seen };
}

describe("recordBmcReport", () => {
  it("stores a decoded report under the rule's componentId (lowercased), ignoring the extra field", async () => {
    const { store, seen } = requestsSpy();
    const outcome = await recordBmcReport(
      store,
      { v: 1, type: "progress", requestId: "upd-1", percent: 50, componentId: "ABC-1" },
      7,
    );
    expect(outcome).toBe("recorded");
    expect(seen).toEqual([
      { componentId: "abc-1", event: { v: 1, type: "progress", requestId: "upd-1", percent: 50 }, now: 7 },
    ]);
  });

  it("drops what it cannot trust, logging field paths and rules only", async () => {
    const { store, seen } = requestsSpy();
    const lines: string[] = [];
    const log = lineLogger((l) => lines.push(l));
    expect(await recordBmcReport(store, { v: 1, type: "ack", requestId: "r" }, 1, log)).toBe("invalid");
    expect(
      await recordBmcReport(store, { v: 3, type: "ack", requestId: "r", componentId: "c" }, 1, log),
    ).toBe("invalid");
    expect(
      await recordBmcReport(
        store,
        { v: 1, type: "update", requestId: "r", componentId: "c", auth: { ciphertext: "SECRET" } },
        1,
        log,
      ),
    ).toBe("invalid");
    expect(seen).toEqual([]);
    expect(lines).toEqual([
      "warn bmc report dropped: no componentId (the IoT rule adds topic(3) AS componentId)",
      "warn bmc report dropped: undecodable componentId=c problem=v: unsupported protocol version 3 (this codec speaks 1 and 2)",
      'warn bmc report dropped: undecodable componentId=c problem=type: must be one of ack, progress, result, status (got "update")',
    ]);
    expect(lines.join("\n")).not.toContain("SECRET");
  });
});

const base: Task = {
  id: "t1",
  operation: "UpgradeFirmware",
  rackId: "r1",
  componentIds: ["c"],
  description: "",
  executorType: "STEP_FUNCTIONS",
  executionId: "arn",
  status: "RUNNING",
  message: "",
  createdAt: 1,
  updatedAt: 2,
  report: serializeReport(initialReport([{ id: "c", type: "COMPUTE" }], "2.0.0", false)),
};

describe("reconcileExecutionEnd", () => {
  async function end(ending: Omit<ExecutionEnding, "taskId">, task: Task = base) {
    let stored = structuredClone(task);
    const released: string[] = [];
    const tasks: Pick<TaskStore, "getTasks" | "saveTask"> = {
      getTasks: async () => [structuredClone(stored)],
      saveTask: async (t) => {
        stored = structuredClone(t);
        return "saved";
      },
    };
    const locks: Pick<RackLockStore, "release"> = {
      release: async (rackId, owner) => {
        released.push(`${rackId}:${owner}`);
        return "released";
      },
    };
    const runs: Pick<RunStore, "recordOutcome"> = { recordOutcome: async () => "recorded" };
    const result = await reconcileExecutionEnd(
      { tasks: tasks as TaskStore, locks: locks as RackLockStore, runs, clock: () => 10 },
      { taskId: "t1", ...ending },
    );
    return { result, released };
  }

  it.each([
    [{ status: "ABORTED" as const, cause: "operator" }, "TERMINATED", "task execution stopped: operator"],
    [{ status: "ABORTED" as const }, "TERMINATED", "task execution stopped"],
    [{ status: "TIMED_OUT" as const }, "FAILED", "task execution timed out"],
    [
      { status: "FAILED" as const, error: "States.Runtime", cause: "bad path" },
      "FAILED",
      "task execution failed: States.Runtime: bad path",
    ],
    [{ status: "SUCCEEDED" as const }, "FAILED", "task execution ended without recording an outcome"],
  ])("%o on a running task → %s, lock released", async (ending, status, message) => {
    const { result, released } = await end(ending);
    expect(result).toMatchObject({ status, message, finishedAt: 10 });
    expect(released).toEqual(["r1:t1"]);
  });

  it("a task the last state already ended keeps its outcome (the lock release is repeated, harmlessly)", async () => {
    const done = {
      ...base,
      status: "COMPLETED" as const,
      message: "upgraded 1 component to 2.0.0",
      finishedAt: 5,
    };
    for (const status of ["SUCCEEDED", "FAILED", "ABORTED"] as const) {
      const { result, released } = await end({ status }, done);
      expect(result).toMatchObject({
        status: "COMPLETED",
        message: "upgraded 1 component to 2.0.0",
        finishedAt: 5,
      });
      expect(released).toEqual(["r1:t1"]);
    }
  });
});

describe("the bmc-result receiver", () => {
  function receiver() {
    let stored = structuredClone(base);
    const tasks: Pick<TaskStore, "getTasks" | "saveTask"> = {
      getTasks: async (ids) => (ids.includes(stored.id) ? [structuredClone(stored)] : []),
      saveTask: async (t) => {
        stored = structuredClone(t);
        return "saved";
      },
    };
    const locks: Pick<RackLockStore, "release"> = { release: async () => "released" };
    const runs: Pick<RunStore, "recordOutcome"> = { recordOutcome: async () => "recorded" };
    const { store, seen } = requestsSpy();
    const lines: string[] = [];
    const r = createBmcResultReceiver({
      requests: store,
      outcome: { tasks: tasks as TaskStore, locks: locks as RackLockStore, runs, clock: () => 10 },
      clock: () => 42,
      logger: lineLogger((line) => lines.push(line)),
    });
    return { r, seen, lines };
  }

  it("an execution ending is reconciled with its task: the task id and the status after", async () => {
    const { r } = receiver();
    expect(
      await r.receive({ kind: "execution-ending", ending: { taskId: "t1", status: "ABORTED", cause: "op" } }),
    ).toEqual({ taskId: "t1", status: "TERMINATED" });
    expect(
      await r.receive({ kind: "execution-ending", ending: { taskId: "nope", status: "FAILED" } }),
    ).toEqual({ taskId: "nope", status: "unknown task" });
  });

  it("a report is stored at the receiver's clock; other status changes and invalid events change nothing", async () => {
    const { r, seen, lines } = receiver();
    expect(
      await r.receive({
        kind: "bmc-report",
        message: { v: 1, type: "ack", requestId: "upd-1", componentId: "C" },
      }),
    ).toEqual({ outcome: "recorded" });
    expect(seen).toEqual([{ componentId: "c", event: { v: 1, type: "ack", requestId: "upd-1" }, now: 42 }]);
    expect(await r.receive({ kind: "bmc-report", message: { v: 1, type: "ack", requestId: "r" } })).toEqual({
      outcome: "invalid",
    });
    expect(lines).toEqual([
      "warn bmc report dropped: no componentId (the IoT rule adds topic(3) AS componentId)",
    ]);
    expect(await r.receive({ kind: "execution-status", status: "RUNNING" })).toEqual({ ignored: "RUNNING" });
    expect(await r.receive({ kind: "invalid" })).toEqual({ outcome: "invalid" });
    expect(seen).toHaveLength(1);
  });
});
