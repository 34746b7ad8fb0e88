/**
 * Small deterministic inventories and fleets for the e2e suites.
 *
 * Ids encode where a rack comes from, so a failing assertion reads like a sentence:
 *
 *   rackId(3, 7)         → 00000003-0000-4000-8000-000000000007   (group 3, rack 7)
 *   componentId(3, 7, 1) → 00000003-0001-4000-9000-000000000007   (its second component)
 *
 * Each suite gets racks in GROUPS with one BMC behaviour per group (fast success, failure, hang),
 * and tests take disjoint slices of a group: a run that hangs holds its racks' locks, and a
 * second run on the same rack would meet a rack conflict the test did not ask for.
 */
import type { BmcBehaviour, FleetConfig } from "../../local/fleet-file.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import type { ComponentType } from "../../src/domain/model.js";

const hex = (n: number, width: number): string => n.toString(16).padStart(width, "0");

export function rackId(group: number, n: number): string {
  return `${hex(group, 8)}-0000-4000-8000-${hex(n, 12)}`;
}

export function componentId(group: number, n: number, k: number): string {
  return `${hex(group, 8)}-${hex(k, 4)}-4000-9000-${hex(n, 12)}`;
}

export interface GroupOptions {
  /** Rack names are `<name>-<n>`, external ids `EXT-<name>-<n>`. */
  name: string;
  count: number;
  /** One component per entry, in this order. Default: one COMPUTE and one NVSWITCH. */
  types?: readonly ComponentType[];
  /** False: the racks have no external id (ListOperationRunTargets must refuse them). */
  externalIds?: boolean;
  /** Every rack of the group in this NVLink domain. */
  nvlDomain?: { id: string; name: string };
  /** How the group's BMCs behave; default: the fleet's defaults. */
  behaviour?: Partial<BmcBehaviour>;
}

export interface RackGroup {
  group: number;
  name: string;
  racks: InventoryRack[];
  /** Rack ids in creation order (n = 0, 1, …). */
  ids: string[];
  behaviour?: Partial<BmcBehaviour>;
}

export function rackGroup(group: number, options: GroupOptions): RackGroup {
  const types = options.types ?? ["COMPUTE", "NVSWITCH"];
  const racks = Array.from({ length: options.count }, (_, n): InventoryRack => {
    const rack: InventoryRack = {
      id: rackId(group, n),
      name: `${options.name}-${n}`,
      components: types.map((type, k) => ({
        id: componentId(group, n, k),
        type,
        externalId: `SN-${options.name}-${n}-${k}`,
        firmwareVersion: "1.0.0",
      })),
    };
    if (options.externalIds !== false) rack.externalId = `EXT-${options.name}-${n}`;
    if (options.nvlDomain) rack.nvlDomain = { ...options.nvlDomain };
    return rack;
  });
  const result: RackGroup = { group, name: options.name, racks, ids: racks.map((r) => r.id) };
  if (options.behaviour) result.behaviour = options.behaviour;
  return result;
}

export function inventoryOf(groups: readonly RackGroup[]): InventoryRack[] {
  return groups.flatMap((g) => g.racks);
}

/** Defaults for racks of no group entry; each group's behaviour applies to its racks. */
export function fleetOf(groups: readonly RackGroup[], defaults: BmcBehaviour): FleetConfig {
  const racks: FleetConfig["racks"] = {};
  for (const g of groups) {
    if (g.behaviour === undefined) continue;
    for (const id of g.ids) racks[id] = { ...g.behaviour };
  }
  return { defaults: { ...defaults }, racks, components: {} };
}

/** A flash that takes long enough to be seen in flight and short enough to keep suites fast. */
export const FAST_SUCCESS: BmcBehaviour = { outcome: "succeed", updateMs: 50 };
export const FAST_FAILURE: BmcBehaviour = { outcome: "fail", updateMs: 50 };
/** Accepts the update and never reports: its target stays SUBMITTED, its run RUNNING. */
export const HANG: BmcBehaviour = { outcome: "hang", updateMs: 50 };
