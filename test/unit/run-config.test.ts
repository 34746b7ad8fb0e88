import { describe, expect, it } from "vitest";
import type { CreateRunInput, TargetSpecInput } from "../../src/domain/create-run-input.js";
import type { FieldViolation } from "../../src/domain/errors.js";
import { type FirmwareTemplateInput, validateFirmwareTask } from "../../src/domain/firmware-template.js";
import type { ComponentType } from "../../src/domain/model.js";
import {
  DEFAULT_CONFLICT_RETRY,
  PHYSICAL_LOCATION_UNSUPPORTED,
  validateCreateRun,
} from "../../src/domain/run-config.js";

const RUN_A = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
const RUN_B = "6ba7b810-9dad-11d1-80b4-00c04fd430c8";
const RACK = "a1b2c3d4-0000-4000-8000-000000000001";
const COMPONENT = "c0c0c0c0-0000-4000-8000-000000000002";
const DOMAIN = "d0d0d0d0-0000-4000-8000-000000000003";
const NIL = "00000000-0000-0000-0000-000000000000";
/** The request's time (2020-09-13): the firmware times below lie after it. */
const NOW = 1_600_000_000_000;

const F = "configuration.operation.upgrade_firmware";
const SPEC = `${F}.target_spec`;
const SCOPE = "configuration.operation.target_scope";
const FILTER = `${SCOPE}.default_scope_component_filter`;
const OPTS = "configuration.options";
const GATES = `${OPTS}.safety_policy.gates`;
const RETRY = `${OPTS}.conflict_policy.retry`;
const PHASES = `${OPTS}.phase_policy`;

function firmware(): FirmwareTemplateInput {
  return {
    description: "BMC 24.10",
    targetVersion: "24.10.1",
    subTargets: ["bmc"],
    overrideReadinessCheck: false,
    overrideVersionCheck: true,
  };
}

/** The smallest valid request: everything optional left out. */
function base(): CreateRunInput {
  return {
    name: "  canary rollout  ",
    description: " first 10% ",
    configuration: {
      selector: { kind: "percentage", percentage: 10, seed: "" },
      options: {
        maxConcurrentTargets: 2,
        safetyPolicy: { gates: [{ kind: "failureRate", scope: "UNKNOWN", thresholdPercent: 20 }] },
      },
      operation: { upgradeFirmware: firmware() },
    },
  };
}

const cfg = (i: CreateRunInput) => i.configuration!;
const opts = (i: CreateRunInput) => cfg(i).options!;
const fw = (i: CreateRunInput) => cfg(i).operation!.upgradeFirmware!;
const scope = (i: CreateRunInput) => {
  const op = cfg(i).operation!;
  op.targetScope ??= { excludeOperationRunIds: [] };
  return op.targetScope;
};

/** A scripted seed generator that records how often it was asked. */
function seeds(...values: string[]) {
  const gen = Object.assign(
    () => {
      gen.calls++;
      const next = values.shift();
      if (next === undefined) throw new Error("newSeed called more often than scripted");
      return next;
    },
    { calls: 0 },
  );
  return gen;
}

function validated(input: CreateRunInput, newSeed: () => string = seeds("seed-1", "seed-2")) {
  const result = validateCreateRun(input, newSeed, NOW);
  if (!result.ok) throw new Error(`unexpected violations: ${JSON.stringify(result.violations)}`);
  return result;
}

function violationsOf(input: CreateRunInput): FieldViolation[] {
  const result = validateCreateRun(input, seeds("seed-1", "seed-2"), NOW);
  if (result.ok) throw new Error("expected violations, got a valid config");
  return result.violations;
}

