/**
 * What a flowctl start costs: each command below run `--runs` times as the user runs it, a process
 * of its own (`node cli/bin/flowctl.js …`), with the CPU-s it used (user + system, which the process
 * reports as it exits) and its wall time. The first start runs with an empty compile cache, the
 * others reuse what it kept (cli/bin/flowctl.js). With `--baseline DIR` (another checkout with its
 * node_modules installed, e.g. the main branch's), the same commands run from there too, the two
 * alternated run by run so both see the same load.
 *
 *   npx tsx bench/cli-start.ts [--runs 5] [--baseline ../main]
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { describeMachine, machineFacts } from "./lib/machine.js";
import { median } from "./lib/stats.js";
import { fixed, printTable } from "./lib/table.js";

const { values: args } = parseArgs({
  options: { runs: { type: "string", default: "5" }, baseline: { type: "string" } },
});
const RUNS = Number(args.runs);
if (!Number.isInteger(RUNS) || RUNS < 2)
  throw new Error(`--runs: an integer of at least 2 (got ${args.runs})`);

const ROOT = resolve(import.meta.dirname, "..");
/** Nothing listens on port 1: the command fails as against a service that is down. */
const COMMANDS: { name: string; args: string[] }[] = [
  { name: "--help", args: ["--help"] },
  { name: "usage error (run get run-7)", args: ["run", "get", "run-7"] },
  { name: "unreachable (run list)", args: ["--endpoint", "127.0.0.1:1", "--timeout", "5s", "run", "list"] },
];
/** Loaded before the bin: writes the process's own CPU time to fd 3 as it exits. */
const REPORT_CPU = `data:text/javascript,${encodeURIComponent(
  'import { writeSync } from "node:fs"; process.on("exit", () => { const u = process.cpuUsage(); writeSync(3, JSON.stringify((u.user + u.system) / 1e6)); });',
)}`;

interface Start {
  code: number | null;
  cpu: number;
  wall: number;
}

function start(checkout: string, commandArgs: string[], env: NodeJS.ProcessEnv): Promise<Start> {
  const began = performance.now();
  return new Promise((done, fail) => {
    const child = spawn(
      process.execPath,
      ["--import", REPORT_CPU, join(checkout, "cli", "bin", "flowctl.js"), ...commandArgs],
      { cwd: checkout, env, stdio: ["ignore", "ignore", "ignore", "pipe"] },
    );
    let report = "";
    child.stdio[3]?.on("data", (d: Buffer) => {
      report += d.toString();
    });
    child.on("error", fail);
    child.on("close", (code) =>
      done({ code, cpu: Number(report), wall: (performance.now() - began) / 1000 }),
    );
  });
}

interface Variant {
  label: string;
  checkout: string;
  env: NodeJS.ProcessEnv;
  cacheDir?: string;
}

const { NODE_COMPILE_CACHE: _given, ...baseEnv } = process.env;
const variants: Variant[] = [];
if (args.baseline !== undefined) {
  variants.push({ label: "baseline", checkout: resolve(args.baseline), env: { ...baseEnv, NO_COLOR: "1" } });
}
const cacheDir = mkdtempSync(join(tmpdir(), "flowctl-compile-cache-"));
variants.push({
  label: "this checkout",
  checkout: ROOT,
  env: { ...baseEnv, NO_COLOR: "1", NODE_COMPILE_CACHE: cacheDir },
  cacheDir,
});

for (const line of describeMachine(machineFacts())) console.log(line);
const range = (xs: number[]) =>
  `${fixed(median(xs), 2)} (${fixed(Math.min(...xs), 2)}-${fixed(Math.max(...xs), 2)})`;
const rows: string[][] = [];
try {
  for (const command of COMMANDS) {
    const starts = new Map<Variant, Start[]>(variants.map((v) => [v, []]));
    for (let run = 0; run < RUNS; run++) {
      for (const variant of variants)
        starts.get(variant)?.push(await start(variant.checkout, command.args, variant.env));
    }
    for (const variant of variants) {
      const [first, ...rest] = starts.get(variant) ?? [];
      rows.push([
        command.name,
        variant.label,
        String(first?.code),
        range(rest.map((s) => s.cpu)),
        range(rest.map((s) => s.wall)),
        `${fixed(first?.cpu ?? Number.NaN, 2)} / ${fixed(first?.wall ?? Number.NaN, 2)}`,
      ]);
    }
  }
} finally {
  rmSync(cacheDir, { recursive: true, force: true });
}
console.log(
  `\n${RUNS} starts of each command; medians (min-max) of all but the first, which had no compile cache yet:`,
);
printTable(["command", "flowctl", "exit", "CPU-s", "wall s", "first start CPU-s / wall s"], rows);
