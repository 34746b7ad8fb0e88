/** The task report: order, round trip, the finish of an ended task, and the completion message. */
import { describe, expect, it } from "vitest";
import {
  completionMessage,
  finishReport,
  initialReport,
  parseReport,
  serializeReport,
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
    expect(() => parseReport('{"v":2}')).toThrow("task report version 2 is not supported");
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

  it("an unreadable report is kept as it is", () => {
    expect(finishReport("garbage", "FAILED", 9)).toBe("garbage");
  });
});
