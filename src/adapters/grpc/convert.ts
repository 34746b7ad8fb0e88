/**
 * Converters between the wire (ts-proto messages of src/gen) and the domain (src/domain/model.ts),
 * both ways. Pure functions: no I/O, no clock.
 *
 * Decoding is faithful, not validating: what a client may legally omit is passed on as absent,
 * `unset` or `UNKNOWN`, and the domain's validators decide what that means (an UNKNOWN gate scope
 * becomes CURRENT_PHASE, a missing selector is an error). The converters report only what the
 * domain types cannot even express, i.e. what only the wire can get wrong:
 *
 *   - enum numbers the proto does not define (a newer client, or garbage):
 *       configuration.options.safety_policy.gates[0].failure_rate.scope: unknown enum value 42
 *   - malformed UUIDs where no domain validator looks at the id (task ids, inventory ids);
 *   - component references without an identifier, and UNKNOWN types of external component
 *     references (the domain's ComponentRef has room for neither);
 *   - sizes no real request has (see `LIMITS`);
 *   - durations and timestamps outside the ranges the well-known types define.
 *
 * Every problem is collected with its proto field path, then thrown at once as a `ValidationError`
 * (gRPC InvalidArgument). Where the domain has a validator for the decoded form (list queries, a
 * plain UpgradeFirmware request, run ids) the converter calls it, so the rules and the reference's
 * texts live in one place (src/domain/queries.ts, src/domain/config.ts); `createRun` validates
 * inside the application, which takes the raw `CreateRunInput`.
 *
 * Encoding never writes firmware credentials back: `authentication_data` is always unset on read.
 */

import type { BuildInfo, TargetView } from "../../app/api.js";
import { type FieldViolation, InvalidArgumentError, ValidationError } from "../../domain/errors.js";
import {
  type ListRunsQueryInput,
  type ListTargetsQueryInput,
  type PageInput,
  requireRunId,
  runOperationKind,
  type Validated,
  validateListRunsQuery,
  validateListTargetsQuery,
  validateListTasksQuery,
  validatePage,
} from "../../domain/list-queries.js";
import {
  assertNever,
  type ComponentFilter,
  type ComponentFilterInput,
  type ComponentRef,
  type ComponentsForType,
  type ComponentType,
  type ConflictStrategy,
  type CreateRunInput,
  type FirmwareAuthentication,
  type FirmwareTemplate,
  type GateScope,
  type InventoryRack,
  type ListRunsQuery,
  type ListTargetsQuery,
  type ListTasksQuery,
  type NvlDomainRef,
  type OperationType,
  type Page,
  type PhasePlan,
  type PhaseScope,
  type PhaseStats,
  type Plan,
  type RackRef,
  type Run,
  type RunConfig,
  type RunReason,
  type RunStats,
  type RunStatus,
  type SafetyGate,
  type SafetyGateInput,
  type Scoped,
  type TargetSpec,
  type TargetSpecInput,
  type TargetStatus,
  type Task,
  type TaskStatus,
} from "../../domain/model.js";
import { validateFirmwareTask } from "../../domain/run-config.js";
import { isNilUuid, normalizeUuid } from "../../domain/uuid.js";
import * as pb from "../../gen/flow/v1/flow.js";
import type * as admin from "../../gen/flowadmin/v1/admin.js";
import type { Duration } from "../../gen/google/protobuf/duration.js";

/**
 * Upper bounds on what one request may carry. None is a product rule (the planner caps a run at 100
 * candidate racks anyway); they exist so that a buggy or hostile client gets a clear InvalidArgument
 * naming the field instead of making the server allocate, sort and store something absurd. Each is
 * one or two orders of magnitude above any real request: a 100-rack run needs at most 100 target
 * entries and 100 phases. The 4 MiB receive limit of the server bounds the rest.
 */
export const LIMITS = {
  /** Characters. A run name is a label in a list, not a document. */
  name: 256,
  /** Characters: run, firmware and cancel-reason descriptions. */
  description: 4096,
  /** Characters: selector and ordering seeds (a generated seed is a 36-character UUID). */
  seed: 256,
  /** Safety gates per run; gates OR together, so more than a handful is a mistake. */
  gates: 32,
  /** Phases per run, for every plan kind (equal phase_count included). */
  phases: 100,
  /** Entries of a target spec or of a component filter. */
  targetSpecEntries: 1000,
  /** component_types of one target entry: there are six component types. */
  componentTypesPerEntry: 16,
  /** sub_targets of a firmware request. */
  subTargets: 100,
  /** Name patterns of a ListOperationRuns filter. */
  patterns: 100,
  /** State entries and operation kinds of a ListOperationRuns filter, each. */
  filterEntries: 100,
  /** exclude_operation_run_ids of a target scope. */
  excludeRunIds: 100,
  /** task_ids of one GetTasksByIDs call. */
  taskIds: 1000,
  /** Racks of one ImportInventory call, and components of one rack. */
  inventoryRacks: 1000,
  componentsPerRack: 1000,
} as const;

