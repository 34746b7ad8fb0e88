/**
 * BMC agent benchmark: one rack of 39 emulated Redfish BMCs (local/redfish-emulator.ts, each
 * flashing in `--flash-ms` of its own time once it has the image) driven by one `flow-bmc-agent`
 * process over the local MQTT broker, for each image size. Prints per size:
 *
 *   - the agent's wall time (first update published → last result received) against the
 *     emulator's own flash time (its longest task, push accepted → Completed): the ratio is what
 *     downloading, pushing 39 copies and polling cost on top of the flashes themselves;
 *   - the bytes the image store served (one copy per rack, whatever the BMC count);
 *   - the agent process's peak RSS (VmHWM), which streams keep bounded: not image size × BMCs.
 *
 * The BMCs speak plain HTTP on loopback (TLS would measure openssl, not the agent). Images are
 * generated as a stream (a header, then a repeated 1 MiB block), never held whole.
 *
 * Then (first, it takes seconds) the progress reports per flash and per rack, before pacing (every
 * rise) and at the default `timings.progressIntervalMs`, with the IoT cost of an update-only rack
 * (bench/lib/agent-progress.ts); `--progress-only` prints just that.
 *
 * And the rack's report messages, counted on the broker, for the smallest size: each report its
 * own message (`reportFlushMs` 0, the agent before batches) against one message per rack per
 * moment (the default), with what their IoT path costs (each message an IoT message, the rule,
 * its action and an SQS request); `--batching-only` prints just that.
 *
 *   npx tsx bench/bmc-agent.ts [--sizes 64,512] [--flash-ms 2000] [--progress-only] [--batching-only]
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startMqttBroker } from "../local/mqtt-broker.js";
import { firmwareImageHeader, startRedfishEmulator } from "../local/redfish-emulator.js";
import { DEFAULT_REPORT_FLUSH_MS, DEFAULT_TIMINGS } from "../src/service/bmc-agent/config.js";
import { measureProgress, type RackIot, READ_MS, REPORT_USD, rackIot } from "./lib/agent-progress.js";
import { listenForResults, publishUpdates } from "./lib/agent-rack.js";
import { PROGRESS_PERCENTS } from "./lib/production-model.js";
import { usd } from "./lib/rollout-figures.js";

const { values: args } = parseArgs({
  options: {
    sizes: { type: "string", default: "64,512" },
    "flash-ms": { type: "string", default: "2000" },
    "progress-only": { type: "boolean", default: false },
    "batching-only": { type: "boolean", default: false },
  },
});
const SIZES_MB = args.sizes.split(",").map(Number);
const FLASH_MS = Number(args["flash-ms"]);
const BMCS = 39;
const RACK_ID = "7f000000-0000-4000-8000-0000000000a1";
const MiB = 1024 * 1024;
const BIN = join(import.meta.dirname, "..", "cli", "bin", "flow-bmc-agent.js");

/** The image of `size` bytes for `version`, as chunks: header, then 0x5a filler. */
function* imageChunks(version: string, size: number): Generator<Buffer> {
  const header = firmwareImageHeader(version);
  const block = Buffer.alloc(MiB, 0x5a);
  yield header;
  let left = size - header.length;
  while (left > 0) {
    const n = Math.min(left, block.length);
    yield n === block.length ? block : block.subarray(0, n);
    left -= n;
  }
}

function digestOf(version: string, size: number): string {
  const hash = createHash("sha256");
  for (const chunk of imageChunks(version, size)) hash.update(chunk);
  return hash.digest("hex");
}

function peakRssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN);
  return kb / 1024;
}

interface Row {
  sizeMb: number;
  wallS: number;
  flashS: number;
  ratio: number;
  servedMb: number;
  copies: number;
  peakRssMiB: number;
  ok: number;
  /** Reports heard, and the MQTT messages they came in. */
  reports: number;
  messages: number;
}

