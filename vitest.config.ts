import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import { longestFirst } from "./test/support/longest-first-sequencer.js";

// Seven projects: unit and property are fast (`npm run test:unit`, the inner loop); unit-shell holds
// the unit tests that take seconds each; unit-own the unit files that need modules of their own
// (OWN_MODULES); integration and e2e start moto_server
// (test/support/global-setup.ts) unless AWS_ENDPOINT_URL names a running endpoint; deploy
// rehearses `cdk deploy` against a local endpoint (test/deploy/).
const SLOW_UNIT = [
  "test/unit/infra-*.test.ts",
  "test/unit/deploy-rehearsal.test.ts",
  "test/unit/dynamodb-retry.test.ts",
  "test/unit/lint-fence.test.ts",
  "test/unit/grpc-status.test.ts",
  "test/unit/repo-hygiene.test.ts",
  "test/unit/entry-bundles.test.ts",
];
/** Unit tests that import the product after setting the environment its modules read at load. */
const OWN_MODULES = ["test/unit/observability-xray.test.ts"];
/**
 * Workers for the projects that mostly wait (on moto, on a stack's ticks and Wait states, on a
 * spawned process): more than the cores, measured on 2. They run after the CPU-bound projects
 * (groupOrder 1: vitest runs one group after another, each with its own number of workers), and
 * each worker has a moto of its own (test/support/global-setup.ts).
 */
const WAITING_WORKERS = 3;
/**
 * Workers for the CPU-bound projects (unit, unit-shell, property: groupOrder 0): one per core.
 * vitest's default leaves a core to its main process (cores - 1: one worker on 2 cores), which
 * mostly waits while the workers run.
 */
const CPU_WORKERS = Math.max(1, availableParallelism());
/**
 * The files of the waiting projects that take longest, slowest first: the sequencer starts them
 * before the others (test/support/longest-first-sequencer.ts), so no long file is left to start
 * when the other workers are nearly done. Only the order counts. The figures are each file's wall
 * time in its worker (set-up, import, hooks and tests: the slowest-files list `npm test` ends with)
 * in one `npm test` on a 2-core machine loaded by other work (load 10-13), about three times a
 * quiet run's; below the ten that list shows, the time of the tests alone (a lower bound). Measure
 * again when a file's time changes much; a file here that no longer exists fails
 * test/unit/longest-first-sequencer.test.ts.
 */
export const SLOW_FILES = [
  "test/deploy/rehearsal.test.ts", // 394: the deploy is its beforeAll
  "test/e2e/restart-sigkill-4-6.test.ts", // 152
  "test/e2e/restart-sigterm-4-6.test.ts", // 144
  "test/e2e/restart-sigterm-1-3.test.ts", // 142
  "test/e2e/cli-flowctl.test.ts", // 121
  "test/e2e/restart-sigkill-1-3.test.ts", // 121
  "test/e2e/api-create.test.ts", // 108
  "test/e2e/firmware-images.test.ts", // 97
  "test/e2e/run-history.test.ts", // 85
  "test/e2e/firmware-policy.test.ts", // 80
  "test/e2e/store-outage-own-moto.test.ts", // 60+
  "test/integration/child-task-cancel-states.test.ts", // 56+
  "test/e2e/maintenance-windows.test.ts", // 56+
  "test/integration/child-task-outcomes.test.ts", // 40+
  "test/e2e/api-bad-input.test.ts", // 40+
  "test/e2e/api-queries.test.ts", // 37+
  "test/e2e/store-outage-endpoint.test.ts", // 35+
  "test/e2e/soak.test.ts", // 27+
  "test/integration/moto-durability.test.ts", // 24+
  "test/integration/dispatcher-races.test.ts", // 24+
  "test/integration/dynamodb-paged-lists.test.ts", // 23+
];