/** A missing, malformed or nil task id (the run-id twin is the domain's RUN_ID_REQUIRED). */
export const TASK_ID_REQUIRED = "task ID is required";

/** google.protobuf.Duration's documented range: ±10,000 years. */
const MAX_DURATION_SECONDS = 315_576_000_000;

// ---------------------------------------------------------------------------------------------
// Violations

/** Collects every wire-level problem of one request; `throwIfAny` ends the decode. */
export class Violations {
  readonly list: FieldViolation[] = [];

  add(field: string, rule: string): void {
    this.list.push({ field, rule });
  }

  unknownEnum(field: string, value: number): void {
    this.add(field, `unknown enum value ${value}`);
  }

  maxLength(field: string, value: string, max: number): void {
    if (value.length > max) this.add(field, `must be at most ${max} characters (got ${value.length})`);
  }

  maxEntries(field: string, entries: readonly unknown[], max: number): void {
    if (entries.length > max) this.add(field, `must have at most ${max} entries (got ${entries.length})`);
  }

  /** The canonical lowercase id, or undefined after reporting why `value` is not a usable id. */
  uuid(field: string, value: string): string | undefined {
    const id = normalizeUuid(value);
    if (id === undefined) this.add(field, `must be a UUID (got ${JSON.stringify(value)})`);
    else if (isNilUuid(id)) this.add(field, "must not be the nil UUID");
    else return id;
    return undefined;
  }

  throwIfAny(): void {
    if (this.list.length > 0) throw new ValidationError(this.list);
  }
}

/** `at("", "target_spec")` → `target_spec`; `at("configuration.operation", "target_scope")` → joined. */
function at(prefix: string, field: string): string {
  return prefix === "" ? field : `${prefix}.${field}`;
}

/** Drops keys whose value is undefined, so optional domain fields are absent rather than undefined. */
function compact<T extends object>(value: T): T {
  for (const key of Object.keys(value) as (keyof T)[]) {
    if (value[key] === undefined) delete value[key];
  }
  return value;
}

/** Runs `decode` with a fresh collector and throws every violation it reported, or returns its value. */
function decoding<T>(decode: (v: Violations) => T): T {
  const v = new Violations();
  const result = decode(v);
  v.throwIfAny();
  return result;
}

// ---------------------------------------------------------------------------------------------
// Enumerations: one total switch per direction. Proto → domain reports numbers the proto does not
// define (ts-proto's decoder keeps them as plain numbers) and returns undefined for them.

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

// ---------------------------------------------------------------------------------------------
// Well-known types

/**
 * Whole milliseconds, rounded away from zero so that a non-zero duration never becomes 0 ms (which
 * the validator would report as "must be positive" for a value the client sent as positive):
 * {seconds: 30} → 30000; {seconds: 1, nanos: 500000000} → 1500; {nanos: 1} → 1; {seconds: -2} → -2000.
 */
export function durationToMs(d: Duration, field: string, v: Violations): number | undefined {
  const { seconds, nanos } = d;
  if (!Number.isInteger(seconds) || Math.abs(seconds) > MAX_DURATION_SECONDS) {
    v.add(field, `must be a valid duration: seconds out of range (got ${seconds})`);
    return undefined;
  }
  if (
    !Number.isInteger(nanos) ||
    Math.abs(nanos) > 999_999_999 ||
    (seconds > 0 && nanos < 0) ||
    (seconds < 0 && nanos > 0)
  ) {
    v.add(field, `must be a valid duration: nanos out of range or of the wrong sign (got ${nanos})`);
    return undefined;
  }
  const ms = seconds * 1000 + nanos / 1_000_000;
  return ms > 0 ? Math.ceil(ms) : Math.floor(ms);
}

/** 1500 → {seconds: 1, nanos: 500000000}; -1500 → {seconds: -1, nanos: -500000000} (same signs). */
export function msToDuration(ms: number): Duration {
  const seconds = Math.trunc(ms / 1000);
  const nanos = Math.round((ms - seconds * 1000) * 1_000_000);
  return { seconds, nanos };
}

/** ts-proto decodes Timestamps to Dates; one outside Date's range decodes to an invalid Date. */
function dateToMs(date: Date, field: string, v: Violations): number | undefined {
  const ms = date.getTime();
  if (Number.isNaN(ms)) {
    v.add(field, "must be a valid timestamp");
    return undefined;
  }
  return ms;
}

function msToDate(ms: number): Date;
function msToDate(ms: number | undefined): Date | undefined;
function msToDate(ms: number | undefined): Date | undefined {
  return ms === undefined ? undefined : new Date(ms);
}

const uuidToProto = (id: string): pb.UUID => ({ id });

// ---------------------------------------------------------------------------------------------
// Ids and pages

/** The run id of a Get/Pause/Resume/Advance/Cancel request, or InvalidArgument "operation run ID is required". */
export function runIdFromProto(id: pb.UUID | undefined): string {
  return requireRunId(id?.id);
}

/** CancelOperationRun: the run id and the operator's reason (bounded like a description). */
export function cancelRequestFromProto(req: pb.CancelOperationRunRequest): { id: string; reason: string } {
  const id = runIdFromProto(req.id);
  const reason = decoding((v) => {
    v.maxLength("reason", req.reason, LIMITS.description);
    return req.reason;
  });
  return { id, reason };
}

