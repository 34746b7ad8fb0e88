/**
 * Create-time validation of an operation run's configuration (its operation template, and a plain
 * UpgradeFirmware task, in firmware-template.ts).
 *
 * `validateCreateRun` turns the decoded request into the *effective* configuration: every default
 * filled in and every generated seed stored, so that reading the run back shows exactly what the
 * planner used (a cohort drawn with a generated seed can be audited and re-drawn).
 *
 * Messages. The reference implementation stops at its first error and wraps it in path prefixes
 * (`safety_policy.gates[1]: failure_rate.failure_threshold_percent must be between 1 and 100`).
 * Here every violation is reported at once, with its full proto path in `field`, and `rule` is the
 * reference's innermost message word for word, its wrapping prefixes dropped because `field` already
 * says where. So the example above becomes
 *
 *   field: configuration.options.safety_policy.gates[1].failure_rate.failure_threshold_percent
 *   rule:  failure_rate.failure_threshold_percent must be between 1 and 100
 *
 * Rules marked "(ours)" have no counterpart in the reference and name the value received.
 *
 * Seeds are drawn from the injected `newSeed` only once the whole request is valid, selector seed
 * first and ordering seed second, so a rejected request consumes no randomness and tests can script
 * the generator.
 *
 * `now` is the request's time, for the rules about what is already past (an end_time before it);
 * the domain has no clock. The schedule rules are in maintenance-window.ts (`checkSchedule`).
 */

import type { ComponentFilterInput, CreateRunInput, SafetyGateInput, Scoped } from "./create-run-input.js";
import { formatGoDuration } from "./duration.js";
import type { FieldViolation } from "./errors.js";
import { checkFailureDomainSpread } from "./failure-domains.js";
import { checkFirmwareTemplate } from "./firmware-template.js";
import { checkSchedule } from "./maintenance-window.js";
import type {
  ComponentFilter,
  ConflictRetryPolicy,
  FirmwareTemplate,
  GateScope,
  PhasePlan,
  RunConfig,
  SafetyGate,
} from "./model.js";
import { MAX_SOAK_MS } from "./soak.js";
import { Violations } from "./violations.js";

export type CreateRunValidation =
  | { ok: true; name: string; description: string; config: RunConfig }
  | { ok: false; violations: FieldViolation[] };

/** Applied field by field: a request that sends only `retry_timeout` keeps the other two defaults. */
export const DEFAULT_CONFLICT_RETRY: Readonly<ConflictRetryPolicy> = {
  retryTimeoutMs: 60 * 60 * 1000,
  initialRetryDelayMs: 30 * 1000,
  maxRetryDelayMs: 5 * 60 * 1000,
};

/** The reference's exact text, also used by the planner should a stored config ever carry it. */
export const PHYSICAL_LOCATION_UNSUPPORTED = "physical_location ordering is not supported yet";

const CONFIG = "configuration";
const SELECTOR = `${CONFIG}.selector`;
const OPTIONS = `${CONFIG}.options`;
const GATES = `${OPTIONS}.safety_policy.gates`;
const RETRY = `${OPTIONS}.conflict_policy.retry`;
const PHASES = `${OPTIONS}.phase_policy`;
const OPERATION = `${CONFIG}.operation`;
const FIRMWARE = `${OPERATION}.upgrade_firmware`;
const SCOPE = `${OPERATION}.target_scope`;
const FILTER = `${SCOPE}.default_scope_component_filter`;

// ---------------------------------------------------------------------------------------------

/**
 * Validates a CreateOperationRun request and builds the effective configuration.
 *
 * Defaults (all stored in the returned config):
 * - selector seed "" → `newSeed()`; ordering absent (or a policy with no branch set) → random with
 *   `newSeed()`; random ordering with seed "" → `newSeed()`;
 * - gate scope UNKNOWN → CURRENT_PHASE;
 * - conflict retry 1 h / 30 s / 5 min, each missing duration on its own (an explicit zero is not
 *   missing: it is rejected);
 * - phase policy absent, or present without a plan → one equal phase; `auto_advance` → false;
 * - no phase soak, or a soak of 0 → the field is left out (no soak; a 0 in `phase_min_soaks` is
 *   kept: it turns `min_soak` off for its phase);
 * - a component filter with no branch set → no filter;
 * - no maintenance windows → the field is left out (no recurring windows).
 */
