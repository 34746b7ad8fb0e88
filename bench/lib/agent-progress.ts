/**
 * How many `progress` reports the BMC agent sends per flash, and what they cost a rack in IoT
 * messages: one rack of emulated Redfish BMCs (local/redfish-emulator.ts, plain HTTP on loopback)
 * whose PercentComplete rises 1 % at every read of the task monitor, read every 6 s: a 10-minute
 * flash ticking 1 % at a time, as real BMCs report it. Each BMC is driven by an agent of its own
 * on a stepping clock (stepping-clock.ts: the 10 minutes run in a second or two; pacing is per
 * BMC, so one agent per BMC sends what one agent per rack would), and the local broker counts
 * what reaches the evt topics.
 *
 * The cost per rack is the IoT part of the rollout's cost model (rollout-cost.ts): every message
 * is billed, and every report also passes an IoT rule, its action and an SQS request on its way
 * to the receiver. An update-only rack: per BMC a query and its status (the preflight), the update,
 * its ack, the progress reports and the result.
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startMqttBroker } from "../../local/mqtt-broker.js";
import { firmwareImageHeader, startRedfishEmulator } from "../../local/redfish-emulator.js";
import { type BmcAgent, startBmcAgent } from "../../src/service/bmc-agent/agent.js";
import { parseAgentConfig } from "../../src/service/bmc-agent/config.js";
import { listenForResults, publishUpdates } from "./agent-rack.js";
import { PRICE } from "./rollout-figures.js";
import { steppingClock } from "./stepping-clock.js";

const RACK_ID = "7f000000-0000-4000-8000-0000000000b1";
/** The task monitor read every 6 s, 1 % per read: 1 … 99, then Completed after 600 s. */
export const READ_MS = 6_000;
export const FLASH_PERCENTS = Array.from({ length: 99 }, (_, i) => i + 1);

/** An IoT message, and a report's way on to the receiver: rule, action, SQS request. */
export const COMMAND_USD = PRICE.iotMessage;
export const REPORT_USD = PRICE.iotMessage + PRICE.iotRule + PRICE.iotAction + PRICE.sqsRequest;

export interface RackIot {
  /** Progress reports per BMC's flash, per rack. */
  progressPerFlash: number;
  progressPerRack: number;
  /** IoT messages of an update-only rack: commands (query, update) and reports. */
  messages: number;
  usd: number;
}

/** An update-only rack of `bmcs` whose flashes send `progressPerFlash` reports each. */
export function rackIot(bmcs: number, progressPerFlash: number): RackIot {
  const commands = 2 * bmcs;
  const reports = bmcs * (3 + progressPerFlash); // status, ack, result, progress
  return {
    progressPerFlash,
    progressPerRack: bmcs * progressPerFlash,
    messages: commands + reports,
    usd: commands * COMMAND_USD + reports * REPORT_USD,
  };
}

export interface ProgressRun extends RackIot {
  intervalMs: number;
  /** Fewest and most progress reports of one BMC's flash. */
  min: number;
  max: number;
  ok: number;
}

/** One rack's flashes with the agents' `timings.progressIntervalMs` at `intervalMs`. */
export async function measureProgress(bmcs: number, intervalMs: number): Promise<ProgressRun> {
  const version = "9.9.0";
  const body = Buffer.concat([firmwareImageHeader(version), Buffer.alloc(4096, 0x5a)]);
  const sha256 = createHash("sha256").update(body).digest("hex");
  const store = http.createServer((_req, res) => {
    res.writeHead(200, { "Content-Length": body.length });
    res.end(body);
  });
  await new Promise<void>((resolve) => store.listen(0, "127.0.0.1", () => resolve()));
  const imageUri = `http://127.0.0.1:${(store.address() as AddressInfo).port}/image.bin`;
  const ids = Array.from(
    { length: bmcs },
    (_, i) => `7f000000-0000-4000-8000-0000000006${String(i).padStart(2, "0")}`,
  );
  const broker = await startMqttBroker();
  const emulator = await startRedfishEmulator({
    bmcs: ids.map((id) => ({ id, behaviour: { percents: FLASH_PERCENTS } })),
    username: "flow",
    password: "bench",
  });
  const dir = mkdtempSync(join(tmpdir(), "bench-agent-progress-"));
  const progress = new Map<string, number>(ids.map((id) => [id, 0]));
  const { results, done } = await listenForResults(broker, ids, (id, event) => {
    if (event.type === "progress") progress.set(id, (progress.get(id) ?? 0) + 1);
  });
  const agents: BmcAgent[] = [];
  try {
    for (const [i, componentId] of ids.entries()) {
      const config = parseAgentConfig(
        {
          rackId: RACK_ID,
          mqtt: { url: broker.url, clientId: `bench-progress-${i}` },
          stateDir: join(dir, String(i)),
          timings: {
            pollIntervalMs: READ_MS,
            noProgressTimeoutMs: 120_000,
            settleTimeoutMs: 60_000,
            progressIntervalMs: intervalMs,
          },
          shutdownGraceMs: 0,
          bmcs: [{ componentId, url: emulator.urlOf(componentId), username: "flow", passwordEnv: "PW" }],
        },
        { baseDir: dir, env: { PW: "bench" } },
      );
      agents.push(await startBmcAgent(config, { clock: steppingClock(), log: () => {} }));
    }
    await publishUpdates(broker, RACK_ID, ids, {
      prefix: `progress-${intervalMs}`,
      version,
      uri: imageUri,
      sha256,
    });
    await done;
    const counts = [...progress.values()];
    const perFlash = counts.reduce((a, b) => a + b, 0) / bmcs;
    return {
      ...rackIot(bmcs, perFlash),
      intervalMs,
      min: Math.min(...counts),
      max: Math.max(...counts),
      ok: [...results.values()].filter(Boolean).length,
    };
  } finally {
    for (const agent of agents) await agent.stop();
    await emulator.stop();
    await broker.stop();
    store.closeAllConnections();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
