/**
 * validateCreateRun: the rules of the request's top level, selector and options, one case each,
 * and every violation at once.
 */
import { describe, expect, it } from "vitest";
import { PHYSICAL_LOCATION_UNSUPPORTED, validateCreateRun } from "../../src/domain/run-config.js";
import {
  base,
  cfg,
  fw,
  GATES,
  NOW,
  OPTS,
  opts,
  PHASES,
  RETRY,
  type RuleCase,
  rack,
  rejectsWith,
  SCOPE,
  SPEC,
  scope,
  seeds,
  violationsOf,
} from "../support/run-config-inputs.js";

const cases: RuleCase[] = [
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
    (percentage): RuleCase => [
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
    (n): RuleCase => [
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
    (thresholdPercent): RuleCase => [
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
    (thresholdCount): RuleCase => [
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
    (thresholdPercent): RuleCase => [
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
    (minFinished): RuleCase => [
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
];

describe("validateCreateRun: each rule of the top level, selector and options, with its field path and exact message", () => {
  it.each(cases)("rejects %s", (_, mutate, expected) => rejectsWith(mutate, expected));

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
