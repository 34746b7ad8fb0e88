/**
 * The fleet simulation: what one deployment does with 1, 10, 100 and 1,000 active runs of 100 racks
 * each (concurrency 10), and one run of 100 racks at concurrency 100, against DynamoDB's latencies
 * and the default quotas of us-east-1 (the figures and their sources: ASSUMED below and
 * docs/capacity.md). The product's own dispatcher and stream evaluator run on virtual time over the
 * in-memory run store (bench/lib/memory-run-store.ts, the tests' store) with every call delayed by
 * the DynamoDB request it stands for (bench/lib/latency-store.ts); a child task is a 10-minute
 * timer (`--task-minutes`) whose own state transitions, Lambda invocations and IoT messages are the
 * child-task definition's model of a rack (bench/lib/rack-model.ts, RACK below; bench:rollout prints
 * it beside what it measures) and whose DynamoDB requests are bench:rollout's last measurement
 * (bench/rollout-rack.json), spread over its flash (bench/lib/fleet-sim.ts); its reports are taken
 * in the queue's batches, which send its waits' Step Functions callbacks (SendTaskHeartbeat,
 * SendTaskSuccess: bench/lib/fleet-rates.ts). Per rack at each scale, for the update alone and the
 * default rule, with the simulated BMCs and behind the Redfish agent: the Lambda invocations
 * against the aim, the callbacks, the report writes and the cost (bench/lib/fleet-racks.ts).
 *
 * Checked against moto: the same harness runs one run on the DynamoDB adapter against a local moto
 * in real time, then the simulation runs the same scenario with the per-request latencies moto
 * showed; their makespan efficiency, refill lag and requests per rack are printed side by side,
 * with the tolerance they must meet.
 *
 *   npx tsx bench/fleet.ts            every scenario, 10-minute flashes, and the moto check
 *   npx tsx bench/fleet.ts --quick    the same scenarios with 20 racks a run, a 60-rack moto check (about 1 min)
 *   flags: --seed N, --skip-moto, --task-minutes N (bench/lib/fleet-args.ts)
 */
import { loadavg } from "node:os";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { generateDemoFleet } from "../local/demo-fleet.js";
import { startLocalMoto } from "../local/moto.js";
import { awsClientConfig } from "../src/adapters/aws-config.js";
import { createDynamoStores, createTables, tableNames } from "../src/adapters/dynamodb/index.js";
import { systemClock } from "../src/adapters/system-clock.js";
import { DEFAULT_CHILD_TASK_SETTINGS } from "../src/app/child-task/settings.js";
import { DEFAULT_RULE } from "../src/domain/operation-rules.js";
import { parseFleetArgs } from "./lib/fleet-args.js";
import { type FleetRack, printPerRack, rackOf } from "./lib/fleet-racks.js";
import { callbackSeries, rackShares } from "./lib/fleet-rates.js";
import { runScenario, type Scenario, type ScenarioResult } from "./lib/fleet-sim.js";
import type { StoreCall } from "./lib/latency-store.js";
import { REQUEST_KIND, type RequestKind } from "./lib/latency-store.js";
import { MemoryRunStore } from "./lib/memory-run-store.js";
import { modelProductionWave } from "./lib/production-model.js";
import { modelRack, ROLLOUT_MAX_PARALLEL } from "./lib/rack-model.js";
import { readRackRecord } from "./lib/rollout-rack-record.js";
import { percentile } from "./lib/stats.js";
import { fixed, printTable } from "./lib/table.js";
import { type Latency, seededRandom, VirtualTime } from "./lib/virtual-time.js";

/**
 * A child task's own traffic per rack for 10-minute flashes (state transitions, task-steps
 * invocations, IoT commands and reports), from the child-task definition's shape
 * (bench/lib/rack-model.ts, which bench:rollout checks against what it measures): the demo fleet's
 * GB200-shaped rack of 39 BMCs under the built-in default rule, in bench:rollout's waves (one per
 * group), each flash step checked as the product's schedule checks a 10-minute flash
 * (bench/lib/production-model.ts); with its waits' callbacks (SendTaskSuccess, SendTaskHeartbeat)
 * for each second's report batches (bench/lib/fleet-rates.ts).
 */
