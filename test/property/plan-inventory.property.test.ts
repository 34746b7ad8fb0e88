/**
 * Planning over the racks read by key (src/app/plan-inventory.ts) is planning over the whole
 * inventory: the same plan, or the same error with the same message, for every target spec and
 * default-scope filter, on inventories where names, external ids and component references repeat
 * (so "matches multiple racks" and "is ambiguous" occur) and references point at nothing.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { racksForPlan } from "../../src/app/plan-inventory.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import {
  COMPONENT_TYPES,
  type ComponentFilter,
  type ComponentType,
  type RunConfig,
  type TargetSpec,
} from "../../src/domain/model.js";
import { CANDIDATE_TARGET_LIMIT, planRun } from "../../src/domain/planner.js";
import { runConfig } from "../support/domain-fixtures.js";
import { memoryInventory } from "../support/memory-inventory.js";

/** Small pools so that values repeat across racks. */
const NAMES = ["r-a", "r-b", "r-c", "r-d", "r-e", "r-f"];
const EXTERNAL = ["EXT-1", "EXT-2", "EXT-3", "EXT-4", "EXT-5"];
const SERIALS = ["SN-1", "SN-2", "SN-3", "SN-4"];
const DOMAINS = [
  { id: "0000000d-0000-4000-8000-000000000001", name: "nvl-1" },
  { id: "0000000d-0000-4000-8000-000000000002", name: "nvl-2" },
];
const MISSING_ID = "0badc0de-0000-4000-8000-000000000000";

const typeArb = fc.constantFrom<ComponentType>(...COMPONENT_TYPES);

const rackArb = (id: string) =>
  fc
    .record({
      name: fc.constantFrom(...NAMES),
      externalId: fc.option(fc.constantFrom(...EXTERNAL), { nil: undefined }),
      nvlDomain: fc.option(fc.constantFrom(...DOMAINS), { nil: undefined }),
      components: fc.uniqueArray(fc.uuid(), { minLength: 0, maxLength: 4 }).chain((ids) =>
        fc.tuple(
          ...ids.map((cid) =>
            fc.record({
              id: fc.constant(cid),
              type: typeArb,
              externalId: fc.option(fc.constantFrom(...SERIALS), { nil: undefined }),
            }),
          ),
        ),
      ),
    })
    .map(
      ({ name, externalId, nvlDomain, components }): InventoryRack => ({
        id,
        name,
        ...(externalId === undefined ? {} : { externalId }),
        ...(nvlDomain === undefined ? {} : { nvlDomain }),
        components: components.map((c) => (c.externalId === undefined ? { id: c.id, type: c.type } : c)),
      }),
    );

const inventoryArb = fc
  .uniqueArray(fc.uuid(), { minLength: 0, maxLength: 40 })
  .chain((ids) => fc.tuple(...ids.map(rackArb)));

/** A spec whose references are drawn from the inventory, mixed with references to nothing. */
const specArb = (inventory: InventoryRack[]): fc.Arbitrary<TargetSpec> => {
  const rackIds = [MISSING_ID, ...inventory.map((r) => r.id)];
  const componentIds = [MISSING_ID, ...inventory.flatMap((r) => r.components.map((c) => c.id))];
  const types = fc.uniqueArray(typeArb, { maxLength: 2 });
  return fc.oneof(
    fc
      .array(
        fc.record({
          ref: fc.oneof(
            fc.constantFrom(...rackIds).map((id) => ({ by: "id" as const, id })),
            fc.constantFrom(...NAMES, "r-none").map((name) => ({ by: "name" as const, name })),
            fc
              .constantFrom(...EXTERNAL, "EXT-none")
              .map((externalId) => ({ by: "externalId" as const, externalId })),
          ),
          componentTypes: types,
        }),
        { minLength: 1, maxLength: 6 },
      )
      .map((racks): TargetSpec => ({ kind: "racks", racks })),
    fc
      .array(
        fc.record({
          ref: fc.oneof(
            fc.constantFrom(...DOMAINS.map((d) => d.id), MISSING_ID).map((id) => ({ by: "id" as const, id })),
            fc
              .constantFrom(...DOMAINS.map((d) => d.name), "nvl-none")
              .map((name) => ({ by: "name" as const, name })),
          ),
          componentTypes: types,
        }),
        { minLength: 1, maxLength: 3 },
      )
      .map((domains): TargetSpec => ({ kind: "nvlDomains", domains })),
    fc
      .array(
        fc.oneof(
          fc.constantFrom(...componentIds).map((id) => ({ by: "id" as const, id })),
          fc
            .tuple(typeArb, fc.constantFrom(...SERIALS, "SN-none"))
            .map(([type, externalId]) => ({ by: "external" as const, type, externalId })),
        ),
        { minLength: 1, maxLength: 6 },
      )
      .map((components): TargetSpec => ({ kind: "components", components })),
  );
};

