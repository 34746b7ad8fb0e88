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
 *   npx tsx bench/bmc-agent.ts [--sizes 64,512] [--flash-ms 2000]
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
import { encodeBmcMessage } from "../src/domain/bmc-protocol.js";
import { decodeBmcEvent } from "../src/domain/bmc-protocol-decode.js";
import { BMC_EVT_TOPIC_FILTER, bmcCmdTopic, parseBmcTopic } from "../src/domain/bmc-topics.js";

const { values: args } = parseArgs({
  options: { sizes: { type: "string", default: "64,512" }, "flash-ms": { type: "string", default: "2000" } },
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
}

async function measure(sizeMb: number): Promise<Row> {
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
      bmcs: ids.map((componentId) => ({
        componentId,
        url: emulator.urlOf(componentId),
        username: "flow",
        passwordEnv: "BENCH_BMC_PASSWORD",
      })),
    }),
  );
  const results = new Map<string, boolean>();
  let lastResultAt = 0;
  let allDone: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    allDone = resolve;
  });
  await broker.subscribe(BMC_EVT_TOPIC_FILTER, (topic, payload) => {
    const decoded = decodeBmcEvent(payload);
    const where = parseBmcTopic(topic);
    if (!decoded.ok || where === undefined || decoded.value.type !== "result") return;
    results.set(where.componentId, decoded.value.ok);
    lastResultAt = performance.now();
    if (results.size === ids.length) allDone();
  });
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
    await Promise.all(
      ids.map((id, i) =>
        broker.publish(
          bmcCmdTopic({ rackId: RACK_ID, componentId: id }),
          encodeBmcMessage({
            v: 1,
            type: "update",
            requestId: `bench-${sizeMb}-${i}`,
            taskId: "7f000000-0000-4000-8000-00000000bbbb",
            targetVersion: version,
            image: { uri: storeUrl, sha256 },
            issuedAt: Date.now(),
          }),
        ),
      ),
    );
    await done;
    const wallS = (lastResultAt - startedAt) / 1000;
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
