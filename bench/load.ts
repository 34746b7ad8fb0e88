/**
 * Load benchmark: does the gRPC front shed overload instead of absorbing it? Bounded, loopback
 * only, stops by itself, writes nothing outside its own moto.
 *
 * The server is bench/lib/load-server.ts in a child process (the API on its real adapters, moto as
 * its child, the product's admission limits), so the memory reported is the server's and moto's,
 * not this client's. Against it, at once:
 *
 *   creates   200 CreateOperationRun calls started together, each a 10-rack explicit spec with
 *             its own client request id; a call answered RESOURCE_EXHAUSTED or UNAVAILABLE is
 *             retried with the same id after a full-jitter backoff (seeded), at most 30 attempts
 *   reads     2,000 calls, 50 in flight: GetOperationRun include_stats and ListOperationRuns,
 *             alternating
 *   late      10 creates with a 1 ms deadline, never retried: they must not create runs
 *
 * Every call has a 10 s deadline (the late ones 1 ms). Then it checks and prints:
 *   - every answer arrived within its deadline and was OK, RESOURCE_EXHAUSTED or UNAVAILABLE (the
 *     late ones: DEADLINE_EXCEEDED); per-status counts, p50/p99 latency per kind of call;
 *   - ListOperationRuns.total equals the runs created before the load plus the distinct run ids
 *     the creates were answered with (no create the client saw fail happened, none happened twice);
 *   - every successful create sent again with its id answers the same run, and the total holds;
 *   - RSS of the server and of moto before the load, at its peak (sampled every 250 ms), and after.
 * The process exits 1 if a check fails.
 *
 *   npx tsx bench/load.ts                 ~1-2 minutes on a 2-core machine
 *   npx tsx bench/load.ts --creates 50 --reads 500 --seed 7
 *   FLOW_MAX_CONCURRENT_CREATES=4 npx tsx bench/load.ts   (the server reads the front's variables)
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { generateDemoFleet } from "../local/demo-fleet.js";
import { createFlowClient, type FlowClient } from "../src/adapters/grpc/client.js";
import type { CreateOperationRunRequest } from "../src/gen/flow/v1/flow.js";
import { describeMachine, machineFacts } from "./lib/machine.js";
import { benchCreateRequest } from "./lib/run-builders.js";
import { elapsedMs, summarize } from "./lib/stats.js";
import { fixed, printTable } from "./lib/table.js";

const { values: args } = parseArgs({
  options: {
    creates: { type: "string", default: "200" },
    reads: { type: "string", default: "2000" },
    "read-concurrency": { type: "string", default: "50" },
    late: { type: "string", default: "10" },
    "deadline-ms": { type: "string", default: "10000" },
    seed: { type: "string" },
  },
});
const CREATES = Number(args.creates);
const READS = Number(args.reads);
const READ_CONCURRENCY = Number(args["read-concurrency"]);
const LATE = Number(args.late);
const DEADLINE_MS = Number(args["deadline-ms"]);
const SEED = args.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(args.seed);
const RACKS = 100;
const WARM_RUNS = 5;
const MAX_ATTEMPTS = 30;
const RETRY = { baseMs: 250, capMs: 4_000 };
const ACCEPTED = new Set([grpc.status.OK, grpc.status.RESOURCE_EXHAUSTED, grpc.status.UNAVAILABLE]);
const RETRYABLE = new Set([grpc.status.RESOURCE_EXHAUSTED, grpc.status.UNAVAILABLE]);

const progress = (line: string) => process.stderr.write(`[load] ${line}\n`);

/** mulberry32: the retry jitter and the reads' choices, replayable with --seed. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
const random = seeded(SEED);

interface Answer {
  kind: "create" | "read" | "late create" | "repeat create";
  code: grpc.status;
  ms: number;
  deadlineMs: number;
}
const answers: Answer[] = [];

async function timed<T>(
  kind: Answer["kind"],
  deadlineMs: number,
  call: (options: { deadline: number }) => Promise<T>,
): Promise<{ value?: T; code: grpc.status }> {
  const t = process.hrtime.bigint();
  try {
    const value = await call({ deadline: Date.now() + deadlineMs });
    answers.push({ kind, code: grpc.status.OK, ms: elapsedMs(t), deadlineMs });
    return { value, code: grpc.status.OK };
  } catch (error) {
    const code = (error as grpc.ServiceError).code ?? grpc.status.UNKNOWN;
    answers.push({ kind, code, ms: elapsedMs(t), deadlineMs });
    return { code };
  }
}

// ---------------------------------------------------------------------------------------------
// The server process and its memory

interface Server {
  child: ChildProcess;
  address: string;
  pid: number;
}

async function startServer(): Promise<Server> {
  const child = spawn(process.execPath, ["--import", "tsx", "bench/lib/load-server.ts"], {
    env: { ...process.env, BENCH_RACKS: String(RACKS) },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout! });
  for await (const line of lines) {
    const ready = JSON.parse(line) as { address: string; pid: number; admission: unknown };
    progress(`server ${ready.pid} on ${ready.address}, admission ${JSON.stringify(ready.admission)}`);
    return { child, address: ready.address, pid: ready.pid };
  }
  throw new Error("the load server exited before it was ready");
}

/** VmRSS of a process in MiB (Linux /proc). */
function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN);
  return kb / 1024;
}

