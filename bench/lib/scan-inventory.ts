/**
 * How CreateOperationRun read the inventory before it read by key, for the API benchmark's
 * before/after rows: every lookup answered from ONE Scan of the whole inventory table
 * (`InventoryStore.loadAll`), filtered in memory. A create asks one lookup of it for the specs the
 * benchmark uses (racks by id; the default scope), so it costs exactly what the old create did:
 * one full Scan, then the plan. (The old layout also stored a second pointer item per component
 * external id, so the real "before" read about twice the items this one does.)
 */
import type { PlanInventory } from "../../src/app/plan-inventory.js";
import type { InventoryStore, ScopeRack } from "../../src/app/ports.js";
import type { InventoryRack } from "../../src/domain/inventory.js";

export function scanningInventory(store: Pick<InventoryStore, "loadAll">): PlanInventory {
  const matching = async (keep: (rack: InventoryRack) => boolean) => (await store.loadAll()).filter(keep);
  return {
    getRacksByIds: (ids) => matching((r) => ids.includes(r.id)),
    getRacksByNames: (names) => matching((r) => names.includes(r.name)),
    getRacksByExternalIds: (ids) => matching((r) => r.externalId !== undefined && ids.includes(r.externalId)),
    getRacksByNvlDomain: (ref) =>
      matching((r) => (ref.by === "id" ? r.nvlDomain?.id === ref.id : r.nvlDomain?.name === ref.name)),
    async getRacksByComponentIds(componentIds) {
      const found = new Map<string, InventoryRack>();
      for (const rack of await store.loadAll())
        for (const c of rack.components) if (componentIds.includes(c.id)) found.set(c.id, rack);
      return found;
    },
    getRacksByComponentExternalId: (type, externalId) =>
      matching((r) => r.components.some((c) => c.type === type && c.externalId === externalId)),
    async listScopeRacks(qualifies: (rack: ScopeRack) => boolean, limit: number) {
      return (await store.loadAll()).filter(qualifies).slice(0, limit);
    },
  };
}
