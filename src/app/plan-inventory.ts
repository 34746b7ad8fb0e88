/**
 * The inventory a plan draws from, read by key: a create costs what its plan costs, whatever the
 * size of the fleet. The planner (src/domain/planner.ts) resolves the base scope against the racks
 * it is given; these functions give it exactly the racks that resolution can touch, so the plan is
 * the one it would make over the whole inventory, errors included:
 *
 *   rack entries        by id (BatchGetItem), name, external id (index queries): every rack a name
 *                       or external id matches, so "matches multiple racks" is still found
 *   NVLink domains      every rack of each domain (index queries)
 *   component entries   by id: the rack its pointer names; by (type, external id): every rack
 *                       holding such a component, so "is ambiguous" is still found
 *   default scope       component-id filter: the racks holding those components (pointers);
 *                       otherwise the narrow scope index in rack-id order until 101 racks qualify:
 *                       one more than a run may have, enough for the planner's candidate-limit
 *                       error and no more
 *
 * Racks come back sorted by id, the order the planner's first-match lookups saw in a full load.
 */

import type { InventoryRack } from "../domain/inventory.js";
import type { ComponentRef, RunConfig, TargetSpec } from "../domain/model.js";
import { CANDIDATE_TARGET_LIMIT, resolveDefaultScope } from "../domain/planner.js";
import { mapConcurrently } from "./concurrency.js";
import type { InventoryStore, ScopeRack } from "./ports.js";

/** What resolving a plan's racks needs of the inventory; everything but the whole-table read. */
export type PlanInventory = Omit<InventoryStore, "upsertRacks" | "loadAll" | "listRacks">;

/** Lookups one spec runs at once (a spec may have up to 1,000 entries). */
const LOOKUP_CONCURRENCY = 8;

/** The racks a run's base scope can draw from: the explicit target spec's, or the default scope's. */
export async function racksForPlan(
  inventory: PlanInventory,
  config: RunConfig,
): Promise<readonly (InventoryRack | ScopeRack)[]> {
  const spec = config.operation.firmware.targetSpec;
  if (spec !== undefined) return racksForTargetSpec(inventory, spec);
  const filter = config.targetScope.defaultScopeComponentFilter;
  if (filter?.kind === "components") {
    return byId([...(await inventory.getRacksByComponentIds(filter.componentIds)).values()]);
  }
  return inventory.listScopeRacks(
    (rack) => resolveDefaultScope([rack], filter).length > 0,
    CANDIDATE_TARGET_LIMIT + 1,
  );
}

/** Every rack the spec's entries can resolve to (unknown references simply find nothing). */
export async function racksForTargetSpec(
  inventory: PlanInventory,
  spec: TargetSpec,
): Promise<InventoryRack[]> {
  switch (spec.kind) {
    case "racks": {
      const refs = spec.racks.map((r) => r.ref);
      const ids = refs.flatMap((r) => (r.by === "id" ? [r.id] : []));
      const names = refs.flatMap((r) => (r.by === "name" ? [r.name] : []));
      const externalIds = refs.flatMap((r) => (r.by === "externalId" ? [r.externalId] : []));
      const found = await Promise.all([
        ids.length === 0 ? [] : inventory.getRacksByIds(ids),
        names.length === 0 ? [] : inventory.getRacksByNames(names),
        externalIds.length === 0 ? [] : inventory.getRacksByExternalIds(externalIds),
      ]);
      return byId(found.flat());
    }
    case "nvlDomains": {
      const refs = unique(spec.domains.map((d) => d.ref));
      const found = await mapConcurrently(refs, LOOKUP_CONCURRENCY, (ref) =>
        inventory.getRacksByNvlDomain(ref),
      );
      return byId(found.flat());
    }
    case "components": {
      const ids = spec.components.flatMap((c) => (c.by === "id" ? [c.id] : []));
      const external = unique(
        spec.components.filter((c): c is Extract<ComponentRef, { by: "external" }> => c.by === "external"),
      );
      const [byComponent, byReference] = await Promise.all([
        ids.length === 0 ? new Map<string, InventoryRack>() : inventory.getRacksByComponentIds(ids),
        mapConcurrently(external, LOOKUP_CONCURRENCY, (ref) =>
          inventory.getRacksByComponentExternalId(ref.type, ref.externalId),
        ),
      ]);
      return byId([...byComponent.values(), ...byReference.flat()]);
    }
  }
}

/** One of each rack, sorted by id. */
function byId<R extends { id: string }>(racks: readonly R[]): R[] {
  const unique = new Map(racks.map((r) => [r.id, r]));
  return [...unique.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
}

/** References that are equal field for field, once each (a spec may repeat one). */
function unique<T extends object>(refs: readonly T[]): T[] {
  return [...new Map(refs.map((r) => [JSON.stringify(r), r])).values()];
}
