/**
 * Enum values by the names operators type and read: the proto name without its prefix.
 *
 *   COMPONENT_TYPE_NVSWITCH ↔ NVSWITCH      OPERATION_RUN_STATUS_COMPLETED_WITH_FAILURES ↔ COMPLETED_WITH_FAILURES
 *
 * Parsing is forgiving about case, `-` versus `_`, and the full prefixed name
 * (`nvswitch`, `completed-with-failures`, `OPERATION_RUN_STATUS_PAUSED` all work); UNKNOWN is never
 * accepted, because it means "not set" on the wire.
 */
import * as pb from "../src/gen/flow/v1/flow.js";

export interface EnumNames<E extends number> {
  /** Short names in enum order, UNKNOWN excluded: what `--help` and error messages list. */
  readonly names: readonly string[];
  parse(text: string): E | undefined;
  name(value: E): string;
}

function enumNames<E extends number>(
  prefix: string,
  toJson: (value: E) => string,
  values: readonly E[],
): EnumNames<E> {
  const short = (value: E) => {
    const full = toJson(value);
    return full.startsWith(prefix) ? full.slice(prefix.length) : full;
  };
  const byName = new Map<string, E>();
  for (const value of values) byName.set(short(value), value);
  return {
    names: values.map(short),
    parse(text) {
      const key = text.trim().toUpperCase().replace(/[-\s]/g, "_");
      return byName.get(key.startsWith(prefix) ? key.slice(prefix.length) : key);
    },
    name(value) {
      return short(value);
    },
  };
}

/** The numeric members of a ts-proto enum, without UNKNOWN (0) and UNRECOGNIZED (-1). */
function members<E extends number>(e: Record<string, string | number>): E[] {
  return Object.values(e).filter((v): v is E => typeof v === "number" && v > 0);
}

export const componentTypes = enumNames<pb.ComponentType>(
  "COMPONENT_TYPE_",
  pb.componentTypeToJSON,
  members(pb.ComponentType),
);
export const runStatuses = enumNames<pb.OperationRunStatus>(
  "OPERATION_RUN_STATUS_",
  pb.operationRunStatusToJSON,
  members(pb.OperationRunStatus),
);
export const runReasons = enumNames<pb.OperationRunStatusReason>(
  "OPERATION_RUN_STATUS_REASON_",
  pb.operationRunStatusReasonToJSON,
  members(pb.OperationRunStatusReason),
);
export const targetStatuses = enumNames<pb.OperationRunTargetStatus>(
  "OPERATION_RUN_TARGET_STATUS_",
  pb.operationRunTargetStatusToJSON,
  members(pb.OperationRunTargetStatus),
);
export const taskStatuses = enumNames<pb.TaskStatus>(
  "TASK_STATUS_",
  pb.taskStatusToJSON,
  members(pb.TaskStatus),
);
export const executorTypes = enumNames<pb.TaskExecutorType>(
  "TASK_EXECUTOR_TYPE_",
  pb.taskExecutorTypeToJSON,
  members(pb.TaskExecutorType),
);
export const phaseScopes = enumNames<pb.OperationRunTargetPhaseScope>(
  "OPERATION_RUN_TARGET_PHASE_SCOPE_",
  pb.operationRunTargetPhaseScopeToJSON,
  members(pb.OperationRunTargetPhaseScope),
);
export const orderingStrategies = enumNames<pb.OperationRunPhysicalLocationOrdering_Strategy>(
  "STRATEGY_",
  pb.operationRunPhysicalLocationOrdering_StrategyToJSON,
  members(pb.OperationRunPhysicalLocationOrdering_Strategy),
);
export const operationTypes = enumNames<pb.OperationType>(
  "OPERATION_TYPE_",
  pb.operationTypeToJSON,
  members(pb.OperationType),
);

/** `--phase-scope` values: `current`, `completed`, `current-and-completed`. */
export const PHASE_SCOPE_FLAGS: Readonly<Record<string, pb.OperationRunTargetPhaseScope>> = {
  current: pb.OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_PHASE,
  completed: pb.OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_COMPLETED_PHASES,
  "current-and-completed":
    pb.OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_AND_COMPLETED_PHASES,
};

/** Statuses after which a run never changes again. */
export const TERMINAL_RUN_STATUSES: ReadonlySet<pb.OperationRunStatus> = new Set([
  pb.OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED,
  pb.OperationRunStatus.OPERATION_RUN_STATUS_CANCELLED,
  pb.OperationRunStatus.OPERATION_RUN_STATUS_FAILED,
  pb.OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED_WITH_FAILURES,
]);
