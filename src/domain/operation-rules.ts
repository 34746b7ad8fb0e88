/**
 * Operation rules: the step plan a firmware task runs on its rack. A rule is stages of component
 * types run one after another; a stage's components go through the stage's steps in waves of at
 * most `maxParallel` components (wave by wave: every step of wave 1, then every step of wave 2);
 * each step is an action with its own timeout and retry policy:
 *
 *   UPDATE_FIRMWARE      the flash itself (exactly one per stage)
 *   VERIFY_VERSION       ask each BMC its version; it must be the component's target
 *   VERIFY_REACHABILITY  ask each BMC; it must answer
 *   SLEEP                wait `sleepSeconds` (e.g. for a power shelf to settle)
 *   RESET_BMC            each BMC resets its controller, answers once back (BMC protocol v3 `reset`)
 *   POWER_CYCLE_HOST     each BMC power-cycles its host: graceful, forced after a grace period
 *   AC_CYCLE             each BMC AC-cycles its tray; with `acScope: RACK`, ONE reset of kind `rack`
 *                        to the rack's power shelf cycles the whole rack (every component reset)
 *   WAIT_BRING_UP        ask each BMC until it answers with its versions (within the timeout)
 *
 * Activation: much firmware is staged by its flash and active only after a reset (the BMC's own
 * after a BMC reset, BIOS and CPLD after a host power cycle, GPU and NVSwitch after an AC cycle).
 * A component is upgraded only when its target is ACTIVE, read back by its stage's READ-BACK step:
 * the last of its update and activation steps (`readBackStep`). A staged result passes the update
 * only when a read-back follows it; the read-back's answer must be the target (NotActivated when it
 * is still pending). TYPE_ACTIVATION is the activation each type's firmware needs.
 *
 * A failed step is retried for the components that failed, `maxRetries` times, waiting
 * `intervalSeconds · backoffRate^n` before retry n+1; a failure left after that stops the task
 * (later waves and stages are NOT_ATTEMPTED), as a failed group always has.
 *
 * The built-in DEFAULT_RULE: one stage per component type in UPGRADE_GROUP_ORDER
 * (src/domain/task-report.ts explains that order), each the update, its type's activation
 * (TYPE_ACTIVATION) and WAIT_BRING_UP, in waves of the deployment's maxParallel (maxParallel 0),
 * with no retry. A run or task that pins no `rule_id` runs it and records its id in
 * `applied_rule_id`.
 *
 * Rules are stored versioned (src/app/firmware-policy.ts): a version never changes; a new version
 * replaces it for runs created afterwards, and a run freezes the version it was created with. The
 * rule travels as data (the task item, then the execution's state), so one state machine runs
 * every rule, in AWS and locally.
 */

import type { Scoped } from "./create-run-input.js";
import type { FieldViolation, Validated } from "./errors.js";
import { EXTERNAL_CHECK_NAME, EXTERNAL_CHECK_NAME_RULE } from "./external-check.js";
import {
  AC_SCOPES,
  type AcScope,
  COMPONENT_TYPES,
  type ComponentType,
  type OperationRule,
  RULE_ACTIONS,
  type RuleAction,
  type RuleDefinition,
  type RuleRetry,
  type RuleStage,
  type RuleStep,
} from "./model.js";
import { UPGRADE_GROUP_ORDER } from "./task-report.js";

export {
  AC_SCOPES,
  type AcScope,
  type OperationRule,
  RULE_ACTIONS,
  type RuleAction,
  type RuleDefinition,
  type RuleRetry,
  type RuleStage,
  type RuleStep,
} from "./model.js";

/** The built-in rule's id (a valid non-nil UUID that no generated id can be: version nibble 4, all zeros). */
export const DEFAULT_RULE_ID = "00000000-0000-4000-8000-000000000001";

/** The actions that reset something so a staged version becomes active. */
export const ACTIVATION_ACTIONS = ["RESET_BMC", "POWER_CYCLE_HOST", "AC_CYCLE"] as const;
export type ActivationAction = (typeof ACTIVATION_ACTIONS)[number];

export const isActivation = (action: RuleAction): action is ActivationAction =>
  (ACTIVATION_ACTIONS as readonly string[]).includes(action);

/**
 * The activation each component type's firmware needs (docs/firmware-policy.md has the table and
 * why): the default rule runs it after each type's flash.
 */
