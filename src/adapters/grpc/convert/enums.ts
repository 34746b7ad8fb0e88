/**
 * Enumerations between the wire and the domain. Proto → domain reports numbers the proto does not
 * define (ts-proto's decoder keeps them as plain numbers) and returns undefined for them.
 */

import {
  assertNever,
  type ComponentType,
  type ConflictStrategy,
  type GateScope,
  type OperationType,
  type PhaseScope,
  type RunReason,
  type RunStatus,
  type Scoped,
  type TargetStatus,
  type Task,
  type TaskStatus,
} from "../../../domain/model.js";
import * as pb from "../../../gen/flow/v1/flow.js";
import type { Violations } from "./violations.js";

export function componentTypeFromProto(
  value: pb.ComponentType,
  field: string,
  v: Violations,
): Scoped<ComponentType> | undefined {
  switch (value) {
    case pb.ComponentType.COMPONENT_TYPE_UNKNOWN:
      return "UNKNOWN";
    case pb.ComponentType.COMPONENT_TYPE_COMPUTE:
      return "COMPUTE";
    case pb.ComponentType.COMPONENT_TYPE_NVSWITCH:
      return "NVSWITCH";
    case pb.ComponentType.COMPONENT_TYPE_POWERSHELF:
      return "POWERSHELF";
    case pb.ComponentType.COMPONENT_TYPE_TORSWITCH:
      return "TORSWITCH";
    case pb.ComponentType.COMPONENT_TYPE_UMS:
      return "UMS";
    case pb.ComponentType.COMPONENT_TYPE_CDU:
      return "CDU";
    default:
      v.unknownEnum(field, value);
      return undefined;
  }
}

export function componentTypeToProto(type: ComponentType): pb.ComponentType {
  switch (type) {
    case "COMPUTE":
      return pb.ComponentType.COMPONENT_TYPE_COMPUTE;
    case "NVSWITCH":
      return pb.ComponentType.COMPONENT_TYPE_NVSWITCH;
    case "POWERSHELF":
      return pb.ComponentType.COMPONENT_TYPE_POWERSHELF;
    case "TORSWITCH":
      return pb.ComponentType.COMPONENT_TYPE_TORSWITCH;
    case "UMS":
      return pb.ComponentType.COMPONENT_TYPE_UMS;
    case "CDU":
      return pb.ComponentType.COMPONENT_TYPE_CDU;
    default:
      return assertNever(type);
  }
}

export function gateScopeFromProto(
  value: pb.OperationRunSafetyGateScope,
  field: string,
  v: Violations,
): Scoped<GateScope> | undefined {
  switch (value) {
    case pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_UNKNOWN:
      return "UNKNOWN";
    case pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CURRENT_PHASE:
      return "CURRENT_PHASE";
    case pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CUMULATIVE_RUN:
      return "CUMULATIVE_RUN";
    default:
      v.unknownEnum(field, value);
      return undefined;
  }
}

export function gateScopeToProto(scope: GateScope): pb.OperationRunSafetyGateScope {
  switch (scope) {
    case "CURRENT_PHASE":
      return pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CURRENT_PHASE;
    case "CUMULATIVE_RUN":
      return pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CUMULATIVE_RUN;
    default:
      return assertNever(scope);
  }
}

type Strategy = "ROW_BY_ROW" | "ONE_PER_ROW_ROUND_ROBIN";

export function strategyFromProto(
  value: pb.OperationRunPhysicalLocationOrdering_Strategy,
  field: string,
  v: Violations,
): Scoped<Strategy> | undefined {
  switch (value) {
    case pb.OperationRunPhysicalLocationOrdering_Strategy.STRATEGY_UNKNOWN:
      return "UNKNOWN";
    case pb.OperationRunPhysicalLocationOrdering_Strategy.STRATEGY_ROW_BY_ROW:
      return "ROW_BY_ROW";
    case pb.OperationRunPhysicalLocationOrdering_Strategy.STRATEGY_ONE_PER_ROW_ROUND_ROBIN:
      return "ONE_PER_ROW_ROUND_ROBIN";
    default:
      v.unknownEnum(field, value);
      return undefined;
  }
}

