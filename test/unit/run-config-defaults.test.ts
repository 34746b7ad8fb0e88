/** validateCreateRun: the defaults it fills into the effective configuration. */
import { describe, expect, it } from "vitest";
import type { TargetSpecInput } from "../../src/domain/create-run-input.js";
import type { FirmwareTemplateInput } from "../../src/domain/firmware-template.js";
import { DEFAULT_CONFLICT_RETRY } from "../../src/domain/run-config.js";
import {
  base,
  COMPONENT,
  cfg,
  DOMAIN,
  firmware,
  fw,
  opts,
  RACK,
  RUN_A,
  RUN_B,
  scope,
  seeds,
  validated,
} from "../support/run-config-inputs.js";

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