export const TYPE_ACTIVATION: Readonly<Record<ComponentType, ActivationAction>> = {
  // The power shelf controller's (PMC) firmware and the PSUs' it applies: a controller reset,
  // which does not drop the rack's power.
  POWERSHELF: "RESET_BMC",
  // NVSwitch ASIC, CPLD and the tray's BMC: only an AC cycle of the tray reloads them all.
  NVSWITCH: "AC_CYCLE",
  // GPU, CPLD, BIOS and BMC firmware of a compute tray: the AC cycle covers every one of them.
  COMPUTE: "AC_CYCLE",
  // The CDU's controller: its reset.
  CDU: "RESET_BMC",
  // A network OS runs on the switch's host CPU: a host power cycle boots the new one.
  UMS: "POWER_CYCLE_HOST",
  TORSWITCH: "POWER_CYCLE_HOST",
};

/**
 * The stage's read-back step: the last of its update and activation steps (WAIT_BRING_UP
 * included), whose answer must show the target active. The update itself when nothing follows it.
 */
export function readBackStep(steps: readonly Pick<RuleStep, "action">[]): number {
  let last = -1;
  steps.forEach((step, i) => {
    if (step.action === "UPDATE_FIRMWARE" || step.action === "WAIT_BRING_UP" || isActivation(step.action))
      last = i;
  });
  return last;
}

/** Whether a staged flash of this stage is read back after the update (a step activates it). */
export function activatedAfterUpdate(steps: readonly Pick<RuleStep, "action">[]): boolean {
  return readBackStep(steps) > steps.findIndex((s) => s.action === "UPDATE_FIRMWARE");
}

const UPDATE: RuleStep = { action: "UPDATE_FIRMWARE", timeoutSeconds: 0, sleepSeconds: 0 };
const step = (action: RuleAction): RuleStep => ({ action, timeoutSeconds: 0, sleepSeconds: 0 });

export const DEFAULT_RULE: Readonly<OperationRule> = {
  id: DEFAULT_RULE_ID,
  version: 1,
  name: "default",
  description:
    "Built in: one component type at a time in the order POWERSHELF, NVSWITCH, COMPUTE, CDU, UMS, TORSWITCH, each flashed, activated as its type needs and read back, in waves of the deployment's maxParallel, no retries.",
  stages: UPGRADE_GROUP_ORDER.map((type) => ({
    name: type.toLowerCase(),
    componentTypes: [type],
    maxParallel: 0,
    steps: [UPDATE, step(TYPE_ACTIVATION[type]), step("WAIT_BRING_UP")],
  })),
  readinessTimeoutSeconds: 0,
  createdAt: 0,
};

/**
 * Every external check a rule names that the deployment has not configured (`known`), each at
 * its field: `stages[1].steps[3].external_check: unknown external check "dcgm" (configured: burn-in)`.
 */
export function unknownExternalChecks(
  rule: Pick<RuleDefinition, "stages">,
  known: readonly string[],
): FieldViolation[] {
  const configured =
    known.length === 0 ? "none is configured" : `configured: ${[...known].sort().join(", ")}`;
  return rule.stages.flatMap((stage, i) =>
    stage.steps.flatMap((step, k) => {
      const name = step.externalCheck?.name;
      if (name === undefined || known.includes(name)) return [];
      return [
        {
          field: `stages[${i}].steps[${k}].external_check`,
          rule: `unknown external check ${JSON.stringify(name)} (${configured})`,
        },
      ];
    }),
  );
}

/** The types of `types` that no stage of `rule` names (in the published enum order). */
export function typesWithoutStage(
  rule: Pick<RuleDefinition, "stages">,
  types: Iterable<ComponentType>,
): ComponentType[] {
  const covered = new Set(rule.stages.flatMap((s) => s.componentTypes));
  const wanted = new Set(types);
  return COMPONENT_TYPES.filter((t) => wanted.has(t) && !covered.has(t));
}

/** The order a rule flashes types in: its stages' types, in stage order. */
export function ruleTypeOrder(rule: Pick<RuleDefinition, "stages">): ComponentType[] {
  return rule.stages.flatMap((s) => s.componentTypes);
}

/** The wait before retry `attempt` (1 = the first retry): interval · backoff^(attempt − 1), whole seconds, ≥ 1. */
export function retryWaitSeconds(retry: RuleRetry, attempt: number): number {
  return Math.max(1, Math.round(retry.intervalSeconds * retry.backoffRate ** Math.max(0, attempt - 1)));
}

// ---------------------------------------------------------------------------------------------
// Validation

