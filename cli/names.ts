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

/**
 * Enum values by names of their own, one table each: the run file's (camelCase, like its keys; the
 * schema reads them and run-file/to-file.ts writes them back) and a flag's.
 */
export interface NameTable<E extends number> {
  /** The names, as written and as error messages list them. */
  readonly names: readonly string[];
  parse(value: unknown): E | undefined;
  /** Undefined for a value the table does not name (UNKNOWN, UNSPECIFIED). */
  name(value: E): string | undefined;
}

/** `normalize` is applied to both the table's names and the text read: it says what spellings pass. */
function nameTable<E extends number>(
  table: readonly (readonly [string, E])[],
  normalize: (text: string) => string,
): NameTable<E> {
  return {
    names: table.map(([name]) => name),
    parse(value) {
      if (typeof value !== "string") return undefined;
      return table.find(([name]) => normalize(name) === normalize(value))?.[1];
    },
    name(value) {
      return table.find(([, v]) => v === value)?.[0];
    },
  };
}

/** `scope:` of a gate; `CURRENT_PHASE`, `current-phase` and `currentphase` read too. */
export const gateScopeNames = nameTable<pb.OperationRunSafetyGateScope>(
  [
    ["currentPhase", pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CURRENT_PHASE],
    ["cumulativeRun", pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CUMULATIVE_RUN],
  ],
  (text) => text.toLowerCase().replace(/[^a-z]/g, ""),
);

/** `queue.strategy:` of a firmware operation, in any case. */
export const queueStrategyNames = nameTable<pb.ConflictStrategy>(
  [
    ["queue", pb.ConflictStrategy.CONFLICT_STRATEGY_QUEUE],
    ["reject", pb.ConflictStrategy.CONFLICT_STRATEGY_REJECT],
  ],
  (text) => text.toLowerCase(),
);

/**
 * `run targets --phase` values, exactly as written: `current`, `completed`, `all-visible` (the
 * current and the completed phases; future phases are never listed).
 */
export const PHASE_FLAGS = nameTable<pb.OperationRunTargetPhaseScope>(
  [
    ["current", pb.OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_PHASE],
    ["completed", pb.OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_COMPLETED_PHASES],
    [
      "all-visible",
      pb.OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_AND_COMPLETED_PHASES,
    ],
  ],
  (text) => text,
);

/**
 * `--phase-scope` values, exactly as written: `current`, `completed`, `current-and-completed`. The
 * older spelling of `--phase`, still read (hidden from the help) so that scripts keep working.
 */
export const PHASE_SCOPE_FLAGS = nameTable<pb.OperationRunTargetPhaseScope>(
  [
    ["current", pb.OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_PHASE],
    ["completed", pb.OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_COMPLETED_PHASES],
    [
      "current-and-completed",
      pb.OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_AND_COMPLETED_PHASES,
    ],
  ],
  (text) => text,
);

/** Statuses after which a run never changes again. */
export const TERMINAL_RUN_STATUSES: ReadonlySet<pb.OperationRunStatus> = new Set([
  pb.OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED,
  pb.OperationRunStatus.OPERATION_RUN_STATUS_CANCELLED,
  pb.OperationRunStatus.OPERATION_RUN_STATUS_FAILED,
  pb.OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED_WITH_FAILURES,
]);

/** `domain:` of a failure-domain spread; `NVL_DOMAIN` and `nvl-domain` read too. */
export const failureDomainNames = nameTable<pb.OperationRunFailureDomainSpread_Domain>(
  [
    ["row", pb.OperationRunFailureDomainSpread_Domain.DOMAIN_ROW],
    ["nvlDomain", pb.OperationRunFailureDomainSpread_Domain.DOMAIN_NVL_DOMAIN],
    ["attribute", pb.OperationRunFailureDomainSpread_Domain.DOMAIN_ATTRIBUTE],
  ],
  (text) => text.toLowerCase().replace(/[^a-z]/g, ""),
);
