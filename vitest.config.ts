import { defineConfig } from "vitest/config";

// Four projects: unit and property are pure and fast; integration and e2e start moto_server
// (test/support/global-setup.ts) unless AWS_ENDPOINT_URL names a running endpoint.
export default defineConfig({
  test: {
    // The second reporter adds a line under the coverage summary naming what it measures.
    reporters: ["default", "./test/support/coverage-scope-reporter.ts"],
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
          setupFiles: ["test/support/polyfills.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          globalSetup: ["test/support/global-setup.ts"],
          setupFiles: ["test/support/polyfills.ts"],
          testTimeout: 120_000,
          hookTimeout: 60_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
