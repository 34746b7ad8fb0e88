/**
 * The planner's test inventory and requests (src/domain/planner.ts): racks with seeded ids and
 * components, a run configuration, a plan of them, and the error a refused plan throws.
 */
import type { InventoryRack } from "../../src/domain/inventory.js";
import type {
  ComponentFilter,
  ComponentType,
  PhasePlan,
  RunConfig,
  TargetSpec,
} from "../../src/domain/model.js";
import { type ExcludedTarget, planRun } from "../../src/domain/planner.js";

export const hex = (n: number, width: number) => n.toString(16).padStart(width, "0");
export const rackId = (n: number) => `00000000-0000-4000-8000-${hex(n, 12)}`;
export const componentId = (rack: number, index: number) =>
  `c0000000-0000-4000-8000-${hex(rack, 6)}${hex(index, 6)}`;

/** Rack n with one component per listed type (component ids are ordered by position). */
export function rack(
  n: number,
  types: ComponentType[] = ["COMPUTE", "NVSWITCH"],
  extra: Partial<InventoryRack> = {},
): InventoryRack {
  return {
    id: rackId(n),
    name: `rack-${n}`,
    externalId: `ext-rack-${n}`,
    components: types.map((type, i) => ({ id: componentId(n, i), type, externalId: `ext-${n}-${i}` })),
    ...extra,
  };
}

export const racks = (count: number, types?: ComponentType[]) =>
  Array.from({ length: count }, (_, i) => rack(i + 1, types));

export function config(
  overrides: {
    percentage?: number;
    selectorSeed?: string;
    orderingSeed?: string;
    phasePlan?: PhasePlan;
    targetSpec?: TargetSpec;
    filter?: ComponentFilter;
  } = {},
): RunConfig {
  return {
    selector: {
      kind: "percentage",
      percentage: overrides.percentage ?? 100,
      seed: overrides.selectorSeed ?? "sel",
    },
    maxConcurrentTargets: 1,
    safetyGates: [{ kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 1 }],
    conflictRetry: { retryTimeoutMs: 3_600_000, initialRetryDelayMs: 30_000, maxRetryDelayMs: 300_000 },
    ordering: { kind: "random", seed: overrides.orderingSeed ?? "ord" },
    phasePlan: overrides.phasePlan ?? { kind: "equal", phaseCount: 1 },
    autoAdvance: false,
    operation: {
      kind: "upgradeFirmware",
      firmware: {
        ...(overrides.targetSpec ? { targetSpec: overrides.targetSpec } : {}),
        description: "",
        subTargets: [],
        overrideReadinessCheck: false,
        overrideVersionCheck: false,
      },
    },
    targetScope: {
      excludeOperationRunIds: [],
      ...(overrides.filter ? { defaultScopeComponentFilter: overrides.filter } : {}),
    },
  };
}

export function plan(
  inventory: InventoryRack[],
  overrides: Parameters<typeof config>[0] = {},
  excludedTargets: ExcludedTarget[] = [],
) {
  return planRun({ config: config(overrides), inventory, excludedTargets });
}

/** The thrown error's stable identity: name, code and exact message. */
export function thrown(fn: () => unknown): { name: string; code: string; message: string } {
  try {
    fn();
  } catch (e) {
    const error = e as { name: string; code: string; message: string };
    return { name: error.name, code: error.code, message: error.message };
  }
  throw new Error("expected an error, none was thrown");
}

export const rackIdsOf = (p: ReturnType<typeof planRun>) => p.targets.map((t) => t.rackId);