describe("validateCreateRun: defaults in the effective config", () => {
  it("fills every default and stores both generated seeds, selector first", () => {
    const newSeed = seeds("seed-1", "seed-2");
    const result = validated(base(), newSeed);
    expect(newSeed.calls).toBe(2);
    expect(result).toEqual({
      ok: true,
      name: "canary rollout",
      description: " first 10% ",
      config: {
        selector: { kind: "percentage", percentage: 10, seed: "seed-1" },
        maxConcurrentTargets: 2,
        safetyGates: [{ kind: "failureRate", scope: "CURRENT_PHASE", thresholdPercent: 20 }],
        conflictRetry: { retryTimeoutMs: 3_600_000, initialRetryDelayMs: 30_000, maxRetryDelayMs: 300_000 },
        ordering: { kind: "random", seed: "seed-2" },
        phasePlan: { kind: "equal", phaseCount: 1 },
        autoAdvance: false,
        operation: { kind: "upgradeFirmware", firmware: firmware() },
        targetScope: { excludeOperationRunIds: [] },
      },
    });
    expect("targetSpec" in result.config.operation.firmware).toBe(false);
  });

  it("keeps seeds that were sent and never calls newSeed", () => {
    const input = base();
    cfg(input).selector = { kind: "percentage", percentage: 10, seed: "cohort-a" };
    opts(input).orderingPolicy = { kind: "random", seed: "order-b" };
    const newSeed = seeds();
    const { config } = validated(input, newSeed);
    expect(newSeed.calls).toBe(0);
    expect(config.selector.seed).toBe("cohort-a");
    expect(config.ordering).toEqual({ kind: "random", seed: "order-b" });
  });

  it.each([
    ["random ordering with an empty seed", { kind: "random", seed: "" }],
    ["an ordering policy with no branch set", { kind: "unset" }],
  ] as const)("generates the ordering seed for %s", (_, orderingPolicy) => {
    const input = base();
    cfg(input).selector = { kind: "percentage", percentage: 10, seed: "kept" };
    opts(input).orderingPolicy = orderingPolicy;
    const newSeed = seeds("generated");
    const { config } = validated(input, newSeed);
    expect(config.selector.seed).toBe("kept");
    expect(config.ordering).toEqual({ kind: "random", seed: "generated" });
  });

  it.each([
    [{}, DEFAULT_CONFLICT_RETRY],
    [
      { retryTimeoutMs: 600_000 },
      { retryTimeoutMs: 600_000, initialRetryDelayMs: 30_000, maxRetryDelayMs: 300_000 },
    ],
    [
      { initialRetryDelayMs: 5_000 },
      { retryTimeoutMs: 3_600_000, initialRetryDelayMs: 5_000, maxRetryDelayMs: 300_000 },
    ],
    [
      { maxRetryDelayMs: 60_000 },
      { retryTimeoutMs: 3_600_000, initialRetryDelayMs: 30_000, maxRetryDelayMs: 60_000 },
    ],
    [
      { retryTimeoutMs: 1, initialRetryDelayMs: 7, maxRetryDelayMs: 7 },
      { retryTimeoutMs: 1, initialRetryDelayMs: 7, maxRetryDelayMs: 7 },
    ],
  ])("conflict retry %j defaults each missing duration on its own → %j", (retry, expected) => {
    const input = base();
    opts(input).conflictPolicy = { retry };
    expect(validated(input).config.conflictRetry).toEqual(expected);
  });

  it("a conflict policy with no strategy set means retry with every default", () => {
    const input = base();
    opts(input).conflictPolicy = {};
    expect(validated(input).config.conflictRetry).toEqual(DEFAULT_CONFLICT_RETRY);
  });

  it("stores UNKNOWN gate scopes as CURRENT_PHASE and keeps explicit ones, in order", () => {
    const input = base();
    opts(input).safetyPolicy = {
      gates: [
        { kind: "failureCount", scope: "UNKNOWN", thresholdCount: 3 },
        { kind: "failureRate", scope: "CUMULATIVE_RUN", thresholdPercent: 100 },
        { kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 1 },
      ],
    };
    expect(validated(input).config.safetyGates).toEqual([
      { kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 3 },
      { kind: "failureRate", scope: "CUMULATIVE_RUN", thresholdPercent: 100 },
      { kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 1 },
    ]);
  });

  it("an observed-rate gate keeps its threshold and min_finished; min_finished absent → 5", () => {
    const input = base();
    opts(input).safetyPolicy = {
      gates: [
        { kind: "observedFailureRate", scope: "UNKNOWN", thresholdPercent: 50 },
        { kind: "observedFailureRate", scope: "CUMULATIVE_RUN", thresholdPercent: 20, minFinished: 1 },
      ],
    };
    expect(validated(input).config.safetyGates).toEqual([
      { kind: "observedFailureRate", scope: "CURRENT_PHASE", thresholdPercent: 50, minFinished: 5 },
      { kind: "observedFailureRate", scope: "CUMULATIVE_RUN", thresholdPercent: 20, minFinished: 1 },
    ]);
  });

  it.each([
    [{}, { kind: "equal", phaseCount: 1 }, false],
    [{ advancePolicy: { autoAdvance: true } }, { kind: "equal", phaseCount: 1 }, true],
    [{ plan: { kind: "equal", phaseCount: 3 } }, { kind: "equal", phaseCount: 3 }, false],
    [
      { plan: { kind: "percentage", percentages: [10, 30, 60] } },
      { kind: "percentage", percentages: [10, 30, 60] },
      false,
    ],
    [{ plan: { kind: "percentage", percentages: [100] } }, { kind: "percentage", percentages: [100] }, false],
    [
      { plan: { kind: "count", counts: [1, 5] }, advancePolicy: { autoAdvance: false } },
      { kind: "count", counts: [1, 5] },
      false,
    ],
  ] as const)("phase policy %j → plan %j, auto_advance %s", (phasePolicy, plan, autoAdvance) => {
    const input = base();
    opts(input).phasePolicy = structuredClone(phasePolicy) as NonNullable<
      ReturnType<typeof opts>["phasePolicy"]
    >;
    const { config } = validated(input);
    expect(config.phasePlan).toEqual(plan);
    expect(config.autoAdvance).toBe(autoAdvance);
  });

  it("accepts the selector's bounds 1 and 100", () => {
    for (const percentage of [1, 100]) {
      const input = base();
      cfg(input).selector = { kind: "percentage", percentage, seed: "s" };
      expect(validated(input).config.selector.percentage).toBe(percentage);
    }
  });

  it("carries the firmware template unchanged, lowercasing ids in the spec and the rule id", () => {
    const input = base();
    const template: FirmwareTemplateInput = {
      ...firmware(),
      startTime: 1_700_000_000_000,
      endTime: 1_700_000_360_000,
      queueOptions: { conflictStrategy: "QUEUE", queueTimeoutSeconds: 60 },
      ruleId: RUN_A.toUpperCase(),
      authentication: { kind: "perComponent", compute: "c", nvswitch: "n" },
      targetSpec: {
        kind: "racks",
        racks: [
          { ref: { by: "id", id: RACK.toUpperCase() }, componentTypes: ["COMPUTE", "NVSWITCH"] },
          { ref: { by: "name", name: "rack-07" }, componentTypes: [] },
          { ref: { by: "externalId", externalId: "EXT-7" }, componentTypes: ["POWERSHELF"] },
        ],
      },
    };
    cfg(input).operation!.upgradeFirmware = template;
    expect(validated(input).config.operation.firmware).toEqual({
      ...template,
      ruleId: RUN_A,
      targetSpec: {
        kind: "racks",
        racks: [
          { ref: { by: "id", id: RACK }, componentTypes: ["COMPUTE", "NVSWITCH"] },
          { ref: { by: "name", name: "rack-07" }, componentTypes: [] },
          { ref: { by: "externalId", externalId: "EXT-7" }, componentTypes: ["POWERSHELF"] },
        ],
      },
    });
  });

  it.each([
    [
      "components",
      {
        kind: "components",
        components: [
          { by: "id", id: COMPONENT.toUpperCase() },
          { by: "external", type: "COMPUTE", externalId: "tray-3" },
        ],
      },
      {
        kind: "components",
        components: [
          { by: "id", id: COMPONENT },
          { by: "external", type: "COMPUTE", externalId: "tray-3" },
        ],
      },
    ],
    [
      "NVLink domains",
      {
        kind: "nvlDomains",
        domains: [
          { ref: { by: "id", id: DOMAIN.toUpperCase() }, componentTypes: ["NVSWITCH"] },
          { ref: { by: "name", name: "nvl-2" }, componentTypes: [] },
        ],
      },
      {
        kind: "nvlDomains",
        domains: [
          { ref: { by: "id", id: DOMAIN }, componentTypes: ["NVSWITCH"] },
          { ref: { by: "name", name: "nvl-2" }, componentTypes: [] },
        ],
      },
    ],
  ] satisfies [string, TargetSpecInput, unknown][])("accepts a %s target spec", (_, spec, expected) => {
    const input = base();
    fw(input).targetSpec = structuredClone(spec);
    expect(validated(input).config.operation.firmware.targetSpec).toEqual(expected);
  });

  it("lowercases excluded run ids and keeps their order", () => {
    const input = base();
    scope(input).excludeOperationRunIds = [RUN_B.toUpperCase(), RUN_A];
    expect(validated(input).config.targetScope).toEqual({ excludeOperationRunIds: [RUN_B, RUN_A] });
  });

  it.each([
    [
      { kind: "types", types: ["COMPUTE", "CDU"] },
      { kind: "types", types: ["COMPUTE", "CDU"] },
    ],
    [
      { kind: "components", components: [{ by: "id", id: COMPONENT.toUpperCase() }] },
      { kind: "components", componentIds: [COMPONENT] },
    ],
  ] as const)("stores the default-scope filter %j as %j", (filter, expected) => {
    const input = base();
    scope(input).defaultScopeComponentFilter = structuredClone(filter) as never;
    expect(validated(input).config.targetScope).toEqual({
      excludeOperationRunIds: [],
      defaultScopeComponentFilter: expected,
    });
  });

  it("treats a component filter with no branch set as no filter, even beside a target spec", () => {
    const input = base();
    fw(input).targetSpec = { kind: "racks", racks: [{ ref: { by: "name", name: "r" }, componentTypes: [] }] };
    scope(input).defaultScopeComponentFilter = { kind: "unset" };
    expect(validated(input).config.targetScope).toEqual({ excludeOperationRunIds: [] });
  });
});

