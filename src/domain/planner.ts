/**
 * The run planner: from a validated configuration, the inventory and the targets of the excluded
 * runs to the frozen plan (which racks, in which order, in which phase, with which components).
 * Pure and deterministic: the same inputs give the same plan, bit for bit the reference's.
 *
 *   1. Base scope      explicit target spec resolved against inventory, or every rack filtered by
 *                      the default-scope component filter; racks with no matching component drop
 *                      out. One row per rack entry, per NVLink-domain rack, per component entry.
 *                      With sub_targets, only components whose type has one of them stay
 *                      (src/domain/sub-targets.ts), like a type filter.
 *   2. Limit           more than 100 rows → CandidateLimitError, before anything else is done.
 *   3. Merge           rows of the same rack become one (first occurrence keeps its place,
 *                      component ids de-duplicated). Nothing left → "no planned targets".
 *   4. Exclude         the excluded runs' targets (at most 100 rows, else CandidateLimitError) are
 *                      subtracted component by component, per rack and type; emptied racks drop out.
 *   5. Select          seeded order with the selector seed, take ceil(n * pct / 100).
 *   6. Order           seeded order of the selection with the ordering seed.
 *   7. Phases          `allocatePhases` (cumulative rounding up); a zero-sized phase is an error.
 *
 * Worked example: 10 candidate racks, selector 30 % with seed "s", ordering seed "o", equal
 * phases k = 2. Selection takes ceil(10 * 30 / 100) = 3 racks: the three with the smallest
 * sha256("s:" + rackId). Those three are re-sorted by sha256("o:" + rackId) and split
 * [ceil(3 * 1 / 2), 3 - 2] = [2, 1]: sequence 0 and 1 in phase 0, sequence 2 in phase 1.
 * With 1 % of 10 racks, ceil(10 / 100) = 1 rack is selected, never 0.
 *
 * Where the messages come from. The reference wraps its errors in several layers ("plan operation
 * run targets: build target_spec scope: rack target 0: rpc error: …"); like the rest of this
 * project we keep the stable innermost text, with the 0-based entry index that locates it.
 * - rack by external id not found: "rack target 0: rack with external id X is not found" (NotFound,
 *   the reference's text); by id and by name the reference's own texts are an unstable inventory
 *   string and a bare "rack <name>", so we say "rack target 0: rack <id|name> is not found".
 * - a name matching several racks: InvalidArgument "rack target 0: rack name \"n\" matches multiple
 *   racks; use rack id" (the reference's text).
 * - NVLink domain by name unknown: NotFound "NVLink domain target 0: nvl domain n is not found";
 *   a domain id that no rack carries resolves to no racks, without an error, as in the reference.
 * - component by id unknown: NotFound "component target 0: component <id> is not found"; by
 *   external reference (type + external id) unknown: NotFound "component target 0: component
 *   external_id=X not found"; matched by two components: FailedPrecondition "component target 0:
 *   component external_id=X is ambiguous" (the reference's texts).
 * - the plan is empty: InvalidArgument "operation run has no planned targets".
 * - a zero-sized phase: InvalidArgument "percentage phase 2 resolves to zero targets for 2
 *   selected targets" (1-based phase number).
 * - count phases exceeding the selection: InvalidArgument "count phase counts exceed selected
 *   target count". The reference answers Internal here; it is the client's plan that is wrong.
 */
import {
  CandidateLimitError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
} from "./errors.js";
import { seededOrder } from "./hash.js";
import type { InventoryComponent, InventoryRack } from "./inventory.js";
import type {
  ComponentFilter,
  ComponentRef,
  ComponentsForType,
  ComponentType,
  Plan,
  PlannedTarget,
  RackRef,
  RunConfig,
  TargetSpec,
} from "./model.js";
import { allocatePhases, ceilDiv } from "./phases.js";
import { flashedBy } from "./sub-targets.js";

/** Rows allowed in the base scope, and in the targets loaded from the excluded runs. */
export const CANDIDATE_TARGET_LIMIT = 100;