/** moto: the server's child process (the serialized launcher, a Python interpreter). */
function motoPid(serverPid: number): number {
  const children = readFileSync(`/proc/${serverPid}/task/${serverPid}/children`, "utf8").trim().split(/\s+/);
  const pid = children.map(Number).find((p) => /python/i.test(readFileSync(`/proc/${p}/cmdline`, "utf8")));
  if (pid === undefined) throw new Error(`no moto among the server's children (${children.join(", ")})`);
  return pid;
}

interface Memory {
  server: number;
  moto: number;
}

const memoryOf = (server: number, moto: number): Memory => ({ server: rssMiB(server), moto: rssMiB(moto) });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// Requests

const fleet = generateDemoFleet({ racks: RACKS });

/** 10 racks of the fleet, chosen by the seeded generator, by id. */
function createRequest(name: string, clientRequestId: string): CreateOperationRunRequest {
  const start = Math.floor(random() * (RACKS - 10));
  const rackIds = fleet.slice(start, start + 10).map((r) => r.id);
  return benchCreateRequest({ name, seed: "load", rackIds, clientRequestId });
}

/** One create, retried with its id while the server sheds; the run id it was finally answered, if any. */
async function createWithRetries(
  flow: FlowClient,
  request: CreateOperationRunRequest,
  kind: Answer["kind"] = "create",
): Promise<{ runId?: string; attempts: number }> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const { value, code } = await timed(kind, DEADLINE_MS, (o) => flow.createOperationRun(request, o));
    if (value?.id?.id) return { runId: value.id.id, attempts: attempt };
    if (!RETRYABLE.has(code)) return { attempts: attempt };
    await sleep(random() * Math.min(RETRY.capMs, RETRY.baseMs * 2 ** (attempt - 1)));
  }
  return { attempts: MAX_ATTEMPTS };
}

async function reads(flow: FlowClient, runIds: readonly string[]): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < READS) {
      const i = next++;
      if (i % 2 === 0) {
        const id = runIds[Math.floor(random() * runIds.length)]!;
        await timed("read", DEADLINE_MS, (o) => flow.getOperationRun({ id: { id }, includeStats: true }, o));
      } else {
        await timed("read", DEADLINE_MS, (o) =>
          flow.listOperationRuns({ filter: undefined, pagination: { offset: 0, limit: 20 } }, o),
        );
      }
    }
  };
  await Promise.all(Array.from({ length: READ_CONCURRENCY }, worker));
}

const total = async (flow: FlowClient) =>
  (
    await flow.listOperationRuns(
      { filter: undefined, pagination: { offset: 0, limit: 1 } },
      { deadline: Date.now() + 30_000 },
    )
  ).total;

// ---------------------------------------------------------------------------------------------

const facts = machineFacts();
const server = await startServer();
const moto = motoPid(server.pid);
const flow = createFlowClient(server.address, grpc.credentials.createInsecure());
const failures: string[] = [];
const check = (ok: boolean, what: string) => {
  if (!ok) failures.push(what);
};

