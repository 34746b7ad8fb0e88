/**
 * What a local stack's start costs: `--starts` stacks started and stopped one after another on one
 * moto (each on tables and a bucket of its own, as the e2e suites start theirs), then each started
 * again on its tables (a restarted stack's next life), through a counting proxy
 * (bench/lib/request-counter.ts). Prints, per start, the requests by kind, this process's CPU-s
 * (the stack, plus the proxy's share) and moto's.
 *
 *   npx tsx bench/stack-start.ts [--starts 5]
 */
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { startLocalMoto } from "../local/moto.js";
import { startLocalStack } from "../local/stack.js";
import { describeMachine, machineFacts } from "./lib/machine.js";
import { countRows, processCpuSeconds, startRequestCounter } from "./lib/request-counter.js";
import { fixed, printTable } from "./lib/table.js";

const { values: args } = parseArgs({ options: { starts: { type: "string", default: "5" } } });
const STARTS = Number(args.starts);
/** As many versions as the e2e suites add to the seed (test/support/stack.ts TEST_IMAGE_VERSIONS). */
const E2E_VERSIONS = Array.from({ length: 11 }, (_, i) => `9.${i}.0`);

const machine = machineFacts();
const moto = await startLocalMoto();
const counter = await startRequestCounter(moto.endpoint);

interface Phase {
  name: string;
  counts: Map<string, number>;
  seconds: number;
  ownCpu: number;
  motoCpu: number;
}

async function measure(name: string, prefixes: readonly string[]): Promise<Phase> {
  counter.reset();
  const motoBefore = processCpuSeconds(moto.pid()) ?? Number.NaN;
  const ownBefore = process.cpuUsage();
  const started = Date.now();
  for (const tablePrefix of prefixes) {
    const stack = await startLocalStack({
      port: 0,
      tickMs: 1_000,
      awsEndpoint: counter.endpoint,
      tablePrefix,
      noFleet: true,
      imageVersions: E2E_VERSIONS,
      log: () => {},
    });
    await stack.stop();
  }
  const own = process.cpuUsage(ownBefore);
  return {
    name,
    counts: counter.counts(),
    seconds: (Date.now() - started) / 1000,
    ownCpu: (own.user + own.system) / 1e6,
    motoCpu: (processCpuSeconds(moto.pid()) ?? Number.NaN) - motoBefore,
  };
}

// One start first, unmeasured: module loading and the first connections are not a start's cost.
await measure("warm-up", [`bench-start-${randomUUID().slice(0, 8)}-`]);
const prefixes = Array.from({ length: STARTS }, () => `bench-start-${randomUUID().slice(0, 8)}-`);
const phases = [await measure("first start", prefixes), await measure("start again", prefixes)];
await counter.close();
await moto.stop();

console.log(`${describeMachine(machine).join("\n")}\n`);
console.log(`${STARTS} start(s) and stop(s) each; figures per start\n`);
printTable(
  ["phase", "wall s", "stack CPU-s", "moto CPU-s", "requests"],
  phases.map((p) => [
    p.name,
    fixed(p.seconds / STARTS, 2),
    fixed(p.ownCpu / STARTS, 2),
    fixed(p.motoCpu / STARTS, 2),
    String([...p.counts.values()].reduce((a, b) => a + b, 0) / STARTS),
  ]),
);
for (const p of phases) {
  console.log(`\n${p.name}: requests per start`);
  printTable(["request", "count"], countRows(p.counts, STARTS));
}
