/**
 * Sub-targets: the firmware parts of a component a request may narrow an update to
 * (`UpgradeFirmwareRequest.sub_targets`). Each component type has its own set; a request names
 * parts, and each planned component is flashed with the requested parts its type has:
 *
 *   sub_targets [bmc, psu] on a rack of COMPUTE, NVSWITCH and POWERSHELF
 *     → COMPUTE flashes [bmc], NVSWITCH [bmc], POWERSHELF [psu]
 *   sub_targets [bios]
 *     → COMPUTE flashes [bios]; NVSWITCH and POWERSHELF have no bios and are left out of the plan
 *
 * No sub_targets means the whole component, as before. The BMC command carries them (protocol v2,
 * src/domain/bmc-protocol.ts) and a BMC must confirm exactly those in its result. docs/bmc-protocol.md
 * and docs/firmware-policy.md carry the same table.
 */
import type { FieldViolation } from "./errors.js";
import type { InventoryComponent } from "./inventory.js";
import { COMPONENT_TYPES, type ComponentType } from "./model.js";

/** Per type, in the order they are documented (and sent). */
export const SUB_TARGETS: Readonly<Record<ComponentType, readonly string[]>> = {
  COMPUTE: ["bmc", "bios", "cpld", "gpu", "nic"],
  NVSWITCH: ["bmc", "nvos", "cpld"],
  POWERSHELF: ["pmc", "psu"],
  TORSWITCH: ["nos", "cpld"],
  UMS: ["nos"],
  CDU: ["controller"],
};

/** `COMPUTE: bmc, bios, cpld, gpu, nic; NVSWITCH: bmc, nvos, cpld; …`: what an error lists. */
export function allowedSubTargetsText(): string {
  return COMPONENT_TYPES.map((t) => `${t}: ${SUB_TARGETS[t].join(", ")}`).join("; ");
}

/**
 * The request's names, lowercased (`BIOS` is `bios`), with a violation at `field[i]` for each
 * one no component type has and each repeat. Empty means "the whole component".
 */
export function checkSubTargets(
  names: readonly string[],
  field: string,
  add: (v: FieldViolation) => void,
): string[] {
  const known = new Set(Object.values(SUB_TARGETS).flat());
  const out: string[] = [];
  names.forEach((name, i) => {
    const normalized = name.toLowerCase();
    if (!known.has(normalized)) {
      add({
        field: `${field}[${i}]`,
        rule: `unknown sub-target ${JSON.stringify(name)}; allowed: ${allowedSubTargetsText()}`,
      });
    } else if (out.includes(normalized)) {
      add({ field: `${field}[${i}]`, rule: `duplicate sub-target ${JSON.stringify(name)}` });
    } else out.push(normalized);
  });
  return out;
}

/** What a component of `type` is flashed with: the requested parts it has, in table order. */
export function subTargetsOf(type: ComponentType, requested: readonly string[]): string[] {
  return SUB_TARGETS[type].filter((s) => requested.includes(s));
}

/**
 * Keeps what a request with these sub-targets flashes: every component when there are none,
 * else only components whose type has at least one of them.
 */
export function flashedBy(requested: readonly string[]): (c: Pick<InventoryComponent, "type">) => boolean {
  if (requested.length === 0) return () => true;
  return (c) => subTargetsOf(c.type, requested).length > 0;
}
