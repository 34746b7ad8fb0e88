/**
 * One line under the coverage summary of `npm test` that says what the summary measures: the
 * `coverage.include` globs of vitest.config.ts (the pure core), not the whole product. Without it
 * "Statements: 100%" reads as if every file were covered.
 */
import type { Vitest } from "vitest/node";
import type { Reporter } from "vitest/reporters";

export default class CoverageScopeReporter implements Reporter {
  private include: readonly string[] = [];

  onInit(vitest: Vitest): void {
    this.include = vitest.config.coverage.include ?? [];
  }

  /** Called by vitest right after the coverage reporters have printed. */
  onFinishedReportCoverage(): void {
    process.stdout.write(
      `Coverage above: ${this.include.join(", ")} only (the pure core; its thresholds are enforced).\n` +
        "The rest of the product is exercised by the integration and e2e tests, not measured.\n",
    );
  }
}