const RACK = rackOf(DEFAULT_RULE);
/** The same rack without AwaitWave's heartbeat (a 10-minute flash timed out into a second check). */
const RACK_WITHOUT_HEARTBEAT = modelRack(DEFAULT_RULE, generateDemoFleet({ racks: 1 })[0]?.components ?? [], {
  maxParallel: ROLLOUT_MAX_PARALLEL,
  checksPerFlashStep: modelProductionWave(DEFAULT_CHILD_TASK_SETTINGS).noHeartbeatChecksPerWave,
  path: "timeout",
});

/**
 * DynamoDB requests of a rack's child task (the lock, the preflight, the waves, the reports, the
 * outcome; not the run's own, which the simulated dispatcher makes here), modelled for 10-minute
 * flashes by bench:rollout's last run of the default rule (bench/rollout-rack.json): measured on
 * the local stack, whose reports' batches are shorter than AWS's, so it is the one figure here not
 * derived from the definition (RACK above).
 */
const RACK_RECORD = readRackRecord();
const CHILD_REQUESTS_PER_RACK = RACK_RECORD.requests.tenMinuteFlashes - RACK_RECORD.runRequests;

/**
 * Every figure not measured here. None could be re-read on the day (no network on this machine):
 * each is as the named AWS page stated it when last read, and is an assumption until checked.
 */
const ASSUMED = {
  /** DynamoDB: "single-digit millisecond" (DynamoDB developer guide, overview); p99s assumed 3×. */
  dynamo: {
    GetItem: { p50: 4, p99: 12 },
    Query: { p50: 5, p99: 15 },
    UpdateItem: { p50: 6, p99: 18 },
    TransactWriteItems: { p50: 12, p99: 36 },
  } satisfies Record<RequestKind, Latency>,
  /** Lambda asynchronous Invoke accepted (202), StartExecution answered: assumed. */
  invoke: { p50: 25, p99: 80 },
  startExecution: { p50: 40, p99: 120 },
  /** A stream record to its evaluator: the mapping polls each shard about 4 times a second. */
  stream: { p50: 150, p99: 300 },
  /** Default quotas, us-east-1 (Step Functions, Lambda, IoT Core, DynamoDB "Quotas" pages). */
  quota: {
    startExecutionBurst: 1_300,
    startExecutionPerSecond: 300,
    stateTransitionsPerSecond: 5_000,
    lambdaConcurrency: 1_000,
    iotPublishesPerSecond: 20_000,
    partitionWcuPerSecond: 1_000,
    tableRequestUnitsPerSecond: 40_000,
    /**
     * SendTaskHeartbeat and SendTaskSuccess, each its own bucket (Step Functions "Quotas related to
     * API action throttling", "Other quotas", us-east-1): 3,000, refilled 500 a second.
     */
    sendTaskBurst: 3_000,
    sendTaskPerSecond: 500,
  },
  /**
   * The reports queue's event source mapping (infra): batches of up to 1,000 reports gathered
   * for at most 1 s, by pollers that start 5 at a time; a second's reports are assumed split
   * over up to that many batches.
   */
  reportBatch: { size: 1_000, pollers: 5 },
  /** A Lambda invocation's mean duration, for concurrency = rate × duration. */
  invocationSeconds: 0.2,
  /** Write units: a run item (~2 KB) and a target item (39 components, ~2 KB); transactions bill twice. */
  runItemWcu: 2,
  /**
   * The other items a dispatcher call reads or writes (a target, an event, a due-index page) are
   * under 1 KB: 1 unit a read (strongly consistent, under 4 KB) and 1 a write; a transaction's
   * other item (the target) is ~2 KB, and a transaction bills twice.
   */
  otherItemUnits: 1,
  transactionTargetWcu: 2,
} as const;

