/**
 * An in-memory InventoryStore typed from the port, with the DynamoDB adapter's lookup semantics
 * (test/integration/dynamodb-stores.test.ts pins those against moto): for fast use-case tables and
 * property tests. It also counts what each lookup read, so a test can say "the plan read 10 racks,
 * not the fleet".
 */
import type { InventoryStore, ScopeRack } from "../../src/app/ports.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import type { ComponentType } from "../../src/domain/model.js";

export interface MemoryInventory extends InventoryStore {
  /** Rack records each method handed out since the last `resetReads` (scope entries included). */
  reads: Record<string, number>;
  resetReads(): void;
}

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

export function memoryInventory(initial: readonly InventoryRack[] = []): MemoryInventory {
  const racks = new Map<string, InventoryRack>();
  const reads: Record<string, number> = {};
  const all = () => [...racks.values()].sort(byId);
  const counted = <T>(method: string, found: T[]): T[] => {
    reads[method] = (reads[method] ?? 0) + found.length;
    return found;
  };
  const store: MemoryInventory = {
    reads,
    resetReads() {
      for (const key of Object.keys(reads)) delete reads[key];
    },
    async upsertRacks(more) {
      for (const rack of more) racks.set(rack.id, structuredClone(rack));
    },
    async loadAll() {
      return counted("loadAll", all());
    },
    async listRacks(page) {
      const every = all();
      return {
        racks: counted("listRacks", every.slice(page.offset, page.offset + page.limit)),
        total: every.length,
      };
    },
    async getRacksByIds(ids) {
      return counted(
        "getRacksByIds",
        ids.flatMap((id) => racks.get(id) ?? []),
      );
    },
    async getRacksByNames(names) {
      return counted(
        "getRacksByNames",
        [...new Set(names)].flatMap((name) => all().filter((r) => r.name === name)),
      );
    },
    async getRacksByExternalIds(externalIds) {
      return counted(
        "getRacksByExternalIds",
        [...new Set(externalIds)].flatMap((ext) => all().filter((r) => r.externalId === ext)),
      );
    },
    async getRacksByNvlDomain(ref) {
      return counted(
        "getRacksByNvlDomain",
        all().filter((r) => (ref.by === "id" ? r.nvlDomain?.id === ref.id : r.nvlDomain?.name === ref.name)),
      );
    },
    async getRacksByComponentIds(componentIds) {
      const wanted = new Set(componentIds);
      const found = new Map<string, InventoryRack>();
      for (const rack of all()) for (const c of rack.components) if (wanted.has(c.id)) found.set(c.id, rack);
      counted("getRacksByComponentIds", [...new Set(found.values())]);
      return found;
    },
    async getRacksByComponentExternalId(type: ComponentType, externalId: string) {
      return counted(
        "getRacksByComponentExternalId",
        all().filter((r) => r.components.some((c) => c.type === type && c.externalId === externalId)),
      );
    },
    async listScopeRacks(qualifies, limit) {
      const found: ScopeRack[] = [];
      let read = 0;
      for (const rack of all()) {
        read++;
        const entry: ScopeRack = {
          id: rack.id,
          name: rack.name,
          components: rack.components.map((c) => ({ id: c.id, type: c.type })),
          ...(rack.externalId === undefined ? {} : { externalId: rack.externalId }),
        };
        if (qualifies(entry)) found.push(entry);
        if (found.length === limit) break;
      }
      reads.listScopeRacks = (reads.listScopeRacks ?? 0) + read;
      return found;
    },
  };
  for (const rack of initial) racks.set(rack.id, structuredClone(rack));
  return store;
}
