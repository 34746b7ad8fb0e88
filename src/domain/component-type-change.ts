/**
 * An inventory import that would change the type of a component already known: the next flash
 * would send it another type's image (`firmware://NVSWITCH/…` to a compute tray's BMC). Refused
 * unless the import asks for it explicitly (ImportInventoryRequest.allow_component_type_change);
 * with it, each change is logged.
 *
 *   known c1 COMPUTE, imported as racks[0].components[2] NVSWITCH →
 *     racks[0].components[2].type: component c1 is COMPUTE; importing it as NVSWITCH would flash it
 *     another type's image (set allow_component_type_change to change its type)
 */
import type { FieldViolation } from "./errors.js";
import type { InventoryRack } from "./inventory.js";
import type { ComponentType } from "./model.js";

export interface ComponentTypeChange {
  /** Where in the import: `racks[0].components[2].type`. */
  field: string;
  componentId: string;
  from: ComponentType;
  to: ComponentType;
}

/** The components of `imported` whose type differs from the stored one (`known`: id → type). */
export function componentTypeChanges(
  imported: readonly InventoryRack[],
  known: ReadonlyMap<string, ComponentType>,
): ComponentTypeChange[] {
  const changes: ComponentTypeChange[] = [];
  imported.forEach((rack, i) => {
    rack.components.forEach((component, j) => {
      const from = known.get(component.id);
      if (from !== undefined && from !== component.type) {
        changes.push({
          field: `racks[${i}].components[${j}].type`,
          componentId: component.id,
          from,
          to: component.type,
        });
      }
    });
  });
  return changes;
}

export function typeChangeViolation(change: ComponentTypeChange): FieldViolation {
  return {
    field: change.field,
    rule: `component ${change.componentId} is ${change.from}; importing it as ${change.to} would flash it another type's image (set allow_component_type_change to change its type)`,
  };
}
