import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { rankKey } from "../../src/domain/hash.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import { COMPONENT_TYPES, type PhasePlan, type RunConfig } from "../../src/domain/model.js";
import { allocatePhases } from "../../src/domain/phases.js";
import { planRun } from "../../src/domain/planner.js";

// ---------------------------------------------------------------------------------------------
// Generators

/** A split of 100 into 1..10 positive parts, from sorted distinct cut points. */
const percentagesArb = fc.uniqueArray(fc.integer({ min: 1, max: 99 }), { maxLength: 9 }).map((cuts) => {
  const points = [0, ...cuts.sort((a, b) => a - b), 100];
  return points.slice(1).map((p, i) => p - (points[i] as number));
});

const phasePlanArb: fc.Arbitrary<PhasePlan> = fc.oneof(
  fc.integer({ min: 1, max: 12 }).map((phaseCount): PhasePlan => ({ kind: "equal", phaseCount })),
  percentagesArb.map((percentages): PhasePlan => ({ kind: "percentage", percentages })),
  fc
    .array(fc.integer({ min: 1, max: 30 }), { minLength: 1, maxLength: 5 })
    .map((counts): PhasePlan => ({ kind: "count", counts })),
);

const inventoryArb: fc.Arbitrary<InventoryRack[]> = fc
  .uniqueArray(fc.uuid(), { minLength: 1, maxLength: 60 })
  .chain((ids) =>
    fc.tuple(
      ...ids.map((id) =>
        fc
          .uniqueArray(fc.uuid(), { minLength: 1, maxLength: 4 })
          .chain((componentIds) =>
            fc.tuple(
              ...componentIds.map((cid) =>
                fc.constantFrom(...COMPONENT_TYPES).map((type) => ({ id: cid, type })),
              ),
            ),
          )
          .map((components): InventoryRack => ({ id, name: `rack-${id}`, components })),
      ),
    ),
  );

function configOf(
  percentage: number,
  selectorSeed: string,
  orderingSeed: string,
  phasePlan: PhasePlan,
): RunConfig {
  return {
    selector: { kind: "percentage", percentage, seed: selectorSeed },
    maxConcurrentTargets: 1,
    safetyGates: [{ kind: "failureRate", scope: "CURRENT_PHASE", thresholdPercent: 50 }],
    conflictRetry: { retryTimeoutMs: 1, initialRetryDelayMs: 1, maxRetryDelayMs: 1 },
    ordering: { kind: "random", seed: orderingSeed },
    phasePlan,
    autoAdvance: false,
    operation: {
      kind: "upgradeFirmware",
      firmware: {
        description: "",
        subTargets: [],
        overrideReadinessCheck: false,
        overrideVersionCheck: false,
      },
    },
    targetScope: { excludeOperationRunIds: [] },
  };
}

const runArb = fc.record({
  inventory: inventoryArb,
  percentage: fc.integer({ min: 1, max: 100 }),
  selectorSeed: fc.string(),
  orderingSeed: fc.string(),
  phasePlan: phasePlanArb,
});

type RunInput = {
  inventory: InventoryRack[];
  percentage: number;
  selectorSeed: string;
  orderingSeed: string;
  phasePlan: PhasePlan;
};

/** The plan, or the message of the (only expected) phase error. */
function attempt(input: RunInput) {
  const config = configOf(input.percentage, input.selectorSeed, input.orderingSeed, input.phasePlan);
  try {
    return { ok: true as const, plan: planRun({ config, inventory: input.inventory, excludedTargets: [] }) };
  } catch (e) {
    const error = e as { name: string; message: string };
    return { ok: false as const, name: error.name, message: error.message };
  }
}

/** Cumulative boundaries straight from the rounding rule, independent of the code under test. */
function expectedBoundaries(total: number, plan: PhasePlan): number[] {
  switch (plan.kind) {
    case "equal":
      return Array.from({ length: plan.phaseCount }, (_, i) =>
        Math.ceil((total * (i + 1)) / plan.phaseCount),
      );
    case "percentage": {
      let sum = 0;
      return plan.percentages.map((p) => {
        sum += p;
        return Math.ceil((total * sum) / 100);
      });
    }
    case "count": {
      let sum = 0;
      const bounds = plan.counts.map((c) => {
        sum += c;
        return sum;
      });
      return sum < total ? [...bounds, total] : bounds;
    }
  }
}

const prefixSums = (sizes: number[]) => {
  let sum = 0;
  return sizes.map((s) => {
    sum += s;
    return sum;
  });
};

// ---------------------------------------------------------------------------------------------

