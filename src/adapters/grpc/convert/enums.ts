/**
 * Enumerations between the wire and the domain: one table per enum, domain value → proto number,
 * from which both directions are derived. Each table is a Record over its domain type, so a domain
 * value without a number does not compile.
 *
 * Proto → domain returns undefined for a number the table does not hold (one the proto does not
 * define: ts-proto's decoder keeps such numbers as plain numbers) and reports it as
 * `unknown enum value 42`. The wire's 0 (UNKNOWN, which omission also sends) decodes to the domain
 * value the table gives it (CONFLICT_STRATEGY_UNSPECIFIED is the domain's UNSPECIFIED), else to the
 * mapping's `zero`: UNKNOWN, for the domain's validators to judge, or a default.
 */

import type { ActorSource } from "../../../domain/actor.js";
import type { FailureDomainKind } from "../../../domain/failure-domain-spread.js";
import type { RunEventKind } from "../../../domain/history-event.js";
import type { ReadinessState } from "../../../domain/inventory.js";
import {
  type AcScope,
  assertNever,
  type ComponentType,
  type ConflictStrategy,
  type GateScope,
  type OperationType,
  type PhaseScope,
  type RunReason,
  type RunStatus,
  type TargetStatus,
} from "../../../domain/model.js";
import type { RuleAction } from "../../../domain/operation-rules.js";
import type { Task, TaskStatus } from "../../../domain/task.js";
import * as pb from "../../../gen/flow/v1/flow.js";
import * as admin from "../../../gen/flowadmin/v1/admin.js";
import type { Violations } from "./violations.js";

interface EnumMapping<D extends string, P extends number, Z extends string> {
  /** Total over the domain type; a value outside it (only a cast can make one) throws. */
  toProto(value: D): P;
  fromProto(value: P, field: string, v: Violations): D | Z | undefined;
}

/** Both directions of one `table`; `zero`, if given, is what the wire's 0 decodes to. */
function enumMapping<D extends string, P extends number, Z extends string = never>(
  table: Readonly<Record<D, P>>,
  zero?: Z,
): EnumMapping<D, P, Z> {
  const entries = Object.entries(table) as [D, P][];
  const numbers = new Map<D, P>(entries);
  const values = new Map<number, D | Z>(entries.map(([d, p]) => [p, d]));
  if (zero !== undefined) values.set(0, zero);
  return {
    toProto(value) {
      return numbers.get(value) ?? assertNever(value as never);
    },
    fromProto(value, field, v) {
      const decoded = values.get(value);
      if (decoded === undefined) v.unknownEnum(field, value);
      return decoded;
    },
  };
}

export const { fromProto: componentTypeFromProto, toProto: componentTypeToProto } = enumMapping<
  ComponentType,
  pb.ComponentType,
  "UNKNOWN"
>(
  {
    COMPUTE: pb.ComponentType.COMPONENT_TYPE_COMPUTE,
    NVSWITCH: pb.ComponentType.COMPONENT_TYPE_NVSWITCH,
    POWERSHELF: pb.ComponentType.COMPONENT_TYPE_POWERSHELF,
    TORSWITCH: pb.ComponentType.COMPONENT_TYPE_TORSWITCH,
    UMS: pb.ComponentType.COMPONENT_TYPE_UMS,
    CDU: pb.ComponentType.COMPONENT_TYPE_CDU,
  },
  "UNKNOWN",
);

export const { fromProto: gateScopeFromProto, toProto: gateScopeToProto } = enumMapping<
  GateScope,
  pb.OperationRunSafetyGateScope,
  "UNKNOWN"
>(
  {
    CURRENT_PHASE: pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CURRENT_PHASE,
    CUMULATIVE_RUN: pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CUMULATIVE_RUN,
  },
  "UNKNOWN",
);

type Strategy = "ROW_BY_ROW" | "ONE_PER_ROW_ROUND_ROBIN";

export const { fromProto: strategyFromProto } = enumMapping<
  Strategy,
  pb.OperationRunPhysicalLocationOrdering_Strategy,
  "UNKNOWN"
>(
  {
    ROW_BY_ROW: pb.OperationRunPhysicalLocationOrdering_Strategy.STRATEGY_ROW_BY_ROW,
    ONE_PER_ROW_ROUND_ROBIN:
      pb.OperationRunPhysicalLocationOrdering_Strategy.STRATEGY_ONE_PER_ROW_ROUND_ROBIN,
  },
  "UNKNOWN",
);

export const { fromProto: conflictStrategyFromProto, toProto: conflictStrategyToProto } = enumMapping<
  ConflictStrategy,
  pb.ConflictStrategy
>({
  UNSPECIFIED: pb.ConflictStrategy.CONFLICT_STRATEGY_UNSPECIFIED,
  QUEUE: pb.ConflictStrategy.CONFLICT_STRATEGY_QUEUE,
  REJECT: pb.ConflictStrategy.CONFLICT_STRATEGY_REJECT,
});

