/** The task report: order, round trip, the finish of an ended task, and the completion message. */
import { describe, expect, it } from "vitest";
import {
  completionMessage,
  finishReport,
  initialReport,
  parseReport,
  reportProgress,
  serializeReport,
  targetOf,
} from "../../src/domain/task-report.js";

describe("task report", () => {
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
    expect(() => parseReport('{"v":3}')).toThrow("task report version 3 is not supported");
  });

  it("a component listed twice stays listed twice (the sort is stable on equal ids)", () => {
    const report = initialReport(
      [
        { id: "a", type: "COMPUTE" },
        { id: "a", type: "COMPUTE" },
      ],
      "2.0.0",
      true,
    );
    expect(report.components.map((c) => c.id)).toEqual(["a", "a"]);
    expect(report.overrideVersionCheck).toBe(true);
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
    expect(completionMessage({ report: serializeReport(report) })).toBe(
      "upgraded 1 component to 2.0.0 (1 already at 2.0.0)",
    );
    report.components[0]!.status = "SKIPPED";
    expect(completionMessage({ report: serializeReport(report) })).toBe("all 2 components already at 2.0.0");
    report.components[0]!.status = "COMPLETED";
    report.components[1]!.status = "COMPLETED";
    expect(completionMessage({ report: serializeReport(report) })).toBe("upgraded 2 components to 2.0.0");
    expect(completionMessage({ report: "garbage" })).toBe("completed");
  });

  const started = () => {
    const report = initialReport(
      [
        { id: "a", type: "POWERSHELF" },
        { id: "b", type: "COMPUTE" },
        { id: "c", type: "COMPUTE" },
      ],
      "2.0.0",
      false,
    );
    report.components[0]!.status = "COMPLETED";
    report.components[1]!.status = "UPDATING";
    return serializeReport(report);
  };

  it.each([
    ["TERMINATED", ["COMPLETED", "TERMINATED", "NOT_ATTEMPTED"]],
    ["FAILED", ["COMPLETED", "FAILED", "NOT_ATTEMPTED"]],
    ["COMPLETED", ["COMPLETED", "FAILED", "NOT_ATTEMPTED"]],
  ] as const)("finishing a task %s: in flight → %o, never started → NOT_ATTEMPTED", (status, expected) => {
    const finished = parseReport(finishReport(started(), status, 9));
    expect(finished.components.map((c) => c.status)).toEqual(expected);
    expect(finished.components.map((c) => c.finishedAt)).toEqual([undefined, 9, undefined]);
  });

  it("components may have their own target version (baselines); the report's applies to the rest", () => {
    const report = initialReport(
      [
        { id: "a", type: "COMPUTE", targetVersion: "2.1.0" },
        { id: "b", type: "COMPUTE", targetVersion: "2.0.0" },
        { id: "c", type: "NVSWITCH" },
      ],
      "2.0.0",
      false,
    );
    // Equal to the report's: not repeated on the component.
    expect(report.components.map((c) => [c.id, c.targetVersion, targetOf(report, c)])).toEqual([
      ["c", undefined, "2.0.0"],
      ["a", "2.1.0", "2.1.0"],
      ["b", undefined, "2.0.0"],
    ]);
    const fromBaselines = initialReport(
      [
        { id: "a", type: "COMPUTE", targetVersion: "2.1.0" },
        { id: "b", type: "COMPUTE", targetVersion: "2.0.0" },
      ],
      undefined,
      false,
    );
    expect(fromBaselines.targetVersion).toBeUndefined();
    expect(targetOf(fromBaselines, { targetVersion: undefined })).toBe("");
    fromBaselines.components[0]!.status = "COMPLETED";
    fromBaselines.components[1]!.status = "COMPLETED";
    expect(completionMessage({ report: serializeReport(fromBaselines) })).toBe(
      "upgraded 2 components to 2.0.0, 2.1.0",
    );
    fromBaselines.components[1]!.status = "SKIPPED";
    expect(completionMessage({ report: serializeReport(fromBaselines) })).toBe(
      "upgraded 1 component to 2.1.0 (1 already at their version)",
    );
    fromBaselines.components[0]!.status = "SKIPPED";
    expect(completionMessage({ report: serializeReport(fromBaselines) })).toBe(
      "all 2 components already at their version",
    );
  });

  it("components keep their sub-targets; none (or an empty list) means the whole component", () => {
    const report = initialReport(
      [
        { id: "a", type: "COMPUTE", subTargets: ["bios"] },
        { id: "b", type: "COMPUTE", subTargets: [] },
        { id: "c", type: "COMPUTE" },
      ],
      "2.0.0",
      false,
    );
    expect(report.components.map((c) => c.subTargets)).toEqual([["bios"], undefined, undefined]);
  });

  it("a rule's order sorts the components and is the report's groupOrder; types it does not name go last", () => {
    const report = initialReport(
      [
        { id: "p", type: "POWERSHELF" },
        { id: "n", type: "NVSWITCH" },
        { id: "c", type: "COMPUTE" },
      ],
      "2.0.0",
      false,
      false,
      { id: "r", version: 3, name: "compute first", order: ["COMPUTE", "NVSWITCH"] },
    );
    expect(report.components.map((c) => c.id)).toEqual(["c", "n", "p"]);
    expect(report.groupOrder).toEqual(["COMPUTE", "NVSWITCH"]);
    expect(report.rule).toEqual({ id: "r", version: 3, name: "compute first" });
  });

  it("a v1 report (a task created before v2) still reads: its components take the report's target", () => {
    const v1 =
      '{"v":1,"targetVersion":"2.0.0","overrideVersionCheck":false,"groupOrder":["COMPUTE"],"components":[{"id":"a","type":"COMPUTE","status":"PENDING"}]}';
    const report = parseReport(v1);
    expect(report.v).toBe(2);
    expect(targetOf(report, report.components[0]!)).toBe("2.0.0");
  });

  it("an unreadable report is kept as it is", () => {
    expect(finishReport("garbage", "FAILED", 9)).toBe("garbage");
  });

  it("reportProgress: done (COMPLETED, SKIPPED), updating with the mean reported progress, failed", () => {
    const report = initialReport(
      ["a", "b", "c", "d", "e", "f"].map((id) => ({ id, type: "COMPUTE" as const })),
      "2.0.0",
      false,
    );
    expect(reportProgress(report)).toEqual({ total: 6, done: 0, updating: 0, failed: 0 });
    const [a, b, c, d, e] = report.components;
    a!.status = "COMPLETED";
    b!.status = "SKIPPED";
    c!.status = "UPDATING";
    c!.progress = 25;
    d!.status = "UPDATING";
    d!.progress = 50;
    e!.status = "FAILED";
    expect(reportProgress(report)).toEqual({ total: 6, done: 2, updating: 2, failed: 1, meanProgress: 38 });
    delete c!.progress;
    expect(reportProgress(report).meanProgress).toBe(50);
  });
});
