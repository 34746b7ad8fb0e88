/**
 * Plain values for the unit tests, each test overriding what it checks: an effective run
 * configuration, a create request as decoded, a running child task (`t-1` on rack `r-1`, no
 * components, empty report), and a task about to start (PENDING, two COMPUTE components to 2.0.0).
 */
import type { CreateRunInput } from "../../src/domain/create-run-input.js";
import type { ComponentType, RunConfig } from "../../src/domain/model.js";
import { DEFAULT_RULE, type RuleDefinition } from "../../src/domain/operation-rules.js";
import type { Task } from "../../src/domain/task.js";
import { initialReport, serializeReport } from "../../src/domain/task-report.js";

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

/** A task AcquireLock starts: PENDING, two COMPUTE components (`c-0`, `c-1`) to 2.0.0, updatedAt 10. */
export function pendingTask(overrides: Partial<Task> = {}): Task {
  return runningTask({
    status: "PENDING",
    componentIds: ["c-0", "c-1"],
    report: serializeReport(
      initialReport(
        [
          { id: "c-0", type: "COMPUTE" },
          { id: "c-1", type: "COMPUTE" },
        ],
        "2.0.0",
        false,
      ),
    ),
    updatedAt: 10,
    ...overrides,
  });
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

/**
 * A create request as the gRPC converter decodes it: every rack of the default scope (100 %,
 * selection seed "sel"), ordering seed "ord", a gate that trips on the phase's first failure,
 * `phaseCount` phases of equal size, firmware 2.0.
 */
export function createRunInput(o: {
  name: string;
  maxConcurrentTargets: number;
  phaseCount: number;
}): CreateRunInput {
  return {
    name: o.name,
    description: "",
    configuration: {
      selector: { kind: "percentage", percentage: 100, seed: "sel" },
      options: {
        maxConcurrentTargets: o.maxConcurrentTargets,
        safetyPolicy: { gates: [{ kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 1 }] },
        orderingPolicy: { kind: "random", seed: "ord" },
        phasePolicy: { plan: { kind: "equal", phaseCount: o.phaseCount } },
      },
      operation: {
        upgradeFirmware: {
          targetVersion: "2.0",
          description: "",
          subTargets: [],
          overrideReadinessCheck: false,
          overrideVersionCheck: false,
        },
      },
    },
  };
}

/** The part of the update set a component's updates are stored in: its type's stage (the preflight plans it so). */
export function updatePartOf(
  type: ComponentType,
  rule: Pick<RuleDefinition, "stages"> = DEFAULT_RULE,
): number {
  const stage = rule.stages.findIndex((s) => s.componentTypes.includes(type));
  if (stage < 0) throw new Error(`no stage of the rule takes ${type}`);
  return stage;
}