/** A dispatcher call's capacity units, by the item sizes assumed above. */
function unitsOf(c: StoreCall): number {
  if (c.kind === "GetItem" || c.kind === "Query") return ASSUMED.otherItemUnits;
  const own = c.writesRunItem ? ASSUMED.runItemWcu : ASSUMED.otherItemUnits;
  return c.kind === "TransactWriteItems" ? 2 * (own + ASSUMED.transactionTargetWcu) : own;
}

interface Figures {
  label: string;
  scenario: Scenario;
  result: ScenarioResult;
}

async function simulate(
  s: Scenario,
  seed: number,
  latency: Record<RequestKind, Latency> = ASSUMED.dynamo,
  serial = false,
) {
  const time = new VirtualTime(1_800_000_000_000);
  return runScenario(s, {
    store: new MemoryRunStore(),
    clock: time,
    runUntil: (done) => time.run(done),
    latency,
    ...(serial ? { serial } : {}),
    invoke: ASSUMED.invoke,
    startExecution: ASSUMED.startExecution,
    stream: ASSUMED.stream,
    random: seededRandom(seed),
    startBucket: {
      burst: ASSUMED.quota.startExecutionBurst,
      perSecond: ASSUMED.quota.startExecutionPerSecond,
    },
  });
}

async function onMoto(
  s: Scenario,
  seed: number,
): Promise<ScenarioResult & { loopDelayMs: { p50: number; p99: number } }> {
  const moto = await startLocalMoto();
  // How late the harness's own timers ran: the simulation draws none of it.
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const client = new DynamoDBClient(
    awsClientConfig({
      endpoint: moto.endpoint,
      region: "us-east-1",
      credentials: { accessKeyId: "bench", secretAccessKey: "bench" },
    }),
  );
  try {
    const names = tableNames("fleet-");
    await createTables(client, names);
    const runs = createDynamoStores(client, names).runs;
    const result = await runScenario(s, {
      store: runs,
      clock: systemClock,
      runUntil: async (done) => {
        while (!done()) await new Promise((resolve) => setTimeout(resolve, 20));
      },
      invoke: ASSUMED.invoke,
      startExecution: ASSUMED.startExecution,
      stream: ASSUMED.stream,
      random: seededRandom(seed),
    });
    loop.disable();
    return { ...result, loopDelayMs: { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6 } };
  } finally {
    // Let the requests still on their way (a last tick, a late wake-up) end before moto does.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    client.destroy();
    await moto.stop();
  }
}

/**
 * Per kind, how long moto took to serve a call (for the simulation of the moto run, which serves
 * them one at a time as moto does): from the calls that had moto to themselves (no other call in
 * flight between their sending and their answer), since a call that overlapped others also waited
 * for them, and the simulation's own queue adds that wait. A kind never alone: all its calls.
 */
function latenciesOf(calls: readonly StoreCall[]): Record<RequestKind, Latency> {
  const out = { ...ASSUMED.dynamo } as Record<RequestKind, Latency>;
  const alone = calls.filter(
    (c) => !calls.some((o) => o !== c && o.sent < c.answered && o.answered > c.sent),
  );
  for (const kind of new Set(Object.values(REQUEST_KIND))) {
    const own = alone.filter((c) => c.kind === kind);
    const ms = (own.length > 0 ? own : calls.filter((c) => c.kind === kind)).map((c) => c.answered - c.sent);
    if (ms.length > 0) out[kind] = { p50: percentile(ms, 50), p99: percentile(ms, 99) };
  }
  return out;
}

/** An event-loop delay p99 above this in the moto run: the machine, not the model, shaped its figures. */
const LOADED_LOOP_DELAY_MS = 50;

const ideal = (s: Scenario) => Math.ceil(s.racks / s.concurrency) * s.flashMs;
const efficiency = (f: Figures) => ideal(f.scenario) / percentile(f.result.makespans, 50);
const racksOf = (s: Scenario) => s.runs * s.racks;

