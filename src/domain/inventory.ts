/** The inventory as the domain sees it: racks, their components and each component's readiness. */
import type { ComponentType } from "./model.js";

/** READY is the default and is stored as no readiness at all (src/domain/readiness.ts). */
export const READINESS_STATES = ["READY", "NOT_READY", "MAINTENANCE"] as const;
export type ReadinessState = (typeof READINESS_STATES)[number];
export interface ComponentReadiness {
  state: Exclude<ReadinessState, "READY">;
  /** Why, in the operator's words: it ends up in the failed target's message. */
  reason: string;
}

export interface InventoryComponent {
  id: string;
  type: ComponentType;
  externalId?: string;
  firmwareVersion?: string;
  /** Narrow which firmware baseline applies (src/domain/firmware-baselines.ts); matched exactly. */
  model?: string;
  vendor?: string;
  /** Absent: READY. A component not ready is not flashed (unless override_readiness_check). */
  readiness?: ComponentReadiness;
}

export interface InventoryRack {
  id: string;
  name: string;
  /** Absent for racks that were never registered externally; such racks fail target listing. */
  externalId?: string;
  nvlDomain?: { id: string; name: string };
  location?: { datacenter: string; row: string; position: number };
  components: InventoryComponent[];
}