try {
  // Warm-up: runs to read, every code path loaded once.
  const warm: string[] = [];
  for (let i = 0; i < WARM_RUNS; i++) {
    const { runId } = await createWithRetries(flow, createRequest(`warm-${i}`, randomUUID()));
    if (runId === undefined) throw new Error("a warm-up create failed");
    warm.push(runId);
  }
  answers.length = 0;
  const before = await total(flow);
  await sleep(2_000);
  const memoryBefore = memoryOf(server.pid, moto);
  progress(
    `warm: ${before} runs; RSS server ${fixed(memoryBefore.server, 0)} MiB, moto ${fixed(memoryBefore.moto, 0)} MiB`,
  );

  // The load.
  const peak: Memory = { ...memoryBefore };
  const sampler = setInterval(() => {
    const now = memoryOf(server.pid, moto);
    peak.server = Math.max(peak.server, now.server);
    peak.moto = Math.max(peak.moto, now.moto);
  }, 250);
  const started = process.hrtime.bigint();
  const requests = Array.from({ length: CREATES }, (_, i) => createRequest(`load-${i}`, randomUUID()));
  const lateRequests = Array.from({ length: LATE }, (_, i) => createRequest(`late-${i}`, randomUUID()));
  const [created] = await Promise.all([
    Promise.all(requests.map((r) => createWithRetries(flow, r))),
    reads(flow, warm),
    Promise.all(lateRequests.map((r) => timed("late create", 1, (o) => flow.createOperationRun(r, o)))),
  ]);
  const loadMs = elapsedMs(started);
  clearInterval(sampler);
  progress(`load done in ${(loadMs / 1000).toFixed(1)} s`);

  // What the creates were told, against what exists. The late creates' work may still be running
  // on the server: wait it out before counting (they must never commit).
  await sleep(3_000);
  const runIds = created.flatMap((c) => (c.runId === undefined ? [] : [c.runId]));
  const distinct = new Set(runIds);
  const after = await total(flow);
  check(
    distinct.size === runIds.length,
    `${runIds.length - distinct.size} creates were answered an id twice`,
  );
  check(after === before + distinct.size, `total ${after} ≠ ${before} before + ${distinct.size} created`);

  // Retried with their ids: the same runs, no new ones.
  const repeats = await Promise.all(
    created.map(
      async (c, i) =>
        c.runId === undefined ||
        (await createWithRetries(flow, requests[i]!, "repeat create")).runId === c.runId,
    ),
  );
  const afterRepeats = await total(flow);
  check(
    repeats.every(Boolean),
    `${repeats.filter((ok) => !ok).length} repeated creates answered another run`,
  );
  check(afterRepeats === after, `the repeats changed the total: ${after} → ${afterRepeats}`);

  await sleep(5_000);
  const memoryAfter = memoryOf(server.pid, moto);

  // Every answer within its deadline, with an accepted status.
  for (const a of answers) {
    const accepted =
      a.kind === "late create" ? a.code === grpc.status.DEADLINE_EXCEEDED : ACCEPTED.has(a.code);
    check(accepted, `${a.kind} answered ${grpc.status[a.code]}`);
    check(
      a.ms <= a.deadlineMs + 1_000,
      `${a.kind} answered after ${fixed(a.ms, 0)} ms (deadline ${a.deadlineMs} ms)`,
    );
  }

  // ---- Report
  console.log("");
  console.log(`Load benchmark, ${new Date().toISOString()}, seed ${SEED}`);
  for (const line of describeMachine(facts)) console.log(line);
  console.log(
    `server    API on real adapters in its own process (no dispatcher), ${RACKS} racks, moto serialized; deadline ${DEADLINE_MS} ms`,
  );
  console.log(
    `load      ${CREATES} creates at once (10-rack specs, retried with their id: ≤ ${MAX_ATTEMPTS} attempts), ${READS} reads ${READ_CONCURRENCY} in flight, ${LATE} creates with a 1 ms deadline; ${(loadMs / 1000).toFixed(1)} s`,
  );
  console.log("");
  const kinds: Answer["kind"][] = ["create", "read", "late create", "repeat create"];
  const rows: string[][] = [];
  for (const kind of kinds) {
    const ofKind = answers.filter((a) => a.kind === kind);
    const codes = [...new Set(ofKind.map((a) => a.code))].sort((x, y) => x - y);
    for (const code of codes) {
      const ms = summarize(ofKind.filter((a) => a.code === code).map((a) => a.ms));
      rows.push([
        kind,
        grpc.status[code] ?? String(code),
        String(ms.n),
        fixed(ms.median, 1),
        fixed(ms.p99, 1),
        fixed(ms.max, 1),
      ]);
    }
  }
  printTable(["call", "status", "count", "p50 ms", "p99 ms", "max ms"], rows);
  const attempts = summarize(created.map((c) => c.attempts));
  console.log(
    `\ncreates: ${distinct.size} of ${CREATES} created (attempts per create: median ${attempts.median}, max ${attempts.max}); ListOperationRuns.total ${before} → ${after} (+${after - before}), after repeating every create with its id: ${afterRepeats}`,
  );
  console.log("");
  printTable(
    ["RSS MiB", "before", "peak", "after"],
    [
      [
        "server (API + stores)",
        fixed(memoryBefore.server, 0),
        fixed(peak.server, 0),
        fixed(memoryAfter.server, 0),
      ],
      ["moto", fixed(memoryBefore.moto, 0), fixed(peak.moto, 0), fixed(memoryAfter.moto, 0)],
    ],
  );
  console.log("");
  if (failures.length === 0) console.log("checks: all passed");
  else {
    const unique = [...new Set(failures)];
    console.log(`checks: ${failures.length} failed:\n  ${unique.slice(0, 20).join("\n  ")}`);
    process.exitCode = 1;
  }
} finally {
  flow.close();
  server.child.kill("SIGTERM");
  await new Promise((resolve) => server.child.once("exit", resolve));
}