/** Per second of the run, how many racks' child tasks it holds (each spread over its flash). */
function sharesOf(f: Figures): Float64Array {
  return rackShares(f.result.flashes, Math.ceil(f.result.wallMs / 1000) + 1);
}

/** Per second of the run, the rate of each quota's resource. */
function rates(f: Figures) {
  const shares = sharesOf(f);
  const seconds = shares.length;
  const series = () => new Float64Array(seconds);
  const starts = series();
  const transitions = series();
  const invocations = series();
  const iot = series();
  const requests = series();
  for (const at of f.result.submits) starts[Math.floor(at / 1000)]! += 1;
  for (const at of f.result.invocations) invocations[Math.floor(at / 1000)]! += 1;
  const t0 = f.result.calls[0]?.sent ?? 0;
  for (const c of f.result.calls) requests[Math.max(0, Math.floor((c.sent - t0) / 1000))]! += 1;
  // A child task's own traffic, spread evenly over its flash; bmc-result in the second's batches
  // and the callbacks they send (bench/lib/fleet-rates.ts).
  const callbacks = callbackSeries(shares, RACK, ASSUMED.reportBatch);
  shares.forEach((share, s) => {
    transitions[s]! += share * RACK.transitions;
    invocations[s]! += share * RACK.taskSteps + callbacks.invocations[s]!;
    iot[s]! += share * RACK.iotMessages;
    requests[s]! += share * CHILD_REQUESTS_PER_RACK;
  });
  const peak = (a: Float64Array) => a.reduce((m, v) => Math.max(m, v), 0);
  // The hottest run item: its writes in its busiest second.
  const perItem = new Map<string, number>();
  let hottest = 0;
  for (const c of f.result.calls) {
    if (!c.writesRunItem || c.runId === undefined) continue;
    const key = `${c.runId}@${Math.floor((c.sent - t0) / 1000)}`;
    const n = (perItem.get(key) ?? 0) + (c.kind === "TransactWriteItems" ? 2 : 1) * ASSUMED.runItemWcu;
    perItem.set(key, n);
    hottest = Math.max(hottest, n);
  }
  const q = ASSUMED.quota;
  return [
    // The bucket holds 1,300 and refills 300 a second: a second may start up to 1,300 when it is
    // full; what a scenario asks beyond it waits (the "StartExecution waits" printed per scenario).
    ["StartExecution /s", peak(starts), q.startExecutionBurst],
    ["state transitions /s", peak(transitions), q.stateTransitionsPerSecond],
    ["Lambda concurrency", peak(invocations) * ASSUMED.invocationSeconds, q.lambdaConcurrency],
    ["IoT publishes /s", peak(iot), q.iotPublishesPerSecond],
    ["DynamoDB requests /s (table)", peak(requests), q.tableRequestUnitsPerSecond],
    ["hottest run item WCU /s", hottest, q.partitionWcuPerSecond],
    // Sustained for the whole flash: held against the refill (the bucket covers 3,000 calls over it).
    ["SendTaskHeartbeat /s", peak(callbacks.heartbeats), q.sendTaskPerSecond],
    ["SendTaskSuccess /s", peak(callbacks.wakeUps), q.sendTaskPerSecond],
  ] as const;
}

