/**
 * A run and its effective configuration as the domain holds them, for the gRPC converters' tests
 * (src/adapters/grpc/convert/): every optional part set, credentials included.
 */
import type { Run, RunConfig } from "../../src/domain/model.js";
import { A, B, C } from "./grpc-convert.js";

export const CONFIG: RunConfig = {
  selector: { kind: "percentage", percentage: 50, seed: "sel-seed" },
  maxConcurrentTargets: 4,
  safetyGates: [
    { kind: "failureRate", scope: "CUMULATIVE_RUN", thresholdPercent: 10 },
    { kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 3 },
    { kind: "observedFailureRate", scope: "CUMULATIVE_RUN", thresholdPercent: 50, minFinished: 7 },
  ],
  conflictRetry: { retryTimeoutMs: 3_600_000, initialRetryDelayMs: 1500, maxRetryDelayMs: 300_000 },
  ordering: { kind: "random", seed: "ord-seed" },
  phasePlan: { kind: "percentage", percentages: [10, 90] },
  autoAdvance: true,
  operation: {
    kind: "upgradeFirmware",
    firmware: {
      targetSpec: {
        kind: "racks",
        racks: [{ ref: { by: "id", id: A }, componentTypes: ["COMPUTE", "NVSWITCH"] }],
      },
      targetVersion: "2.0",
      startTime: 1_000,
      description: "fw",
      queueOptions: { conflictStrategy: "REJECT", queueTimeoutSeconds: 60 },
      ruleId: B,
      subTargets: ["bmc"],
      overrideReadinessCheck: false,
      authentication: { kind: "shared", secret: "hunter2" },
      overrideVersionCheck: true,
    },
  },
  targetScope: { excludeOperationRunIds: [C] },
  maintenanceWindows: [{ cron: "0 2 * * MON-FRI", durationMs: 7_200_500 }],
  failureDomainSpread: { kind: "ATTRIBUTE", attribute: "datacenter", maxInFlight: 2 },
};

export const RUN: Run = {
  id: A,
  name: "canary",
  description: "first wave",
  config: CONFIG,
  status: "PAUSED",
  reason: "PHASE_GATE",
  statusMessage: "waiting for phase advance",
  phaseSizes: [1, 9],
  currentPhaseIndex: 0,
  counters: [
    { completed: 1, failed: 0, terminated: 0, skipped: 0 },
    { completed: 0, failed: 0, terminated: 0, skipped: 0 },
  ],
  inFlight: 0,
  createdAt: 1_700_000_000_000,
  updatedAt: 1_700_000_100_000,
  startedAt: 1_700_000_000_500,
};
