/**
 * Firmware baselines: the desired firmware version of each component type, optionally narrowed by
 * the component's model or vendor (inventory components carry both, optionally). A run or task
 * that names no `target_version` takes each component's version from its most specific baseline,
 * resolved once at create and frozen with the plan (Target.versions), so a later baseline edit
 * never re-plans a run that exists.
 *
 * Most specific wins. A baseline applies to a component when its type is the component's and each
 * narrowing field it sets equals the component's (exactly: case and spaces count). Of those that
 * apply, model + vendor beats model beats vendor beats the type alone. A model belongs to one
 * vendor, so a model match says more than a vendor match. Keys (type, model, vendor) are unique,
 * so there is never a tie. With the baselines
 *
 *   COMPUTE → 2.0.0     COMPUTE model GB200 → 2.1.0     COMPUTE vendor Acme → 1.9.0
 *
 * a COMPUTE of model GB200 by Acme takes 2.1.0, one of model GB300 by Acme 1.9.0, one without a
 * model or vendor 2.0.0; an NVSWITCH takes nothing (no baseline covers it), and a create that
 * plans one is refused with `target_version is not set and no firmware baseline covers NVSWITCH`.
 *
 * Pure: the admin service stores the list (src/app/firmware-policy.ts), the create path and
 * `flowctl inventory drift` resolve with these functions, so all three agree.
 */

import type { Scoped } from "./create-run-input.js";
import type { FieldViolation, Validated } from "./errors.js";
import { firmwareVersionRule } from "./firmware-version.js";
import type { InventoryComponent, InventoryRack } from "./inventory.js";
import { COMPONENT_TYPES, type ComponentType, type PlannedTarget, type VersionGroup } from "./model.js";

export interface FirmwareBaseline {
  componentType: ComponentType;
  model?: string;
  vendor?: string;
  version: string;
}

export type BaselineKey = Pick<FirmwareBaseline, "componentType" | "model" | "vendor">;

/** A baseline as decoded from the wire or a file: "" means "not narrowed" for model and vendor. */
export interface BaselineInput {
  componentType: Scoped<ComponentType>;
  model: string;
  vendor: string;
  version: string;
}

/** Characters of a version, model or vendor: labels, not documents. */
export const MAX_BASELINE_TEXT = 128;
/** Baselines the store holds: one item, read whole by every create that needs it (~100 bytes each). */
export const MAX_BASELINES = 1000;

export function sameBaselineKey(a: BaselineKey, b: BaselineKey): boolean {
  return a.componentType === b.componentType && a.model === b.model && a.vendor === b.vendor;
}

/** `NVSWITCH`, `COMPUTE model "GB200"`, `COMPUTE model "GB200" vendor "Acme"`: for messages. */
export function describeBaselineKey(key: BaselineKey): string {
  const model = key.model === undefined ? "" : ` model ${JSON.stringify(key.model)}`;
  const vendor = key.vendor === undefined ? "" : ` vendor ${JSON.stringify(key.vendor)}`;
  return `${key.componentType}${model}${vendor}`;
}

function specificity(b: BaselineKey): number {
  return (b.model === undefined ? 0 : 2) + (b.vendor === undefined ? 0 : 1);
}

function applies(b: FirmwareBaseline, c: Pick<InventoryComponent, "type" | "model" | "vendor">): boolean {
  return (
    b.componentType === c.type &&
    (b.model === undefined || b.model === c.model) &&
    (b.vendor === undefined || b.vendor === c.vendor)
  );
}

/** The most specific baseline that applies to `component`, or undefined when none does. */
export function resolveBaseline(
  component: Pick<InventoryComponent, "type" | "model" | "vendor">,
  baselines: readonly FirmwareBaseline[],
): FirmwareBaseline | undefined {
  let best: FirmwareBaseline | undefined;
  for (const b of baselines) {
    if (applies(b, component) && (best === undefined || specificity(b) > specificity(best))) best = b;
  }
  return best;
}

/**
 * Each component's version from the baselines, grouped by version (versions and ids in string
 * order), and the types of the components no baseline covers (in the published enum order):
 *   [c1 COMPUTE, c2 NVSWITCH] with only `COMPUTE → 2.0.0` → versions [2.0.0: c1], uncovered [NVSWITCH]
 */
