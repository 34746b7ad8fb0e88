/**
 * API benchmark: latency and DynamoDB capacity per call of the run API, through the real gRPC
 * client against the API on its real adapters in-process (bench/lib/api-stack.ts: moto, the
 * stores, the run queries, the gRPC server; no dispatcher, so nothing moves while it measures),
 * with a generated inventory of 100 racks (local/demo-fleet.ts). Stops by itself, writes nothing.
 *
 *   CreateOperationRun       100 candidate racks, 100 %: a run of 100 targets
 *   GetOperationRun + stats  on a 100-target run
 *   ListOperationRunTargets  a page of 100
 *   stats by counters vs by reading every target, interleaved call by call:
 *     counters   GetOperationRun include_stats (one run item)
 *     targets    the reference's way: GetOperationRun, then ListOperationRunTargets pages
 *                (all phases through the current, every status) counted client-side
 *     store      the targets read straight from the store (RunStore.listTargets) and counted,
 *                without gRPC or inventory lookups: the floor of the reference's way
 *
 * Then CreateOperationRun against the size of the fleet (bench/lib/create-scaling.ts): 100,
 * 1,000 and 5,000 racks in inventory, a 10-rack explicit spec and the default scope, before
 * (one Scan of the inventory) and after (racks by key), in the same run.
 *
 * Capacity units are the meter's (bench/lib/capacity-meter.ts, on the stack's client), reset
 * around each measured batch, and ESTIMATED (bench/lib/capacity-estimate.ts): moto reports
 * placeholders (GetItem 0.5, Query 1 whatever it reads) or nothing (writes, transactions), so the
 * meter ignores its figures here.
 *
 *   npx tsx bench/api.ts            ~8 minutes (loading 5,000 racks into moto takes two)
 *   npx tsx bench/api.ts --quick    ~3 minutes, fewer samples, fleets of 100 and 1,000
 *   --full-stack                    the whole local stack instead (dispatch runs in the background)
 *   --fleet-sizes 100,1000          the fleets of the scaling rows
 *   --scaling-only                  only the scaling rows
 */
import { parseArgs } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { createFlowClient } from "../src/adapters/grpc/client.js";
import {
  type CreateOperationRunRequest,
  OperationRunTargetPhaseScope,
  OperationRunTargetStatus,
} from "../src/gen/flow/v1/flow.js";
import { startBenchStack } from "./lib/api-stack.js";
import { type CapacityTotals, emptyCapacityTotals } from "./lib/capacity-meter.js";
import { measureCreateScaling, type ScalingRow } from "./lib/create-scaling.js";
import { describeMachine, machineFacts } from "./lib/machine.js";
import { benchCreateRequest } from "./lib/run-builders.js";
import { elapsedMs, type Summary, summarize } from "./lib/stats.js";
import { fixed, printTable } from "./lib/table.js";

const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    "full-stack": { type: "boolean", default: false },
    "fleet-sizes": { type: "string" },
    "scaling-only": { type: "boolean", default: false },
  },
});

const FLEET_SIZES = (args["fleet-sizes"] ?? (args.quick ? "100,1000" : "100,1000,5000"))
  .split(",")
  .map((s) => Number(s.trim()));
if (FLEET_SIZES.some((n) => !Number.isInteger(n) || n < 10)) {
  throw new Error(
    `--fleet-sizes: whole numbers of at least 10, comma-separated (got ${args["fleet-sizes"]})`,
  );
}

const RACKS = 100;
const PAGE = 100;
/**
 * Samples per measurement: up to `max`, while the measurement's time budget lasts, at least `min`.
 * On moto a call that reads the 100 rack items takes seconds on a busy machine, so the budgets,
 * not `max`, bound the slow rows there; `n` is printed next to every figure.
 */
interface Sampling {
  min: number;
  max: number;
  budgetMs: number;
}
const N: Record<"create" | "get" | "list" | "compare", Sampling> & { warmup: number } = args.quick
  ? {
      create: { min: 2, max: 12, budgetMs: 4_000 },
      get: { min: 10, max: 60, budgetMs: 2_000 },
      list: { min: 2, max: 30, budgetMs: 5_000 },
      compare: { min: 2, max: 30, budgetMs: 5_000 },
      warmup: 1,
    }
  : {
      create: { min: 5, max: 50, budgetMs: 40_000 },
      get: { min: 20, max: 200, budgetMs: 15_000 },
      list: { min: 5, max: 100, budgetMs: 30_000 },
      compare: { min: 5, max: 100, budgetMs: 45_000 },
      warmup: 2,
    };
const DEADLINE_MS = 30_000;

/** On-demand list prices, us-east-1 (as in bench/rollout.ts): $ per million request units. */
const PRICE_PER_MILLION = { read: 0.125, write: 0.625 };

