/**
 * What the simulated BMC fleet (local/bmc-fleet.ts) counts: every command that arrived, what each
 * BMC did with it, per component, request, task and sub-target; tests and benchmarks read these
 * instead of watching the broker.
 */

export interface FleetStats {
  components: number;
  /** Every message that arrived on a cmd topic, decodable or not. */
  commands: number;
  updateCommands: number;
  queryCommands: number;
  /** Reset commands received (v3), and resets performed per kind (at most one per request id). */
  resetCommands: number;
  resetsByKind: Record<string, number>;
  /** Staged versions a reset made active. */
  activations: number;
  /** Updates that started a flash: at most one per (component, requestId). */
  flashes: number;
  /** Updates answered from memory (a requestId seen before). */
  duplicateUpdates: number;
  busyRejections: number;
  /** Updates refused or failed for their image (fields missing, bytes not matching, not fetched). */
  imageRejections: number;
  /** Image fetches made: one per sha256 when nothing fails (a failed fetch is tried again). */
  imageDownloads: number;
  ignored: { offline: number; unknownComponent: number; malformed: number };
  outcomes: { succeeded: number; failed: number; wrongVersion: number; hung: number; disconnected: number };
  /** Update commands received, per component id. */
  updatesByComponent: Record<string, number>;
  /**
   * When each component's first update command arrived (epoch ms, the fleet's clock): the order a
   * task flashed its components in, as the BMCs saw it.
   */
  firstUpdateAtByComponent: Record<string, number>;
  /** Flashes started, per component id. */
  flashesByComponent: Record<string, number>;
  /** Update commands received, per requestId. */
  updatesByRequest: Record<string, number>;
  /** Flashes started, per taskId. */
  flashesByTask: Record<string, number>;
  /** Flashes of whole components (updates without sub-targets). */
  wholeFlashes: number;
  /** Flashes started, per sub-target flashed (an update with [bmc, bios] counts once for each). */
  flashesBySubTarget: Record<string, number>;
  /**
   * Commands the fleet is done with, per requestId: answered, ignored (unknown or silent BMC), hung
   * after its ack or dropped half-way. Once a command is counted here the fleet publishes nothing
   * more for it, so a test can assert what did NOT come without waiting for a while; and since the
   * fleet reads its one subscription in order, a probe command counted here also proves that every
   * command sent before it on the same topic has arrived.
   */
  doneByRequest: Record<string, number>;
}

export function emptyStats(components: number): FleetStats {
  return {
    components,
    commands: 0,
    updateCommands: 0,
    queryCommands: 0,
    resetCommands: 0,
    resetsByKind: {},
    activations: 0,
    flashes: 0,
    duplicateUpdates: 0,
    busyRejections: 0,
    imageRejections: 0,
    imageDownloads: 0,
    ignored: { offline: 0, unknownComponent: 0, malformed: 0 },
    outcomes: { succeeded: 0, failed: 0, wrongVersion: 0, hung: 0, disconnected: 0 },
    updatesByComponent: {},
    firstUpdateAtByComponent: {},
    flashesByComponent: {},
    updatesByRequest: {},
    flashesByTask: {},
    wholeFlashes: 0,
    flashesBySubTarget: {},
    doneByRequest: {},
  };
}

export function bump(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}