describe("phases: allocation invariants", () => {
  const totalArb = fc.integer({ min: 1, max: 200 });

  it("accepted sizes sum to the cohort, are all positive, and follow the cumulative boundaries", () => {
    fc.assert(
      fc.property(totalArb, phasePlanArb, (total, plan) => {
        const result = allocatePhases(total, plan);
        if (!result.ok) return;
        expect(result.sizes.reduce((a, b) => a + b, 0)).toBe(total);
        expect(result.sizes.every((s) => Number.isInteger(s) && s >= 1)).toBe(true);
        expect(prefixSums(result.sizes)).toEqual(expectedBoundaries(total, plan));
      }),
    );
  });

  it("the cumulative boundaries of an accepted allocation rise strictly and end at the cohort", () => {
    fc.assert(
      fc.property(totalArb, phasePlanArb, (total, plan) => {
        const result = allocatePhases(total, plan);
        if (!result.ok) return;
        const bounds = prefixSums(result.sizes);
        bounds.forEach((b, i) => {
          expect(b).toBeGreaterThan(i === 0 ? 0 : (bounds[i - 1] as number));
        });
        expect(bounds.at(-1)).toBe(total);
      }),
    );
  });

  it("no empty phase is accepted: a plan is rejected exactly when a phase would be empty or counts overflow", () => {
    fc.assert(
      fc.property(totalArb, phasePlanArb, (total, plan) => {
        const bounds = expectedBoundaries(total, plan);
        const overflow = plan.kind === "count" && (bounds.at(-1) as number) > total;
        const emptyPhase = bounds.findIndex((b, i) => b === (i === 0 ? 0 : bounds[i - 1]));
        const result = allocatePhases(total, plan);
        if (overflow) {
          expect(result).toEqual({ ok: false, message: "count phase counts exceed selected target count" });
        } else if (emptyPhase >= 0) {
          expect(result).toEqual({
            ok: false,
            message: `${plan.kind} phase ${emptyPhase + 1} resolves to zero targets for ${total} selected targets`,
          });
        } else {
          expect(result.ok).toBe(true);
        }
      }),
    );
  });
});

describe("planner: plan invariants", () => {
  it("a plan has each rack once, ceil(n * p / 100) targets, sequence 0..n-1, phases non-decreasing and matching the sizes", () => {
    fc.assert(
      fc.property(runArb, (input) => {
        const result = attempt(input);
        if (!result.ok) {
          expect(result.name).toBe("InvalidArgumentError");
          expect(result.message).toMatch(
            /^(\w+ phase \d+ resolves to zero targets for \d+ selected targets|count phase counts exceed selected target count)$/,
          );
          return;
        }
        const { plan } = result;
        const ids = plan.targets.map((t) => t.rackId);
        expect(new Set(ids).size).toBe(ids.length);
        expect(plan.candidateCount).toBe(input.inventory.length);
        expect(ids.length).toBe(Math.ceil((plan.candidateCount * input.percentage) / 100));
        expect(plan.targets.map((t) => t.sequenceIndex)).toEqual(ids.map((_, i) => i));
        plan.targets.forEach((t, i) => {
          if (i > 0)
            expect(t.phaseIndex).toBeGreaterThanOrEqual(
              (plan.targets[i - 1] as { phaseIndex: number }).phaseIndex,
            );
        });
        expect(plan.phaseSizes.reduce((a, b) => a + b, 0)).toBe(ids.length);
        expect(plan.phaseSizes.every((s) => s >= 1)).toBe(true);
        plan.phaseSizes.forEach((size, phase) => {
          expect(plan.targets.filter((t) => t.phaseIndex === phase)).toHaveLength(size);
        });
      }),
      { numRuns: 300 },
    );
  });

  it("the selection is a prefix of the selector-seed ranking, and the plan follows the ordering-seed ranking", () => {
    fc.assert(
      fc.property(runArb, (input) => {
        const result = attempt({ ...input, phasePlan: { kind: "equal", phaseCount: 1 } });
        if (!result.ok) throw new Error(result.message);
        const selected = result.plan.targets.map((t) => t.rackId);
        const chosen = new Set(selected);
        const worstChosen = selected
          .map((id) => rankKey(input.selectorSeed, id))
          .sort()
          .at(-1) as string;
        for (const rack of input.inventory) {
          if (!chosen.has(rack.id)) expect(rankKey(input.selectorSeed, rack.id) > worstChosen).toBe(true);
        }
        const keys = selected.map((id) => rankKey(input.orderingSeed, id));
        expect(keys).toEqual([...keys].sort());
      }),
    );
  });

  it("same seeds → same plan, whatever the order of the inventory and of the components", () => {
    fc.assert(
      fc.property(runArb, fc.integer(), (input, salt) => {
        const reordered = [...input.inventory]
          .map((r) => ({ ...r, components: [...r.components].reverse() }))
          .sort((a, b) => (rankKey(String(salt), a.id) < rankKey(String(salt), b.id) ? -1 : 1));
        const first = attempt(input);
        expect(attempt(input)).toEqual(first);
        expect(attempt({ ...input, inventory: reordered })).toEqual(first);
      }),
    );
  });

  it("every component of a selected rack is frozen once, grouped by type", () => {
    fc.assert(
      fc.property(runArb, (input) => {
        const result = attempt({ ...input, phasePlan: { kind: "equal", phaseCount: 1 } });
        if (!result.ok) throw new Error(result.message);
        for (const target of result.plan.targets) {
          const rack = input.inventory.find((r) => r.id === target.rackId) as InventoryRack;
          const frozen = target.componentsByType.flatMap((g) =>
            g.componentIds.map((id) => ({ id, type: g.type })),
          );
          expect(frozen).toHaveLength(rack.components.length);
          expect(new Set(frozen.map((c) => `${c.type}/${c.id}`))).toEqual(
            new Set(rack.components.map((c) => `${c.type}/${c.id}`)),
          );
          expect(new Set(target.componentsByType.map((g) => g.type)).size).toBe(
            target.componentsByType.length,
          );
        }
      }),
    );
  });
});