type Case = [
  name: string,
  mutate: (input: CreateRunInput) => void,
  expected: [field: string, rule: string][],
];

const rack = (ref: unknown, componentTypes: string[] = []) =>
  ({ kind: "racks", racks: [{ ref, componentTypes }] }) as TargetSpecInput;

const cases: Case[] = [
  // Top level
  [
    "a blank name",
    (i) => {
      i.name = " \t ";
    },
    [["name", "name is required"]],
  ],
  ["no configuration", (i) => void delete i.configuration, [["configuration", "configuration is required"]]],
  // Selector
  ["no selector", (i) => void delete cfg(i).selector, [["configuration.selector", "selector is required"]]],
  [
    "a selector with no branch set",
    (i) => {
      cfg(i).selector = { kind: "unset" };
    },
    [["configuration.selector", "selector is required"]],
  ],
  ...[0, 101, -5].map(
    (percentage): Case => [
      `selector percentage ${percentage}`,
      (i) => {
        cfg(i).selector = { kind: "percentage", percentage, seed: "" };
      },
      [["configuration.selector.percentage.percentage", "percentage selector must be between 1 and 100"]],
    ],
  ),
  [
    "a fractional selector percentage",
    (i) => {
      cfg(i).selector = { kind: "percentage", percentage: 12.5, seed: "" };
    },
    [["configuration.selector.percentage.percentage", "must be a whole number (got 12.5)"]],
  ],
  // Options
  ["no options", (i) => void delete cfg(i).options, [[OPTS, "options are required"]]],
  ...[0, -1].map(
    (n): Case => [
      `max_concurrent_targets ${n}`,
      (i) => {
        opts(i).maxConcurrentTargets = n;
      },
      [[`${OPTS}.max_concurrent_targets`, "options.max_concurrent_targets must be greater than 0"]],
    ],
  ),
  [
    "fractional max_concurrent_targets",
    (i) => {
      opts(i).maxConcurrentTargets = 1.5;
    },
    [[`${OPTS}.max_concurrent_targets`, "must be a whole number (got 1.5)"]],
  ],
  [
    "no safety policy",
    (i) => void delete opts(i).safetyPolicy,
    [[`${OPTS}.safety_policy`, "options.safety_policy is required"]],
  ],
  [
    "a safety policy with no gates",
    (i) => {
      opts(i).safetyPolicy = { gates: [] };
    },
    [[GATES, "safety_policy must contain at least one gate"]],
  ],
  [
    "a gate with neither kind set",
    (i) => void opts(i).safetyPolicy!.gates.push({ kind: "unset" }),
    [[`${GATES}[1]`, "unsupported safety gate"]],
  ],
  ...[0, 101].map(
    (thresholdPercent): Case => [
      `failure rate ${thresholdPercent}%`,
      (i) =>
        void opts(i).safetyPolicy!.gates.push({
          kind: "failureRate",
          scope: "CURRENT_PHASE",
          thresholdPercent,
        }),
      [
        [
          `${GATES}[1].failure_rate.failure_threshold_percent`,
          "failure_rate.failure_threshold_percent must be between 1 and 100",
        ],
      ],
    ],
  ),
  ...[0, -2].map(
    (thresholdCount): Case => [
      `failure count ${thresholdCount}`,
      (i) => {
        opts(i).safetyPolicy!.gates = [{ kind: "failureCount", scope: "CUMULATIVE_RUN", thresholdCount }];
      },
      [
        [
          `${GATES}[0].failure_count.failure_threshold_count`,
          "failure_count.failure_threshold_count must be greater than 0",
        ],
      ],
    ],
  ),
  ...[0, 101].map(
    (thresholdPercent): Case => [
      `observed failure rate ${thresholdPercent}%`,
      (i) => {
        opts(i).safetyPolicy!.gates = [
          { kind: "observedFailureRate", scope: "CURRENT_PHASE", thresholdPercent },
        ];
      },
      [
        [
          `${GATES}[0].observed_failure_rate.failure_threshold_percent`,
          "observed_failure_rate.failure_threshold_percent must be between 1 and 100",
        ],
      ],
    ],
  ),
  ...[0, -1].map(
    (minFinished): Case => [
      `observed failure rate min_finished ${minFinished} (an explicit 0 is not replaced by the default)`,
      (i) => {
        opts(i).safetyPolicy!.gates = [
          { kind: "observedFailureRate", scope: "CURRENT_PHASE", thresholdPercent: 50, minFinished },
        ];
      },
      [
        [
          `${GATES}[0].observed_failure_rate.min_finished`,
          "observed_failure_rate.min_finished must be at least 1 (absent = 5)",
        ],
      ],
    ],
  ),
  [
    "a zero retry_timeout (an explicit zero is not replaced by the default)",
    (i) => {
      opts(i).conflictPolicy = { retry: { retryTimeoutMs: 0 } };
    },
    [[`${RETRY}.retry_timeout`, "retry_timeout must be greater than 0"]],
  ],
  [
    "a negative initial_retry_delay",
    (i) => {
      opts(i).conflictPolicy = { retry: { initialRetryDelayMs: -1000 } };
    },
    [[`${RETRY}.initial_retry_delay`, "initial_retry_delay must be greater than 0"]],
  ],
  [
    "a zero max_retry_delay",
    (i) => {
      opts(i).conflictPolicy = { retry: { maxRetryDelayMs: 0 } };
    },
    [[`${RETRY}.max_retry_delay`, "max_retry_delay must be greater than 0"]],
  ],
  [
    "max_retry_delay below initial_retry_delay",
    (i) => {
      opts(i).conflictPolicy = { retry: { initialRetryDelayMs: 20_000, maxRetryDelayMs: 10_000 } };
    },
    [[`${RETRY}.max_retry_delay`, "max_retry_delay must be greater than or equal to initial_retry_delay"]],
  ],
  [
    "initial_retry_delay above the default maximum of 5 min",
    (i) => {
      opts(i).conflictPolicy = { retry: { initialRetryDelayMs: 600_000 } };
    },
    [[`${RETRY}.max_retry_delay`, "max_retry_delay must be greater than or equal to initial_retry_delay"]],
  ],
  [
    "a non-positive duration together with max < initial (the order check needs positive values)",
    (i) => {
      opts(i).conflictPolicy = {
        retry: { retryTimeoutMs: 0, initialRetryDelayMs: 20_000, maxRetryDelayMs: 10_000 },
      };
    },
    [[`${RETRY}.retry_timeout`, "retry_timeout must be greater than 0"]],
  ],
  [
    "physical-location ordering",
    (i) => {
      opts(i).orderingPolicy = { kind: "physicalLocation", strategy: "ROW_BY_ROW" };
    },
    [[`${OPTS}.ordering_policy.physical_location`, "physical_location ordering is not supported yet"]],
  ],
  [
    "zero equal phases",
    (i) => {
      opts(i).phasePolicy = { plan: { kind: "equal", phaseCount: 0 } };
    },
    [[`${PHASES}.equal.phase_count`, "equal phase_count must be greater than 0"]],
  ],
  [
    "no percentage phases",
    (i) => {
      opts(i).phasePolicy = { plan: { kind: "percentage", percentages: [] } };
    },
    [[`${PHASES}.percentage.phases`, "percentage phase policy must include at least one phase"]],
  ],
  [
    "percentage phases summing to 90",
    (i) => {
      opts(i).phasePolicy = { plan: { kind: "percentage", percentages: [50, 40] } };
    },
    [[`${PHASES}.percentage.phases`, "percentage phase percentages must sum to 100"]],
  ],
  [
    "a 0% phase (the sum is still 100)",
    (i) => {
      opts(i).phasePolicy = { plan: { kind: "percentage", percentages: [0, 100] } };
    },
    [[`${PHASES}.percentage.phases[0].percentage`, "percentage phase percentages must be between 1 and 100"]],
  ],
  [
    "out-of-range percentages that still sum to 100",
    (i) => {
      opts(i).phasePolicy = { plan: { kind: "percentage", percentages: [101, -1] } };
    },
    [
      [`${PHASES}.percentage.phases[0].percentage`, "percentage phase percentages must be between 1 and 100"],
      [`${PHASES}.percentage.phases[1].percentage`, "percentage phase percentages must be between 1 and 100"],
    ],
  ],
  [
    "no count phases",
    (i) => {
      opts(i).phasePolicy = { plan: { kind: "count", counts: [] } };
    },
    [[`${PHASES}.count.phases`, "count phase policy must include at least one phase"]],
  ],
  [
    "a zero count phase",
    (i) => {
      opts(i).phasePolicy = { plan: { kind: "count", counts: [2, 0] } };
    },
    [[`${PHASES}.count.phases[1].count`, "count phase counts must be greater than 0"]],
  ],
  // Operation
  [
    "no operation",
    (i) => void delete cfg(i).operation,
    [["configuration.operation", "operation is required"]],
  ],
  [
    "an operation without upgrade_firmware",
    (i) => {
      cfg(i).operation = { targetScope: { excludeOperationRunIds: [] } };
    },
    [["configuration.operation", "operation is required"]],
  ],
  ...["", "  "].map(
    (version): Case => [
      `target_version ${JSON.stringify(version)}`,
      (i) => {
        fw(i).targetVersion = version;
      },
      [
        [
          `${F}.target_version`,
          "must not be empty: omit it to take each component's version from the firmware baselines",
        ],
      ],
    ],
  ),
  ...["../../NVSWITCH/9.9", "2.0/evil", "2.0 beta", ".hidden", "v%2e%2e", "1.0\u001b[2J"].map(
    (version): Case => [
      `target_version ${JSON.stringify(version)}: not a version's characters`,
      (i) => {
        fw(i).targetVersion = version;
      },
      [
        [
          `${F}.target_version`,
          `must be letters, digits, '.', '_', '+' and '-', starting with a letter or digit (got ${JSON.stringify(version)})`,
        ],
      ],
    ],
  ),
  [
    "a target_version of 129 characters",
    (i) => {
      fw(i).targetVersion = "1".repeat(129);
    },
    [[`${F}.target_version`, "must be at most 128 characters (got 129)"]],
  ],
  ...["not-a-uuid", NIL].map(
    (ruleId): Case => [
      `rule_id ${ruleId}`,
      (i) => {
        fw(i).ruleId = ruleId;
      },
      [[`${F}.rule_id`, "must be a valid non-zero UUID"]],
    ],
  ),
  // Target spec
  [
    "a target spec with no kind set",
    (i) => {
      fw(i).targetSpec = { kind: "unset" };
    },
    [[SPEC, "target_spec must have one of racks, nvl_domains, or components set"]],
  ],
  [
    "an empty racks list",
    (i) => {
      fw(i).targetSpec = { kind: "racks", racks: [] };
    },
    [[`${SPEC}.racks.targets`, "racks.targets must have at least one entry"]],
  ],
  [
    "an empty components list",
    (i) => {
      fw(i).targetSpec = { kind: "components", components: [] };
    },
    [[`${SPEC}.components.targets`, "components.targets must have at least one entry"]],
  ],
  [
    "an empty NVLink domains list",
    (i) => {
      fw(i).targetSpec = { kind: "nvlDomains", domains: [] };
    },
    [[`${SPEC}.nvl_domains.targets`, "nvl_domains.targets must have at least one entry"]],
  ],
  [
    "a rack target with no identifier",
    (i) => {
      fw(i).targetSpec = rack({ by: "unset" });
    },
    [[`${SPEC}.racks.targets[0]`, "rack target must have either id, external_id, or name set"]],
  ],
  [
    "an empty rack id",
    (i) => {
      fw(i).targetSpec = rack({ by: "id", id: "" });
    },
    [[`${SPEC}.racks.targets[0].id`, "rack target id must not be empty"]],
  ],
  [
    "a short rack id",
    (i) => {
      fw(i).targetSpec = rack({ by: "id", id: "r1" });
    },
    [[`${SPEC}.racks.targets[0].id`, 'invalid rack uuid "r1": invalid UUID length: 2']],
  ],
  [
    "a 36-character rack id that is not hex",
    (i) => {
      fw(i).targetSpec = rack({ by: "id", id: "zzzzzzzz-0000-4000-8000-000000000001" });
    },
    [
      [
        `${SPEC}.racks.targets[0].id`,
        'invalid rack uuid "zzzzzzzz-0000-4000-8000-000000000001": invalid UUID format',
      ],
    ],
  ],
  [
    "an empty rack name",
    (i) => {
      fw(i).targetSpec = rack({ by: "name", name: "" });
    },
    [[`${SPEC}.racks.targets[0].name`, "rack target name must not be empty"]],
  ],
  [
    "an empty rack external id",
    (i) => {
      fw(i).targetSpec = rack({ by: "externalId", externalId: "" });
    },
    [[`${SPEC}.racks.targets[0].external_id`, "rack target external_id must not be empty"]],
  ],
  [
    "an UNKNOWN component type in a rack target",
    (i) => {
      fw(i).targetSpec = rack({ by: "name", name: "r" }, ["COMPUTE", "UNKNOWN"]);
    },
    [
      [
        `${SPEC}.racks.targets[0].component_types[1]`,
        "unknown component type COMPONENT_TYPE_UNKNOWN in rack target filter",
      ],
    ],
  ],
  [
    "a malformed component id",
    (i) => {
      fw(i).targetSpec = { kind: "components", components: [{ by: "id", id: "c-1" }] };
    },
    [[`${SPEC}.components.targets[0].id`, 'invalid component uuid "c-1": invalid UUID length: 3']],
  ],
  [
    "an empty external component id",
    (i) => {
      fw(i).targetSpec = {
        kind: "components",
        components: [{ by: "external", type: "COMPUTE", externalId: "" }],
      };
    },
    [[`${SPEC}.components.targets[0].external.id`, "external component id must not be empty"]],
  ],
  [
    "a malformed NVLink domain id (length counted in UTF-8 bytes)",
    (i) => {
      fw(i).targetSpec = {
        kind: "nvlDomains",
        domains: [{ ref: { by: "id", id: "é" }, componentTypes: [] }],
      };
    },
    [[`${SPEC}.nvl_domains.targets[0].id`, 'invalid NVLink domain id "é": invalid UUID length: 2']],
  ],
  [
    "an empty NVLink domain name",
    (i) => {
      fw(i).targetSpec = {
        kind: "nvlDomains",
        domains: [{ ref: { by: "name", name: "" }, componentTypes: [] }],
      };
    },
    [[`${SPEC}.nvl_domains.targets[0].name`, "NVLink domain target name must not be empty"]],
  ],
  [
    "an UNKNOWN component type in an NVLink domain target",
    (i) => {
      fw(i).targetSpec = {
        kind: "nvlDomains",
        domains: [{ ref: { by: "name", name: "nvl" }, componentTypes: ["UNKNOWN" as ComponentType] }],
      };
    },
    [
      [
        `${SPEC}.nvl_domains.targets[0].component_types[0]`,
        "unknown component type COMPONENT_TYPE_UNKNOWN in NVLink domain target filter",
      ],
    ],
  ],
  // Target scope
  [
    "malformed and nil excluded run ids",
    (i) => {
      scope(i).excludeOperationRunIds = [RUN_A, "run-7", NIL];
    },
    [
      [
        `${SCOPE}.exclude_operation_run_ids[1]`,
        "target_scope.exclude_operation_run_ids[1] must be a valid UUID",
      ],
      [
        `${SCOPE}.exclude_operation_run_ids[2]`,
        "target_scope.exclude_operation_run_ids[2] must be a valid UUID",
      ],
    ],
  ],
  [
    "a default-scope filter beside a target spec",
    (i) => {
      fw(i).targetSpec = rack({ by: "name", name: "r" });
      scope(i).defaultScopeComponentFilter = { kind: "types", types: ["COMPUTE"] };
    },
    [[FILTER, "target_scope.default_scope_component_filter requires target_spec to be omitted"]],
  ],
  [
    "an empty type filter",
    (i) => {
      scope(i).defaultScopeComponentFilter = { kind: "types", types: [] };
    },
    [[`${FILTER}.types.types`, 'component filter kind "types" requires at least one type']],
  ],
  [
    "an UNKNOWN type in the filter",
    (i) => {
      scope(i).defaultScopeComponentFilter = { kind: "types", types: ["COMPUTE", "UNKNOWN"] };
    },
    [[`${FILTER}.types.types[1]`, "target_scope.default_scope_component_filter.types[1] is unknown"]],
  ],
  [
    "an empty component filter",
    (i) => {
      scope(i).defaultScopeComponentFilter = { kind: "components", components: [] };
    },
    [[`${FILTER}.components.targets`, 'component filter kind "components" requires at least one component']],
  ],
  [
    "an external reference in the component filter",
    (i) => {
      scope(i).defaultScopeComponentFilter = {
        kind: "components",
        components: [
          { by: "id", id: COMPONENT },
          { by: "external", type: "COMPUTE", externalId: "tray-1" },
        ],
      };
    },
    [
      [
        `${FILTER}.components.targets[1]`,
        "target_scope.default_scope_component_filter.components[1] must use component UUID",
      ],
    ],
  ],
  ...["tray-1", NIL].map(
    (id): Case => [
      `component filter id ${id}`,
      (i) => {
        scope(i).defaultScopeComponentFilter = { kind: "components", components: [{ by: "id", id }] };
      },
      [
        [
          `${FILTER}.components.targets[0].id`,
          "target_scope.default_scope_component_filter.components[0] must be a valid UUID",
        ],
      ],
    ],
  ),
];