export function validateCreateRun(
  input: CreateRunInput,
  newSeed: () => string,
  now: number,
): CreateRunValidation {
  const v = new Violations();
  const name = input.name.trim();
  if (name === "") v.add("name", "name is required");

  const cfg = input.configuration;
  if (cfg === undefined) {
    v.add(CONFIG, "configuration is required");
    return { ok: false, violations: v.list };
  }

  const operation = checkOperation(cfg.operation, v);
  const selector = checkSelector(cfg.selector, v);
  const options = checkOptions(cfg.options, v);
  const firmware = cfg.operation?.upgradeFirmware;
  const windows = cfg.options?.maintenanceWindows ?? [];
  const spread = checkFailureDomainSpread(cfg.options?.failureDomainSpread, v);
  v.list.push(
    ...checkSchedule({ startTime: firmware?.startTime, endTime: firmware?.endTime, windows }, now, {
      endTime: `${FIRMWARE}.end_time`,
      windows: `${OPTIONS}.maintenance_windows`,
    }),
  );
  if (selector === undefined || options === undefined || operation === undefined || v.list.length > 0) {
    return { ok: false, violations: v.list };
  }

  const selectorSeed = selector.seed === "" ? newSeed() : selector.seed;
  const orderingSeed = options.orderingSeed === "" ? newSeed() : options.orderingSeed;
  const maintenanceWindows = windows.map((w) => ({
    cron: w.cron.trim(),
    durationMs: w.durationMs as number,
  }));
  return {
    ok: true,
    name,
    description: input.description,
    config: {
      selector: { kind: "percentage", percentage: selector.percentage, seed: selectorSeed },
      maxConcurrentTargets: options.maxConcurrentTargets,
      safetyGates: options.safetyGates,
      conflictRetry: options.conflictRetry,
      ordering: { kind: "random", seed: orderingSeed },
      phasePlan: options.phasePlan,
      autoAdvance: options.autoAdvance,
      ...options.soaks,
      operation: { kind: "upgradeFirmware", firmware: operation.firmware },
      targetScope: operation.targetScope,
      ...(maintenanceWindows.length > 0 ? { maintenanceWindows } : {}),
      ...(spread === undefined ? {} : { failureDomainSpread: spread }),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Operation and target scope (checked first, as the reference does)

type OperationInput = NonNullable<CreateRunInput["configuration"]>["operation"];
type CheckedOperation = { firmware: FirmwareTemplate; targetScope: RunConfig["targetScope"] };

function checkOperation(input: OperationInput, v: Violations): CheckedOperation | undefined {
  if (input?.upgradeFirmware === undefined) v.add(OPERATION, "operation is required");

  const excludeOperationRunIds: string[] = [];
  input?.targetScope?.excludeOperationRunIds.forEach((id, i) => {
    const rule = `target_scope.exclude_operation_run_ids[${i}] must be a valid UUID`;
    const ok = v.nonNilUuid(`${SCOPE}.exclude_operation_run_ids[${i}]`, id, rule);
    if (ok !== undefined) excludeOperationRunIds.push(ok);
  });
  const filter = checkComponentFilter(input?.targetScope?.defaultScopeComponentFilter, v);
  if (filter !== undefined && input?.upgradeFirmware?.targetSpec !== undefined) {
    v.add(FILTER, "target_scope.default_scope_component_filter requires target_spec to be omitted");
  }

  if (input?.upgradeFirmware === undefined) return undefined;
  return {
    firmware: checkFirmwareTemplate(input.upgradeFirmware, `${FIRMWARE}.`, v),
    targetScope:
      filter === undefined
        ? { excludeOperationRunIds }
        : { excludeOperationRunIds, defaultScopeComponentFilter: filter },
  };
}

/** Undefined means "no filter": absent, or a filter message with neither branch set. */
function checkComponentFilter(
  input: ComponentFilterInput | undefined,
  v: Violations,
): ComponentFilter | undefined {
  if (input === undefined || input.kind === "unset") return undefined;
  if (input.kind === "types") {
    const at = `${FILTER}.types.types`;
    if (input.types.length === 0) v.add(at, 'component filter kind "types" requires at least one type');
    const types = v.componentTypes(
      at,
      input.types,
      (i) => `target_scope.default_scope_component_filter.types[${i}] is unknown`,
    );
    return { kind: "types", types };
  }
  const at = `${FILTER}.components.targets`;
  if (input.components.length === 0) {
    v.add(at, 'component filter kind "components" requires at least one component');
  }
  const componentIds: string[] = [];
  input.components.forEach((ref, i) => {
    const which = `target_scope.default_scope_component_filter.components[${i}]`;
    if (ref.by === "external") {
      v.add(`${at}[${i}]`, `${which} must use component UUID`);
      return;
    }
    const id = v.nonNilUuid(`${at}[${i}].id`, ref.id, `${which} must be a valid UUID`);
    if (id !== undefined) componentIds.push(id);
  });
  return { kind: "components", componentIds };
}

// ---------------------------------------------------------------------------------------------
// Selector

type SelectorInput = NonNullable<CreateRunInput["configuration"]>["selector"];

function checkSelector(
  input: SelectorInput,
  v: Violations,
): { percentage: number; seed: string } | undefined {
  if (input === undefined || input.kind === "unset") {
    v.add(SELECTOR, "selector is required");
    return undefined;
  }
  const at = `${SELECTOR}.percentage.percentage`;
  v.between(at, input.percentage, 1, 100, "percentage selector must be between 1 and 100");
  return { percentage: input.percentage, seed: input.seed };
}

// ---------------------------------------------------------------------------------------------
// Options

type OptionsInput = NonNullable<CreateRunInput["configuration"]>["options"];
type CheckedOptions = Pick<
  RunConfig,
  "maxConcurrentTargets" | "safetyGates" | "conflictRetry" | "phasePlan" | "autoAdvance"
> & { orderingSeed: string; soaks: Pick<RunConfig, "minSoakMs" | "phaseMinSoakMs"> };

function checkOptions(input: OptionsInput, v: Violations): CheckedOptions | undefined {
  if (input === undefined) {
    v.add(OPTIONS, "options are required");
    return undefined;
  }
  v.positive(
    `${OPTIONS}.max_concurrent_targets`,
    input.maxConcurrentTargets,
    "options.max_concurrent_targets must be greater than 0",
  );
  return {
    maxConcurrentTargets: input.maxConcurrentTargets,
    safetyGates: checkSafetyPolicy(input.safetyPolicy, v),
    conflictRetry: checkConflictRetry(input.conflictPolicy?.retry, v),
    orderingSeed: checkOrdering(input.orderingPolicy, v),
    phasePlan: checkPhasePlan(input.phasePolicy?.plan, v),
    autoAdvance: input.phasePolicy?.advancePolicy?.autoAdvance ?? false,
    soaks: checkSoaks(input.phasePolicy, v),
  };
}

function checkSafetyPolicy(input: { gates: SafetyGateInput[] } | undefined, v: Violations): SafetyGate[] {
  if (input === undefined) {
    v.add(`${OPTIONS}.safety_policy`, "options.safety_policy is required");
    return [];
  }
  if (input.gates.length === 0) v.add(GATES, "safety_policy must contain at least one gate");
  const gates: SafetyGate[] = [];
  input.gates.forEach((gate, i) => {
    const at = `${GATES}[${i}]`;
    switch (gate.kind) {
      case "failureRate":
        v.between(
          `${at}.failure_rate.failure_threshold_percent`,
          gate.thresholdPercent,
          1,
          100,
          "failure_rate.failure_threshold_percent must be between 1 and 100",
        );
        gates.push({
          kind: "failureRate",
          scope: gateScope(gate.scope),
          thresholdPercent: gate.thresholdPercent,
        });
        return;
      case "failureCount":
        v.positive(
          `${at}.failure_count.failure_threshold_count`,
          gate.thresholdCount,
          "failure_count.failure_threshold_count must be greater than 0",
        );
        gates.push({
          kind: "failureCount",
          scope: gateScope(gate.scope),
          thresholdCount: gate.thresholdCount,
        });
        return;
      case "observedFailureRate":
        gates.push(checkObservedRateGate(gate, `${at}.observed_failure_rate`, v));
        return;
      case "unset":
        v.add(at, "unsupported safety gate");
        return;
    }
  });
  return gates;
}

/** (ours) How many finished targets an observed-rate gate waits for when the request names none. */
export const DEFAULT_MIN_FINISHED = 5;

function checkObservedRateGate(
  gate: Extract<SafetyGateInput, { kind: "observedFailureRate" }>,
  at: string,
  v: Violations,
): SafetyGate {
  v.between(
    `${at}.failure_threshold_percent`,
    gate.thresholdPercent,
    1,
    100,
    "observed_failure_rate.failure_threshold_percent must be between 1 and 100",
  );
  const minFinished = gate.minFinished ?? DEFAULT_MIN_FINISHED;
  v.positive(
    `${at}.min_finished`,
    minFinished,
    "observed_failure_rate.min_finished must be at least 1 (absent = 5)",
  );
  return {
    kind: "observedFailureRate",
    scope: gateScope(gate.scope),
    thresholdPercent: gate.thresholdPercent,
    minFinished,
  };
}

function gateScope(scope: Scoped<GateScope>): GateScope {
  return scope === "UNKNOWN" ? "CURRENT_PHASE" : scope;
}

type RetryInput = NonNullable<NonNullable<OptionsInput>["conflictPolicy"]>["retry"];

function checkConflictRetry(input: RetryInput, v: Violations): ConflictRetryPolicy {
  const policy: ConflictRetryPolicy = {
    retryTimeoutMs: input?.retryTimeoutMs ?? DEFAULT_CONFLICT_RETRY.retryTimeoutMs,
    initialRetryDelayMs: input?.initialRetryDelayMs ?? DEFAULT_CONFLICT_RETRY.initialRetryDelayMs,
    maxRetryDelayMs: input?.maxRetryDelayMs ?? DEFAULT_CONFLICT_RETRY.maxRetryDelayMs,
  };
  const fields = [
    ["retry_timeout", policy.retryTimeoutMs],
    ["initial_retry_delay", policy.initialRetryDelayMs],
    ["max_retry_delay", policy.maxRetryDelayMs],
  ] as const;
  let allPositive = true;
  for (const [field, ms] of fields) {
    if (ms <= 0) {
      v.add(`${RETRY}.${field}`, `${field} must be greater than 0`);
      allPositive = false;
    }
  }
  // Compared after defaulting, as the reference does: sending only initial_retry_delay = 10 min
  // fails against the 5 min default maximum rather than silently running with max < initial.
  if (allPositive && policy.maxRetryDelayMs < policy.initialRetryDelayMs) {
    v.add(`${RETRY}.max_retry_delay`, "max_retry_delay must be greater than or equal to initial_retry_delay");
  }
  return policy;
}

type OrderingInput = NonNullable<OptionsInput>["orderingPolicy"];

/** The random-ordering seed as sent ("" = generate one); physical location is reported. */
function checkOrdering(input: OrderingInput, v: Violations): string {
  if (input === undefined || input.kind === "unset") return "";
  if (input.kind === "physicalLocation") {
    v.add(`${OPTIONS}.ordering_policy.physical_location`, PHYSICAL_LOCATION_UNSUPPORTED);
    return "";
  }
  return input.seed;
}

/**
 * The phase soaks (soak.ts): each 0 to 720h; `phase_min_soaks` has at most as many entries as the
 * plan can have phases (a count plan's remainder phase included; the planner checks the phases it
 * made).
 */
function checkSoaks(
  policy: PhasePolicyInput | undefined,
  v: Violations,
): Pick<RunConfig, "minSoakMs" | "phaseMinSoakMs"> {
  const soaks: Pick<RunConfig, "minSoakMs" | "phaseMinSoakMs"> = {};
  const rule = `must be between 0s and ${formatGoDuration(MAX_SOAK_MS)}`;
  const inRange = (at: string, ms: number): boolean => {
    if (ms >= 0 && ms <= MAX_SOAK_MS) return true;
    v.add(at, `${rule} (got ${formatGoDuration(ms)})`);
    return false;
  };
  const min = policy?.minSoakMs;
  if (min !== undefined && inRange(`${PHASES}.min_soak`, min) && min > 0) soaks.minSoakMs = min;
  const perPhase = policy?.phaseMinSoakMs;
  if (perPhase !== undefined && perPhase.length > 0) {
    const at = `${PHASES}.phase_min_soaks.min_soaks`;
    const valid = perPhase.map((ms, i) => inRange(`${at}[${i}]`, ms)).every(Boolean);
    const most = maxPhases(policy?.plan);
    if (perPhase.length > most) {
      v.add(
        at,
        `has ${perPhase.length} entries for a phase plan of at most ${most} phase${most === 1 ? "" : "s"}`,
      );
    } else if (valid) soaks.phaseMinSoakMs = [...perPhase];
  }
  return soaks;
}

type PhasePolicyInput = NonNullable<NonNullable<OptionsInput>["phasePolicy"]>;

/** The most phases a plan can make: a count plan may add one for the remainder. */
function maxPhases(plan: PhasePlan | undefined): number {
  if (plan === undefined) return 1;
  switch (plan.kind) {
    case "equal":
      return plan.phaseCount;
    case "percentage":
      return plan.percentages.length;
    case "count":
      return plan.counts.length + 1;
  }
}

function checkPhasePlan(plan: PhasePlan | undefined, v: Violations): PhasePlan {
  if (plan === undefined) return { kind: "equal", phaseCount: 1 };
  switch (plan.kind) {
    case "equal":
      v.positive(`${PHASES}.equal.phase_count`, plan.phaseCount, "equal phase_count must be greater than 0");
      break;
    case "percentage": {
      const at = `${PHASES}.percentage.phases`;
      if (plan.percentages.length === 0) v.add(at, "percentage phase policy must include at least one phase");
      plan.percentages.forEach((p, i) => {
        v.between(
          `${at}[${i}].percentage`,
          p,
          1,
          100,
          "percentage phase percentages must be between 1 and 100",
        );
      });
      const sum = plan.percentages.reduce((a, b) => a + b, 0);
      if (plan.percentages.length > 0 && sum !== 100)
        v.add(at, "percentage phase percentages must sum to 100");
      break;
    }
    case "count": {
      const at = `${PHASES}.count.phases`;
      if (plan.counts.length === 0) v.add(at, "count phase policy must include at least one phase");
      plan.counts.forEach((c, i) => {
        v.positive(`${at}[${i}].count`, c, "count phase counts must be greater than 0");
      });
      break;
    }
  }
  return plan;
}
