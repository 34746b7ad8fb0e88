/** Builders of runs and targets (plain values, deterministic ids), for benchmarks and storage tests. */
import type { Run, RunConfig, Target } from "../../src/domain/model.js";
import { type CreateOperationRunRequest, OperationRunSafetyGateScope } from "../../src/gen/flow/v1/flow.js";

export function uuid(n: number, prefix = "00000000"): string {
  return `${prefix}-0000-4000-8000-${String(n).padStart(12, "0")}`;
}

export function config(overrides: Partial<RunConfig> = {}): RunConfig {
  return {
    selector: { kind: "percentage", percentage: 100, seed: "seed-1" },
    maxConcurrentTargets: 3,
    safetyGates: [],
    conflictRetry: { retryTimeoutMs: 3_600_000, initialRetryDelayMs: 1000, maxRetryDelayMs: 60_000 },
    ordering: { kind: "random", seed: "seed-2" },
    phasePlan: { kind: "equal", phaseCount: 2 },
    autoAdvance: true,
    operation: {
      kind: "upgradeFirmware",
      firmware: {
        description: "fw",
        subTargets: [],
        overrideReadinessCheck: false,
        overrideVersionCheck: false,
        targetVersion: "2.0.0",
      },
    },
    targetScope: { excludeOperationRunIds: [] },
    ...overrides,
  };
}

/** A run with `phaseSizes` and its PENDING targets in sequence (= phase) order. */
export function runWithTargets(
  id: string,
  options: {
    phaseSizes?: number[];
    createdAt?: number;
    name?: string;
    maxConcurrent?: number;
    status?: Run["status"];
  } = {},
): { run: Run; targets: Target[] } {
  const phaseSizes = options.phaseSizes ?? [2, 3];
  const createdAt = options.createdAt ?? 1_700_000_000_000;
  const run: Run = {
    id,
    name: options.name ?? `run-${id.slice(-4)}`,
    description: "a run",
    config: config({ maxConcurrentTargets: options.maxConcurrent ?? 3 }),
    status: options.status ?? "PENDING",
    reason: "NONE",
    statusMessage: "",
    phaseSizes,
    currentPhaseIndex: 0,
    counters: phaseSizes.map(() => ({ completed: 0, failed: 0, terminated: 0, skipped: 0 })),
    inFlight: 0,
    createdAt,
    updatedAt: createdAt,
  };
  const targets: Target[] = [];
  let seq = 0;
  phaseSizes.forEach((size, phase) => {
    for (let i = 0; i < size; i++) {
      targets.push({
        id: `${id.slice(0, 8)}-1111-4000-8000-${String(seq).padStart(12, "0")}`,
        runId: id,
        rackId: uuid(seq, "aaaaaaaa"),
        sequenceIndex: seq,
        phaseIndex: phase,
        status: "PENDING",
        message: "",
        componentsByType: [{ type: "COMPUTE", componentIds: [uuid(seq, "cccccccc")] }],
        createdAt,
        updatedAt: createdAt,
        conflictAttempts: 0,
      });
      seq++;
    }
  });
  return { run, targets };
}

/**
 * A CreateOperationRun request of the benchmarks: 100 % of `rackIds` (absent: the default scope,
 * every rack), one failure-count gate, version 9.9.9, no client request id unless given.
 */
export function benchCreateRequest(options: {
  name: string;
  seed: string;
  rackIds?: readonly string[];
  clientRequestId?: string;
}): CreateOperationRunRequest {
  return {
    name: options.name,
    description: "benchmark",
    clientRequestId: options.clientRequestId ?? "",
    retry: undefined,
    rollback: undefined,
    configuration: {
      selector: { selector: { $case: "percentage", value: { percentage: 100, seed: options.seed } } },
      options: {
        maintenanceWindows: [],
        failureDomainSpread: undefined,
        maxConcurrentTargets: 10,
        safetyPolicy: {
          gates: [
            {
              gate: {
                $case: "failureCount",
                value: {
                  scope: OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_UNKNOWN,
                  failureThresholdCount: 5,
                },
              },
            },
          ],
        },
        conflictPolicy: undefined,
        orderingPolicy: undefined,
        phasePolicy: undefined,
      },
      operation: {
        operation: {
          $case: "upgradeFirmware",
          value: {
            targetSpec:
              options.rackIds === undefined
                ? undefined
                : {
                    targets: {
                      $case: "racks",
                      value: {
                        targets: options.rackIds.map((id) => ({
                          identifier: { $case: "id" as const, value: { id } },
                          componentTypes: [],
                        })),
                      },
                    },
                  },
            targetVersion: "9.9.9",
            description: "bench",
            subTargets: [],
            overrideReadinessCheck: false,
            authenticationData: undefined,
            overrideVersionCheck: false,
          },
        },
        targetScope: undefined,
      },
    },
  };
}
