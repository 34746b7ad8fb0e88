/** A plain effective configuration for the pure-core unit tests; each test overrides what it checks. */
import type { RunConfig } from "../../src/domain/model.js";

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
