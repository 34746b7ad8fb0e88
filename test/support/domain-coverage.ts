/**
 * vitest's V8 coverage, measured only in the projects that test the pure core (unit, property):
 * vitest.config.ts names this module as the coverage provider, and a project whose config provides
 * `coverageOff: true` (unit-shell, unit-own, integration, e2e, deploy) runs without it.
 *
 * The coverage `npm test` reports is src/domain's, held at 100 % by the unit and property tests
 * alone; V8's block counting in the other workers added a tenth to their CPU (CDK, the AWS SDK,
 * gRPC and the local stack all counted) and nothing to that figure.
 */
import v8 from "@vitest/coverage-v8";
import { inject } from "vitest";
import type { CoverageProviderModule } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    /** True in a project whose tests do not count towards the coverage figure. */
    coverageOff: boolean;
  }
}

const off = (): boolean => inject("coverageOff") === true;

const domainCoverage: CoverageProviderModule = {
  getProvider: () => v8.getProvider(),
  startCoverage: (options) => (off() ? undefined : v8.startCoverage?.(options)),
  takeCoverage: (options) => (off() ? { result: [] } : v8.takeCoverage?.(options)),
  stopCoverage: (options) => (off() ? undefined : v8.stopCoverage?.(options)),
};

export default domainCoverage;
