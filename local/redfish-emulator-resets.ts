/**
 * Activation in the Redfish emulator: a flashed version is active at once, or staged until the
 * reset its firmware needs (the BMC's `activation`, or any reset when pushed OnReset); a reset
 * action (Manager, ComputerSystem, Chassis) activates what waits for it, and a Manager reset or a
 * Chassis power cycle takes the BMC down for `rebootMs` as a real BMC reboots.
 */
import type http from "node:http";
import { type Bmc, readAll, type Task } from "./redfish-emulator-state.js";
import { HttpProblem } from "./redfish-images.js";
import * as tree from "./redfish-tree.js";

/** Which resets activate what a version waits for: a Chassis power cycle resets everything. */
const RESET_ACTIVATES = {
  manager: ["bmc", "any"],
  system: ["host", "any"],
  chassis: ["bmc", "host", "ac", "any"],
} as const;

/**
 * The flashed version: active at once when pushed Immediate to firmware that needs no reset;
 * else staged until the reset it needs (`activation`), or any reset when pushed OnReset.
 */
export function applyFlash(bmc: Bmc, t: Task): void {
  const version = t.version;
  if (version === undefined) return;
  const needs = bmc.behaviour.activation ?? (t.applyTime === "Immediate" ? undefined : "any");
  for (const id of t.targets) {
    if (needs === undefined) bmc.members.get(id)!.version = version;
    else bmc.staged.set(id, { version, needs });
  }
}

/**
 * Drops every connection, refuses new ones for rebootMs, and comes back having forgotten its tasks
 * and sessions (`whenBack` first: what the reboot applied).
 */
export function goDown(bmc: Bmc, rebootMs: number, whenBack: () => void = () => {}): void {
  bmc.record.reboots += 1;
  bmc.down = true;
  for (const socket of bmc.sockets) socket.destroy();
  setTimeout(() => {
    whenBack();
    bmc.tasks.clear();
    bmc.sessions.clear();
    bmc.running = undefined;
    bmc.down = false;
  }, rebootMs);
}

/**
 * A reset action: its ResetType must be one the resource allows (400 otherwise); it activates
 * what waits for it, answers 204, and a Manager reset or a Chassis power cycle then takes the
 * BMC down for rebootMs (connections dropped, tasks and sessions forgotten).
 */
export async function resetAction(
  bmc: Bmc,
  resource: keyof typeof tree.RESETS,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  rebootMs: number,
): Promise<void> {
  const body = JSON.parse((await readAll(req)).toString("utf8") || "{}") as { ResetType?: unknown };
  const allowed: readonly string[] = tree.RESETS[resource].allowed;
  const type = body.ResetType;
  if (typeof type !== "string" || !allowed.includes(type)) {
    throw new HttpProblem(
      400,
      "Base.1.8.ActionParameterValueNotInList",
      `ResetType ${JSON.stringify(type)} is not one of ${allowed.join(", ")}`,
    );
  }
  const name = { manager: "Manager", system: "ComputerSystem", chassis: "Chassis" }[resource];
  bmc.record.resets.push(`${name}.Reset ${type}`);
  const activates: readonly string[] = RESET_ACTIVATES[resource];
  for (const [id, staged] of bmc.staged) {
    if (!activates.includes(staged.needs)) continue;
    bmc.members.get(id)!.version = staged.version;
    bmc.staged.delete(id);
  }
  // The answer goes out before the BMC drops its connections.
  res.writeHead(204);
  await new Promise<void>((resolve) => res.end(() => resolve()));
  if (resource === "system") return;
  goDown(bmc, rebootMs);
}
