/**
 * The local stack's BMCs as Redfish (`npm start -- --bmc redfish`): every inventory component is
 * an emulated Redfish BMC on its own loopback port (local/redfish-emulator.ts), and each rack has
 * its own BMC agent (src/service/bmc-agent, the deployable a rack's management host runs) on the
 * stack's broker, so a run goes image catalog → child task → MQTT → agent → Redfish → inventory
 * read back, the path a real rack takes.
 *
 * A BMC's firmware member `BMC` starts at the component's inventory version (1.0.0 when the
 * inventory has none). The emulated BMCs speak plain HTTP on 127.0.0.1 (the agent allows http://
 * only to loopback) with one user, `flow`, whose password is made per stack and handed to the
 * agents through their environment map, never a file. Racks imported later get BMCs and an agent
 * of their own.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { InventoryRack } from "../src/domain/inventory.js";
import { type BmcAgent, startBmcAgent } from "../src/service/bmc-agent/agent.js";
import { parseAgentConfig } from "../src/service/bmc-agent/config.js";
import { type RedfishEmulator, startRedfishEmulator } from "./redfish-emulator.js";

export interface RedfishFleetOptions {
  brokerUrl: string;
  racks: readonly InventoryRack[];
  /** The agents' state and image cache go under it; absent: a temporary directory, removed at stop. */
  stateDir?: string;
  log?: (line: string) => void;
  /** How often an agent polls a BMC's task monitor (default 200 ms: the emulator is local). */
  pollIntervalMs?: number;
  /**
   * How long an agent gathers its rack's reports into one message (default 100 ms: the local
   * stack's windows are shortened as its poll is; a deployed agent's default is 1 s).
   */
  reportFlushMs?: number;
}

export interface RedfishFleet {
  readonly emulators: readonly RedfishEmulator[];
  /** The emulated BMC of a component, for tests: its record and firmware. */
  emulatorOf(componentId: string): RedfishEmulator | undefined;
  agentOf(rackId: string): BmcAgent | undefined;
  addRacks(racks: readonly InventoryRack[]): Promise<void>;
  stop(): Promise<void>;
}

const USER = "flow";
const PASSWORD_ENV = "FLOW_LOCAL_BMC_PASSWORD";

export async function startRedfishFleet(options: RedfishFleetOptions): Promise<RedfishFleet> {
  const password = randomBytes(12).toString("hex");
  const ownDir = options.stateDir === undefined;
  const root = options.stateDir ?? (await mkdtemp(join(tmpdir(), "flow-redfish-fleet-")));
  const log = options.log ?? (() => {});
  const emulators: RedfishEmulator[] = [];
  const byComponent = new Map<string, RedfishEmulator>();
  const agents = new Map<string, BmcAgent>();

  const addRacks = async (racks: readonly InventoryRack[]) => {
    const fresh = racks.filter((rack) => !agents.has(rack.id) && rack.components.length > 0);
    if (fresh.length === 0) return;
    const emulator = await startRedfishEmulator({
      bmcs: fresh.flatMap((rack) =>
        rack.components.map((c) => ({ id: c.id, firmware: { BMC: c.firmwareVersion ?? "1.0.0" } })),
      ),
      username: USER,
      password,
    });
    emulators.push(emulator);
    for (const rack of fresh) {
      for (const c of rack.components) byComponent.set(c.id, emulator);
      const stateDir = join(root, rack.id);
      const config = parseAgentConfig(
        {
          rackId: rack.id,
          mqtt: { url: options.brokerUrl, clientId: `flow-local-agent-${rack.id}` },
          stateDir,
          timings: { pollIntervalMs: options.pollIntervalMs ?? 200 },
          reportFlushMs: options.reportFlushMs ?? 100,
          bmcs: rack.components.map((c) => ({
            componentId: c.id,
            url: emulator.urlOf(c.id),
            username: USER,
            passwordEnv: PASSWORD_ENV,
          })),
        },
        { baseDir: stateDir, env: { [PASSWORD_ENV]: password } },
      );
      agents.set(rack.id, await startBmcAgent(config, { log: (line) => log(`rack ${rack.name}: ${line}`) }));
    }
  };

  try {
    await addRacks(options.racks);
  } catch (error) {
    await stopAll();
    throw error;
  }

  async function stopAll(): Promise<void> {
    await Promise.allSettled([...agents.values()].map((agent) => agent.stop()));
    await Promise.allSettled(emulators.map((emulator) => emulator.stop()));
    if (ownDir) await rm(root, { recursive: true, force: true });
  }

  return {
    emulators,
    emulatorOf: (componentId) => byComponent.get(componentId),
    agentOf: (rackId) => agents.get(rackId),
    addRacks,
    stop: stopAll,
  };
}