export function resolveVersions(
  components: readonly Pick<InventoryComponent, "id" | "type" | "model" | "vendor">[],
  baselines: readonly FirmwareBaseline[],
): { versions: VersionGroup[]; uncovered: ComponentType[] } {
  const byVersion = new Map<string, string[]>();
  const uncovered = new Set<ComponentType>();
  for (const c of components) {
    const baseline = resolveBaseline(c, baselines);
    if (baseline === undefined) {
      uncovered.add(c.type);
      continue;
    }
    byVersion.set(baseline.version, [...(byVersion.get(baseline.version) ?? []), c.id]);
  }
  const versions = [...byVersion]
    .sort(([a], [b]) => compareText(a, b))
    .map(([version, ids]) => ({ version, componentIds: [...new Set(ids)].sort(compareText) }));
  return { versions, uncovered: COMPONENT_TYPES.filter((t) => uncovered.has(t)) };
}

/** The rule of the create-time violation, e.g. `target_version is not set and no firmware baseline covers NVSWITCH, CDU`. */
export function uncoveredRule(types: readonly ComponentType[]): string {
  return `target_version is not set and no firmware baseline covers ${types.join(", ")}`;
}

/** A rack and the components a plan or a task upgrades on it. */
export interface PlannedRow {
  rackId: string;
  components: Pick<InventoryComponent, "id" | "type" | "model" | "vendor">[];
}

/**
 * A plan's targets as rows of inventory components (model and vendor from `racks`, the inventory
 * the plan was made from; an id no rack has keeps just its type).
 */
export function plannedRows(
  targets: readonly Pick<PlannedTarget, "rackId" | "componentsByType">[],
  racks: readonly InventoryRack[],
): PlannedRow[] {
  const components = new Map(racks.flatMap((r) => r.components.map((c) => [c.id, c] as const)));
  return targets.map((t) => ({
    rackId: t.rackId,
    components: t.componentsByType.flatMap((g) =>
      g.componentIds.map((id) => components.get(id) ?? { id, type: g.type }),
    ),
  }));
}

/** Each row's versions (rack id → groups), and the types no baseline covers across all rows. */
export function rowVersions(
  rows: readonly PlannedRow[],
  baselines: readonly FirmwareBaseline[],
): { versions: Map<string, VersionGroup[]>; uncovered: ComponentType[] } {
  const versions = new Map<string, VersionGroup[]>();
  const uncovered = new Set<ComponentType>();
  for (const row of rows) {
    const resolved = resolveVersions(row.components, baselines);
    versions.set(row.rackId, resolved.versions);
    for (const t of resolved.uncovered) uncovered.add(t);
  }
  return { versions, uncovered: COMPONENT_TYPES.filter((t) => uncovered.has(t)) };
}

/** `versions` as a lookup: component id → version. */
export function versionOf(versions: readonly VersionGroup[]): Map<string, string> {
  return new Map(versions.flatMap((g) => g.componentIds.map((id) => [id, g.version] as const)));
}

// ---------------------------------------------------------------------------------------------
// Editing the list

/** Type (published order), then model, then vendor, the unnarrowed first: how lists are shown. */
export function sortBaselines(baselines: readonly FirmwareBaseline[]): FirmwareBaseline[] {
  const rank = (t: ComponentType) => COMPONENT_TYPES.indexOf(t);
  const text = (s: string | undefined) => (s === undefined ? "" : `\u0001${s}`);
  return [...baselines].sort(
    (a, b) =>
      rank(a.componentType) - rank(b.componentType) ||
      compareText(text(a.model), text(b.model)) ||
      compareText(text(a.vendor), text(b.vendor)),
  );
}

/** `current` with each of `more` added, or replacing the baseline of the same key. */
export function upsertBaselines(
  current: readonly FirmwareBaseline[],
  more: readonly FirmwareBaseline[],
): FirmwareBaseline[] {
  const kept = current.filter((b) => !more.some((m) => sameBaselineKey(b, m)));
  return sortBaselines([...kept, ...more]);
}

/** `current` without the baseline of `key`; `removed` says whether there was one. */
export function removeBaseline(
  current: readonly FirmwareBaseline[],
  key: BaselineKey,
): { baselines: FirmwareBaseline[]; removed: boolean } {
  const baselines = current.filter((b) => !sameBaselineKey(b, key));
  return { baselines, removed: baselines.length < current.length };
}

// ---------------------------------------------------------------------------------------------
// Validation