export function taskIdFromProto(id: pb.UUID | undefined): string {
  const normalized = id && normalizeUuid(id.id);
  if (normalized === undefined || isNilUuid(normalized)) throw new InvalidArgumentError(TASK_ID_REQUIRED);
  return normalized;
}

/** The domain's verdict, or its violations thrown as one ValidationError. */
function validated<T>(result: Validated<T>): T {
  if (!result.ok) throw new ValidationError(result.violations);
  return result.value;
}

/** Pagination is passed as sent (absent stays absent); the domain applies defaults and caps. */
function pageInput(p: pb.Pagination | undefined): PageInput | undefined {
  return p && { offset: p.offset, limit: p.limit };
}

// ---------------------------------------------------------------------------------------------
// Requests → domain

export function createRunInputFromProto(req: pb.CreateOperationRunRequest): CreateRunInput {
  return decoding((v) => {
    v.maxLength("name", req.name, LIMITS.name);
    v.maxLength("description", req.description, LIMITS.description);
    const input: CreateRunInput = { name: req.name, description: req.description };
    const cfg = req.configuration;
    if (cfg !== undefined) {
      input.configuration = compact({
        selector: cfg.selector && selectorFromProto(cfg.selector, v),
        options: cfg.options && optionsFromProto(cfg.options, v),
        operation: cfg.operation && operationFromProto(cfg.operation, v),
      });
    }
    return input;
  });
}

type ConfigInput = NonNullable<CreateRunInput["configuration"]>;
type OptionsInput = NonNullable<ConfigInput["options"]>;

function selectorFromProto(s: pb.OperationRunSelector, v: Violations): ConfigInput["selector"] {
  if (s.selector === undefined) return { kind: "unset" };
  const { percentage, seed } = s.selector.value;
  v.maxLength("configuration.selector.percentage.seed", seed, LIMITS.seed);
  return { kind: "percentage", percentage, seed };
}

const OPTIONS = "configuration.options";

function optionsFromProto(o: pb.OperationRunOptions, v: Violations): OptionsInput {
  return compact({
    maxConcurrentTargets: o.maxConcurrentTargets,
    safetyPolicy: o.safetyPolicy && { gates: gatesFromProto(o.safetyPolicy.gates, v) },
    conflictPolicy: o.conflictPolicy && conflictPolicyFromProto(o.conflictPolicy, v),
    orderingPolicy: o.orderingPolicy && orderingFromProto(o.orderingPolicy, v),
    phasePolicy:
      o.phasePolicy &&
      compact({
        plan: phasePlanFromProto(o.phasePolicy, v),
        advancePolicy: o.phasePolicy.advancePolicy && {
          autoAdvance: o.phasePolicy.advancePolicy.autoAdvance,
        },
      }),
  });
}

function gatesFromProto(gates: pb.OperationRunSafetyGate[], v: Violations): SafetyGateInput[] {
  const field = `${OPTIONS}.safety_policy.gates`;
  v.maxEntries(field, gates, LIMITS.gates);
  return gates.map((g, i): SafetyGateInput => {
    switch (g.gate?.$case) {
      case undefined:
        return { kind: "unset" };
      case "failureRate": {
        const scope = gateScopeFromProto(g.gate.value.scope, `${field}[${i}].failure_rate.scope`, v);
        return {
          kind: "failureRate",
          scope: scope ?? "UNKNOWN",
          thresholdPercent: g.gate.value.failureThresholdPercent,
        };
      }
      case "failureCount": {
        const scope = gateScopeFromProto(g.gate.value.scope, `${field}[${i}].failure_count.scope`, v);
        return {
          kind: "failureCount",
          scope: scope ?? "UNKNOWN",
          thresholdCount: g.gate.value.failureThresholdCount,
        };
      }
      default:
        return assertNever(g.gate);
    }
  });
}

function conflictPolicyFromProto(
  c: pb.OperationRunConflictPolicy,
  v: Violations,
): OptionsInput["conflictPolicy"] {
  if (c.strategy === undefined) return {};
  const r = c.strategy.value;
  const field = `${OPTIONS}.conflict_policy.retry`;
  return {
    retry: compact({
      retryTimeoutMs: r.retryTimeout && durationToMs(r.retryTimeout, `${field}.retry_timeout`, v),
      initialRetryDelayMs:
        r.initialRetryDelay && durationToMs(r.initialRetryDelay, `${field}.initial_retry_delay`, v),
      maxRetryDelayMs: r.maxRetryDelay && durationToMs(r.maxRetryDelay, `${field}.max_retry_delay`, v),
    }),
  };
}