function printScenarios(all: Figures[]): void {
  printTable(
    [
      "scenario",
      "pass p50/p99 ms",
      "tick requests p50/max",
      "tick ms p50/p99",
      "efficiency",
      "refill lag p50/p99 ms",
      "dispatcher requests/rack",
      "dispatcher units/rack (est.)",
      "binding limit (peak / quota)",
    ],
    all.map((f) => {
      const r = f.result;
      const limits = rates(f);
      const binding = [...limits].sort((a, b) => b[1] / b[2] - a[1] / a[2])[0]!;
      return [
        f.label,
        `${fixed(percentile(r.passMs, 50))} / ${fixed(percentile(r.passMs, 99))}`,
        `${percentile(r.tickRequests, 50)} / ${percentile(r.tickRequests, 100)}`,
        `${fixed(percentile(r.tickMs, 50))} / ${fixed(percentile(r.tickMs, 99))}`,
        fixed(efficiency(f), 3),
        `${fixed(percentile(r.refillLags, 50))} / ${fixed(percentile(r.refillLags, 99))}`,
        fixed(r.calls.length / racksOf(f.scenario), 2),
        fixed(r.calls.reduce((sum, c) => sum + unitsOf(c), 0) / racksOf(f.scenario), 1),
        `${binding[0]} ${fixed(binding[1], 1)} / ${binding[2]} (${fixed((100 * binding[1]) / binding[2], 1)} %)`,
      ];
    }),
  );
  console.log("\nPeak rate per quota (fraction of the us-east-1 default):");
  const names = rates(all[0]!).map((l) => l[0]);
  printTable(
    ["scenario", ...names],
    all.map((f) => [
      f.label,
      ...rates(f).map((l) => `${fixed(l[1], 1)} (${fixed((100 * l[1]) / l[2], 1)} %)`),
    ]),
  );
  // The receiver's heartbeats before one a wait an interval: one per batch a moment touched.
  const perBatch = (f: Figures) =>
    callbackSeries(sharesOf(f), RACK, ASSUMED.reportBatch).heartbeatsPerBatch.reduce(
      (m, v) => Math.max(m, v),
      0,
    );
  console.log(
    `\nSendTaskHeartbeat /s before (one per batch; of the ${ASSUMED.quota.sendTaskPerSecond} refill): ${all
      .map(
        (f) =>
          `${f.label} ${fixed(perBatch(f), 1)} (${fixed((100 * perBatch(f)) / ASSUMED.quota.sendTaskPerSecond, 1)} %)`,
      )
      .join("; ")}`,
  );
}

async function main(): Promise<void> {
  const o = parseFleetArgs(process.argv.slice(2));
  const racks = o.quick ? 20 : 100;
  const flashMs = o.taskMinutes * 60_000;
  const tickMs = 10_000;
  const scenarios: [string, Scenario][] = [
    ...[1, 10, 100, 1000].map((runs): [string, Scenario] => [
      `${runs} × ${racks} racks, C=10`,
      { runs, racks, concurrency: 10, flashMs, tickMs },
    ]),
    [`1 × ${racks} racks, C=${racks}`, { runs: 1, racks, concurrency: racks, flashMs, tickMs }],
  ];
  console.log(
    `Fleet simulation (seed ${o.seed}): ${flashMs / 60_000}-minute child tasks, a tick every ${tickMs / 1000} s, DynamoDB latency assumed p50/p99 (ms) ${Object.entries(
      ASSUMED.dynamo,
    )
      .map(([k, v]) => `${k} ${v.p50}/${v.p99}`)
      .join(", ")}`,
  );
  console.log(
    `A child task per rack (bench/lib/rack-model.ts, the default rule, ${RACK.steps} wave steps, 10-minute flashes kept waiting by AwaitWave's heartbeat: ${RACK.flashSteps} flash steps of one check each, ${RACK_WITHOUT_HEARTBEAT.transitions - RACK.transitions} state transitions and ${RACK_WITHOUT_HEARTBEAT.taskSteps - RACK.taskSteps} task-steps invocations fewer than without it): ${RACK.transitions} state transitions, ${RACK.taskSteps} task-steps invocations, ${RACK.iotMessages} IoT messages (${RACK.commands} commands, ${RACK.reports} reports, bmc-result in batches of ${ASSUMED.reportBatch.size}), ${CHILD_REQUESTS_PER_RACK.toFixed(1)} DynamoDB requests of its own (bench:rollout of ${RACK_RECORD.measuredAt}, ${RACK_RECORD.requests.tenMinuteFlashes.toFixed(1)} per rack with the run's ${RACK_RECORD.runRequests.toFixed(1)}: bench/rollout-rack.json)\n`,
  );
  const all: Figures[] = [];
  for (const [label, scenario] of scenarios) {
    const started = Date.now();
    const result = await simulate(scenario, o.seed);
    all.push({ label, scenario, result });
    console.log(
      `  ${label}: simulated ${fixed(result.wallMs / 60_000, 1)} min in ${fixed((Date.now() - started) / 1000, 1)} s; ${result.throttledStarts} StartExecution waits`,
    );
  }
  console.log("");
  printScenarios(all);
  printPerRack({
    scenarios: all.map((f) => ({
      label: f.label,
      racks: racksOf(f.scenario),
      seriesOf: (rack: FleetRack) => callbackSeries(sharesOf(f), rack, ASSUMED.reportBatch),
    })),
    batching: ASSUMED.reportBatch,
    bucket: { burst: ASSUMED.quota.sendTaskBurst, perSecond: ASSUMED.quota.sendTaskPerSecond },
    record: RACK_RECORD,
  });

  if (!o.skipMoto) await motoCheck(o.quick, o.seed);
}

