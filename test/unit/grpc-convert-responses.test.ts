/** The gRPC converters: the domain's runs, targets, configurations and history as responses. */
import { describe, expect, it } from "vitest";
import { runConfigToProto } from "../../src/adapters/grpc/convert/config-response.js";
import { createRunInputFromProto } from "../../src/adapters/grpc/convert/run-request.js";
import {
  planToProto,
  runSummaryToProto,
  runToProto,
  targetToProto,
} from "../../src/adapters/grpc/convert/run-response.js";
import { taskToProto } from "../../src/adapters/grpc/convert/tasks-inventory.js";
import type { TargetView } from "../../src/app/api.js";
import type { Run, RunConfig } from "../../src/domain/model.js";
import { validateCreateRun } from "../../src/domain/run-config.js";
import type { Task } from "../../src/domain/task.js";
import * as pb from "../../src/gen/flow/v1/flow.js";
import { A, B, C, odd, thrown } from "../support/grpc-convert.js";

// ---------------------------------------------------------------------------------------------

const CONFIG: RunConfig = {
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

const RUN: Run = {
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

describe("grpc convert: domain → responses", () => {
  it("the effective configuration encodes with durations and without credentials", () => {
    const proto = runConfigToProto(CONFIG);
    expect(proto.options?.conflictPolicy?.strategy).toEqual({
      $case: "retry",
      value: {
        retryTimeout: { seconds: 3600, nanos: 0 },
        initialRetryDelay: { seconds: 1, nanos: 500_000_000 },
        maxRetryDelay: { seconds: 300, nanos: 0 },
      },
    });
    const fw = proto.operation?.operation?.value;
    expect(fw?.authenticationData).toBeUndefined();
    expect(fw?.queueOptions).toEqual({
      conflictStrategy: pb.ConflictStrategy.CONFLICT_STRATEGY_REJECT,
      queueTimeoutSeconds: 60,
    });
    expect(fw?.startTime).toEqual(new Date(1_000));
    expect(fw?.ruleId).toEqual({ id: B });
    expect(proto.options?.maintenanceWindows).toEqual([
      { cron: "0 2 * * MON-FRI", duration: { seconds: 7200, nanos: 500_000_000 } },
    ]);
    expect(
      runConfigToProto({ ...CONFIG, maintenanceWindows: undefined }).options?.maintenanceWindows,
    ).toEqual([]);
    const bytes = Buffer.from(pb.OperationRun.encode(runToProto(RUN)).finish());
    expect(bytes.includes("hunter2")).toBe(false);
    expect(bytes.includes("sel-seed")).toBe(true);
  });

  it("effective configuration → request → validator gives the same configuration back (credentials aside)", () => {
    const request = pb.CreateOperationRunRequest.fromPartial({
      name: "n",
      configuration: runConfigToProto(CONFIG),
    });
    const result = validateCreateRun(createRunInputFromProto(request), () => "unused", 0);
    const { authentication: _, ...firmware } = CONFIG.operation.firmware;
    expect(result).toEqual({
      ok: true,
      name: "n",
      description: "",
      config: { ...CONFIG, operation: { kind: "upgradeFirmware", firmware } },
    });
  });

  it("a failure-domain spread decodes as sent; UNKNOWN is the validator's, an unknown value names its path", () => {
    const spread = (failureDomainSpread: pb.OperationRunFailureDomainSpread) =>
      createRunInputFromProto(
        pb.CreateOperationRunRequest.fromPartial({
          name: "n",
          configuration: { options: { failureDomainSpread } },
        }),
      ).configuration?.options?.failureDomainSpread;
    const D = pb.OperationRunFailureDomainSpread_Domain;
    expect(spread({ domain: D.DOMAIN_NVL_DOMAIN, attribute: "", maxInFlight: 2 })).toEqual({
      kind: "NVL_DOMAIN",
      attribute: "",
      maxInFlight: 2,
    });
    expect(spread({ domain: D.DOMAIN_UNKNOWN, attribute: "x", maxInFlight: 0 })).toEqual({
      kind: "UNKNOWN",
      attribute: "x",
      maxInFlight: 0,
    });
    expect(thrown(() => spread({ domain: odd(9), attribute: "", maxInFlight: 1 })).message).toBe(
      "configuration.options.failure_domain_spread.domain: unknown enum value 9",
    );
    expect(
      thrown(() => spread({ domain: D.DOMAIN_ATTRIBUTE, attribute: "a".repeat(257), maxInFlight: 1 }))
        .message,
    ).toBe("configuration.options.failure_domain_spread.attribute: must be at most 256 characters (got 257)");
  });

  it("an observed-rate gate crosses the wire: min_finished absent stays absent, an explicit 0 stays 0, a bad scope names its path", () => {
    const gates = (value: pb.OperationRunObservedFailureRateGate) =>
      createRunInputFromProto(
        pb.CreateOperationRunRequest.decode(
          pb.CreateOperationRunRequest.encode(
            pb.CreateOperationRunRequest.fromPartial({
              name: "n",
              configuration: {
                options: { safetyPolicy: { gates: [{ gate: { $case: "observedFailureRate", value } }] } },
              },
            }),
          ).finish(),
        ),
      ).configuration?.options?.safetyPolicy?.gates;
    const cumulative = pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CUMULATIVE_RUN;
    expect(gates({ scope: cumulative, failureThresholdPercent: 50 })).toEqual([
      { kind: "observedFailureRate", scope: "CUMULATIVE_RUN", thresholdPercent: 50, minFinished: undefined },
    ]);
    expect(gates({ scope: 0, failureThresholdPercent: 50, minFinished: 0 })).toEqual([
      { kind: "observedFailureRate", scope: "UNKNOWN", thresholdPercent: 50, minFinished: 0 },
    ]);
    expect(thrown(() => gates({ scope: odd(42), failureThresholdPercent: 50 })).message).toBe(
      "configuration.options.safety_policy.gates[0].observed_failure_rate.scope: unknown enum value 42",
    );
  });

  it("maintenance windows decode as sent (a missing duration too) for the validator; bad ones name their path", () => {
    const options = (maintenanceWindows: pb.MaintenanceWindow[]) =>
      createRunInputFromProto(
        pb.CreateOperationRunRequest.fromPartial({
          name: "n",
          configuration: { options: { maintenanceWindows } },
        }),
      ).configuration?.options?.maintenanceWindows;
    expect(options([])).toBeUndefined();
    expect(
      options([
        { cron: "0 2 * * *", duration: { seconds: 60, nanos: 0 } },
        { cron: "x", duration: undefined },
      ]),
    ).toEqual([{ cron: "0 2 * * *", durationMs: 60_000 }, { cron: "x" }]);
    expect(thrown(() => options([{ cron: "0 2 * * *", duration: { seconds: 1, nanos: -1 } }])).message).toBe(
      "configuration.options.maintenance_windows[0].duration: must be a valid duration: nanos out of range or of the wrong sign (got -1)",
    );
    expect(thrown(() => options([{ cron: "*".repeat(257), duration: undefined }])).message).toMatch(
      /^configuration\.options\.maintenance_windows\[0\]\.cron: must be at most 256 characters/,
    );
  });

  it("plan phase kinds, per-component filters and every target spec kind encode", () => {
    const config: RunConfig = {
      ...CONFIG,
      phasePlan: { kind: "count", counts: [2] },
      operation: {
        kind: "upgradeFirmware",
        firmware: {
          ...CONFIG.operation.firmware,
          targetSpec: {
            kind: "components",
            components: [
              { by: "id", id: A },
              { by: "external", type: "UMS", externalId: "u1" },
            ],
          },
        },
      },
      targetScope: {
        excludeOperationRunIds: [],
        defaultScopeComponentFilter: { kind: "components", componentIds: [B] },
      },
    };
    const proto = runConfigToProto(config);
    expect(proto.options?.phasePolicy?.plan).toEqual({ $case: "count", value: { phases: [{ count: 2 }] } });
    expect(proto.operation?.targetScope?.defaultScopeComponentFilter).toEqual({
      filter: {
        $case: "components",
        value: { targets: [{ identifier: { $case: "id", value: { id: B } } }] },
      },
    });
    expect(proto.operation?.operation?.value.targetSpec).toEqual({
      targets: {
        $case: "components",
        value: {
          targets: [
            { identifier: { $case: "id", value: { id: A } } },
            {
              identifier: {
                $case: "external",
                value: { type: pb.ComponentType.COMPONENT_TYPE_UMS, id: "u1" },
              },
            },
          ],
        },
      },
    });
    const nvl = runConfigToProto({
      ...config,
      phasePlan: { kind: "equal", phaseCount: 2 },
      targetScope: {
        excludeOperationRunIds: [],
        defaultScopeComponentFilter: { kind: "types", types: ["CDU"] },
      },
      operation: {
        kind: "upgradeFirmware",
        firmware: {
          ...config.operation.firmware,
          targetSpec: {
            kind: "nvlDomains",
            domains: [
              { ref: { by: "name", name: "d1" }, componentTypes: ["TORSWITCH"] },
              { ref: { by: "id", id: C }, componentTypes: [] },
            ],
          },
        },
      },
    });
    expect(nvl.options?.phasePolicy?.plan).toEqual({ $case: "equal", value: { phaseCount: 2 } });
    expect(nvl.operation?.targetScope?.defaultScopeComponentFilter).toEqual({
      filter: { $case: "types", value: { types: [pb.ComponentType.COMPONENT_TYPE_CDU] } },
    });
    expect(nvl.operation?.operation?.value.targetSpec?.targets).toEqual({
      $case: "nvlDomains",
      value: {
        targets: [
          {
            identifier: { $case: "name", value: "d1" },
            componentTypes: [pb.ComponentType.COMPONENT_TYPE_TORSWITCH],
          },
          { identifier: { $case: "id", value: { id: C } }, componentTypes: [] },
        ],
      },
    });
  });

  it("a run summary carries state, kind, phases and optional timestamps", () => {
    expect(runSummaryToProto(RUN)).toEqual({
      id: { id: A },
      name: "canary",
      description: "first wave",
      operationKind: { type: pb.OperationType.OPERATION_TYPE_FIRMWARE_CONTROL, code: "upgrade" },
      state: {
        status: pb.OperationRunStatus.OPERATION_RUN_STATUS_PAUSED,
        reason: pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_PHASE_GATE,
      },
      statusMessage: "waiting for phase advance",
      totalPhases: 2,
      createdAt: new Date(1_700_000_000_000),
      updatedAt: new Date(1_700_000_100_000),
      startedAt: new Date(1_700_000_000_500),
      finishedAt: undefined,
      currentPhaseIndex: 0,
      phaseSizes: RUN.phaseSizes,
      retryOf: undefined,
      rollbackOf: undefined,
      retriedBy: [],
      rolledBackBy: [],
    });
  });

  it("a retry or rollback run names what it follows; a run followed names its retries and rollbacks", () => {
    const retry = runSummaryToProto({
      ...RUN,
      origin: { kind: "retry", runId: A, includeTerminated: true, includeSkipped: false },
    });
    expect(retry.retryOf).toEqual({
      operationRunId: { id: A },
      includeTerminated: true,
      includeSkipped: false,
    });
    expect(retry.rollbackOf).toBeUndefined();
    const rollback = runSummaryToProto({ ...RUN, origin: { kind: "rollback", runId: B } });
    expect(rollback.rollbackOf).toEqual({ operationRunId: { id: B } });
    const followed = runSummaryToProto({
      ...RUN,
      followUps: [
        { kind: "retry", runId: A },
        { kind: "rollback", runId: B },
        { kind: "retry", runId: C },
      ],
    });
    expect(followed.retriedBy).toEqual([{ id: A }, { id: C }]);
    expect(followed.rolledBackBy).toEqual([{ id: B }]);
  });

  it("stats are included only when given", () => {
    expect(runToProto(RUN).stats).toBeUndefined();
    const stats = runToProto(RUN, {
      current: {
        phaseIndex: 0,
        selectedTargets: 1,
        outcomes: { completed: 1, failed: 0, terminated: 0, skipped: 0 },
      },
      cumulative: {
        phaseIndex: 0,
        selectedTargets: 1,
        outcomes: { completed: 1, failed: 0, terminated: 0, skipped: 0 },
      },
    }).stats;
    expect(stats).toEqual({
      currentPhaseStats: {
        phaseIndex: 0,
        selectedTargets: 1,
        outcomeCounts: { completed: 1, failed: 0, terminated: 0, skipped: 0 },
      },
      cumulativePhaseStats: {
        phaseIndex: 0,
        selectedTargets: 1,
        outcomeCounts: { completed: 1, failed: 0, terminated: 0, skipped: 0 },
      },
    });
  });

  it("a target encodes with its task id, components by type and rack external id", () => {
    const target: TargetView = {
      id: C,
      runId: A,
      rackId: B,
      sequenceIndex: 3,
      phaseIndex: 1,
      status: "SUBMITTED",
      message: "submitted",
      taskId: A,
      componentsByType: [{ type: "COMPUTE", componentIds: [A, B] }],
      createdAt: 1000,
      updatedAt: 2000,
      conflictAttempts: 0,
      rackExternalId: "rack-ext-1",
      versions: [{ version: "2.1", componentIds: [A, B] }],
      priorVersions: [
        { componentId: A, type: "COMPUTE", version: "1.9", targetVersion: "2.1", subTargets: ["bios"] },
        { componentId: B, type: "COMPUTE", version: "2.0", targetVersion: "2.1" },
      ],
      failureDomain: "nvl-07",
    };
    expect(targetToProto(target)).toEqual({
      id: { id: C },
      operationRunId: { id: A },
      rackId: { id: B },
      sequenceIndex: 3,
      phaseIndex: 1,
      taskId: { id: A },
      status: pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_SUBMITTED,
      message: "submitted",
      componentsByType: {
        groups: [{ type: pb.ComponentType.COMPONENT_TYPE_COMPUTE, componentIds: [{ id: A }, { id: B }] }],
      },
      createdAt: new Date(1000),
      updatedAt: new Date(2000),
      rackExternalId: "rack-ext-1",
      targetVersions: [{ version: "2.1", componentIds: [{ id: A }, { id: B }] }],
      priorVersions: [
        {
          componentId: { id: A },
          type: pb.ComponentType.COMPONENT_TYPE_COMPUTE,
          priorVersion: "1.9",
          targetVersion: "2.1",
          subTargets: ["bios"],
        },
        {
          componentId: { id: B },
          type: pb.ComponentType.COMPONENT_TYPE_COMPUTE,
          priorVersion: "2.0",
          targetVersion: "2.1",
          subTargets: [],
        },
      ],
      skippedComponents: [],
      failureDomain: "nvl-07",
    });
    expect(targetToProto({ ...target, failureDomain: undefined }).failureDomain).toBe("");
    expect(targetToProto({ ...target, priorVersions: undefined }).priorVersions).toEqual([]);
    expect(
      targetToProto({
        ...target,
        skippedComponents: [{ componentId: A, type: "CDU", reason: "never flashed" }],
      }).skippedComponents,
    ).toEqual([
      { componentId: { id: A }, type: pb.ComponentType.COMPONENT_TYPE_CDU, reason: "never flashed" },
    ]);
    expect(targetToProto({ ...target, taskId: undefined }).taskId).toBeUndefined();
    expect(targetToProto({ ...target, versions: undefined }).targetVersions).toEqual([]);
  });

  it("a plan encodes its targets as PENDING with no ids, task or timestamps", () => {
    const response = planToProto({
      config: CONFIG,
      plan: {
        candidateCount: 12,
        phaseSizes: [1, 1],
        targets: [
          {
            rackId: A,
            sequenceIndex: 0,
            phaseIndex: 0,
            componentsByType: [{ type: "CDU", componentIds: [B] }],
            failureDomain: "dc1/A",
          },
          { rackId: C, sequenceIndex: 1, phaseIndex: 1, componentsByType: [] },
        ],
      },
      rackExternalIds: new Map([[A, "ext-a"]]),
      nextWindowOpenings: [Date.parse("2026-11-21T02:00:00Z")],
      versions: new Map([[A, [{ version: "3.0", componentIds: [B] }]]]),
    });
    expect(response.nextWindowOpenings).toEqual([new Date("2026-11-21T02:00:00Z")]);
    expect(response.candidateCount).toBe(12);
    expect(response.totalPhases).toBe(2);
    expect(response.targets).toEqual([
      {
        id: undefined,
        operationRunId: undefined,
        rackId: { id: A },
        sequenceIndex: 0,
        phaseIndex: 0,
        taskId: undefined,
        status: pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_PENDING,
        message: "",
        componentsByType: {
          groups: [{ type: pb.ComponentType.COMPONENT_TYPE_CDU, componentIds: [{ id: B }] }],
        },
        createdAt: undefined,
        updatedAt: undefined,
        rackExternalId: "ext-a",
        targetVersions: [{ version: "3.0", componentIds: [{ id: B }] }],
        priorVersions: [],
        skippedComponents: [],
        failureDomain: "dc1/A",
      },
      expect.objectContaining({
        rackId: { id: C },
        rackExternalId: "",
        targetVersions: [],
        failureDomain: "",
      }),
    ]);
  });

  it("a task encodes with the Step Functions executor and its optional timestamps", () => {
    const task: Task = {
      id: A,
      operation: "UpgradeFirmware",
      rackId: B,
      rackExternalId: "EXT-7",
      componentIds: [C],
      description: "fw",
      executorType: "STEP_FUNCTIONS",
      executionId: "arn:aws:states:us-east-1:000000000000:execution:child:x",
      status: "RUNNING",
      message: "flashing",
      createdAt: 10,
      updatedAt: 20,
      startedAt: 15,
      report: "{}",
      idempotencyKey: "operation-run-target:t",
    };
    expect(taskToProto(task)).toEqual({
      id: { id: A },
      operation: "UpgradeFirmware",
      rackId: { id: B },
      rackExternalId: "EXT-7",
      componentUuids: [{ id: C }],
      description: "fw",
      executorType: pb.TaskExecutorType.TASK_EXECUTOR_TYPE_STEP_FUNCTIONS,
      executionId: "arn:aws:states:us-east-1:000000000000:execution:child:x",
      status: pb.TaskStatus.TASK_STATUS_RUNNING,
      message: "flashing",
      queueExpiresAt: undefined,
      createdAt: new Date(10),
      finishedAt: undefined,
      appliedRuleId: undefined,
      updatedAt: new Date(20),
      startedAt: new Date(15),
      report: "{}",
    });
    // A task made before external ids were frozen, on a rack the inventory no longer names: empty.
    expect(taskToProto({ ...task, rackExternalId: undefined }).rackExternalId).toBe("");
  });
});