export interface RuleStepInput {
  action: Scoped<RuleAction>;
  timeoutSeconds: number;
  retry?: RuleRetry;
  sleepSeconds: number;
  /** CHECK_HEALTH only; "" or absent: none. Whether the deployment has it: `unknownExternalChecks`. */
  externalCheck?: string;
  externalCheckTimeoutSeconds?: number;
  /** AC_CYCLE only; absent: TRAY. */
  acScope?: Scoped<AcScope>;
}

export interface RuleStageInput {
  name: string;
  componentTypes: Scoped<ComponentType>[];
  maxParallel: number;
  steps: RuleStepInput[];
}

export interface RuleInput {
  name: string;
  description: string;
  stages: RuleStageInput[];
  readinessTimeoutSeconds: number;
}

/** Bounds no real rule comes near: six types make six stages; a day is longer than any flash. */
export const RULE_LIMITS = {
  name: 256,
  description: 4096,
  stages: 20,
  stepsPerStage: 10,
  maxParallel: 1000,
  seconds: 86_400,
  retries: 10,
  backoffRate: 10,
} as const;

/**
 * Every violation at once, each with its proto path under `field` and the rule, e.g.
 *   stages[1].component_types[0]: COMPUTE is already in stages[0]
 *   stages[0].max_parallel: must be 0 (the deployment's default) or more (got -1)
 *   stages[0].steps[1].retry.backoff_rate: must be 1 or more (got 0.5)
 */
