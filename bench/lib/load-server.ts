/**
 * The process the load benchmark (bench/load.ts) measures: the gRPC API on its real adapters
 * (bench/lib/api-stack.ts: moto spawned as this process's child, the stores on the front's client
 * profile, the run use cases, the gRPC server with its admission limits), in a process of its own
 * so that its memory is its own. No dispatcher: the load is on the front, not on 2,000 rollouts.
 *
 * Admission limits from FLOW_MAX_IN_FLIGHT_CALLS / FLOW_MAX_CONCURRENT_CREATES, read and checked as
 * the front reads them; absent: the local stack's defaults (local/config.ts: the store is one moto
 * process). Prints one JSON line when ready:
 *   {"address":"127.0.0.1:40123","pid":12345,"admission":{…}}
 * and stops (moto too) on SIGTERM or when its stdin closes (the benchmark went away).
 */
import { LOCAL_ADMISSION_LIMITS } from "../../local/config.js";
import { admissionLimits, admissionSettings } from "../../src/service/config-front.js";
import { configReader } from "../../src/service/env-reader.js";
import { startBenchStack } from "./api-stack.js";

const readAdmission = configReader(admissionSettings(LOCAL_ADMISSION_LIMITS), admissionLimits);
const admission = readAdmission(process.env);
const racks = Number(process.env.BENCH_RACKS ?? "100");
const stack = await startBenchStack({ racks, admission, metered: false });
process.stdout.write(`${JSON.stringify({ address: stack.address, pid: process.pid, admission })}\n`);

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  stack.stop().finally(() => process.exit(0));
};
process.on("SIGTERM", stop);
process.stdin.on("close", stop);
process.stdin.resume();
