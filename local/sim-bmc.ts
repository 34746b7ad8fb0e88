/**
 * One simulated BMC's state, and what it says of itself: shared by the simulated fleet
 * (local/bmc-fleet.ts: commands, updates) and its activation (local/bmc-fleet-resets.ts).
 */
import type { ResultEvent, StatusEvent } from "../src/domain/bmc-protocol.js";
import type { ComponentType } from "../src/domain/model.js";

export interface SimBmc {
  id: string;
  rackId: string;
  type: ComponentType;
  version: string;
  /** A flashed version waiting for a reset of the kind this BMC's firmware needs. */
  pending?: string;
  /** Set while a reset runs: queries are answered once it ends. */
  resetting?: Promise<void>;
  /** Set once a flash made it unhealthy (`unhealthyAfterFlash`): it says so in every answer. */
  unhealthy?: boolean;
  offline: boolean;
  /** requestId of the update in progress. */
  busyWith?: string;
  /** requestId → stored result (a reset's: its status), or "running". */
  handled: Map<string, ResultEvent | StatusEvent | "running">;
}

/** Why an `unhealthyAfterFlash` BMC says its component is Critical. */
export const UNHEALTHY_REASON = "simulated: GPU 3 not detected after the flash";

/** What a `not-ready` BMC says about itself in its preflight answer. */
export const NOT_READY_REASON = "simulated: the host is not ready for a flash";

/** What a BMC says of itself: its version, and (v3) one pending. */
export function statusOf(bmc: SimBmc, requestId: string): StatusEvent {
  const status: StatusEvent = { v: 1, type: "status", requestId, version: bmc.version };
  if (bmc.pending !== undefined) status.pendingVersion = bmc.pending;
  if (bmc.unhealthy === true) {
    status.health = "Critical";
    status.healthReason = UNHEALTHY_REASON;
  }
  return status;
}