export function validateRule(input: RuleInput, field = ""): Validated<RuleDefinition> {
  const violations: FieldViolation[] = [];
  const at = (f: string) => (field === "" ? f : `${field}.${f}`);
  const add = (f: string, rule: string) => violations.push({ field: at(f), rule });
  const seconds = (f: string, value: number, what: string) => {
    if (!Number.isInteger(value) || value < 0)
      add(f, `must be 0 (${what}) or more whole seconds (got ${value})`);
    else if (value > RULE_LIMITS.seconds)
      add(f, `must be at most ${RULE_LIMITS.seconds} (one day; got ${value})`);
  };

  const name = input.name.trim();
  if (name === "") add("name", "a rule needs a name");
  if (name.length > RULE_LIMITS.name)
    add("name", `must be at most ${RULE_LIMITS.name} characters (got ${name.length})`);
  if (input.description.length > RULE_LIMITS.description) {
    add(
      "description",
      `must be at most ${RULE_LIMITS.description} characters (got ${input.description.length})`,
    );
  }
  seconds("readiness_timeout_seconds", input.readinessTimeoutSeconds, "the deployment's readiness timeout");
  if (input.stages.length === 0) add("stages", "a rule needs at least one stage");
  if (input.stages.length > RULE_LIMITS.stages) {
    add("stages", `must have at most ${RULE_LIMITS.stages} entries (got ${input.stages.length})`);
  }

  const stageOf = new Map<ComponentType, number>();
  const stages: RuleStage[] = input.stages.map((stage, i) => {
    const s = `stages[${i}]`;
    if (stage.componentTypes.length === 0)
      add(`${s}.component_types`, "a stage needs at least one component type");
    const componentTypes: ComponentType[] = [];
    stage.componentTypes.forEach((type, j) => {
      const t = `${s}.component_types[${j}]`;
      if (!(COMPONENT_TYPES as readonly string[]).includes(type)) {
        add(t, `unknown component type COMPONENT_TYPE_${type}`);
        return;
      }
      const known = type as ComponentType;
      const earlier = stageOf.get(known);
      if (earlier !== undefined) {
        add(t, earlier === i ? `${known} is listed twice` : `${known} is already in stages[${earlier}]`);
        return;
      }
      stageOf.set(known, i);
      componentTypes.push(known);
    });
    if (!Number.isInteger(stage.maxParallel) || stage.maxParallel < 0) {
      add(`${s}.max_parallel`, `must be 0 (the deployment's default) or more (got ${stage.maxParallel})`);
    } else if (stage.maxParallel > RULE_LIMITS.maxParallel) {
      add(`${s}.max_parallel`, `must be at most ${RULE_LIMITS.maxParallel} (got ${stage.maxParallel})`);
    }
    const updates = stage.steps.filter((step) => step.action === "UPDATE_FIRMWARE").length;
    if (updates !== 1) add(`${s}.steps`, `a stage needs exactly one UPDATE_FIRMWARE step (got ${updates})`);
    if (stage.steps.length > RULE_LIMITS.stepsPerStage) {
      add(`${s}.steps`, `must have at most ${RULE_LIMITS.stepsPerStage} entries (got ${stage.steps.length})`);
    }
    const steps = stage.steps.flatMap((step, k): RuleStep[] => {
      const p = `${s}.steps[${k}]`;
      if (!(RULE_ACTIONS as readonly string[]).includes(step.action)) {
        add(`${p}.action`, `must be one of ${RULE_ACTIONS.join(", ")}`);
        return [];
      }
      const action = step.action as RuleAction;
      if (action === "SLEEP") {
        if (!Number.isInteger(step.sleepSeconds) || step.sleepSeconds < 1) {
          add(`${p}.sleep_seconds`, `a SLEEP step needs 1 or more whole seconds (got ${step.sleepSeconds})`);
        } else if (step.sleepSeconds > RULE_LIMITS.seconds) {
          add(
            `${p}.sleep_seconds`,
            `must be at most ${RULE_LIMITS.seconds} (one day; got ${step.sleepSeconds})`,
          );
        }
        if (step.timeoutSeconds !== 0 || step.retry !== undefined)
          add(p, "a SLEEP step has no timeout or retry");
      } else {
        if (step.sleepSeconds !== 0)
          add(`${p}.sleep_seconds`, `only a SLEEP step sleeps (got ${step.sleepSeconds})`);
        seconds(`${p}.timeout_seconds`, step.timeoutSeconds, "the deployment's timeout");
      }
      const retry = step.retry;
      if (retry !== undefined) {
        const r = `${p}.retry`;
        if (
          !Number.isInteger(retry.maxRetries) ||
          retry.maxRetries < 0 ||
          retry.maxRetries > RULE_LIMITS.retries
        ) {
          add(
            `${r}.max_retries`,
            `must be a whole number from 0 to ${RULE_LIMITS.retries} (got ${retry.maxRetries})`,
          );
        }
        seconds(`${r}.interval_seconds`, retry.intervalSeconds, "retry at once");
        if (!(retry.backoffRate >= 1))
          add(`${r}.backoff_rate`, `must be 1 or more (got ${retry.backoffRate})`);
        else if (retry.backoffRate > RULE_LIMITS.backoffRate) {
          add(`${r}.backoff_rate`, `must be at most ${RULE_LIMITS.backoffRate} (got ${retry.backoffRate})`);
        }
      }
      const out: RuleStep = { action, timeoutSeconds: step.timeoutSeconds, sleepSeconds: step.sleepSeconds };
      if (retry !== undefined && retry.maxRetries > 0) out.retry = { ...retry };
      const check = step.externalCheck ?? "";
      const checkTimeout = step.externalCheckTimeoutSeconds ?? 0;
      if (check !== "") {
        if (action !== "CHECK_HEALTH")
          add(
            `${p}.external_check`,
            `only a CHECK_HEALTH step hands the rack to an external check (got ${action})`,
          );
        else if (!EXTERNAL_CHECK_NAME.test(check))
          add(`${p}.external_check`, `${EXTERNAL_CHECK_NAME_RULE} (got ${JSON.stringify(check)})`);
        seconds(`${p}.external_check_timeout_seconds`, checkTimeout, "the check's configured timeout");
        out.externalCheck = { name: check, timeoutSeconds: checkTimeout };
      } else if (checkTimeout !== 0) {
        add(`${p}.external_check_timeout_seconds`, `only with external_check (got ${checkTimeout})`);
      }
      if (step.acScope !== undefined) {
        if (!(AC_SCOPES as readonly string[]).includes(step.acScope))
          add(`${p}.ac_scope`, `must be one of ${AC_SCOPES.join(", ")} (got ${step.acScope})`);
        else if (action !== "AC_CYCLE")
          add(`${p}.ac_scope`, `only an AC_CYCLE step has a scope (got ${action})`);
        else if (step.acScope === "RACK") {
          // The power shelf answers the rack's cycle for itself only: each component is read back after.
          if (!stage.steps.slice(k + 1).some((later) => later.action === "WAIT_BRING_UP"))
            add(
              `${p}.ac_scope`,
              "a RACK AC cycle is answered by the power shelf alone: a WAIT_BRING_UP step must follow it in its stage",
            );
          out.acScope = "RACK";
        }
      }
      return [out];
    });
    return { name: stage.name.trim(), componentTypes, maxParallel: stage.maxParallel, steps };
  });
  if (violations.length > 0) return { ok: false, violations };
  return {
    ok: true,
    value: {
      name,
      description: input.description,
      stages,
      readinessTimeoutSeconds: input.readinessTimeoutSeconds,
    },
  };
}
