import { describe, expect, it } from "vitest";
import { fields, render, table, terminalSafe } from "../../cli/output.js";
import { progressText } from "../../cli/task-commands.js";
import { initialReport, serializeReport } from "../../src/domain/task-report.js";

describe("cli output: the service's text never reaches the terminal raw", () => {
  it("terminalSafe shows control characters as escapes, tabs and printable text as they are", () => {
    expect(terminalSafe("a\x1b[2Jb\u009bc\u007fd\ne\rf\tg ✓")).toBe("a\\x1b[2Jb\\x9bc\\x7fd\\ne\\rf\tg ✓");
    expect(terminalSafe("a\nb\x00", "keep-newlines")).toBe("a\nb\\x00");
  });

  it("table and fields escape every cell, newlines included, and align on what is printed", () => {
    expect(
      table(
        ["ID", "NAME"],
        [
          ["1", "\x1b[2J"],
          ["22", "x"],
        ],
      ),
    ).toBe("ID  NAME\n1   \\x1b[2J\n22  x");
    expect(fields([["Name", "a\nb"]])).toBe("Name: a\\nb");
  });

  it("render: tables keep their own line breaks; JSON and YAML escape DEL and C1 as \\u00XX", () => {
    expect(render({ data: {}, table: () => "one\ntwo\x07" }, "table")).toBe("one\ntwo\\x07\n");
    expect(render({ data: { n: "a\u009bb\u007f\x1b" }, table: () => "" }, "json")).toBe(
      '{\n  "n": "a\\u009bb\\u007f\\u001b"\n}\n',
    );
    expect(JSON.parse(render({ data: { n: "a\u009bb" }, table: () => "" }, "json"))).toEqual({
      n: "a\u009bb",
    });
    expect(render({ data: { n: "a\u009bb\x1b" }, table: () => "" }, "yaml")).toBe('n: "a\\u009bb\\e"\n');
  });
});

describe("cli task progress: what `flowctl task get` shows of a task's report", () => {
  it("done, updating with the mean progress, failed; nothing for a task without a readable report", () => {
    const report = initialReport(
      ["a", "b", "c", "d"].map((id) => ({ id, type: "COMPUTE" as const })),
      "2.0.0",
      false,
    );
    expect(progressText(serializeReport(report))).toBe("0/4 done");
    report.components[0]!.status = "COMPLETED";
    report.components[1]!.status = "UPDATING";
    report.components[1]!.progress = 40;
    report.components[2]!.status = "UPDATING";
    report.components[3]!.status = "FAILED";
    expect(progressText(serializeReport(report))).toBe("1/4 done, 2 updating (40%), 1 failed");
    delete report.components[1]!.progress;
    expect(progressText(serializeReport(report))).toBe("1/4 done, 2 updating, 1 failed");
    expect(progressText("")).toBe("");
  });
});