export function conflictStrategyFromProto(
  value: pb.ConflictStrategy,
  field: string,
  v: Violations,
): ConflictStrategy | undefined {
  switch (value) {
    case pb.ConflictStrategy.CONFLICT_STRATEGY_UNSPECIFIED:
      return "UNSPECIFIED";
    case pb.ConflictStrategy.CONFLICT_STRATEGY_QUEUE:
      return "QUEUE";
    case pb.ConflictStrategy.CONFLICT_STRATEGY_REJECT:
      return "REJECT";
    default:
      v.unknownEnum(field, value);
      return undefined;
  }
}

export function conflictStrategyToProto(strategy: ConflictStrategy): pb.ConflictStrategy {
  switch (strategy) {
    case "UNSPECIFIED":
      return pb.ConflictStrategy.CONFLICT_STRATEGY_UNSPECIFIED;
    case "QUEUE":
      return pb.ConflictStrategy.CONFLICT_STRATEGY_QUEUE;
    case "REJECT":
      return pb.ConflictStrategy.CONFLICT_STRATEGY_REJECT;
    default:
      return assertNever(strategy);
  }
}

export function runStatusFromProto(
  value: pb.OperationRunStatus,
  field: string,
  v: Violations,
): Scoped<RunStatus> | undefined {
  switch (value) {
    case pb.OperationRunStatus.OPERATION_RUN_STATUS_UNKNOWN:
      return "UNKNOWN";
    case pb.OperationRunStatus.OPERATION_RUN_STATUS_PENDING:
      return "PENDING";
    case pb.OperationRunStatus.OPERATION_RUN_STATUS_RUNNING:
      return "RUNNING";
    case pb.OperationRunStatus.OPERATION_RUN_STATUS_PAUSED:
      return "PAUSED";
    case pb.OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED:
      return "COMPLETED";
    case pb.OperationRunStatus.OPERATION_RUN_STATUS_CANCELLED:
      return "CANCELLED";
    case pb.OperationRunStatus.OPERATION_RUN_STATUS_FAILED:
      return "FAILED";
    case pb.OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED_WITH_FAILURES:
      return "COMPLETED_WITH_FAILURES";
    default:
      v.unknownEnum(field, value);
      return undefined;
  }
}

export function runStatusToProto(status: RunStatus): pb.OperationRunStatus {
  switch (status) {
    case "PENDING":
      return pb.OperationRunStatus.OPERATION_RUN_STATUS_PENDING;
    case "RUNNING":
      return pb.OperationRunStatus.OPERATION_RUN_STATUS_RUNNING;
    case "PAUSED":
      return pb.OperationRunStatus.OPERATION_RUN_STATUS_PAUSED;
    case "COMPLETED":
      return pb.OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED;
    case "CANCELLED":
      return pb.OperationRunStatus.OPERATION_RUN_STATUS_CANCELLED;
    case "FAILED":
      return pb.OperationRunStatus.OPERATION_RUN_STATUS_FAILED;
    case "COMPLETED_WITH_FAILURES":
      return pb.OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED_WITH_FAILURES;
    default:
      return assertNever(status);
  }
}

export function runReasonFromProto(
  value: pb.OperationRunStatusReason,
  field: string,
  v: Violations,
): Scoped<RunReason> | undefined {
  switch (value) {
    case pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_UNKNOWN:
      return "UNKNOWN";
    case pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_NONE:
      return "NONE";
    case pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_OPERATOR_PAUSED:
      return "OPERATOR_PAUSED";
    case pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_PHASE_GATE:
      return "PHASE_GATE";
    case pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_SAFETY_GATE:
      return "SAFETY_GATE";
    case pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_CONFLICT_RETRY_TIMEOUT:
      return "CONFLICT_RETRY_TIMEOUT";
    default:
      v.unknownEnum(field, value);
      return undefined;
  }
}

export function runReasonToProto(reason: RunReason): pb.OperationRunStatusReason {
  switch (reason) {
    case "NONE":
      return pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_NONE;
    case "OPERATOR_PAUSED":
      return pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_OPERATOR_PAUSED;
    case "PHASE_GATE":
      return pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_PHASE_GATE;
    case "SAFETY_GATE":
      return pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_SAFETY_GATE;
    case "CONFLICT_RETRY_TIMEOUT":
      return pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_CONFLICT_RETRY_TIMEOUT;
    default:
      return assertNever(reason);
  }
}