function orderingFromProto(o: pb.OperationRunOrderingPolicy, v: Violations): OptionsInput["orderingPolicy"] {
  switch (o.ordering?.$case) {
    case undefined:
      return { kind: "unset" };
    case "random":
      v.maxLength(`${OPTIONS}.ordering_policy.random.seed`, o.ordering.value.seed, LIMITS.seed);
      return { kind: "random", seed: o.ordering.value.seed };
    case "physicalLocation": {
      const field = `${OPTIONS}.ordering_policy.physical_location.strategy`;
      const strategy = strategyFromProto(o.ordering.value.strategy, field, v);
      return { kind: "physicalLocation", strategy: strategy ?? "UNKNOWN" };
    }
    default:
      return assertNever(o.ordering);
  }
}

function phasePlanFromProto(p: pb.OperationRunPhasePolicy, v: Violations): PhasePlan | undefined {
  const field = `${OPTIONS}.phase_policy`;
  switch (p.plan?.$case) {
    case undefined:
      return undefined;
    case "equal":
      if (p.plan.value.phaseCount > LIMITS.phases) {
        v.add(
          `${field}.equal.phase_count`,
          `must be at most ${LIMITS.phases} (got ${p.plan.value.phaseCount})`,
        );
      }
      return { kind: "equal", phaseCount: p.plan.value.phaseCount };
    case "percentage":
      v.maxEntries(`${field}.percentage.phases`, p.plan.value.phases, LIMITS.phases);
      return { kind: "percentage", percentages: p.plan.value.phases.map((x) => x.percentage) };
    case "count":
      v.maxEntries(`${field}.count.phases`, p.plan.value.phases, LIMITS.phases);
      return { kind: "count", counts: p.plan.value.phases.map((x) => x.count) };
    default:
      return assertNever(p.plan);
  }
}

const OPERATION = "configuration.operation";

function operationFromProto(o: pb.OperationRunOperation, v: Violations): ConfigInput["operation"] {
  // upgrade_firmware is the oneof's only branch today; an unset oneof is left for the validator.
  const upgradeFirmware =
    o.operation && firmwareFromProto(o.operation.value, `${OPERATION}.upgrade_firmware`, v);
  const scope = o.targetScope;
  let targetScope: NonNullable<ConfigInput["operation"]>["targetScope"];
  if (scope !== undefined) {
    const field = `${OPERATION}.target_scope`;
    v.maxEntries(`${field}.exclude_operation_run_ids`, scope.excludeOperationRunIds, LIMITS.excludeRunIds);
    const filter = scope.defaultScopeComponentFilter;
    targetScope = compact({
      // Passed as sent: the validator reports malformed or nil ids with the reference's rules.
      excludeOperationRunIds: scope.excludeOperationRunIds.map((u) => u.id),
      defaultScopeComponentFilter:
        filter && componentFilterFromProto(filter, `${field}.default_scope_component_filter`, v),
    });
  }
  return compact({ upgradeFirmware, targetScope });
}

function componentFilterFromProto(f: pb.ComponentFilter, field: string, v: Violations): ComponentFilterInput {
  switch (f.filter?.$case) {
    case undefined:
      return { kind: "unset" };
    case "types":
      return {
        kind: "types",
        types: componentTypesFromProto(f.filter.value.types, `${field}.types.types`, v),
      };
    case "components": {
      const targets = f.filter.value.targets;
      return {
        kind: "components",
        components: componentRefsFromProto(targets, `${field}.components.targets`, v),
      };
    }
    default:
      return assertNever(f.filter);
  }
}

/** Known numbers only (UNKNOWN included, for the validator to judge); undefined numbers are reported. */
function componentTypesFromProto(
  types: pb.ComponentType[],
  field: string,
  v: Violations,
): Scoped<ComponentType>[] {
  v.maxEntries(field, types, LIMITS.componentTypesPerEntry);
  const out: Scoped<ComponentType>[] = [];
  types.forEach((t, i) => {
    const type = componentTypeFromProto(t, `${field}[${i}]`, v);
    if (type !== undefined) out.push(type);
  });
  return out;
}

function componentRefsFromProto(targets: pb.ComponentTarget[], field: string, v: Violations): ComponentRef[] {
  v.maxEntries(field, targets, LIMITS.targetSpecEntries);
  const refs: ComponentRef[] = [];
  targets.forEach((t, i) => {
    const id = t.identifier;
    switch (id?.$case) {
      case undefined:
        v.add(`${field}[${i}]`, "must set id or external");
        return;
      case "id":
        refs.push({ by: "id", id: id.value.id });
        return;
      case "external": {
        const type = componentTypeFromProto(id.value.type, `${field}[${i}].external.type`, v);
        if (type === "UNKNOWN") {
          v.add(
            `${field}[${i}].external.type`,
            "must be a known component type (got COMPONENT_TYPE_UNKNOWN)",
          );
        }
        if (type !== undefined && type !== "UNKNOWN")
          refs.push({ by: "external", type, externalId: id.value.id });
        return;
      }
      default:
        assertNever(id);
    }
  });
  return refs;
}

type FirmwareInput = Omit<FirmwareTemplate, "targetSpec"> & { targetSpec?: TargetSpecInput };

