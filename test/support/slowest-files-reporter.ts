/**
 * The ten slowest test files, printed at the very end of a run (after the coverage summary when
 * there is one), so whoever makes the suite slower sees where its time went:
 *
 *   Slowest test files (wall time in their worker: set-up, import, tests and hooks):
 *     28.4 s  e2e          test/e2e/restart-sigkill-4-6.test.ts
 *     ...
 *
 * A file over FILE_BUDGET_MS is marked: no file should take longer (the suite must stay quick on
 * a 2-core machine).
 */
import type { TestModule, Vitest } from "vitest/node";
import type { Reporter } from "vitest/reporters";

const SHOWN = 10;
export const FILE_BUDGET_MS = 30_000;

export interface FileTime {
  project: string;
  file: string;
  ms: number;
}

/** The `SHOWN` slowest files, slowest first, as the lines the reporter prints. */
export function slowestFilesReport(files: readonly FileTime[]): string {
  if (files.length === 0) return "";
  const slowest = [...files].sort((a, b) => b.ms - a.ms).slice(0, SHOWN);
  const width = Math.max(...slowest.map((f) => f.project.length));
  const lines = slowest.map(
    (f) =>
      `  ${(f.ms / 1000).toFixed(1).padStart(6)} s  ${f.project.padEnd(width)}  ${f.file}${
        f.ms > FILE_BUDGET_MS ? `  (over the ${FILE_BUDGET_MS / 1000} s a file may take)` : ""
      }`,
  );
  return `Slowest test files (wall time in their worker: set-up, import, tests and hooks):\n${lines.join("\n")}\n`;
}

function fileTime(module: TestModule): FileTime {
  const d = module.diagnostic();
  return {
    project: module.project.name,
    file: module.relativeModuleId,
    ms: d.environmentSetupDuration + d.prepareDuration + d.setupDuration + d.collectDuration + d.duration,
  };
}

export default class SlowestFilesReporter implements Reporter {
  private coverage = false;
  private report = "";

  onInit(vitest: Vitest): void {
    this.coverage = vitest.config.coverage.enabled;
  }

  onTestRunEnd(
    modules: ReadonlyArray<TestModule>,
    _errors: ReadonlyArray<unknown>,
    reason: "passed" | "interrupted" | "failed",
  ): void {
    this.report = slowestFilesReport(modules.map(fileTime));
    // With coverage, its summary comes after this (only when every test passed): print under it.
    if (!this.coverage || reason !== "passed") this.print();
  }

  onFinishedReportCoverage(): void {
    this.print();
  }

  private print(): void {
    if (this.report !== "") process.stdout.write(`\n${this.report}`);
    this.report = "";
  }
}
