import { defineConfig } from "vitest/config";

// Five projects: unit and property are pure and fast; integration and e2e start moto_server
// (test/support/global-setup.ts) unless AWS_ENDPOINT_URL names a running endpoint; deploy
// rehearses `cdk deploy` against a local endpoint (test/deploy/).
export default defineConfig({
  test: {
    // The second reporter adds a line under the coverage summary naming what it measures; the third
    // prints the ten slowest test files at the end.
    reporters: [
      "default",
      "./test/support/coverage-scope-reporter.ts",
      "./test/support/slowest-files-reporter.ts",
    ],
    coverage: {
      provider: "v8",
      include: ["src/domain/**/*.ts"],
      reporter: ["text-summary"],
      thresholds: { "src/domain/**/*.ts": { branches: 100, lines: 100, functions: 100, statements: 100 } },
    },
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
        },
      },
      {
        test: {
          name: "property",
          include: ["test/property/**/*.test.ts"],
        },
      },
      {
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          globalSetup: ["test/support/global-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          globalSetup: ["test/support/global-setup.ts"],
          testTimeout: 120_000,
          hookTimeout: 60_000,
          fileParallelism: false,
        },
      },
      {
        // The deploy rehearsal (deploy/rehearsal.ts): starts its own endpoint, as account
        // 000000000000, unless AWS_ENDPOINT_URL names one; bundling and two CLI runs take a while.
        test: {
          name: "deploy",
          include: ["test/deploy/**/*.test.ts"],
          testTimeout: 120_000,
          hookTimeout: 600_000,
        },
      },
    ],
  },
});