const filterArb = (inventory: InventoryRack[]): fc.Arbitrary<ComponentFilter | undefined> => {
  const componentIds = [MISSING_ID, ...inventory.flatMap((r) => r.components.map((c) => c.id))];
  return fc.oneof(
    fc.constant(undefined),
    fc
      .uniqueArray(typeArb, { minLength: 1, maxLength: 3 })
      .map((types): ComponentFilter => ({ kind: "types", types })),
    fc
      .uniqueArray(fc.constantFrom(...componentIds), { minLength: 1, maxLength: 5 })
      .map((ids): ComponentFilter => ({ kind: "components", componentIds: ids })),
  );
};

function configOf(targetSpec: TargetSpec | undefined, filter: ComponentFilter | undefined): RunConfig {
  const { firmware } = runConfig().operation;
  return runConfig({
    selector: { kind: "percentage", percentage: 60, seed: "sel" },
    phasePlan: { kind: "equal", phaseCount: 2 },
    operation: {
      kind: "upgradeFirmware",
      firmware: { ...firmware, ...(targetSpec === undefined ? {} : { targetSpec }) },
    },
    targetScope: {
      excludeOperationRunIds: [],
      ...(filter === undefined ? {} : { defaultScopeComponentFilter: filter }),
    },
  });
}

/** The plan, or the error's name and message. */
function attempt(config: RunConfig, inventory: readonly InventoryRack[]) {
  try {
    return { plan: planRun({ config, inventory, excludedTargets: [] }) };
  } catch (e) {
    const error = e as Error;
    return { error: `${error.name}: ${error.message}` };
  }
}

/** Against the whole inventory as the create used to load it: every rack, sorted by id. */
async function samePlan(config: RunConfig, inventory: InventoryRack[]): Promise<void> {
  const store = memoryInventory(inventory);
  const racks = await racksForPlan(store, config);
  const whole = [...inventory].sort((a, b) => (a.id < b.id ? -1 : 1));
  expect(attempt(config, racks)).toEqual(attempt(config, whole));
  expect(store.reads.loadAll).toBeUndefined();
}

describe("plans over racks read by key equal plans over the whole inventory", () => {
  it("explicit target specs: racks, NVLink domains, components", async () => {
    await fc.assert(
      fc.asyncProperty(
        inventoryArb.chain((inventory) => fc.tuple(fc.constant(inventory), specArb(inventory))),
        async ([inventory, spec]) => samePlan(configOf(spec, undefined), inventory),
      ),
      { numRuns: 300 },
    );
  });

  it("the default scope, unfiltered, by component types and by component ids", async () => {
    await fc.assert(
      fc.asyncProperty(
        inventoryArb.chain((inventory) => fc.tuple(fc.constant(inventory), filterArb(inventory))),
        async ([inventory, filter]) => samePlan(configOf(undefined, filter), inventory),
      ),
      { numRuns: 300 },
    );
  });

  it("a default scope over more than 100 racks reads 101 scope entries and fails with the candidate limit", async () => {
    const inventory: InventoryRack[] = Array.from({ length: 300 }, (_, i) => ({
      id: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
      name: `rack-${i}`,
      components: [{ id: `0000000c-0000-4000-8000-${String(i).padStart(12, "0")}`, type: "COMPUTE" }],
    }));
    const store = memoryInventory(inventory);
    const config = configOf(undefined, undefined);
    const racks = await racksForPlan(store, config);
    expect(racks).toHaveLength(CANDIDATE_TARGET_LIMIT + 1);
    expect(store.reads).toEqual({ listScopeRacks: CANDIDATE_TARGET_LIMIT + 1 });
    expect(attempt(config, racks)).toEqual({
      error: "CandidateLimitError: operation run candidate scope exceeds target limit 100",
    });
  });
});