/** `prefix` is the path of the UpgradeFirmwareRequest: "" for the RPC, `configuration.operation.upgrade_firmware` in a run. */
function firmwareFromProto(fw: pb.UpgradeFirmwareRequest, prefix: string, v: Violations): FirmwareInput {
  v.maxLength(at(prefix, "description"), fw.description, LIMITS.description);
  v.maxEntries(at(prefix, "sub_targets"), fw.subTargets, LIMITS.subTargets);
  const q = fw.queueOptions;
  const strategy =
    q && conflictStrategyFromProto(q.conflictStrategy, at(prefix, "queue_options.conflict_strategy"), v);
  return compact({
    targetSpec: fw.targetSpec && targetSpecFromProto(fw.targetSpec, at(prefix, "target_spec"), v),
    targetVersion: fw.targetVersion,
    startTime: fw.startTime && dateToMs(fw.startTime, at(prefix, "start_time"), v),
    endTime: fw.endTime && dateToMs(fw.endTime, at(prefix, "end_time"), v),
    description: fw.description,
    queueOptions: q && {
      conflictStrategy: strategy ?? "UNSPECIFIED",
      queueTimeoutSeconds: q.queueTimeoutSeconds,
    },
    // Passed as sent: the validator reports a malformed or nil rule id with the reference's text.
    ruleId: fw.ruleId?.id,
    subTargets: fw.subTargets,
    overrideReadinessCheck: fw.overrideReadinessCheck,
    authentication: fw.authenticationData && authenticationFromProto(fw.authenticationData),
    overrideVersionCheck: fw.overrideVersionCheck,
  });
}

function authenticationFromProto(a: pb.FirmwareAuthenticationData): FirmwareAuthentication | undefined {
  switch (a.value?.$case) {
    case undefined:
      return undefined;
    case "shared":
      return { kind: "shared", secret: a.value.value };
    case "perComponent": {
      const { compute, nvswitch, powershelf } = a.value.value;
      return compact({ kind: "perComponent" as const, compute, nvswitch, powershelf });
    }
    default:
      return assertNever(a.value);
  }
}

function targetSpecFromProto(spec: pb.OperationTargetSpec, field: string, v: Violations): TargetSpecInput {
  switch (spec.targets?.$case) {
    case undefined:
      return { kind: "unset" };
    case "racks": {
      const f = `${field}.racks.targets`;
      const targets = spec.targets.value.targets;
      v.maxEntries(f, targets, LIMITS.targetSpecEntries);
      return {
        kind: "racks",
        racks: targets.map((t, i) => ({
          ref: rackRefFromProto(t.identifier),
          componentTypes: componentTypesFromProto(t.componentTypes, `${f}[${i}].component_types`, v),
        })),
      };
    }
    case "components":
      return {
        kind: "components",
        components: componentRefsFromProto(spec.targets.value.targets, `${field}.components.targets`, v),
      };
    case "nvlDomains": {
      const f = `${field}.nvl_domains.targets`;
      const targets = spec.targets.value.targets;
      v.maxEntries(f, targets, LIMITS.targetSpecEntries);
      const domains: { ref: NvlDomainRef; componentTypes: ComponentType[] }[] = [];
      targets.forEach((t, i) => {
        // The model types these as known ComponentTypes, but the validator checks them at run time
        // and words the UNKNOWN case as the reference does, so UNKNOWN is handed through.
        const componentTypes = componentTypesFromProto(
          t.componentTypes,
          `${f}[${i}].component_types`,
          v,
        ) as ComponentType[];
        const id = t.identifier;
        switch (id?.$case) {
          case undefined:
            v.add(`${f}[${i}]`, "must set id or name");
            return;
          case "id":
            domains.push({ ref: { by: "id", id: id.value.id }, componentTypes });
            return;
          case "name":
            domains.push({ ref: { by: "name", name: id.value }, componentTypes });
            return;
          default:
            assertNever(id);
        }
      });
      return { kind: "nvlDomains", domains };
    }
    default:
      return assertNever(spec.targets);
  }
}

function rackRefFromProto(id: pb.RackTarget["identifier"]): RackRef | { by: "unset" } {
  switch (id?.$case) {
    case undefined:
      return { by: "unset" };
    case "id":
      return { by: "id", id: id.value.id };
    case "name":
      return { by: "name", name: id.value };
    case "externalId":
      return { by: "externalId", externalId: id.value };
    default:
      return assertNever(id);
  }
}

/** A plain UpgradeFirmware request, decoded and validated (its target spec is required here). */
export function firmwareTemplateFromProto(req: pb.UpgradeFirmwareRequest): FirmwareTemplate {
  const input = decoding((v) => firmwareFromProto(req, "", v));
  const result = validateFirmwareTask(input);
  if (!result.ok) throw new ValidationError(result.violations);
  return result.template;
}

