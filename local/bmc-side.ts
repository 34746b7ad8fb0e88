/**
 * What answers on the BMC topics of the local stack, and the IoT data-plane shim commands go out
 * through: a local MQTT broker with the simulated fleet (local/bmc-fleet.ts), emulated Redfish BMCs
 * with a BMC agent per rack (local/redfish-fleet.ts), or nothing (a `flow-bmc-agent` connects by
 * hand); or a broker outside this process (`bmcBroker`), whose BMCs are someone else's.
 */

import { join } from "node:path";
import type { InventoryRack } from "../src/domain/inventory.js";
import { type BmcFleet, startBmcFleet } from "./bmc-fleet.js";
import type { LocalChildTasksOptions } from "./child-tasks.js";
import { defaultFleetConfig, type FleetConfig } from "./fleet-file.js";
import { type IotShim, startIotShim } from "./iot-shim.js";
import { connectMqttPublisher, startMqttBroker } from "./mqtt-broker.js";
import { type RedfishFleet, startRedfishFleet } from "./redfish-fleet.js";

/** The LocalStackOptions of the same names (local/stack.ts), which say what each one does. */
export interface BmcSideOptions {
  bmcBroker?: string;
  mqttPort?: number;
  bmc?: "simulated" | "redfish";
  noFleet?: boolean;
  fleet?: FleetConfig;
  dataDir?: string;
}

export interface BmcSide {
  shim: IotShim;
  /** How the child tasks' IoT rule reaches the broker: in process, or at its URL. */
  rule: Pick<LocalChildTasksOptions, "broker" | "brokerUrl">;
  /** The local broker (`mqtt://127.0.0.1:<port>`); absent with `bmcBroker`. */
  mqttUrl?: string;
  fleet?: BmcFleet;
  redfish?: RedfishFleet;
}

/** Starts the parts; each one's stop goes on `stops`, in start order (the stack stops them in reverse). */
export async function startBmcSide(
  options: BmcSideOptions,
  racks: InventoryRack[],
  stops: (() => Promise<void>)[],
  log: (line: string) => void,
): Promise<BmcSide> {
  let fleet: BmcFleet | undefined;
  let redfish: RedfishFleet | undefined;
  let shim: IotShim;
  let rule: Pick<LocalChildTasksOptions, "broker" | "brokerUrl">;
  let mqttUrl: string | undefined;
  if (options.bmcBroker === undefined) {
    const broker = await startMqttBroker(options.mqttPort === undefined ? {} : { port: options.mqttPort });
    stops.push(() => broker.stop());
    mqttUrl = broker.url;
    shim = await startIotShim(broker);
    stops.push(() => shim.stop());
    if (options.bmc === "redfish") {
      const started = await startRedfishFleet({
        brokerUrl: broker.url,
        racks,
        ...(options.dataDir === undefined ? {} : { stateDir: join(options.dataDir, "bmc-agents") }),
        log,
      });
      redfish = started;
      stops.push(() => started.stop());
      log(`BMCs: ${racks.length} rack(s) of emulated Redfish BMCs, one BMC agent per rack`);
    } else if (!options.noFleet) {
      const started = await startBmcFleet({
        brokerUrl: broker.url,
        racks,
        config: options.fleet ?? defaultFleetConfig(),
        // Each image is fetched once from the catalog and checked, as a BMC agent would.
        downloadImages: true,
      });
      fleet = started;
      stops.push(() => started.stop());
    }
    rule = { broker };
  } else {
    const publisher = await connectMqttPublisher(options.bmcBroker);
    stops.push(() => publisher.stop());
    shim = await startIotShim(publisher);
    stops.push(() => shim.stop());
    rule = { brokerUrl: options.bmcBroker };
  }
  return {
    shim,
    rule,
    ...(mqttUrl === undefined ? {} : { mqttUrl }),
    ...(fleet === undefined ? {} : { fleet }),
    ...(redfish === undefined ? {} : { redfish }),
  };
}
