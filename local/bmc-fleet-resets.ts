/**
 * Activation in the simulated fleet (BMC protocol v3 `reset`): a reset is acked, takes `resetMs`,
 * activates a pending version if its kind suffices (an AC cycle resets everything, a BMC reset only
 * the BMC, a host power cycle only the host), and is answered with `status` (the version running,
 * and any still pending); a repeated reset request id is answered from memory, not reset again.
 * A `rack` reset (sent to the rack's power shelf) cycles the whole rack: every BMC of the rack is
 * down for `resetMs` (the shelf's) and then runs every version it had pending; the shelf answers.
 * Queries that arrive during a reset wait for it (local/bmc-fleet.ts).
 */
import type { BmcEvent, ResetCommand, ResetKind } from "../src/domain/bmc-protocol.js";
import type { ComponentType } from "../src/domain/model.js";
import { TYPE_ACTIVATION } from "../src/domain/operation-rules.js";
import { type BmcBehaviour, DEFAULT_RESET_MS, type FleetActivation } from "./fleet-file.js";
import { type SimBmc, statusOf } from "./sim-bmc.js";

/** The reset this BMC's firmware needs to become active; undefined: none (active at once). */
export function neededReset(
  type: ComponentType,
  activation: FleetActivation | undefined,
): ResetKind | undefined {
  if (activation === undefined || activation === "immediate") return undefined;
  if (activation !== "type") return activation;
  return ({ RESET_BMC: "bmc", POWER_CYCLE_HOST: "host", AC_CYCLE: "ac" } as const)[TYPE_ACTIVATION[type]];
}

export interface ResetDeps {
  /** The BMC's behaviour as the fleet file says now. */
  behaviour(bmc: SimBmc): BmcBehaviour;
  /** Waits `ms`, or rejects once the fleet stops. */
  sleep(ms: number): Promise<void>;
  send(componentId: string, event: BmcEvent): Promise<void>;
  /** Every BMC of this BMC's rack (itself included): what a `rack` reset cycles. */
  rackOf(bmc: SimBmc): SimBmc[];
  /** The fleet's stats: a reset of a kind, a version activated. */
  counted: { reset(kind: ResetKind): void; activation(): void };
  onFirmwareChanged?: (componentId: string, version: string) => void | Promise<void>;
  log: (line: string) => void;
}

/** What a simulated BMC does with a `reset`. */
export function resetHandler(deps: ResetDeps): (bmc: SimBmc, command: ResetCommand) => Promise<void> {
  return async function handleReset(bmc: SimBmc, command: ResetCommand): Promise<void> {
    const { requestId } = command;
    const seen = bmc.handled.get(requestId);
    if (seen !== undefined) {
      // Answered from memory (never reset twice); one still running answers when it ends.
      if (seen === "running") await bmc.resetting;
      const stored = bmc.handled.get(requestId);
      if (stored !== undefined && stored !== "running") await deps.send(bmc.id, stored);
      return;
    }
    // What loses power: the rack's every BMC for a `rack` reset, else this one.
    const cycled = command.kind === "rack" ? deps.rackOf(bmc) : [bmc];
    for (let busy = cycled.find((b) => b.resetting); busy; busy = cycled.find((b) => b.resetting))
      await busy.resetting;
    const behaviour = deps.behaviour(bmc);
    bmc.handled.set(requestId, "running");
    deps.counted.reset(command.kind);
    let done: () => void = () => {};
    const resetting = new Promise<void>((resolve) => {
      done = resolve;
    });
    for (const b of cycled) b.resetting = resetting;
    try {
      void deps.send(bmc.id, { v: 3, type: "ack", requestId });
      await deps.sleep(behaviour.resetMs ?? DEFAULT_RESET_MS);
      for (const b of cycled) {
        const needs = neededReset(b.type, deps.behaviour(b).activation);
        // An AC cycle (of the tray or the rack) resets everything; a BMC reset and a host power
        // cycle only what they name.
        const whole = command.kind === "ac" || command.kind === "rack";
        if (b.pending === undefined || !(whole || command.kind === needs)) continue;
        b.version = b.pending;
        b.pending = undefined;
        deps.counted.activation();
        try {
          await deps.onFirmwareChanged?.(b.id, b.version);
        } catch (err) {
          deps.log(`bmc-fleet: onFirmwareChanged(${b.id}) failed: ${(err as Error).message}`);
        }
      }
      const answer = { ...statusOf(bmc, requestId), v: 3 as const };
      bmc.handled.set(requestId, answer);
      await deps.send(bmc.id, answer);
    } finally {
      for (const b of cycled) b.resetting = undefined;
      done();
    }
  };
}
