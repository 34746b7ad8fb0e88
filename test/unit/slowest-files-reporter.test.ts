/** The list `npm test` ends with: the ten slowest files, slowest first, any over 30 s marked. */
import { describe, expect, it } from "vitest";
import { slowestFilesReport } from "../support/slowest-files-reporter.js";

describe("slowestFilesReport", () => {
  it("lists the ten slowest of twelve files, slowest first, and marks the one over 30 s", () => {
    const files = Array.from({ length: 12 }, (_, i) => ({
      project: i % 2 === 0 ? "unit" : "integration",
      file: `test/f${i + 1}.test.ts`,
      ms: (i + 1) * 1_000,
    }));
    files.push({ project: "e2e", file: "test/e2e/slow.test.ts", ms: 30_001 });
    expect(slowestFilesReport(files)).toBe(
      [
        "Slowest test files (wall time in their worker: set-up, import, tests and hooks):",
        "    30.0 s  e2e          test/e2e/slow.test.ts  (over the 30 s a file may take)",
        "    12.0 s  integration  test/f12.test.ts",
        "    11.0 s  unit         test/f11.test.ts",
        "    10.0 s  integration  test/f10.test.ts",
        "     9.0 s  unit         test/f9.test.ts",
        "     8.0 s  integration  test/f8.test.ts",
        "     7.0 s  unit         test/f7.test.ts",
        "     6.0 s  integration  test/f6.test.ts",
        "     5.0 s  unit         test/f5.test.ts",
        "     4.0 s  integration  test/f4.test.ts",
        "",
      ].join("\n"),
    );
  });

  it("a file of exactly 30 s is not marked; no files, no report", () => {
    expect(slowestFilesReport([{ project: "unit", file: "a.test.ts", ms: 30_000 }])).not.toContain("over");
    expect(slowestFilesReport([])).toBe("");
  });
});