export function listRunsQueryFromProto(req: pb.ListOperationRunsRequest): ListRunsQuery {
  const input = decoding((v): ListRunsQueryInput => {
    const filter = req.filter;
    const input: ListRunsQueryInput = { states: [], kinds: [], page: pageInput(req.pagination) };
    if (filter === undefined) return input;
    if (filter.name !== undefined) {
      v.maxEntries("filter.name.patterns", filter.name.patterns, LIMITS.patterns);
      const { patterns, isWildcard, useOr } = filter.name;
      input.name = { patterns, isWildcard, useOr };
    }
    v.maxEntries("filter.states", filter.states, LIMITS.filterEntries);
    filter.states.forEach((s, i) => {
      const field = `filter.states[${i}]`;
      input.states.push(
        compact({
          status: s.status === undefined ? undefined : runStatusFromProto(s.status, `${field}.status`, v),
          reason: s.reason === undefined ? undefined : runReasonFromProto(s.reason, `${field}.reason`, v),
        }),
      );
    });
    v.maxEntries("filter.operation_kinds", filter.operationKinds, LIMITS.filterEntries);
    filter.operationKinds.forEach((k, i) => {
      const type = operationTypeFromProto(k.type, `filter.operation_kinds[${i}].type`, v);
      if (type !== undefined) input.kinds.push(compact({ type, code: k.code }));
    });
    return input;
  });
  return validated(validateListRunsQuery(input));
}

/** The run id is checked first, as the reference does: a bad id hides every other problem. */
export function listTargetsQueryFromProto(req: pb.ListOperationRunTargetsRequest): ListTargetsQuery {
  const runId = runIdFromProto(req.operationRunId);
  const input = decoding(
    (v): ListTargetsQueryInput =>
      compact({
        runId,
        status: targetStatusFromProto(req.status, "status", v) ?? "UNKNOWN",
        phaseScope: phaseScopeFromProto(req.phaseScope, "phase_scope", v) ?? "CURRENT_PHASE",
        page: pageInput(req.pagination),
      }),
  );
  return validated(validateListTargetsQuery(input));
}

export function listTasksQueryFromProto(req: pb.ListTasksRequest): ListTasksQuery {
  return validated(
    validateListTasksQuery(
      compact({
        rackId: req.rackId?.id,
        componentId: req.componentId?.id,
        activeOnly: req.activeOnly,
        withReport: req.withReport,
        page: pageInput(req.pagination),
      }),
    ),
  );
}

export function taskIdsFromProto(req: pb.GetTasksByIDsRequest): string[] {
  return decoding((v) => {
    v.maxEntries("task_ids", req.taskIds, LIMITS.taskIds);
    const ids: string[] = [];
    req.taskIds.forEach((t, i) => {
      const id = v.uuid(`task_ids[${i}]`, t.id);
      if (id !== undefined) ids.push(id);
    });
    return ids;
  });
}

export function pageFromListRacks(req: admin.ListRacksRequest): Page {
  return validated(validatePage(pageInput(req.pagination)));
}

