/**
 * Durability benchmark: what `--data-dir` costs. The README's quick-start run
 * (examples/quickstart.yaml: 15 racks of the demo fleet, three phases, five at a time) on the local
 * stack as `npm start -- --tick 1s` builds it, once without a data directory and once with a fresh
 * one, in the same sitting (alternating when `--rounds` > 1), each from CreateOperationRun's answer
 * to the run's terminal state. Then, for the data-dir stack: how long its stop took (the final
 * snapshot) and how long a restart on that directory takes to be listening again. Prints one table.
 *
 *   npx tsx bench/durability.ts [--rounds 1]
 *   BENCH_VERBOSE=1: the stack's log too, each line timed from the stack's start.
 */

import { readFileSync } from "node:fs";
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { parseRunFile } from "../cli/run-file/load.js";
import { type LocalStack, startLocalStack } from "../local/stack.js";
import { createFlowClient } from "../src/adapters/grpc/client.js";
import { OperationRunStatus } from "../src/gen/flow/v1/flow.js";

const { values: args } = parseArgs({ options: { rounds: { type: "string", default: "1" } } });
const ROUNDS = Number(args.rounds);
const QUICKSTART = join(import.meta.dirname, "..", "examples", "quickstart.yaml");
const TERMINAL = new Set([
  OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED,
  OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED_WITH_FAILURES,
  OperationRunStatus.OPERATION_RUN_STATUS_FAILED,
  OperationRunStatus.OPERATION_RUN_STATUS_CANCELLED,
]);

interface Measured {
  mode: string;
  runSeconds: number;
  status: string;
  skippedTicks: number;
  /** Progress reads (GetOperationRun, 30 s deadline) that failed. */
  failedReads: number;
  stopSeconds: number;
  restartSeconds?: number;
  dataDirBytes?: number;
}

async function quickstartRun(dataDir: string | undefined): Promise<Measured> {
  const lines: string[] = [];
  const t0 = performance.now();
  const start = (dir: string | undefined) =>
    startLocalStack({
      port: 0,
      tickMs: 1000,
      ...(dir === undefined ? {} : { dataDir: dir }),
      log: (line) => {
        lines.push(line);
        if (process.env.BENCH_VERBOSE)
          console.log(`+${((performance.now() - t0) / 1000).toFixed(3)}s ${line}`);
      },
    });
  let stack: LocalStack = await start(dataDir);
  const flow = createFlowClient(`127.0.0.1:${stack.port}`, grpc.credentials.createInsecure());
  const request = parseRunFile(readFileSync(QUICKSTART, "utf8"), QUICKSTART);
  const began = performance.now();
  const { id } = await flow.createOperationRun(request, { deadline: Date.now() + 60_000 });
  let status = OperationRunStatus.OPERATION_RUN_STATUS_UNKNOWN;
  let failedReads = 0;
  while (!TERMINAL.has(status)) {
    await new Promise((r) => setTimeout(r, 250));
    try {
      const { operationRun } = await flow.getOperationRun(
        { id: { id: id?.id ?? "" }, includeStats: false },
        { deadline: Date.now() + 30_000 },
      );
      status = operationRun?.summary?.state?.status ?? status;
    } catch (error) {
      failedReads += 1;
      console.log(`  GetOperationRun failed: ${(error as Error).message}`);
    }
  }
  const runSeconds = (performance.now() - began) / 1000;
  flow.close();
  const stopBegan = performance.now();
  await stack.stop();
  const stopSeconds = (performance.now() - stopBegan) / 1000;
  const measured: Measured = {
    mode: dataDir === undefined ? "without --data-dir" : "with --data-dir",
    runSeconds,
    status: OperationRunStatus[status].replace("OPERATION_RUN_STATUS_", ""),
    skippedTicks: lines.filter((l) => l.includes("tick skipped")).length,
    failedReads,
    stopSeconds,
  };
  if (dataDir !== undefined) {
    measured.dataDirBytes = await dirBytes(dataDir);
    const restartBegan = performance.now();
    stack = await start(dataDir);
    measured.restartSeconds = (performance.now() - restartBegan) / 1000;
    await stack.stop();
  }
  return measured;
}

async function dirBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return total;
}

async function main(): Promise<void> {
  const results: Measured[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate which goes first, so a load change on the shared machine hits both alike.
    const order = round % 2 === 0 ? [false, true] : [true, false];
    for (const withDir of order) {
      const dir = withDir ? await mkdtemp(join(tmpdir(), "flow-bench-data-")) : undefined;
      try {
        const r = await quickstartRun(dir);
        console.log(`  ${r.mode}: ${r.runSeconds.toFixed(1)} s, ${r.status}`);
        results.push(r);
      } finally {
        if (dir !== undefined) await rm(dir, { recursive: true, force: true });
      }
    }
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const of = (mode: string) => results.filter((r) => r.mode === mode).map((r) => r.runSeconds);
  const without = of("without --data-dir");
  const withDir = of("with --data-dir");
  console.log(`quick-start run (examples/quickstart.yaml, --tick 1s), ${ROUNDS} round(s)`);
  console.log("| mode | run s | status | skipped ticks | failed reads | stop s | restart s | data dir MB |");
  console.log("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |");
  for (const r of results) {
    console.log(
      `| ${r.mode} | ${r.runSeconds.toFixed(1)} | ${r.status} | ${r.skippedTicks} | ${r.failedReads} | ${r.stopSeconds.toFixed(1)} | ${r.restartSeconds?.toFixed(1) ?? ""} | ${r.dataDirBytes === undefined ? "" : (r.dataDirBytes / 1e6).toFixed(1)} |`,
    );
  }
  // Round by round (the two runs of a round saw about the same load), then over all rounds.
  const perRound = withDir.map((w, i) => (w / (without[i] ?? Number.NaN)).toFixed(2));
  console.log(
    `with / without: ${(mean(withDir) / mean(without)).toFixed(2)}× over the means (per round: ${perRound.join(", ")}; aim: at most 1.2×)`,
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
