/** CreateOperationRun and PlanOperationRun requests → CreateRunInput; run ids and CancelOperationRun. */

import type {
  ComponentFilterInput,
  CreateRunInput,
  SafetyGateInput,
} from "../../../domain/create-run-input.js";
import type { LateFailureRequest } from "../../../domain/late-failure.js";
import { requireRunId } from "../../../domain/list-queries.js";
import { assertNever, type PhasePlan } from "../../../domain/model.js";
import type * as pb from "../../../gen/flow/v1/flow.js";
import { failureDomainFromProto, gateScopeFromProto, strategyFromProto } from "./enums.js";
import { componentRefsFromProto, componentTypesFromProto, firmwareFromProto } from "./firmware-request.js";
import { LIMITS } from "./limits.js";
import { compact, decoding, type Violations } from "./violations.js";
import { durationToMs } from "./well-known.js";

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

/**
 * ReportTargetFailure: the run id (as every run control), the target by id or rack id, the reason
 * as sent; the use case checks them and names the field of each violation.
 */
export function lateFailureRequestFromProto(req: pb.ReportTargetFailureRequest): LateFailureRequest {
  const runId = runIdFromProto(req.id);
  return {
    runId,
    reason: req.reason,
    ...(req.targetId?.id ? { targetId: req.targetId.id } : {}),
    ...(req.rackId?.id ? { rackId: req.rackId.id } : {}),
  };
}

/** `client_request_id` as the use case takes it: "" (proto3's default) is none. */
export function clientRequestIdFromProto(req: pb.CreateOperationRunRequest): { clientRequestId?: string } {
  return req.clientRequestId === "" ? {} : { clientRequestId: req.clientRequestId };
}

export function createRunInputFromProto(req: pb.CreateOperationRunRequest): CreateRunInput {
  return decoding((v) => {
    v.maxLength("name", req.name, LIMITS.name);
    v.maxLength("description", req.description, LIMITS.description);
    const input: CreateRunInput = { name: req.name, description: req.description };
    // Ids as sent (absent: ""); the use case checks them and the run they name.
    if (req.retry !== undefined) {
      input.retry = {
        runId: req.retry.operationRunId?.id ?? "",
        includeTerminated: req.retry.includeTerminated,
        includeSkipped: req.retry.includeSkipped,
      };
    }
    if (req.rollback !== undefined) input.rollback = { runId: req.rollback.operationRunId?.id ?? "" };
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
        ...soaksFromProto(o.phasePolicy, v),
      }),
    maintenanceWindows:
      o.maintenanceWindows.length === 0 ? undefined : maintenanceWindowsFromProto(o.maintenanceWindows, v),
    failureDomainSpread: o.failureDomainSpread && spreadFromProto(o.failureDomainSpread, v),
  });
}

/** (ours) The spread as sent; an unknown domain value names its path, UNKNOWN is the validator's. */
function spreadFromProto(
  s: pb.OperationRunFailureDomainSpread,
  v: Violations,
): OptionsInput["failureDomainSpread"] {
  const field = `${OPTIONS}.failure_domain_spread`;
  v.maxLength(`${field}.attribute`, s.attribute, LIMITS.attribute);
  return {
    kind: failureDomainFromProto(s.domain, `${field}.domain`, v) ?? "UNKNOWN",
    attribute: s.attribute,
    maxInFlight: s.maxInFlight,
  };
}

/** Passed as sent (a missing duration too): the validator reports every rule with its path. */
function maintenanceWindowsFromProto(
  windows: pb.MaintenanceWindow[],
  v: Violations,
): OptionsInput["maintenanceWindows"] {
  const field = `${OPTIONS}.maintenance_windows`;
  return windows.map((w, i) => {
    v.maxLength(`${field}[${i}].cron`, w.cron, LIMITS.cron);
    return compact({
      cron: w.cron,
      durationMs: w.duration && durationToMs(w.duration, `${field}[${i}].duration`, v),
    });
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
      case "observedFailureRate": {
        const at = `${field}[${i}].observed_failure_rate`;
        const scope = gateScopeFromProto(g.gate.value.scope, `${at}.scope`, v);
        return {
          kind: "observedFailureRate",
          scope: scope ?? "UNKNOWN",
          thresholdPercent: g.gate.value.failureThresholdPercent,
          minFinished: g.gate.value.minFinished,
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

/** The phase soaks as sent (a negative one too): the validator reports every rule with its path. */
function soaksFromProto(
  p: pb.OperationRunPhasePolicy,
  v: Violations,
): { minSoakMs?: number; phaseMinSoakMs?: number[] } {
  const field = `${OPTIONS}.phase_policy`;
  return compact({
    minSoakMs: p.minSoak && durationToMs(p.minSoak, `${field}.min_soak`, v),
    phaseMinSoakMs: p.phaseMinSoaks?.minSoaks.map(
      (d, i) => durationToMs(d, `${field}.phase_min_soaks.min_soaks[${i}]`, v) ?? 0,
    ),
  });
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