export function inventoryRacksFromProto(req: admin.ImportInventoryRequest): InventoryRack[] {
  return decoding((v) => {
    v.maxEntries("racks", req.racks, LIMITS.inventoryRacks);
    return req.racks.map((r, i) => {
      const field = `racks[${i}]`;
      v.maxEntries(`${field}.components`, r.components, LIMITS.componentsPerRack);
      if (r.name === "") v.add(`${field}.name`, "must not be empty");
      const rack: InventoryRack = {
        id: v.uuid(`${field}.id`, r.id?.id ?? "") ?? "",
        name: r.name,
        components: r.components.map((c, j) => {
          const cf = `${field}.components[${j}]`;
          const type = componentTypeFromProto(c.type, `${cf}.type`, v);
          if (type === "UNKNOWN")
            v.add(`${cf}.type`, "must be a known component type (got COMPONENT_TYPE_UNKNOWN)");
          return compact({
            id: v.uuid(`${cf}.id`, c.id?.id ?? "") ?? "",
            type: type === undefined || type === "UNKNOWN" ? "COMPUTE" : type,
            externalId: c.externalId === "" ? undefined : c.externalId,
            firmwareVersion: c.firmwareVersion === "" ? undefined : c.firmwareVersion,
          });
        }),
      };
      if (r.externalId !== "") rack.externalId = r.externalId;
      if (r.nvlDomainId !== undefined) {
        rack.nvlDomain = {
          id: v.uuid(`${field}.nvl_domain_id`, r.nvlDomainId.id) ?? "",
          name: r.nvlDomainName,
        };
      }
      if (r.location !== undefined) {
        const { datacenter, row, position } = r.location;
        rack.location = { datacenter, row, position };
      }
      return rack;
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Domain → responses

export function runSummaryToProto(run: Run): pb.OperationRunSummary {
  return {
    id: uuidToProto(run.id),
    name: run.name,
    description: run.description,
    operationKind: operationKindToProto(runOperationKind(run.config)),
    state: { status: runStatusToProto(run.status), reason: runReasonToProto(run.reason) },
    statusMessage: run.statusMessage,
    totalPhases: run.phaseSizes.length,
    createdAt: msToDate(run.createdAt),
    updatedAt: msToDate(run.updatedAt),
    startedAt: msToDate(run.startedAt),
    finishedAt: msToDate(run.finishedAt),
    currentPhaseIndex: run.currentPhaseIndex,
    phaseSizes: [...run.phaseSizes],
  };
}

function operationKindToProto(kind: { type: OperationType; code: string }): pb.OperationKind {
  return { type: operationTypeToProto(kind.type), code: kind.code };
}

export function runToProto(run: Run, stats?: RunStats): pb.OperationRun {
  return {
    summary: runSummaryToProto(run),
    configuration: runConfigToProto(run.config),
    stats: stats && runStatsToProto(stats),
  };
}

function phaseStatsToProto(s: PhaseStats): pb.OperationRunPhaseStats {
  return { phaseIndex: s.phaseIndex, selectedTargets: s.selectedTargets, outcomeCounts: { ...s.outcomes } };
}

export function runStatsToProto(stats: RunStats): pb.OperationRunStats {
  return {
    currentPhaseStats: phaseStatsToProto(stats.current),
    cumulativePhaseStats: phaseStatsToProto(stats.cumulative),
  };
}

/** The effective configuration, durations as Durations; firmware credentials are never included. */
export function runConfigToProto(config: RunConfig): pb.OperationRunConfiguration {
  const { conflictRetry, targetScope, phasePlan } = config;
  return {
    selector: {
      selector: {
        $case: "percentage",
        value: { percentage: config.selector.percentage, seed: config.selector.seed },
      },
    },
    options: {
      maxConcurrentTargets: config.maxConcurrentTargets,
      safetyPolicy: { gates: config.safetyGates.map(gateToProto) },
      conflictPolicy: {
        strategy: {
          $case: "retry",
          value: {
            retryTimeout: msToDuration(conflictRetry.retryTimeoutMs),
            initialRetryDelay: msToDuration(conflictRetry.initialRetryDelayMs),
            maxRetryDelay: msToDuration(conflictRetry.maxRetryDelayMs),
          },
        },
      },
      orderingPolicy: { ordering: { $case: "random", value: { seed: config.ordering.seed } } },
      phasePolicy: { plan: phasePlanToProto(phasePlan), advancePolicy: { autoAdvance: config.autoAdvance } },
    },
    operation: {
      operation: { $case: "upgradeFirmware", value: firmwareTemplateToProto(config.operation.firmware) },
      targetScope: {
        excludeOperationRunIds: targetScope.excludeOperationRunIds.map(uuidToProto),
        defaultScopeComponentFilter:
          targetScope.defaultScopeComponentFilter &&
          componentFilterToProto(targetScope.defaultScopeComponentFilter),
      },
    },
  };
}

function gateToProto(gate: SafetyGate): pb.OperationRunSafetyGate {
  switch (gate.kind) {
    case "failureRate":
      return {
        gate: {
          $case: "failureRate",
          value: { scope: gateScopeToProto(gate.scope), failureThresholdPercent: gate.thresholdPercent },
        },
      };
    case "failureCount":
      return {
        gate: {
          $case: "failureCount",
          value: { scope: gateScopeToProto(gate.scope), failureThresholdCount: gate.thresholdCount },
        },
      };
    default:
      return assertNever(gate);
  }
}

function phasePlanToProto(plan: PhasePlan): pb.OperationRunPhasePolicy["plan"] {
  switch (plan.kind) {
    case "equal":
      return { $case: "equal", value: { phaseCount: plan.phaseCount } };
    case "percentage":
      return {
        $case: "percentage",
        value: { phases: plan.percentages.map((percentage) => ({ percentage })) },
      };
    case "count":
      return { $case: "count", value: { phases: plan.counts.map((count) => ({ count })) } };
    default:
      return assertNever(plan);
  }
}

function componentFilterToProto(filter: ComponentFilter): pb.ComponentFilter {
  switch (filter.kind) {
    case "types":
      return { filter: { $case: "types", value: { types: filter.types.map(componentTypeToProto) } } };
    case "components":
      return {
        filter: {
          $case: "components",
          value: {
            targets: filter.componentIds.map((id) => ({
              identifier: { $case: "id", value: uuidToProto(id) },
            })),
          },
        },
      };
    default:
      return assertNever(filter);
  }
}

/** `authentication_data` is always unset: credentials go in, never out. */
export function firmwareTemplateToProto(fw: FirmwareTemplate): pb.UpgradeFirmwareRequest {
  return {
    targetSpec: fw.targetSpec && targetSpecToProto(fw.targetSpec),
    targetVersion: fw.targetVersion,
    startTime: msToDate(fw.startTime),
    endTime: msToDate(fw.endTime),
    description: fw.description,
    queueOptions: fw.queueOptions && {
      conflictStrategy: conflictStrategyToProto(fw.queueOptions.conflictStrategy),
      queueTimeoutSeconds: fw.queueOptions.queueTimeoutSeconds,
    },
    ruleId: fw.ruleId === undefined ? undefined : uuidToProto(fw.ruleId),
    subTargets: [...fw.subTargets],
    overrideReadinessCheck: fw.overrideReadinessCheck,
    authenticationData: undefined,
    overrideVersionCheck: fw.overrideVersionCheck,
  };
}

function targetSpecToProto(spec: TargetSpec): pb.OperationTargetSpec {
  switch (spec.kind) {
    case "racks":
      return {
        targets: {
          $case: "racks",
          value: {
            targets: spec.racks.map((r) => ({
              identifier: rackRefToProto(r.ref),
              componentTypes: r.componentTypes.map(componentTypeToProto),
            })),
          },
        },
      };
    case "components":
      return {
        targets: {
          $case: "components",
          value: { targets: spec.components.map((c) => ({ identifier: componentRefToProto(c) })) },
        },
      };
    case "nvlDomains":
      return {
        targets: {
          $case: "nvlDomains",
          value: {
            targets: spec.domains.map((d) => ({
              identifier:
                d.ref.by === "id"
                  ? { $case: "id", value: uuidToProto(d.ref.id) }
                  : { $case: "name", value: d.ref.name },
              componentTypes: d.componentTypes.map(componentTypeToProto),
            })),
          },
        },
      };
    default:
      return assertNever(spec);
  }
}

function rackRefToProto(ref: RackRef): pb.RackTarget["identifier"] {
  switch (ref.by) {
    case "id":
      return { $case: "id", value: uuidToProto(ref.id) };
    case "name":
      return { $case: "name", value: ref.name };
    case "externalId":
      return { $case: "externalId", value: ref.externalId };
    default:
      return assertNever(ref);
  }
}

function componentRefToProto(ref: ComponentRef): pb.ComponentTarget["identifier"] {
  switch (ref.by) {
    case "id":
      return { $case: "id", value: uuidToProto(ref.id) };
    case "external":
      return { $case: "external", value: { type: componentTypeToProto(ref.type), id: ref.externalId } };
    default:
      return assertNever(ref);
  }
}

function componentsByTypeToProto(groups: ComponentsForType[]): pb.ComponentsByType {
  return {
    groups: groups.map((g) => ({
      type: componentTypeToProto(g.type),
      componentIds: g.componentIds.map(uuidToProto),
    })),
  };
}

export function targetToProto(t: TargetView): pb.OperationRunTarget {
  return {
    id: uuidToProto(t.id),
    operationRunId: uuidToProto(t.runId),
    rackId: uuidToProto(t.rackId),
    sequenceIndex: t.sequenceIndex,
    phaseIndex: t.phaseIndex,
    taskId: t.taskId === undefined ? undefined : uuidToProto(t.taskId),
    status: targetStatusToProto(t.status),
    message: t.message,
    componentsByType: componentsByTypeToProto(t.componentsByType),
    createdAt: msToDate(t.createdAt),
    updatedAt: msToDate(t.updatedAt),
    rackExternalId: t.rackExternalId,
  };
}

/** PlanOperationRun: planned targets carry no ids, task or timestamps; they are all PENDING. */
export function planToProto(result: {
  config: RunConfig;
  plan: Plan;
  rackExternalIds: ReadonlyMap<string, string>;
}): pb.PlanOperationRunResponse {
  return {
    configuration: runConfigToProto(result.config),
    candidateCount: result.plan.candidateCount,
    totalPhases: result.plan.phaseSizes.length,
    targets: result.plan.targets.map((t) => ({
      id: undefined,
      operationRunId: undefined,
      rackId: uuidToProto(t.rackId),
      sequenceIndex: t.sequenceIndex,
      phaseIndex: t.phaseIndex,
      taskId: undefined,
      status: pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_PENDING,
      message: "",
      componentsByType: componentsByTypeToProto(t.componentsByType),
      createdAt: undefined,
      updatedAt: undefined,
      rackExternalId: result.rackExternalIds.get(t.rackId) ?? "",
    })),
  };
}

export function taskToProto(task: Task): pb.Task {
  return {
    id: uuidToProto(task.id),
    operation: task.operation,
    rackId: uuidToProto(task.rackId),
    componentUuids: task.componentIds.map(uuidToProto),
    description: task.description,
    executorType: executorTypeToProto(task.executorType),
    executionId: task.executionId,
    status: taskStatusToProto(task.status),
    message: task.message,
    queueExpiresAt: msToDate(task.queueExpiresAt),
    createdAt: msToDate(task.createdAt),
    finishedAt: msToDate(task.finishedAt),
    appliedRuleId: task.appliedRuleId === undefined ? undefined : uuidToProto(task.appliedRuleId),
    updatedAt: msToDate(task.updatedAt),
    startedAt: msToDate(task.startedAt),
    report: task.report,
  };
}

export function inventoryRackToProto(rack: InventoryRack): admin.InventoryRack {
  return {
    id: uuidToProto(rack.id),
    name: rack.name,
    externalId: rack.externalId ?? "",
    nvlDomainId: rack.nvlDomain && uuidToProto(rack.nvlDomain.id),
    nvlDomainName: rack.nvlDomain?.name ?? "",
    location: rack.location && { ...rack.location },
    components: rack.components.map((c) => ({
      id: uuidToProto(c.id),
      type: componentTypeToProto(c.type),
      externalId: c.externalId ?? "",
      firmwareVersion: c.firmwareVersion ?? "",
    })),
  };
}

export function buildInfoToProto(info: BuildInfo): pb.BuildInfo {
  return { version: info.version, buildTime: info.buildTime, gitCommit: info.gitCommit };
}