async function measure(sizeMb: number, reportFlushMs = DEFAULT_REPORT_FLUSH_MS): Promise<Row> {
  const size = sizeMb * MiB;
  const version = `9.${sizeMb}.0`;
  const sha256 = digestOf(version, size);
  let served = 0;
  const store = http.createServer((_req, res) => {
    res.writeHead(200, { "Content-Length": size });
    const chunks = imageChunks(version, size);
    const pump = () => {
      for (;;) {
        const next = chunks.next();
        if (next.done) return void res.end();
        served += next.value.length;
        if (!res.write(next.value)) return void res.once("drain", pump);
      }
    };
    pump();
  });
  await new Promise<void>((resolve) => store.listen(0, "127.0.0.1", () => resolve()));
  const storeUrl = `http://127.0.0.1:${(store.address() as AddressInfo).port}/image.bin`;

  const ids = Array.from(
    { length: BMCS },
    (_, i) => `7f000000-0000-4000-8000-0000000005${String(i).padStart(2, "0")}`,
  );
  const broker = await startMqttBroker();
  const emulator = await startRedfishEmulator({
    bmcs: ids.map((id) => ({ id })),
    username: "flow",
    password: "bench",
    schedule: { stepMs: FLASH_MS / 4 },
  });
  const dir = mkdtempSync(join(tmpdir(), "bench-bmc-agent-"));
  const config = join(dir, "agent.json");
  writeFileSync(
    config,
    JSON.stringify({
      rackId: RACK_ID,
      mqtt: { url: broker.url, clientId: "bench-agent" },
      stateDir: join(dir, "state"),
      timings: { pollIntervalMs: 100 },
      reportFlushMs,
      bmcs: ids.map((componentId) => ({
        componentId,
        url: emulator.urlOf(componentId),
        username: "flow",
        passwordEnv: "BENCH_BMC_PASSWORD",
      })),
    }),
  );
  const { results, lastResultAt, done, counts } = await listenForResults(broker, ids);
  const agent: ChildProcess = spawn(process.execPath, [BIN, "--config", config], {
    env: { ...process.env, BENCH_BMC_PASSWORD: "bench" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  agent.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  try {
    const deadline = Date.now() + 60_000;
    while (!stderr.includes("serving")) {
      if (Date.now() > deadline || agent.exitCode !== null)
        throw new Error(`the agent did not start: ${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const startedAt = performance.now();
    await publishUpdates(broker, RACK_ID, ids, {
      prefix: `bench-${sizeMb}`,
      version,
      uri: storeUrl,
      sha256,
    });
    await done;
    const wallS = (lastResultAt() - startedAt) / 1000;
    const flashS = Math.max(...ids.flatMap((id) => emulator.flashTimes(id))) / 1000;
    const peak = peakRssMiB(agent.pid!);
    return {
      sizeMb,
      wallS,
      flashS,
      ratio: wallS / flashS,
      servedMb: served / MiB,
      copies: served / size,
      peakRssMiB: peak,
      ok: [...results.values()].filter(Boolean).length,
      reports: counts().reports,
      messages: counts().evt + counts().rack,
    };
  } finally {
    agent.kill("SIGTERM");
    await new Promise((resolve) => agent.once("close", resolve));
    await emulator.stop();
    await broker.stop();
    store.closeAllConnections();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function printProgress(): Promise<void> {
  const runs = [];
  // Before pacing, the default, and twice the default (fewer reports, less heartbeat margin).
  for (const interval of [0, DEFAULT_TIMINGS.progressIntervalMs, 2 * DEFAULT_TIMINGS.progressIntervalMs])
    runs.push(await measureProgress(BMCS, interval));
  const line = (what: string, r: RackIot, spread = "") =>
    console.log(
      `${what} | ${r.progressPerFlash.toFixed(1)}${spread} | ${r.progressPerRack.toFixed(0)} | ${r.messages.toFixed(0)} | ${usd(r.usd)}`,
    );
  console.log(
    `BMC agent progress, one rack of ${BMCS} emulated BMCs, a 10-minute flash each (PercentComplete +1 % per read, read every ${READ_MS / 1000} s)`,
  );
  console.log(
    "progress reports | per flash | per rack | IoT messages per rack, update-only | modelled IoT cost per rack",
  );
  for (const r of runs) {
    if (r.ok !== BMCS) throw new Error(`${r.ok}/${BMCS} results ok at interval ${r.intervalMs} ms`);
    const what =
      r.intervalMs === 0
        ? "every rise (before)"
        : `one per ${r.intervalMs / 1000} s${r.intervalMs === DEFAULT_TIMINGS.progressIntervalMs ? " (default)" : ""}`;
    line(what, r, r.min === r.max ? "" : ` (${r.min}-${r.max})`);
  }
  line(
    `the rack model (simulated BMCs: ${PROGRESS_PERCENTS.join("/")} %)`,
    rackIot(BMCS, PROGRESS_PERCENTS.length),
  );
}

async function printBatching(): Promise<void> {
  const sizeMb = Math.min(...SIZES_MB);
  const rows = [
    { what: "one message a report (reportFlushMs 0, before)", row: await measure(sizeMb, 0) },
    {
      what: `one message per rack per moment (reportFlushMs ${DEFAULT_REPORT_FLUSH_MS}, default)`,
      row: await measure(sizeMb, DEFAULT_REPORT_FLUSH_MS),
    },
  ];
  console.log(
    `BMC agent report messages, one rack of ${BMCS} emulated BMCs updating at once (image ${sizeMb} MB, flash ${FLASH_MS} ms), counted on the broker`,
  );
  console.log(
    "reports sent | results ok | reports heard | MQTT messages | messages' IoT cost per rack | agent wall s",
  );
  for (const { what, row } of rows) {
    if (row.ok !== BMCS) throw new Error(`${row.ok}/${BMCS} results ok: ${what}`);
    console.log(
      `${what} | ${row.ok}/${BMCS} | ${row.reports} | ${row.messages} | ${usd(row.messages * REPORT_USD)} | ${row.wallS.toFixed(2)}`,
    );
  }
}

if (args["batching-only"]) {
  await printBatching();
  process.exit(0);
}
await printProgress();
if (args["progress-only"]) process.exit(0);
await printBatching();
const rows: Row[] = [];
for (const sizeMb of SIZES_MB) rows.push(await measure(sizeMb));
console.log(
  `BMC agent, one rack of ${BMCS} emulated Redfish BMCs, flash ${FLASH_MS} ms each (emulator's time)`,
);
console.log(
  "image MB | results ok | agent wall s | emulator flash s | ratio | MB downloaded (copies) | agent peak RSS MiB",
);
for (const r of rows) {
  console.log(
    `${r.sizeMb} | ${r.ok}/${BMCS} | ${r.wallS.toFixed(2)} | ${r.flashS.toFixed(2)} | ${r.ratio.toFixed(2)} | ${r.servedMb.toFixed(0)} (${r.copies.toFixed(2)}) | ${r.peakRssMiB.toFixed(0)}`,
  );
}