export const EMPTY_PLAN_MESSAGE = "operation run has no planned targets";

/** (ours) More per-phase soaks than the plan made phases (a count plan without a remainder). */
export function tooManySoaksMessage(soaks: number, phases: number): string {
  return `configuration.options.phase_policy.phase_min_soaks: ${soaks} soaks for ${phases} phase${phases === 1 ? "" : "s"}`;
}

/**
 * The order of component-type groups in a frozen target: the reference keys its component sets by
 * type and emits them sorted by the type's display string, byte-wise ("CDU" < "Compute" <
 * "NVSwitch" < "PowerShelf" < "ToRSwitch" < "UMS"), not in enum order. Child tasks receive their
 * component ids in this type order, then by id.
 */
export const FROZEN_COMPONENT_TYPE_ORDER: readonly ComponentType[] = [
  "CDU",
  "COMPUTE",
  "NVSWITCH",
  "POWERSHELF",
  "TORSWITCH",
  "UMS",
];

/** A target of an excluded run, as stored. */
export interface ExcludedTarget {
  rackId: string;
  componentsByType: ComponentsForType[];
}

export interface PlanRunArgs {
  config: RunConfig;
  inventory: readonly InventoryRack[];
  /** Every target (all phases) of every run in `config.targetScope.excludeOperationRunIds`. */
  excludedTargets: readonly ExcludedTarget[];
}

/** One execution row: a rack and the components to operate on, in first-seen order. */
export interface ScopeRow {
  rackId: string;
  components: InventoryComponent[];
}

export function planRun({ config, inventory, excludedTargets }: PlanRunArgs): Plan {
  const { targetSpec, subTargets } = config.operation.firmware;
  const base = narrowRows(
    targetSpec
      ? resolveTargetSpec(targetSpec, inventory)
      : resolveDefaultScope(inventory, config.targetScope.defaultScopeComponentFilter),
    flashedBy(subTargets),
  );
  if (base.length > CANDIDATE_TARGET_LIMIT) throw new CandidateLimitError(CANDIDATE_TARGET_LIMIT);

  const merged = mergeRows(base);
  // The reference returns early on an empty base scope, before it loads the excluded runs, so an
  // empty base is an empty plan even when the excluded runs are over the limit.
  if (merged.length === 0) throw new InvalidArgumentError(EMPTY_PLAN_MESSAGE);
  if (excludedTargets.length > CANDIDATE_TARGET_LIMIT) throw new CandidateLimitError(CANDIDATE_TARGET_LIMIT);

  const candidates = subtractExcluded(merged, excludedTargets);
  return planCandidates(config, candidates);
}

/**
 * Steps 5 to 7 (select, order, phases) over candidate rows already resolved, one per rack: the
 * planner's own, and a retry or rollback run's, whose candidates come from the run it follows.
 */
export function planCandidates(config: RunConfig, candidates: readonly ScopeRow[]): Plan {
  if (candidates.length === 0) throw new InvalidArgumentError(EMPTY_PLAN_MESSAGE);

  const byRack = new Map(candidates.map((row) => [row.rackId, row]));
  const selectedCount = ceilDiv(candidates.length * config.selector.percentage, 100);
  const selected = seededOrder([...byRack.keys()], config.selector.seed).slice(0, selectedCount);
  if (selected.length === 0) throw new InvalidArgumentError(EMPTY_PLAN_MESSAGE);
  const ordered = seededOrder(selected, config.ordering.seed);

  const allocation = allocatePhases(ordered.length, config.phasePlan);
  if (!allocation.ok) throw new InvalidArgumentError(allocation.message);
  const soaks = config.phaseMinSoakMs?.length ?? 0;
  if (soaks > allocation.sizes.length)
    throw new InvalidArgumentError(tooManySoaksMessage(soaks, allocation.sizes.length));

  const targets: PlannedTarget[] = [];
  allocation.sizes.forEach((size, phaseIndex) => {
    for (let i = 0; i < size; i++) {
      const sequenceIndex = targets.length;
      const rackId = ordered[sequenceIndex] as string;
      const row = byRack.get(rackId) as ScopeRow;
      targets.push({ rackId, sequenceIndex, phaseIndex, componentsByType: freezeComponents(row.components) });
    }
  });
  return { candidateCount: candidates.length, phaseSizes: allocation.sizes, targets };
}

