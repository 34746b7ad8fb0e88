/**
 * Plain values for the unit tests, each test overriding what it checks: an effective run
 * configuration, and a running child task (`t-1` on rack `r-1`, no components, empty report).
 */
import type { RunConfig, Task } from "../../src/domain/model.js";

export function runningTask(overrides: Partial<Task> = {}): Task {
  return {
    id: "t-1",
    operation: "UpgradeFirmware",
    rackId: "r-1",
    componentIds: [],
    description: "",
    executorType: "STEP_FUNCTIONS",
    executionId: "",
    status: "RUNNING",
    message: "",
    createdAt: 1,
    updatedAt: 1,
    report: "",
    ...overrides,
  };
}

export function runConfig(overrides: Partial<RunConfig> = {}): RunConfig {
  return {
    selector: { kind: "percentage", percentage: 100, seed: "s" },
    maxConcurrentTargets: 2,
    safetyGates: [],
    conflictRetry: { retryTimeoutMs: 3_600_000, initialRetryDelayMs: 30_000, maxRetryDelayMs: 300_000 },
    ordering: { kind: "random", seed: "o" },
    phasePlan: { kind: "equal", phaseCount: 1 },
    autoAdvance: false,
    operation: {
      kind: "upgradeFirmware",
      firmware: {
        description: "",
        subTargets: [],
        overrideReadinessCheck: false,
        overrideVersionCheck: false,
      },
    },
    targetScope: { excludeOperationRunIds: [] },
    ...overrides,
  };
}