export const { fromProto: runStatusFromProto, toProto: runStatusToProto } = enumMapping<
  RunStatus,
  pb.OperationRunStatus,
  "UNKNOWN"
>(
  {
    PENDING: pb.OperationRunStatus.OPERATION_RUN_STATUS_PENDING,
    RUNNING: pb.OperationRunStatus.OPERATION_RUN_STATUS_RUNNING,
    PAUSED: pb.OperationRunStatus.OPERATION_RUN_STATUS_PAUSED,
    COMPLETED: pb.OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED,
    CANCELLED: pb.OperationRunStatus.OPERATION_RUN_STATUS_CANCELLED,
    FAILED: pb.OperationRunStatus.OPERATION_RUN_STATUS_FAILED,
    COMPLETED_WITH_FAILURES: pb.OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED_WITH_FAILURES,
  },
  "UNKNOWN",
);

export const { fromProto: runReasonFromProto, toProto: runReasonToProto } = enumMapping<
  RunReason,
  pb.OperationRunStatusReason,
  "UNKNOWN"
>(
  {
    NONE: pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_NONE,
    OPERATOR_PAUSED: pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_OPERATOR_PAUSED,
    PHASE_GATE: pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_PHASE_GATE,
    SAFETY_GATE: pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_SAFETY_GATE,
    CONFLICT_RETRY_TIMEOUT: pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_CONFLICT_RETRY_TIMEOUT,
    MAINTENANCE_WINDOW: pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_MAINTENANCE_WINDOW,
    AWAITING_APPROVAL: pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_AWAITING_APPROVAL,
    EXTERNAL_CHECK_INCONCLUSIVE:
      pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_EXTERNAL_CHECK_INCONCLUSIVE,
  },
  "UNKNOWN",
);

export const { fromProto: targetStatusFromProto, toProto: targetStatusToProto } = enumMapping<
  TargetStatus,
  pb.OperationRunTargetStatus,
  "UNKNOWN"
>(
  {
    PENDING: pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_PENDING,
    BLOCKED: pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_BLOCKED,
    SUBMITTED: pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_SUBMITTED,
    COMPLETED: pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_COMPLETED,
    FAILED: pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_FAILED,
    TERMINATED: pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_TERMINATED,
    SKIPPED: pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_SKIPPED,
    CLAIMED: pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_CLAIMED,
  },
  "UNKNOWN",
);

/** UNKNOWN (and omission, which is the same 0 on the wire) means CURRENT_PHASE, per the guide. */
export const { fromProto: phaseScopeFromProto } = enumMapping<
  PhaseScope,
  pb.OperationRunTargetPhaseScope,
  "CURRENT_PHASE"
>(
  {
    CURRENT_PHASE: pb.OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_PHASE,
    COMPLETED_PHASES: pb.OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_COMPLETED_PHASES,
    CURRENT_AND_COMPLETED_PHASES:
      pb.OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_AND_COMPLETED_PHASES,
  },
  "CURRENT_PHASE",
);

export const { fromProto: operationTypeFromProto, toProto: operationTypeToProto } = enumMapping<
  OperationType,
  pb.OperationType,
  "UNKNOWN"
>(
  {
    POWER_CONTROL: pb.OperationType.OPERATION_TYPE_POWER_CONTROL,
    FIRMWARE_CONTROL: pb.OperationType.OPERATION_TYPE_FIRMWARE_CONTROL,
  },
  "UNKNOWN",
);

export const { toProto: taskStatusToProto } = enumMapping<TaskStatus, pb.TaskStatus>({
  PENDING: pb.TaskStatus.TASK_STATUS_PENDING,
  RUNNING: pb.TaskStatus.TASK_STATUS_RUNNING,
  COMPLETED: pb.TaskStatus.TASK_STATUS_COMPLETED,
  FAILED: pb.TaskStatus.TASK_STATUS_FAILED,
  TERMINATED: pb.TaskStatus.TASK_STATUS_TERMINATED,
  WAITING: pb.TaskStatus.TASK_STATUS_WAITING,
});

export const { toProto: executorTypeToProto } = enumMapping<Task["executorType"], pb.TaskExecutorType>({
  STEP_FUNCTIONS: pb.TaskExecutorType.TASK_EXECUTOR_TYPE_STEP_FUNCTIONS,
});

/** The admin service's readiness; UNKNOWN (and omission) means READY, the default. */
export const { fromProto: readinessStateFromProto, toProto: readinessStateToProto } = enumMapping<
  ReadinessState,
  admin.ReadinessState,
  "READY"
>(
  {
    READY: admin.ReadinessState.READINESS_STATE_READY,
    NOT_READY: admin.ReadinessState.READINESS_STATE_NOT_READY,
    MAINTENANCE: admin.ReadinessState.READINESS_STATE_MAINTENANCE,
  },
  "READY",
);

