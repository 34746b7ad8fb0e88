/**
 * The gRPC converters: the domain's runs, run summaries, stats, targets, plans and tasks as responses.
 */
import { describe, expect, it } from "vitest";
import {
  planToProto,
  runSummaryToProto,
  runToProto,
  targetToProto,
} from "../../src/adapters/grpc/convert/run-response.js";
import { taskToProto } from "../../src/adapters/grpc/convert/tasks-inventory.js";
import type { TargetView } from "../../src/app/api.js";
import type { Task } from "../../src/domain/task.js";
import * as pb from "../../src/gen/flow/v1/flow.js";
import { A, B, C } from "../support/grpc-convert.js";
import { CONFIG, RUN } from "../support/grpc-convert-domain.js";

describe("grpc convert: domain → responses", () => {
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