// ---------------------------------------------------------------------------------------------
// Base scope

/**
 * Resolves an explicit target spec to execution rows, one per rack entry (racks whose type filter
 * matches nothing are skipped silently), one per rack of each NVLink domain, or one per component
 * entry. Rows are not merged here: the candidate limit counts them as they come, as the reference
 * does, so 101 component entries on a single rack exceed it.
 */
export function resolveTargetSpec(spec: TargetSpec, inventory: readonly InventoryRack[]): ScopeRow[] {
  switch (spec.kind) {
    case "racks":
      return spec.racks.flatMap(({ ref, componentTypes }, index) => {
        const rack = findRack(ref, inventory, `rack target ${index}`);
        return rowsOf([rack], typeFilter(componentTypes));
      });
    case "nvlDomains":
      return spec.domains.flatMap(({ ref, componentTypes }, index) => {
        const racks = inventory.filter((rack) =>
          ref.by === "id" ? rack.nvlDomain?.id === ref.id : rack.nvlDomain?.name === ref.name,
        );
        if (ref.by === "name" && racks.length === 0) {
          throw new NotFoundError(`NVLink domain target ${index}: nvl domain ${ref.name} is not found`);
        }
        return rowsOf(racks, typeFilter(componentTypes));
      });
    case "components":
      return spec.components.map((ref, index) => {
        const { rack, component } = findComponent(ref, inventory, `component target ${index}`);
        return { rackId: rack.id, components: [component] };
      });
  }
}

/** Every rack of the inventory, narrowed by the default-scope component filter when given. */
export function resolveDefaultScope(
  inventory: readonly InventoryRack[],
  filter?: ComponentFilter,
): ScopeRow[] {
  if (filter === undefined) return rowsOf(inventory, () => true);
  if (filter.kind === "types") return rowsOf(inventory, typeFilter(filter.types));
  const ids = new Set(filter.componentIds);
  return rowsOf(inventory, (component) => ids.has(component.id));
}

type Predicate = (component: InventoryComponent) => boolean;

/** An empty type list means every type. */
function typeFilter(types: readonly ComponentType[]): Predicate {
  if (types.length === 0) return () => true;
  const wanted = new Set(types);
  return (component) => wanted.has(component.type);
}

/** Rows with only the components `keep` accepts; rows left empty drop out. */
export function narrowRows(rows: readonly ScopeRow[], keep: Predicate): ScopeRow[] {
  return rows.flatMap((row) => {
    const components = row.components.filter(keep);
    return components.length === 0 ? [] : [{ rackId: row.rackId, components }];
  });
}

function rowsOf(racks: readonly InventoryRack[], keep: Predicate): ScopeRow[] {
  return racks.flatMap((rack) => {
    const components = rack.components.filter(keep);
    return components.length === 0 ? [] : [{ rackId: rack.id, components }];
  });
}

function findRack(ref: RackRef, inventory: readonly InventoryRack[], where: string): InventoryRack {
  switch (ref.by) {
    case "id": {
      const rack = inventory.find((r) => r.id === ref.id);
      if (rack === undefined) throw new NotFoundError(`${where}: rack ${ref.id} is not found`);
      return rack;
    }
    case "externalId": {
      const rack = inventory.find((r) => r.externalId === ref.externalId);
      if (rack === undefined)
        throw new NotFoundError(`${where}: rack with external id ${ref.externalId} is not found`);
      return rack;
    }
    case "name": {
      const racks = inventory.filter((r) => r.name === ref.name);
      if (racks.length > 1) {
        throw new InvalidArgumentError(
          `${where}: rack name ${JSON.stringify(ref.name)} matches multiple racks; use rack id`,
        );
      }
      const [rack] = racks;
      if (rack === undefined) throw new NotFoundError(`${where}: rack ${ref.name} is not found`);
      return rack;
    }
  }
}

