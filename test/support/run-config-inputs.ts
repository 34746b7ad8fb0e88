/**
 * Inputs and helpers of the run configuration tests (test/unit/run-config-*.test.ts): ids, the
 * field paths, a valid create request and firmware template to break, scripted seeds, and the
 * rule table's case type.
 */
import { expect } from "vitest";
import type { CreateRunInput, TargetSpecInput } from "../../src/domain/create-run-input.js";
import type { FieldViolation } from "../../src/domain/errors.js";
import type { FirmwareTemplateInput } from "../../src/domain/firmware-template.js";
import { validateCreateRun } from "../../src/domain/run-config.js";

export const RUN_A = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
export const RUN_B = "6ba7b810-9dad-11d1-80b4-00c04fd430c8";
export const RACK = "a1b2c3d4-0000-4000-8000-000000000001";
export const COMPONENT = "c0c0c0c0-0000-4000-8000-000000000002";
export const DOMAIN = "d0d0d0d0-0000-4000-8000-000000000003";
export const NIL = "00000000-0000-0000-0000-000000000000";
/** The request's time (2020-09-13): the firmware times below lie after it. */
export const NOW = 1_600_000_000_000;

export const F = "configuration.operation.upgrade_firmware";
export const SPEC = `${F}.target_spec`;
export const SCOPE = "configuration.operation.target_scope";
export const FILTER = `${SCOPE}.default_scope_component_filter`;
export const OPTS = "configuration.options";
export const GATES = `${OPTS}.safety_policy.gates`;
export const RETRY = `${OPTS}.conflict_policy.retry`;
export const PHASES = `${OPTS}.phase_policy`;

export function firmware(): FirmwareTemplateInput {
  return {
    description: "BMC 24.10",
    targetVersion: "24.10.1",
    subTargets: ["bmc"],
    overrideReadinessCheck: false,
    overrideVersionCheck: true,
  };
}

/** The smallest valid request: everything optional left out. */
export function base(): CreateRunInput {
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

export const cfg = (i: CreateRunInput) => i.configuration!;
export const opts = (i: CreateRunInput) => cfg(i).options!;
export const fw = (i: CreateRunInput) => cfg(i).operation!.upgradeFirmware!;
export const scope = (i: CreateRunInput) => {
  const op = cfg(i).operation!;
  op.targetScope ??= { excludeOperationRunIds: [] };
  return op.targetScope;
};

/** A scripted seed generator that records how often it was asked. */
export function seeds(...values: string[]) {
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

export function validated(input: CreateRunInput, newSeed: () => string = seeds("seed-1", "seed-2")) {
  const result = validateCreateRun(input, newSeed, NOW);
  if (!result.ok) throw new Error(`unexpected violations: ${JSON.stringify(result.violations)}`);
  return result;
}

export function violationsOf(input: CreateRunInput): FieldViolation[] {
  const result = validateCreateRun(input, seeds("seed-1", "seed-2"), NOW);
  if (result.ok) throw new Error("expected violations, got a valid config");
  return result.violations;
}

/** A rule: its name, how it breaks the valid request, and every violation expected, in order. */
export type RuleCase = [
  name: string,
  mutate: (input: CreateRunInput) => void,
  expected: [field: string, rule: string][],
];

/** A target spec of one rack, as sent. */
export const rack = (ref: unknown, componentTypes: string[] = []) =>
  ({ kind: "racks", racks: [{ ref, componentTypes }] }) as TargetSpecInput;

/** The valid request, broken by `mutate`, is rejected with exactly `expected`. */
export function rejectsWith(mutate: (input: CreateRunInput) => void, expected: [string, string][]): void {
  const input = base();
  mutate(input);
  expect(violationsOf(input)).toEqual(expected.map(([field, rule]) => ({ field, rule })));
}