const TERMINAL = new Set([
  OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_COMPLETED,
  OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_FAILED,
  OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_TERMINATED,
  OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_SKIPPED,
]);

interface Measured {
  label: string;
  latency: Summary;
  /** Per call: DynamoDB calls, read units, write units, all units. */
  calls: number;
  rcu: number;
  wcu: number;
  units: number;
  meter: CapacityTotals;
}

const facts = machineFacts();
const started = process.hrtime.bigint();
const progress = (line: string) => process.stderr.write(`[bench] ${line}\n`);

const stack = await startBenchStack({ racks: RACKS, full: args["full-stack"] });
const stackMs = elapsedMs(started);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  // moto is a child process: stop it rather than leave it running.
  process.once(signal, () => void stack.stop().finally(() => process.exit(130)));
}
const flow = createFlowClient(stack.address, grpc.credentials.createInsecure());
const deadline = () => ({ deadline: Date.now() + DEADLINE_MS });

try {
  if (!args["scaling-only"]) {
    progress(`stack up in ${(stackMs / 1000).toFixed(1)} s (${RACKS} racks); measuring…`);
    const results: Measured[] = [];
    let seq = 0;
    // No target spec: the default scope, every rack of the inventory (100 candidates).
    const createRequest = (): CreateOperationRunRequest =>
      benchCreateRequest({ name: `bench-api-${seq++}`, seed: `bench-${seq}` });
    const create = async () => {
      const { id } = await flow.createOperationRun(createRequest(), deadline());
      if (!id?.id) throw new Error("CreateOperationRun returned no id");
      return id.id;
    };

    // --- CreateOperationRun
    const runIds: string[] = [];
    results.push(
      await measure("CreateOperationRun (100 racks, 100 %)", N.create, async () => {
        runIds.push(await create());
      }),
    );
    const runId = runIds[0]!;

    // --- GetOperationRun with stats
    results.push(
      await measure("GetOperationRun include_stats", N.get, async () => {
        const { operationRun } = await flow.getOperationRun(
          { id: { id: runId }, includeStats: true },
          deadline(),
        );
        if (operationRun?.stats?.cumulativePhaseStats?.selectedTargets !== RACKS) {
          throw new Error(`expected ${RACKS} selected targets in the stats`);
        }
      }),
    );

    // --- ListOperationRunTargets, a page of 100
    results.push(
      await measure(`ListOperationRunTargets (page of ${PAGE})`, N.list, async () => {
        const { targets } = await flow.listOperationRunTargets(
          {
            operationRunId: { id: runId },
            status: OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_UNKNOWN,
            pagination: { offset: 0, limit: PAGE },
            phaseScope:
              OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_AND_COMPLETED_PHASES,
          },
          deadline(),
        );
        if (targets.length !== RACKS) throw new Error(`expected ${RACKS} targets, got ${targets.length}`);
      }),
    );

    // --- Stats: counters vs every target row, interleaved so both see the same machine load
    progress("stats by counters vs by targets, interleaved…");
    const byCounters = async () => {
      const { operationRun } = await flow.getOperationRun(
        { id: { id: runId }, includeStats: true },
        deadline(),
      );
      const c = operationRun?.stats?.cumulativePhaseStats;
      return { selected: c?.selectedTargets ?? -1, terminal: terminalOf(c?.outcomeCounts) };
    };
    const byTargets = async () => {
      const { operationRun } = await flow.getOperationRun(
        { id: { id: runId }, includeStats: false },
        deadline(),
      );
      if (operationRun === undefined) throw new Error("run not found");
      let selected = 0;
      let terminal = 0;
      for (let offset = 0; ; offset += PAGE) {
        const page = await flow.listOperationRunTargets(
          {
            operationRunId: { id: runId },
            status: OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_UNKNOWN,
            pagination: { offset, limit: PAGE },
            phaseScope:
              OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_AND_COMPLETED_PHASES,
          },
          deadline(),
        );
        selected += page.targets.length;
        terminal += page.targets.filter((t) => TERMINAL.has(t.status)).length;
        if (page.targets.length < PAGE || offset + PAGE >= page.total) break;
      }
      return { selected, terminal };
    };
    const byStore = async () => {
      const run = await stack.stores.runs.getRun(runId);
      if (run === undefined) throw new Error("run not found");
      const page = await stack.stores.runs.listTargets(runId, {
        phaseFrom: 0,
        phaseTo: run.currentPhaseIndex,
        page: { offset: 0, limit: 10_000 },
      });
      const targets = page?.targets ?? [];
      const terminal = targets.filter((t) =>
        ["COMPLETED", "FAILED", "TERMINATED", "SKIPPED"].includes(t.status),
      );
      return { selected: targets.length, terminal: terminal.length };
    };
    const compared = await interleaved(
      [
        ["stats by counters (GetOperationRun include_stats)", byCounters],
        ["stats by targets (Get + List pages, counted)", byTargets],
        ["stats by targets, store-level (no gRPC)", byStore],
      ],
      N.compare,
    );
    results.push(...compared);

    // --- Report
    console.log("");
    console.log(`API benchmark${args.quick ? " (--quick)" : ""}, ${new Date().toISOString()}`);
    for (const line of describeMachine(facts)) console.log(line);
    console.log(
      `stack     ${args["full-stack"] ? "full local stack (dispatch active!)" : "API on real adapters, no dispatcher"}; moto ${stack.serialized === false ? "NOT serialized" : "serialized"}; ${RACKS} racks (demo fleet: 39 components each); started in ${(stackMs / 1000).toFixed(1)} s`,
    );
    console.log(
      "capacity  estimated from request/answer sizes (capacity-estimate.ts); moto's own figures are ignored",
    );
    console.log("");
    printTable(
      ["call", "n", "median ms", "p99 ms", "DDB calls", "RCU", "WCU", "units", "$ per 1M calls"],
      results.map((r) => [
        r.label,
        String(r.latency.n),
        fixed(r.latency.median, 2),
        fixed(r.latency.p99, 2),
        fixed(r.calls, 1),
        fixed(r.rcu, 1),
        fixed(r.wcu, 1),
        fixed(r.units, 1),
        fixed(r.rcu * PRICE_PER_MILLION.read + r.wcu * PRICE_PER_MILLION.write, 2),
      ]),
    );
    console.log("(DDB calls, RCU, WCU, units: per API call; $: DynamoDB on-demand list price only)");

    const created = results[0]!;
    console.log("");
    console.log(
      `CreateOperationRun per rack targeted: ${fixed(created.units / RACKS, 2)} units (${fixed(created.rcu / RACKS, 2)} RCU + ${fixed(created.wcu / RACKS, 2)} WCU)`,
    );
    console.log(`  by operation: ${byOperation(created.meter, created.latency.n)}`);
    console.log(`  by table:     ${byTable(created.meter, created.latency.n)}`);

    const [counters, targets, store] = compared as [Measured, Measured, Measured];
    console.log("");
    printTable(
      ["stats: reading every target vs counters", "latency (median)", "capacity units"],
      [
        [
          "via the API (Get + List pages) / counters",
          `${fixed(targets.latency.median / counters.latency.median, 1)}×`,
          `${fixed(targets.units / counters.units, 1)}×`,
        ],
        [
          "store-level read / counters",
          `${fixed(store.latency.median / counters.latency.median, 1)}×`,
          `${fixed(store.units / counters.units, 1)}×`,
        ],
      ],
    );
    console.log(
      `(counters: ${fixed(counters.units, 1)} units per call whatever the run's size; reading the targets grows with them: ${fixed(targets.units, 1)} units for ${RACKS})`,
    );
  }

  // --- CreateOperationRun against the size of the fleet: before and after, in this run
  progress(`CreateOperationRun against fleets of ${FLEET_SIZES.join(", ")} racks (own moto)…`);
  const scaling = await measureCreateScaling({
    sizes: FLEET_SIZES,
    samples: args.quick ? 3 : 10,
    maxScanRacks: 1_000,
    progress,
  });
  printScaling(scaling);
  console.log(`\nwall ${(elapsedMs(started) / 1000).toFixed(1)} s`);
} finally {
  flow.close();
  await stack.stop();
}