function findComponent(
  ref: ComponentRef,
  inventory: readonly InventoryRack[],
  where: string,
): { rack: InventoryRack; component: InventoryComponent } {
  const matches = inventory.flatMap((rack) =>
    rack.components
      .filter((c) =>
        ref.by === "id" ? c.id === ref.id : c.type === ref.type && c.externalId === ref.externalId,
      )
      .map((component) => ({ rack, component })),
  );
  const [match] = matches;
  if (ref.by === "id") {
    if (match === undefined) throw new NotFoundError(`${where}: component ${ref.id} is not found`);
    return match;
  }
  if (match === undefined)
    throw new NotFoundError(`${where}: component external_id=${ref.externalId} not found`);
  if (matches.length > 1) {
    throw new FailedPreconditionError(`${where}: component external_id=${ref.externalId} is ambiguous`);
  }
  return match;
}

// ---------------------------------------------------------------------------------------------
// Merge and exclusion

/**
 * One row per rack, at the place of its first occurrence, with the union of the components of all
 * its rows (each id once, first-seen order):
 *   [A{c1}, B{c3}, A{c2, c1}] → [A{c1, c2}, B{c3}]
 */
export function mergeRows(rows: readonly ScopeRow[]): ScopeRow[] {
  const merged = new Map<string, Map<string, InventoryComponent>>();
  for (const row of rows) {
    let components = merged.get(row.rackId);
    if (components === undefined) {
      components = new Map();
      merged.set(row.rackId, components);
    }
    for (const component of row.components) {
      if (!components.has(component.id)) components.set(component.id, component);
    }
  }
  return [...merged].map(([rackId, components]) => ({ rackId, components: [...components.values()] }));
}

/**
 * Removes, rack by rack, every component an excluded target lists under the same type; racks left
 * with nothing drop out. A component excluded under another type, or on another rack, stays
 * (the reference subtracts per rack, then per type).
 */
export function subtractExcluded(rows: readonly ScopeRow[], excluded: readonly ExcludedTarget[]): ScopeRow[] {
  const excludedKeys = new Set<string>();
  for (const target of excluded) {
    for (const group of target.componentsByType) {
      for (const id of group.componentIds) excludedKeys.add(exclusionKey(target.rackId, group.type, id));
    }
  }
  return rows.flatMap((row) => {
    const components = row.components.filter(
      (c) => !excludedKeys.has(exclusionKey(row.rackId, c.type, c.id)),
    );
    return components.length === 0 ? [] : [{ rackId: row.rackId, components }];
  });
}

function exclusionKey(rackId: string, type: ComponentType, componentId: string): string {
  return `${rackId}/${type}/${componentId}`;
}

// ---------------------------------------------------------------------------------------------
// Freezing

/**
 * The frozen execution set of a target: one group per type present, groups in
 * FROZEN_COMPONENT_TYPE_ORDER, ids sorted by their string (the reference sorts on clone):
 *   [compute b, nvswitch c, compute a, cdu d] → [CDU [d], COMPUTE [a, b], NVSWITCH [c]]
 */
export function freezeComponents(components: readonly InventoryComponent[]): ComponentsForType[] {
  return FROZEN_COMPONENT_TYPE_ORDER.flatMap((type) => {
    const ids = [...new Set(components.filter((c) => c.type === type).map((c) => c.id))];
    return ids.length === 0 ? [] : [{ type, componentIds: ids.sort(compareIds) }];
  });
}

/** Byte-wise, like Go's strings.Compare; the ids are distinct here, so never 0. */
function compareIds(a: string, b: string): number {
  return a < b ? -1 : 1;
}