/**
 * Every problem of every entry at once, with its path under `field` (`baselines[1].version`):
 * a known type; a version; model and vendor optional ("" = not narrowed); no text longer than
 * MAX_BASELINE_TEXT or with leading or trailing spaces (they would never match an inventory
 * value); one entry per key.
 */
export function validateBaselines(
  inputs: readonly BaselineInput[],
  field: string,
): Validated<FirmwareBaseline[]> {
  const violations: FieldViolation[] = [];
  const add = (f: string, rule: string) => violations.push({ field: f, rule });
  const text = (value: string, f: string, required: boolean): string | undefined => {
    if (value === "") {
      if (required) add(f, "must not be empty");
      return undefined;
    }
    if (value.trim() !== value)
      add(f, `must not start or end with whitespace (got ${JSON.stringify(value)})`);
    if (value.length > MAX_BASELINE_TEXT)
      add(f, `must be at most ${MAX_BASELINE_TEXT} characters (got ${value.length})`);
    return value;
  };
  if (inputs.length > MAX_BASELINES)
    add(field, `must have at most ${MAX_BASELINES} entries (got ${inputs.length})`);
  const baselines: FirmwareBaseline[] = [];
  /** Input index of each kept baseline, for the duplicate message. */
  const keptAt: number[] = [];
  inputs.forEach((input, i) => {
    const at = `${field}[${i}]`;
    const known = (COMPONENT_TYPES as readonly string[]).includes(input.componentType);
    if (!known) add(`${at}.component_type`, `must be a known component type (got ${input.componentType})`);
    const version = text(input.version, `${at}.version`, true);
    // Whitespace and length are named by `text` already; the characters here.
    if (version !== undefined && version.trim() === version && version.length <= MAX_BASELINE_TEXT) {
      const versionRule = firmwareVersionRule(version);
      if (versionRule !== undefined) add(`${at}.version`, versionRule);
    }
    const model = text(input.model, `${at}.model`, false);
    const vendor = text(input.vendor, `${at}.vendor`, false);
    if (!known || version === undefined) return;
    const baseline: FirmwareBaseline = { componentType: input.componentType as ComponentType, version };
    if (model !== undefined) baseline.model = model;
    if (vendor !== undefined) baseline.vendor = vendor;
    const earlier = baselines.findIndex((b) => sameBaselineKey(b, baseline));
    if (earlier >= 0) {
      add(
        at,
        `duplicate baseline for ${describeBaselineKey(baseline)} (first at ${field}[${keptAt[earlier]}])`,
      );
    } else {
      baselines.push(baseline);
      keptAt.push(i);
    }
  });
  return violations.length > 0 ? { ok: false, violations } : { ok: true, value: baselines };
}

// ---------------------------------------------------------------------------------------------
// Drift

export interface DriftEntry {
  rackId: string;
  rackName: string;
  componentId: string;
  type: ComponentType;
  model?: string;
  vendor?: string;
  /** What inventory says the component runs; absent when it was never recorded. */
  current?: string;
  /** The version of its most specific baseline; absent when none covers it. */
  desired?: string;
}

/**
 * Components not at their baseline (`drifted`: current ≠ desired, an unrecorded version included)
 * and components no baseline covers (`uncovered`), rack by rack in the order given, each rack's
 * components by type (published order), then id.
 */
export function firmwareDrift(
  racks: readonly InventoryRack[],
  baselines: readonly FirmwareBaseline[],
): { drifted: DriftEntry[]; uncovered: DriftEntry[]; atBaseline: number } {
  const drifted: DriftEntry[] = [];
  const uncovered: DriftEntry[] = [];
  let atBaseline = 0;
  const rank = (t: ComponentType) => COMPONENT_TYPES.indexOf(t);
  for (const rack of racks) {
    const components = [...rack.components].sort(
      (a, b) => rank(a.type) - rank(b.type) || compareText(a.id, b.id),
    );
    for (const c of components) {
      const entry: DriftEntry = { rackId: rack.id, rackName: rack.name, componentId: c.id, type: c.type };
      if (c.model !== undefined) entry.model = c.model;
      if (c.vendor !== undefined) entry.vendor = c.vendor;
      if (c.firmwareVersion !== undefined) entry.current = c.firmwareVersion;
      const baseline = resolveBaseline(c, baselines);
      if (baseline === undefined) uncovered.push(entry);
      else if (baseline.version === c.firmwareVersion) atBaseline += 1;
      else drifted.push({ ...entry, desired: baseline.version });
    }
  }
  return { drifted, uncovered, atBaseline };
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