describe("validateCreateRun: each rule, with its field path and exact message", () => {
  it.each(cases)("rejects %s", (_, mutate, expected) => {
    const input = base();
    mutate(input);
    expect(violationsOf(input)).toEqual(expected.map(([field, rule]) => ({ field, rule })));
  });

  it("mirrors the reference's physical-location message exactly", () => {
    expect(PHYSICAL_LOCATION_UNSUPPORTED).toBe("physical_location ordering is not supported yet");
  });
});

describe("validateCreateRun: every violation at once", () => {
  it("returns all violations together, operation first as in the reference, and draws no seed", () => {
    const input = base();
    input.name = "";
    cfg(input).selector = { kind: "percentage", percentage: 0, seed: "" };
    opts(input).maxConcurrentTargets = 0;
    opts(input).safetyPolicy!.gates.push({
      kind: "failureRate",
      scope: "CUMULATIVE_RUN",
      thresholdPercent: 150,
    });
    opts(input).orderingPolicy = { kind: "physicalLocation", strategy: "UNKNOWN" };
    opts(input).phasePolicy = { plan: { kind: "percentage", percentages: [60, 60] } };
    scope(input).excludeOperationRunIds = ["x"];
    fw(input).targetSpec = rack({ by: "id", id: "bad" });
    const newSeed = seeds();
    const result = validateCreateRun(input, newSeed, NOW);
    expect(newSeed.calls).toBe(0);
    expect(result).toEqual({
      ok: false,
      violations: [
        { field: "name", rule: "name is required" },
        {
          field: `${SCOPE}.exclude_operation_run_ids[0]`,
          rule: "target_scope.exclude_operation_run_ids[0] must be a valid UUID",
        },
        { field: `${SPEC}.racks.targets[0].id`, rule: 'invalid rack uuid "bad": invalid UUID length: 3' },
        {
          field: "configuration.selector.percentage.percentage",
          rule: "percentage selector must be between 1 and 100",
        },
        {
          field: `${OPTS}.max_concurrent_targets`,
          rule: "options.max_concurrent_targets must be greater than 0",
        },
        {
          field: `${GATES}[1].failure_rate.failure_threshold_percent`,
          rule: "failure_rate.failure_threshold_percent must be between 1 and 100",
        },
        {
          field: `${OPTS}.ordering_policy.physical_location`,
          rule: "physical_location ordering is not supported yet",
        },
        { field: `${PHASES}.percentage.phases`, rule: "percentage phase percentages must sum to 100" },
      ],
    });
  });

  it("reports a blank name alongside a missing configuration", () => {
    expect(violationsOf({ name: "", description: "" })).toEqual([
      { field: "name", rule: "name is required" },
      { field: "configuration", rule: "configuration is required" },
    ]);
  });

  it("reports every missing part of an empty configuration", () => {
    expect(violationsOf({ name: "n", description: "", configuration: {} })).toEqual([
      { field: "configuration.operation", rule: "operation is required" },
      { field: "configuration.selector", rule: "selector is required" },
      { field: OPTS, rule: "options are required" },
    ]);
  });

  it("still checks the target scope when the operation payload is missing", () => {
    const input = base();
    cfg(input).operation = { targetScope: { excludeOperationRunIds: ["nope"] } };
    expect(violationsOf(input)).toEqual([
      { field: "configuration.operation", rule: "operation is required" },
      {
        field: `${SCOPE}.exclude_operation_run_ids[0]`,
        rule: "target_scope.exclude_operation_run_ids[0] must be a valid UUID",
      },
    ]);
  });
});