/** Rule step actions; UNKNOWN is handed to the rule validator, which names the allowed ones. */
export const { fromProto: ruleActionFromProto, toProto: ruleActionToProto } = enumMapping<
  RuleAction,
  admin.RuleAction,
  "UNKNOWN"
>(
  {
    UPDATE_FIRMWARE: admin.RuleAction.RULE_ACTION_UPDATE_FIRMWARE,
    VERIFY_VERSION: admin.RuleAction.RULE_ACTION_VERIFY_VERSION,
    VERIFY_REACHABILITY: admin.RuleAction.RULE_ACTION_VERIFY_REACHABILITY,
    SLEEP: admin.RuleAction.RULE_ACTION_SLEEP,
    RESET_BMC: admin.RuleAction.RULE_ACTION_RESET_BMC,
    POWER_CYCLE_HOST: admin.RuleAction.RULE_ACTION_POWER_CYCLE_HOST,
    AC_CYCLE: admin.RuleAction.RULE_ACTION_AC_CYCLE,
    WAIT_BRING_UP: admin.RuleAction.RULE_ACTION_WAIT_BRING_UP,
    CHECK_HEALTH: admin.RuleAction.RULE_ACTION_CHECK_HEALTH,
  },
  "UNKNOWN",
);
export const { toProto: runEventKindToProto } = enumMapping<RunEventKind, pb.OperationRunEventKind>({
  CREATED: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_CREATED,
  STARTED: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_STARTED,
  PHASE_OPENED: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_PHASE_OPENED,
  PHASE_GATE_REACHED: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_PHASE_GATE_REACHED,
  GATE_TRIPPED: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_GATE_TRIPPED,
  PAUSED: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_PAUSED,
  RESUMED: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_RESUMED,
  ADVANCED: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_ADVANCED,
  CANCELLED: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_CANCELLED,
  CONFLICT_TIMEOUT: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_CONFLICT_TIMEOUT,
  WINDOW_OPENED: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_WINDOW_OPENED,
  WINDOW_CLOSED: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_WINDOW_CLOSED,
  WINDOW_PAUSED: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_WINDOW_PAUSED,
  FINISHED: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_FINISHED,
  RETRIED: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_RETRIED,
  ROLLED_BACK: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_ROLLED_BACK,
  SOAK_STARTED: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_SOAK_STARTED,
  TARGET_FAILURE_REPORTED: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_TARGET_FAILURE_REPORTED,
  APPROVAL_REQUESTED: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_APPROVAL_REQUESTED,
  APPROVED: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_APPROVED,
  ACCESS_DENIED: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_ACCESS_DENIED,
  EXTERNAL_CHECK_INCONCLUSIVE: pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_EXTERNAL_CHECK_INCONCLUSIVE,
});

export const { toProto: actorSourceToProto } = enumMapping<ActorSource, pb.OperationRunActorSource>({
  CLIENT_CERTIFICATE: pb.OperationRunActorSource.OPERATION_RUN_ACTOR_SOURCE_CLIENT_CERTIFICATE,
  LOAD_BALANCER_CERTIFICATE: pb.OperationRunActorSource.OPERATION_RUN_ACTOR_SOURCE_LOAD_BALANCER_CERTIFICATE,
  DECLARED: pb.OperationRunActorSource.OPERATION_RUN_ACTOR_SOURCE_DECLARED,
  ANONYMOUS: pb.OperationRunActorSource.OPERATION_RUN_ACTOR_SOURCE_ANONYMOUS,
});

/** (ours) The failure-domain spread's domain kinds. */
export const { fromProto: failureDomainFromProto, toProto: failureDomainToProto } = enumMapping<
  FailureDomainKind,
  pb.OperationRunFailureDomainSpread_Domain,
  "UNKNOWN"
>(
  {
    ROW: pb.OperationRunFailureDomainSpread_Domain.DOMAIN_ROW,
    NVL_DOMAIN: pb.OperationRunFailureDomainSpread_Domain.DOMAIN_NVL_DOMAIN,
    ATTRIBUTE: pb.OperationRunFailureDomainSpread_Domain.DOMAIN_ATTRIBUTE,
  },
  "UNKNOWN",
);

/** An AC_CYCLE step's scope (RuleStep.ac_scope); unset (0) is the tray, as is TRAY. */
export const { fromProto: acScopeFromProto, toProto: acScopeToProto } = enumMapping<
  AcScope,
  admin.AcCycleScope,
  "TRAY"
>(
  {
    TRAY: admin.AcCycleScope.AC_CYCLE_SCOPE_TRAY,
    RACK: admin.AcCycleScope.AC_CYCLE_SCOPE_RACK,
  },
  "TRAY",
);