// ------------------------------------------------------------------------------------------------

async function measure(label: string, sampling: Sampling, call: () => Promise<void>): Promise<Measured> {
  for (let i = 0; i < N.warmup; i++) await call();
  const samples: number[] = [];
  stack.meter.reset();
  const t = process.hrtime.bigint();
  while (
    samples.length < sampling.max &&
    (samples.length < sampling.min || elapsedMs(t) < sampling.budgetMs)
  ) {
    const t0 = process.hrtime.bigint();
    await call();
    samples.push(elapsedMs(t0));
  }
  const meter = stack.meter.snapshot();
  progress(`${label}: median ${summarize(samples).median.toFixed(1)} ms (n ${samples.length})`);
  return perCall(label, samples, meter, samples.length);
}

/**
 * Round-robin over `ways`: call i of every way runs before call i + 1 of any, so a change in the
 * machine's load hits them all alike. The meter is read around every call and added per way.
 */
async function interleaved(
  ways: readonly (readonly [string, () => Promise<unknown>])[],
  sampling: Sampling,
): Promise<Measured[]> {
  // Warm-up rounds double as the check that every way computes the same stats.
  for (let i = 0; i < N.warmup; i++) {
    const answers: unknown[] = [];
    for (const [, call] of ways) answers.push(await call());
    const first = JSON.stringify(answers[0]);
    for (const [w, answer] of answers.entries()) {
      if (JSON.stringify(answer) !== first) {
        throw new Error(
          `"${ways[w]![0]}" disagrees with "${ways[0]![0]}": ${JSON.stringify(answer)} vs ${first}`,
        );
      }
    }
  }
  const samples = ways.map(() => [] as number[]);
  const meters = ways.map(() => emptyCapacityTotals());
  const t = process.hrtime.bigint();
  let n = 0;
  for (; n < sampling.max && (n < sampling.min || elapsedMs(t) < sampling.budgetMs); n++) {
    for (const [w, [, call]] of ways.entries()) {
      stack.meter.reset();
      const t0 = process.hrtime.bigint();
      await call();
      samples[w]!.push(elapsedMs(t0));
      addMeter(meters[w]!, stack.meter.snapshot());
    }
  }
  return ways.map(([label], w) => perCall(label, samples[w]!, meters[w]!, n));
}