export function targetStatusFromProto(
  value: pb.OperationRunTargetStatus,
  field: string,
  v: Violations,
): Scoped<TargetStatus> | undefined {
  switch (value) {
    case pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_UNKNOWN:
      return "UNKNOWN";
    case pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_PENDING:
      return "PENDING";
    case pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_BLOCKED:
      return "BLOCKED";
    case pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_SUBMITTED:
      return "SUBMITTED";
    case pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_COMPLETED:
      return "COMPLETED";
    case pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_FAILED:
      return "FAILED";
    case pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_TERMINATED:
      return "TERMINATED";
    case pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_SKIPPED:
      return "SKIPPED";
    case pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_CLAIMED:
      return "CLAIMED";
    default:
      v.unknownEnum(field, value);
      return undefined;
  }
}

export function targetStatusToProto(status: TargetStatus): pb.OperationRunTargetStatus {
  switch (status) {
    case "PENDING":
      return pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_PENDING;
    case "BLOCKED":
      return pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_BLOCKED;
    case "SUBMITTED":
      return pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_SUBMITTED;
    case "COMPLETED":
      return pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_COMPLETED;
    case "FAILED":
      return pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_FAILED;
    case "TERMINATED":
      return pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_TERMINATED;
    case "SKIPPED":
      return pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_SKIPPED;
    case "CLAIMED":
      return pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_CLAIMED;
    default:
      return assertNever(status);
  }
}

/** UNKNOWN (and omission, which is the same 0 on the wire) means CURRENT_PHASE, per the guide. */
export function phaseScopeFromProto(
  value: pb.OperationRunTargetPhaseScope,
  field: string,
  v: Violations,
): PhaseScope | undefined {
  switch (value) {
    case pb.OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_UNKNOWN:
    case pb.OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_PHASE:
      return "CURRENT_PHASE";
    case pb.OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_COMPLETED_PHASES:
      return "COMPLETED_PHASES";
    case pb.OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_AND_COMPLETED_PHASES:
      return "CURRENT_AND_COMPLETED_PHASES";
    default:
      v.unknownEnum(field, value);
      return undefined;
  }
}

export function operationTypeFromProto(
  value: pb.OperationType,
  field: string,
  v: Violations,
): Scoped<OperationType> | undefined {
  switch (value) {
    case pb.OperationType.OPERATION_TYPE_UNKNOWN:
      return "UNKNOWN";
    case pb.OperationType.OPERATION_TYPE_POWER_CONTROL:
      return "POWER_CONTROL";
    case pb.OperationType.OPERATION_TYPE_FIRMWARE_CONTROL:
      return "FIRMWARE_CONTROL";
    default:
      v.unknownEnum(field, value);
      return undefined;
  }
}

export function operationTypeToProto(type: OperationType): pb.OperationType {
  switch (type) {
    case "POWER_CONTROL":
      return pb.OperationType.OPERATION_TYPE_POWER_CONTROL;
    case "FIRMWARE_CONTROL":
      return pb.OperationType.OPERATION_TYPE_FIRMWARE_CONTROL;
    default:
      return assertNever(type);
  }
}

export function taskStatusToProto(status: TaskStatus): pb.TaskStatus {
  switch (status) {
    case "PENDING":
      return pb.TaskStatus.TASK_STATUS_PENDING;
    case "RUNNING":
      return pb.TaskStatus.TASK_STATUS_RUNNING;
    case "COMPLETED":
      return pb.TaskStatus.TASK_STATUS_COMPLETED;
    case "FAILED":
      return pb.TaskStatus.TASK_STATUS_FAILED;
    case "TERMINATED":
      return pb.TaskStatus.TASK_STATUS_TERMINATED;
    case "WAITING":
      return pb.TaskStatus.TASK_STATUS_WAITING;
    default:
      return assertNever(status);
  }
}

export function executorTypeToProto(type: Task["executorType"]): pb.TaskExecutorType {
  switch (type) {
    case "STEP_FUNCTIONS":
      return pb.TaskExecutorType.TASK_EXECUTOR_TYPE_STEP_FUNCTIONS;
    default:
      return assertNever(type);
  }
}