describe("validateFirmwareTask: a plain UpgradeFirmware request", () => {
  const spec: TargetSpecInput = {
    kind: "components",
    components: [{ by: "id", id: COMPONENT.toUpperCase() }],
  };

  it("a plain task's target_version is held to a version's characters too, named relative to the request", () => {
    expect(
      validateFirmwareTask({ ...firmware(), targetVersion: "../COMPUTE/2.0", targetSpec: spec }, NOW),
    ).toEqual({
      ok: false,
      violations: [
        {
          field: "target_version",
          rule: `must be letters, digits, '.', '_', '+' and '-', starting with a letter or digit (got "../COMPUTE/2.0")`,
        },
      ],
    });
    const ok = validateFirmwareTask(
      { ...firmware(), targetVersion: "v2_24.1-rc1+build.7", targetSpec: spec },
      NOW,
    );
    expect(ok.ok).toBe(true);
  });

  it("requires target_spec, which inside a run would mean the default scope", () => {
    expect(validateFirmwareTask(firmware(), NOW)).toEqual({
      ok: false,
      violations: [{ field: "target_spec", rule: "target_spec is required" }],
    });
  });

  it("returns the template with a lowercased spec and every other field unchanged", () => {
    const request = {
      ...firmware(),
      ruleId: RUN_B,
      authentication: { kind: "shared" as const, secret: "s3" },
      targetSpec: spec,
    };
    expect(validateFirmwareTask(request, NOW)).toEqual({
      ok: true,
      template: { ...request, targetSpec: { kind: "components", components: [{ by: "id", id: COMPONENT }] } },
    });
  });

  it("reports spec and rule_id problems with paths relative to the request", () => {
    expect(
      validateFirmwareTask(
        {
          ...firmware(),
          ruleId: "r",
          targetSpec: rack({ by: "unset" }, ["UNKNOWN"]),
        },
        NOW,
      ),
    ).toEqual({
      ok: false,
      violations: [
        { field: "rule_id", rule: "must be a valid non-zero UUID" },
        {
          field: "target_spec.racks.targets[0]",
          rule: "rack target must have either id, external_id, or name set",
        },
        {
          field: "target_spec.racks.targets[0].component_types[0]",
          rule: "unknown component type COMPONENT_TYPE_UNKNOWN in rack target filter",
        },
      ],
    });
  });

  it("rejects an explicit spec with no kind set", () => {
    expect(validateFirmwareTask({ ...firmware(), targetSpec: { kind: "unset" } }, NOW)).toEqual({
      ok: false,
      violations: [
        { field: "target_spec", rule: "target_spec must have one of racks, nvl_domains, or components set" },
      ],
    });
  });
});

