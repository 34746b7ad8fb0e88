/**
 * What a command costs the AWS stand-in: starts a moto (local/moto.ts) behind a counting proxy
 * (bench/lib/request-counter.ts), runs the command with AWS_ENDPOINT_URL set to the proxy (the
 * integration and e2e projects then use that one endpoint instead of starting their own motos),
 * and prints the requests by kind and moto's CPU-s.
 *
 *   npx tsx bench/moto-requests.ts -- npx vitest run --project e2e test/e2e/rollout-gate.test.ts
 */
import { spawn } from "node:child_process";
import { startLocalMoto } from "../local/moto.js";
import { describeMachine, machineFacts } from "./lib/machine.js";
import { countRows, processCpuSeconds, startRequestCounter } from "./lib/request-counter.js";
import { fixed, printTable } from "./lib/table.js";

const dash = process.argv.indexOf("--");
const command = dash < 0 ? [] : process.argv.slice(dash + 1);
if (command.length === 0) {
  console.error("usage: npx tsx bench/moto-requests.ts -- <command> [args...]");
  process.exit(2);
}

const machine = machineFacts();
const moto = await startLocalMoto();
const counter = await startRequestCounter(moto.endpoint);
const cpuBefore = processCpuSeconds(moto.pid()) ?? Number.NaN;
const started = Date.now();
const code = await new Promise<number>((resolve) => {
  const child = spawn(command[0] as string, command.slice(1), {
    stdio: "inherit",
    env: { ...process.env, AWS_ENDPOINT_URL: counter.endpoint },
  });
  child.on("exit", (c, signal) => resolve(c ?? (signal === null ? 1 : 128)));
});
const seconds = (Date.now() - started) / 1000;
const motoCpu = (processCpuSeconds(moto.pid()) ?? Number.NaN) - cpuBefore;
await counter.close();
await moto.stop();

console.log(`\n${describeMachine(machine).join("\n")}`);
console.log(`command   ${command.join(" ")} (exit ${code}, ${fixed(seconds)} s)`);
console.log(`moto CPU  ${fixed(motoCpu, 2)} s\n`);
printTable(["request", "count"], countRows(counter.counts()));
process.exit(code);
