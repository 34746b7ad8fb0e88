/**
 * The wire contract's samples (test/unit/wire-codec.test.ts): one message per oneof branch and per
 * optional field of the public and admin APIs, with zero values where presence matters, and the
 * ts-proto codec of each.
 */
import {
  AdvanceOperationRunPhaseRequest,
  ComponentType,
  ConflictStrategy,
  CreateOperationRunRequest,
  ListOperationRunEventsResponse,
  ListOperationRunsRequest,
  ListOperationRunTargetsRequest,
  ListTasksRequest,
  OperationRun,
  OperationRunActorSource,
  OperationRunEventKind,
  OperationRunPhysicalLocationOrdering_Strategy,
  OperationRunSafetyGateScope,
  OperationRunStatus,
  OperationRunStatusReason,
  OperationRunTarget,
  OperationRunTargetPhaseScope,
  OperationRunTargetStatus,
  OperationType,
  PlanOperationRunResponse,
  Task,
  TaskExecutorType,
  TaskStatus,
  UpgradeFirmwareRequest,
} from "../../src/gen/flow/v1/flow.js";
import { InventoryRack, ListRacksRequest } from "../../src/gen/flowadmin/v1/admin.js";

export const UUID_A = { id: "3f2504e0-4f89-11d3-9a0c-0305e82c3301" };
export const UUID_B = { id: "9b2c6a44-1d7e-4c1b-8c55-0d9f3a7e6b21" };
export const AT = new Date("2026-11-02T10:20:30.456Z");

export interface Codec {
  encode(message: never): { finish(): Uint8Array };
  decode(bytes: Uint8Array): unknown;
}