export default defineConfig({
  test: {
    // The second reporter adds a line under the coverage summary naming what it measures; the third
    // prints the ten slowest test files at the end.
    reporters: [
      "default",
      "./test/support/coverage-scope-reporter.ts",
      "./test/support/slowest-files-reporter.ts",
    ],
    // The known-slow files first (SLOW_FILES), then vitest's own order.
    sequence: { sequencer: longestFirst(SLOW_FILES) },
    // Transformed modules kept on disk between runs (node_modules/.experimental-vitest-cache, keyed
    // by each file's content and the config; `npx vitest --clearCache` empties it): a run after the
    // first transforms only what changed (the unit and property projects' transform time summed over
    // workers, 21-26 s -> 7-10 s, measured on 2 cores).
    experimental: { fsModuleCache: true },
    coverage: {
      // V8's, in the unit and property projects only (the others provide coverageOff):
      // test/support/domain-coverage.ts.
      provider: "custom",
      customProviderModule: "./test/support/domain-coverage.ts",
      include: ["src/domain/**/*.ts"],
      reporter: ["text-summary"],
      thresholds: { "src/domain/**/*.ts": { branches: 100, lines: 100, functions: 100, statements: 100 } },
    },
    projects: [
      {
        test: {
          name: "unit",
          maxWorkers: CPU_WORKERS,
          include: ["test/unit/**/*.test.ts"],
          exclude: [...SLOW_UNIT, ...OWN_MODULES],
          // One module cache per worker, not per file: importing the SDK and the product again for
          // each of 80 files was most of this project's time. A file that needs modules loaded
          // afresh (after it set the environment they read at load) is in OWN_MODULES.
          isolate: false,
        },
      },
      {
        // Unit tests of the shell that take seconds each (CDK synthesis, spawned processes, the
        // SDK's retries): in `npm test`, not in the inner loop of `npm run test:unit`.
        test: {
          name: "unit-shell",
          maxWorkers: CPU_WORKERS,
          // Not counted in the coverage of src/domain: unit and property hold it at 100 % alone,
          // and V8's counting in these files (CDK, the SDK, spawned processes) only cost CPU.
          provide: { coverageOff: true },
          include: SLOW_UNIT,
          // One module cache per worker, as in the unit project: aws-cdk-lib is imported once per
          // worker, not once per infra file, and the infra files a worker runs share its
          // syntheses (sharedStack in test/fixtures/infra-stack.ts builds each configuration once).
          isolate: false,
          // A CDK synthesis inside a test takes seconds of CPU: past vitest's 5 s default on a loaded machine.
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        // The unit tests that load modules of their own (OWN_MODULES), each file isolated.
        test: {
          name: "unit-own",
          maxWorkers: CPU_WORKERS,
          provide: { coverageOff: true },
          include: OWN_MODULES,
        },
      },
      {
        test: {
          name: "property",
          maxWorkers: CPU_WORKERS,
          include: ["test/property/**/*.test.ts"],
        },
      },
      {
        test: {
          name: "integration",
          provide: { coverageOff: true },
          include: ["test/integration/**/*.test.ts"],
          // One module cache per worker, as in the unit project, not one per file: each file
          // imported the AWS SDK, gRPC and the product again. Every file makes its own tables,
          // stack, broker and ports and stops them in its afterAll; none sets the environment or
          // mocks a module.
          isolate: false,
          globalSetup: ["test/support/global-setup.ts"],
          maxWorkers: WAITING_WORKERS,
          sequence: { groupOrder: 1 },
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: "e2e",
          provide: { coverageOff: true },
          include: ["test/e2e/**/*.test.ts"],
          isolate: false,
          // Files in parallel: each starts its own stack with its own tables, broker and ports on
          // its worker's moto; they mostly wait (ticks, Wait states), so several share the machine.
          // The second globalSetup bundles the programs the tests start as processes.
          globalSetup: ["test/support/global-setup.ts", "test/support/entry-bundles-setup.ts"],
          maxWorkers: WAITING_WORKERS,
          sequence: { groupOrder: 1 },
          testTimeout: 120_000,
          // A stack's start is CPU work (a Redfish fleet's TLS BMCs and agents the most) that the
          // workers share: 60 s was met by the Redfish stack's start on a loaded 2-core machine.
          hookTimeout: 120_000,
        },
      },
      {
        // The deploy rehearsal (deploy/rehearsal.ts): starts its own endpoint, as account
        // 000000000000, unless AWS_ENDPOINT_URL names one; three CLI runs and the one synthesis
        // (bundling, cdk-nag) take a while.
        test: {
          name: "deploy",
          provide: { coverageOff: true },
          include: ["test/deploy/**/*.test.ts"],
          // Its CDK CLI processes (mostly the synthesis' CPU): beside the integration and e2e files.
          maxWorkers: WAITING_WORKERS,
          sequence: { groupOrder: 1 },
          testTimeout: 120_000,
          hookTimeout: 600_000,
        },
      },
    ],
  },
});
