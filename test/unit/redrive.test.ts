/** Re-driving a task whose execution was lost: what the report says to redo, and which commands go out again. */
import { describe, expect, it } from "vitest";
import type { BmcRequestRecord } from "../../src/domain/component-verdict.js";
import { awaitsAnswer, planRedrive, resentWindow } from "../../src/domain/redrive.js";
import { type ComponentProgress, initialReport, type TaskReport } from "../../src/domain/task-report.js";

function report(statuses: ComponentProgress[]): TaskReport {
  const r = initialReport(
    statuses.map((_, i) => ({ id: `c${i}`, type: i === 0 ? "POWERSHELF" : "COMPUTE" })),
    "2.0.0",
    false,
  );
  r.components.forEach((c, i) => {
    c.status = statuses[i]!;
  });
  return r;
}

describe("planRedrive", () => {
  it("UPDATING components go back to PENDING with their request ids; finished ones stay as they are", () => {
    const before = report(["COMPLETED", "UPDATING", "UPDATING", "PENDING", "SKIPPED"]);
    before.components[1]!.requestId = "upd-1";
    const plan = planRedrive(before);
    expect(plan).toEqual({
      kind: "redrive",
      reopened: ["c1", "c2"],
      report: {
        ...before,
        components: before.components.map((c) => (c.status === "UPDATING" ? { ...c, status: "PENDING" } : c)),
      },
    });
    // The given report is not changed.
    expect(before.components[1]!.status).toBe("UPDATING");
  });

  it("a report with nothing in flight is re-driven as it is", () => {
    const r = report(["PENDING", "PENDING"]);
    expect(planRedrive(r)).toEqual({ kind: "redrive", reopened: [], report: r });
  });

  it("FAILED components end the task with FinishWave's message: the first failure and how many more", () => {
    const r = report(["COMPLETED", "FAILED", "FAILED", "FAILED", "PENDING"]);
    r.components[1]!.error = {
      name: "BmcUpdateFailed",
      message: "component c1 (COMPUTE): BMC reported FLASH_FAILED",
    };
    expect(planRedrive(r)).toEqual({
      kind: "failed",
      message: "component c1 (COMPUTE): BMC reported FLASH_FAILED; 2 more COMPUTE component(s) failed",
    });
  });

  it("one FAILED component without a recorded error: named by id, nothing more", () => {
    expect(planRedrive(report(["FAILED", "PENDING"]))).toEqual({
      kind: "failed",
      message: "component c0 failed",
    });
  });
});

describe("awaitsAnswer and resentWindow", () => {
  const base: BmcRequestRecord = {
    componentId: "c",
    requestId: "r",
    taskId: "t",
    kind: "update",
    sentAt: 1_000,
    deadline: 31_000,
    publishedAt: 1_005,
  };

  it.each([
    ["an update without a result", base, true],
    ["an update acknowledged, no result", { ...base, ackedAt: 1_010, progress: 50 }, true],
    ["an update with its result", { ...base, result: { ok: true as const, version: "2.0.0" } }, false],
    ["a query without an answer", { ...base, kind: "query" as const }, true],
    ["a query with its answer", { ...base, kind: "query" as const, status: { version: "1.0.0" } }, false],
  ])("%s: %s", (_, record, expected) => {
    expect(awaitsAnswer(record)).toBe(expected);
  });

  it("a command sent again gets as long as its first one, from now", () => {
    expect(resentWindow(base, 500_000)).toEqual({ sentAt: 500_000, deadline: 530_000 });
    expect(resentWindow({ ...base, deadline: 900 }, 500_000)).toEqual({ sentAt: 500_000, deadline: 500_000 });
  });
});