function perCall(label: string, samples: number[], meter: CapacityTotals, n: number): Measured {
  return {
    label,
    latency: summarize(samples),
    calls: meter.calls / n,
    rcu: meter.readCapacityUnits / n,
    wcu: meter.writeCapacityUnits / n,
    units: meter.capacityUnits / n,
    meter,
  };
}

function addMeter(into: CapacityTotals, add: CapacityTotals): void {
  into.calls += add.calls;
  into.capacityUnits += add.capacityUnits;
  into.readCapacityUnits += add.readCapacityUnits;
  into.writeCapacityUnits += add.writeCapacityUnits;
  into.unreportedCalls += add.unreportedCalls;
  for (const [op, v] of Object.entries(add.byOperation)) {
    const o = into.byOperation[op] ?? { calls: 0, capacityUnits: 0 };
    o.calls += v.calls;
    o.capacityUnits += v.capacityUnits;
    into.byOperation[op] = o;
  }
  for (const [table, units] of Object.entries(add.byTable))
    into.byTable[table] = (into.byTable[table] ?? 0) + units;
}

function byOperation(meter: CapacityTotals, n: number): string {
  return Object.entries(meter.byOperation)
    .sort(([, a], [, b]) => b.capacityUnits - a.capacityUnits)
    .map(([op, v]) => `${op} ${fixed(v.calls / n, 1)} calls ${fixed(v.capacityUnits / n, 1)} units`)
    .join(", ");
}

function byTable(meter: CapacityTotals, n: number): string {
  const prefix = stack.tables.runs.replace(/Runs$/, "");
  return Object.entries(meter.byTable)
    .sort(([, a], [, b]) => b - a)
    .map(([table, units]) => `${table.replace(prefix, "")} ${fixed(units / n, 1)}`)
    .join(", ");
}

function terminalOf(
  counts: { completed: number; failed: number; terminated: number; skipped: number } | undefined,
) {
  return counts === undefined ? -1 : counts.completed + counts.failed + counts.terminated + counts.skipped;
}

function printScaling(rows: readonly ScalingRow[]): void {
  console.log("");
  console.log(
    "CreateOperationRun against the fleet: the create use case on the real stores (no gRPC), per create",
  );
  printTable(
    ["racks", "request", "way", "n", "median ms", "DDB calls", "RCU", "WCU", "of which Scan", "outcome"],
    rows.map((r) => [
      String(r.racks),
      r.request,
      r.way,
      r.n === 0 ? "-" : String(r.n),
      fixed(r.medianMs, 0),
      fixed(r.calls, 1),
      fixed(r.rcu, 1),
      fixed(r.wcu, 1),
      r.scanCalls === 0 ? "" : `${fixed(r.scanCalls, 0)} pages, ${fixed(r.scanRcu, 0)} RCU`,
      r.outcome === "not run" ? "not run: Scan scaled from 1,000 racks" : r.outcome,
    ]),
  );
  const read = (request: string, way: string, racks: number) =>
    rows.find((r) => r.request === request && r.way === way && r.racks === racks)?.rcu ?? Number.NaN;
  const [smallest, largest] = [Math.min(...FLEET_SIZES), Math.max(...FLEET_SIZES)];
  for (const request of ["10 racks by id", "default scope"]) {
    const growth = (way: string) => fixed(read(request, way, largest) / read(request, way, smallest), 1);
    console.log(
      `${request}: RCU at ${largest} racks / at ${smallest}: after ${growth("after (by key)")}×, before ${growth("before (Scan)")}×`,
    );
  }
  console.log(
    "(units estimated from item sizes, as above; moto's latency is moto's, see docs/benchmarks.md)",
  );
}