describe("validateCreateRun and validateFirmwareTask: maintenance windows and times", () => {
  const HOUR = 3_600_000;
  const WINDOWS = `${OPTS}.maintenance_windows`;

  it("stores the windows (cron trimmed) in the effective config; none → the field is left out", () => {
    const input = base();
    opts(input).maintenanceWindows = [
      { cron: " 0 2 * * MON-FRI ", durationMs: 2 * HOUR },
      { cron: "*/30 * * * *", durationMs: 60_000 },
    ];
    expect(validated(input).config.maintenanceWindows).toEqual([
      { cron: "0 2 * * MON-FRI", durationMs: 2 * HOUR },
      { cron: "*/30 * * * *", durationMs: 60_000 },
    ]);
    const none = base();
    opts(none).maintenanceWindows = [];
    expect("maintenanceWindows" in validated(none).config).toBe(false);
  });

  it("an end_time already past is refused: …end_time: maintenance window already closed", () => {
    const input = base();
    fw(input).endTime = NOW;
    expect(violationsOf(input)).toEqual([
      { field: `${F}.end_time`, rule: "maintenance window already closed" },
    ]);
  });

  it("end_time must be after start_time; window problems name the window and its part", () => {
    const input = base();
    fw(input).startTime = NOW + 2 * HOUR;
    fw(input).endTime = NOW + HOUR;
    opts(input).maintenanceWindows = [{ cron: "0 2 * *", durationMs: 0 }, { cron: "0 3 * * *" }];
    expect(violationsOf(input)).toEqual([
      { field: `${F}.end_time`, rule: "end_time must be after start_time" },
      {
        field: `${WINDOWS}[0].cron`,
        rule: "must have 5 fields (minute hour day-of-month month day-of-week), got 4",
      },
      { field: `${WINDOWS}[0].duration`, rule: "duration must be greater than 0" },
      { field: `${WINDOWS}[1].duration`, rule: "duration is required" },
    ]);
  });

  it("a plain UpgradeFirmware task: the same time rules, paths relative to the request", () => {
    const request = { ...firmware(), targetSpec: rack({ by: "name", name: "r1" }) };
    expect(validateFirmwareTask({ ...request, endTime: NOW - 1 }, NOW)).toEqual({
      ok: false,
      violations: [{ field: "end_time", rule: "maintenance window already closed" }],
    });
    expect(validateFirmwareTask({ ...request, startTime: NOW + HOUR, endTime: NOW + HOUR }, NOW)).toEqual({
      ok: false,
      violations: [{ field: "end_time", rule: "end_time must be after start_time" }],
    });
    expect(validateFirmwareTask({ ...request, startTime: NOW + HOUR, endTime: NOW + 2 * HOUR }, NOW).ok).toBe(
      true,
    );
  });
});