/** One sample per oneof branch and per optional field, with zero values where presence matters. */
export const SAMPLES: { type: string; codec: Codec; message: unknown }[] = [
  {
    type: "v1.CreateOperationRunRequest",
    codec: CreateOperationRunRequest as never,
    message: CreateOperationRunRequest.fromPartial({
      name: "canary",
      description: "a run",
      configuration: {
        selector: { selector: { $case: "percentage", value: { percentage: 50, seed: "s1" } } },
        options: {
          maxConcurrentTargets: 3,
          safetyPolicy: {
            gates: [
              {
                gate: {
                  $case: "failureRate",
                  value: {
                    scope: OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CUMULATIVE_RUN,
                    failureThresholdPercent: 10,
                  },
                },
              },
              {
                gate: {
                  $case: "failureCount",
                  value: {
                    scope: OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CURRENT_PHASE,
                    failureThresholdCount: 2,
                  },
                },
              },
            ],
          },
          conflictPolicy: {
            strategy: {
              $case: "retry",
              value: {
                retryTimeout: { seconds: 3600, nanos: 0 },
                initialRetryDelay: { seconds: 30, nanos: 500_000_000 },
                maxRetryDelay: { seconds: 300, nanos: 0 },
              },
            },
          },
          orderingPolicy: {
            ordering: {
              $case: "physicalLocation",
              value: {
                strategy: OperationRunPhysicalLocationOrdering_Strategy.STRATEGY_ONE_PER_ROW_ROUND_ROBIN,
              },
            },
          },
          phasePolicy: {
            plan: { $case: "percentage", value: { phases: [{ percentage: 10 }, { percentage: 90 }] } },
            advancePolicy: { autoAdvance: true },
          },
        },
        operation: {
          operation: {
            $case: "upgradeFirmware",
            value: {
              targetSpec: {
                targets: {
                  $case: "racks",
                  value: {
                    targets: [
                      {
                        identifier: { $case: "id", value: UUID_A },
                        componentTypes: [ComponentType.COMPONENT_TYPE_COMPUTE],
                      },
                      { identifier: { $case: "name", value: "rack-7" }, componentTypes: [] },
                      {
                        identifier: { $case: "externalId", value: "ext-9" },
                        componentTypes: [
                          ComponentType.COMPONENT_TYPE_NVSWITCH,
                          ComponentType.COMPONENT_TYPE_CDU,
                        ],
                      },
                    ],
                  },
                },
              },
              targetVersion: "",
              startTime: AT,
              description: "fw",
              queueOptions: {
                conflictStrategy: ConflictStrategy.CONFLICT_STRATEGY_REJECT,
                queueTimeoutSeconds: 0,
              },
              ruleId: UUID_B,
              subTargets: ["bmc", "bios"],
              overrideReadinessCheck: true,
              authenticationData: {
                value: {
                  $case: "perComponent",
                  value: { compute: "c", nvswitch: "", powershelf: undefined },
                },
              },
              overrideVersionCheck: true,
            },
          },
          targetScope: {
            excludeOperationRunIds: [UUID_A, UUID_B],
            defaultScopeComponentFilter: {
              filter: { $case: "types", value: { types: [ComponentType.COMPONENT_TYPE_POWERSHELF] } },
            },
          },
        },
      },
    }),
  },
  {
    type: "v1.UpgradeFirmwareRequest",
    codec: UpgradeFirmwareRequest as never,
    message: UpgradeFirmwareRequest.fromPartial({
      targetSpec: {
        targets: {
          $case: "components",
          value: {
            targets: [
              { identifier: { $case: "id", value: UUID_A } },
              {
                identifier: {
                  $case: "external",
                  value: { type: ComponentType.COMPONENT_TYPE_UMS, id: "u-1" },
                },
              },
            ],
          },
        },
      },
      endTime: AT,
      authenticationData: { value: { $case: "shared", value: "secret" } },
    }),
  },
  {
    type: "v1.UpgradeFirmwareRequest",
    codec: UpgradeFirmwareRequest as never,
    message: UpgradeFirmwareRequest.fromPartial({
      targetSpec: {
        targets: {
          $case: "nvlDomains",
          value: {
            targets: [
              {
                identifier: { $case: "id", value: UUID_B },
                componentTypes: [ComponentType.COMPONENT_TYPE_TORSWITCH],
              },
              { identifier: { $case: "name", value: "" }, componentTypes: [] },
            ],
          },
        },
      },
    }),
  },
  {
    type: "v1.ListOperationRunsRequest",
    codec: ListOperationRunsRequest as never,
    message: ListOperationRunsRequest.fromPartial({
      filter: {
        name: { patterns: ["canary-%"], isWildcard: true, useOr: true },
        states: [
          { status: OperationRunStatus.OPERATION_RUN_STATUS_UNKNOWN },
          { reason: OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_CONFLICT_RETRY_TIMEOUT },
        ],
        operationKinds: [{ type: OperationType.OPERATION_TYPE_FIRMWARE_CONTROL, code: "" }],
      },
      pagination: { offset: 0, limit: 0 },
    }),
  },
  {
    type: "v1.ListOperationRunTargetsRequest",
    codec: ListOperationRunTargetsRequest as never,
    message: ListOperationRunTargetsRequest.fromPartial({
      operationRunId: UUID_A,
      status: OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_CLAIMED,
      pagination: { offset: 10, limit: 5 },
      phaseScope: OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_AND_COMPLETED_PHASES,
    }),
  },
  {
    type: "v1.AdvanceOperationRunPhaseRequest",
    codec: AdvanceOperationRunPhaseRequest as never,
    message: AdvanceOperationRunPhaseRequest.fromPartial({ id: UUID_A, expectedPhaseIndex: 0 }),
  },
  {
    type: "v1.ListTasksRequest",
    codec: ListTasksRequest as never,
    message: ListTasksRequest.fromPartial({
      rackId: { id: "" },
      activeOnly: true,
      pagination: { offset: 1, limit: 2 },
      componentId: UUID_B,
      withReport: true,
    }),
  },
  {
    type: "v1.OperationRun",
    codec: OperationRun as never,
    message: OperationRun.fromPartial({
      summary: {
        id: UUID_A,
        name: "canary",
        description: "d",
        operationKind: { type: OperationType.OPERATION_TYPE_FIRMWARE_CONTROL, code: "UpgradeFirmware" },
        state: {
          status: OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED_WITH_FAILURES,
          reason: OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_NONE,
        },
        statusMessage: "done",
        totalPhases: 3,
        createdAt: AT,
        updatedAt: AT,
        startedAt: new Date(0),
        finishedAt: AT,
        currentPhaseIndex: 2,
      },
      configuration: {
        selector: { selector: { $case: "percentage", value: { percentage: 100, seed: "x" } } },
        options: {
          maxConcurrentTargets: 1,
          orderingPolicy: { ordering: { $case: "random", value: { seed: "o" } } },
          phasePolicy: { plan: { $case: "count", value: { phases: [{ count: 2 }, { count: 3 }] } } },
        },
        operation: {
          targetScope: {
            excludeOperationRunIds: [],
            defaultScopeComponentFilter: {
              filter: {
                $case: "components",
                value: { targets: [{ identifier: { $case: "id", value: UUID_B } }] },
              },
            },
          },
        },
      },
      stats: {
        currentPhaseStats: {
          phaseIndex: 2,
          selectedTargets: 4,
          outcomeCounts: { completed: 1, failed: 2, terminated: 0, skipped: 1 },
        },
        cumulativePhaseStats: {
          phaseIndex: 2,
          selectedTargets: 9,
          outcomeCounts: { completed: 6, failed: 2, terminated: 0, skipped: 1 },
        },
      },
    }),
  },
  {
    type: "v1.OperationRunTarget",
    codec: OperationRunTarget as never,
    message: OperationRunTarget.fromPartial({
      id: UUID_A,
      operationRunId: UUID_B,
      rackId: UUID_A,
      sequenceIndex: 7,
      phaseIndex: 1,
      taskId: UUID_B,
      status: OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_BLOCKED,
      message: "rack busy",
      componentsByType: {
        groups: [{ type: ComponentType.COMPONENT_TYPE_COMPUTE, componentIds: [UUID_A, UUID_B] }],
      },
      createdAt: AT,
      updatedAt: AT,
      rackExternalId: "ext-1",
    }),
  },
  {
    type: "v1.PlanOperationRunResponse",
    codec: PlanOperationRunResponse as never,
    message: PlanOperationRunResponse.fromPartial({
      configuration: { options: { phasePolicy: { plan: { $case: "equal", value: { phaseCount: 2 } } } } },
      candidateCount: 12,
      totalPhases: 2,
      targets: [{ rackId: UUID_A, sequenceIndex: 0, phaseIndex: 0, rackExternalId: "e" }],
    }),
  },
  {
    type: "v1.ListOperationRunEventsResponse",
    codec: ListOperationRunEventsResponse as never,
    message: ListOperationRunEventsResponse.fromPartial({
      total: 3,
      events: [
        {
          id: "r/001800000000000.00",
          operationRunId: UUID_A,
          kind: OperationRunEventKind.OPERATION_RUN_EVENT_KIND_GATE_TRIPPED,
          time: AT,
          state: {
            status: OperationRunStatus.OPERATION_RUN_STATUS_PAUSED,
            reason: OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_SAFETY_GATE,
          },
          message: "failure_count safety gate tripped",
          phaseIndex: 1,
          totalPhases: 3,
          stats: { currentPhaseStats: { phaseIndex: 1, selectedTargets: 2, outcomeCounts: { failed: 1 } } },
          actor: {
            name: "ops",
            source: OperationRunActorSource.OPERATION_RUN_ACTOR_SOURCE_CLIENT_CERTIFICATE,
            authenticated: true,
            subjectAltNames: ["DNS:ops"],
            declaredName: "alice",
          },
          detail: {
            $case: "gate",
            value: {
              gateIndex: 0,
              gate: { gate: { $case: "failureCount", value: { scope: 1, failureThresholdCount: 1 } } },
              failed: 1,
              selected: 2,
            },
          },
        },
        {
          id: "r/001800000000001.00",
          kind: OperationRunEventKind.OPERATION_RUN_EVENT_KIND_WINDOW_CLOSED,
          detail: { $case: "window", value: { opensAt: AT } },
        },
        {
          id: "r/001800000000002.00",
          kind: OperationRunEventKind.OPERATION_RUN_EVENT_KIND_CONFLICT_TIMEOUT,
          detail: { $case: "conflict", value: { targetId: UUID_B, blockedFor: { seconds: 3600, nanos: 0 } } },
        },
      ],
    }),
  },
  {
    type: "v1.Task",
    codec: Task as never,
    message: Task.fromPartial({
      id: UUID_A,
      operation: "UpgradeFirmware",
      rackId: UUID_B,
      componentUuids: [UUID_A],
      description: "fw",
      executorType: TaskExecutorType.TASK_EXECUTOR_TYPE_STEP_FUNCTIONS,
      executionId: "arn:aws:states:us-east-1:000000000000:execution:child:t1",
      status: TaskStatus.TASK_STATUS_WAITING,
      message: "queued",
      queueExpiresAt: AT,
      createdAt: AT,
      finishedAt: AT,
      appliedRuleId: UUID_B,
      updatedAt: AT,
      startedAt: AT,
      report: '{"v":1}',
    }),
  },
  {
    type: "flowadmin.v1.InventoryRack",
    codec: InventoryRack as never,
    message: InventoryRack.fromPartial({
      id: UUID_A,
      name: "r1",
      externalId: "e1",
      nvlDomainId: UUID_B,
      nvlDomainName: "nvl-1",
      location: { datacenter: "dc", row: "A", position: 4 },
      components: [
        {
          id: UUID_B,
          type: ComponentType.COMPONENT_TYPE_POWERSHELF,
          externalId: "p",
          firmwareVersion: "1.2",
        },
      ],
    }),
  },
  {
    type: "flowadmin.v1.ListRacksRequest",
    codec: ListRacksRequest as never,
    message: ListRacksRequest.fromPartial({ pagination: { offset: 0, limit: 0 } }),
  },
];