/** The harness on moto and the simulation of the same scenario with moto's latencies, side by side. */
async function motoCheck(quick: boolean, seed: number): Promise<void> {
  const s: Scenario = quick
    ? { runs: 1, racks: 60, concurrency: 10, flashMs: 1_000, tickMs: 2_500 }
    : { runs: 1, racks: 100, concurrency: 10, flashMs: 2_000, tickMs: 10_000 };
  console.log(`\nChecked against moto: 1 run of ${s.racks} racks, C=${s.concurrency}, T=${s.flashMs} ms`);
  const moto = await onMoto(s, seed);
  // moto serves one request at a time (its launcher's lock): so does the simulation of it.
  const sim = await simulate(s, seed, latenciesOf(moto.calls), true);
  const m: Figures = { label: "moto", scenario: s, result: moto };
  const v: Figures = { label: "simulation", scenario: s, result: sim };
  const tolerance = { efficiency: 0.05, requests: 0.15, lagMs: 100 };
  const rows: [string, number, number, boolean][] = [
    [
      "makespan efficiency",
      efficiency(m),
      efficiency(v),
      Math.abs(efficiency(m) - efficiency(v)) <= tolerance.efficiency,
    ],
    [
      "dispatcher requests per rack",
      moto.calls.length / s.racks,
      sim.calls.length / s.racks,
      Math.abs(sim.calls.length / moto.calls.length - 1) <= tolerance.requests,
    ],
    [
      "refill lag p50 ms",
      percentile(moto.refillLags, 50),
      percentile(sim.refillLags, 50),
      Math.abs(percentile(moto.refillLags, 50) - percentile(sim.refillLags, 50)) <= tolerance.lagMs,
    ],
  ];
  printTable(
    ["figure", "moto", "simulation", "within tolerance"],
    rows.map(([name, a, b, ok]) => [name, fixed(a, 3), fixed(b, 3), ok ? "yes" : "NO"]),
  );
  console.log(
    `tolerance: efficiency ±${tolerance.efficiency}, requests ±${tolerance.requests * 100} %, refill lag ±${tolerance.lagMs} ms`,
  );
  // The moto run is in real time: a loaded machine delays its timers (and moto), which the
  // simulation does not draw, so a check on such a machine measures the load, not the model.
  const { p50, p99 } = moto.loopDelayMs;
  console.log(
    `the moto run's event-loop delay p50 / p99 ${fixed(p50, 1)} / ${fixed(p99, 1)} ms; load average ${loadavg()
      .map((l) => fixed(l, 1))
      .join(
        ", ",
      )}${p99 > LOADED_LOOP_DELAY_MS ? ` (p99 above ${LOADED_LOOP_DELAY_MS} ms: the machine was loaded, the check is not a verdict on the model; run it again on a quiet machine)` : ""}`,
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
