/**
 * Rollout benchmark: a run of N racks (default 100, one phase, 10 at a time) upgraded on the local
 * stack end to end: moto (serialized, like DynamoDB's transactions), the aedes broker, the IoT
 * shim, the simulated demo fleet (GB200-shaped racks of 39 BMCs), the real dispatcher and the real
 * child-task ASL on aws-local-stepfunctions. Stops by itself and prints:
 *   - per rack upgraded: state transitions, Lambda invocations (task-steps Task states + bmc-result
 *     reports), IoT messages, DynamoDB requests and capacity units, and what they cost at list
 *     prices (the run pins no rule_id: the built-in default rule, today's fixed order);
 *   - the same figures modelled for production timing (10-minute flashes, the default polling);
 *   - wall time of the rollout and of a rack against their ideals.
 *
 *   npx tsx bench/rollout.ts [--racks 100] [--concurrency 10] [--update-ms 300] [--wait-ms 100] [--quick]
 */
import "../local/polyfills.js";
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { startBmcFleet } from "../local/bmc-fleet.js";
import { createLocalChildTasks } from "../local/child-tasks.js";
import { generateDemoFleet } from "../local/demo-fleet.js";
import { startIotShim } from "../local/iot-shim.js";
import { startLocalMoto } from "../local/moto.js";
import { startMqttBroker } from "../local/mqtt-broker.js";
import { awsClientConfig } from "../src/adapters/aws-config.js";
import {
  createDynamoStores,
  createTables,
  LocalAesGcmCipher,
  tableNames,
} from "../src/adapters/dynamodb/index.js";
import { type ChildTaskSettings, DEFAULT_CHILD_TASK_SETTINGS } from "../src/app/child-task/settings.js";
import { createDispatcher, inProcessWaker } from "../src/app/dispatcher.js";
import { silentLogger } from "../src/app/observability.js";
import { createRunService } from "../src/app/runs.js";
import type { ComponentType, CreateRunInput, InventoryRack } from "../src/domain/model.js";
import { UPGRADE_GROUP_ORDER } from "../src/domain/task-report.js";
import { installCapacityMeter } from "./lib/capacity-meter.js";

const { values: args } = parseArgs({
  options: {
    racks: { type: "string", default: "100" },
    concurrency: { type: "string", default: "10" },
    "update-ms": { type: "string", default: "300" },
    "wait-ms": { type: "string", default: "100" },
    // --quick: 10 racks, 5 at a time (about a minute), for `npm run bench`.
    quick: { type: "boolean", default: false },
  },
});
const RACKS = args.quick ? 10 : Number(args.racks);
const CONCURRENCY = args.quick ? 5 : Number(args.concurrency);
const UPDATE_MS = Number(args["update-ms"]);
const WAIT_MS = Number(args["wait-ms"]);

/**
 * List prices, us-east-1, as published on the AWS pricing pages (checked 2026-11; on-demand,
 * no free tier, x86 Lambda):
 *   Step Functions Standard   $0.025 per 1,000 state transitions
 *   Lambda                    $0.20 per 1M requests + $0.0000166667 per GB-second
 *   IoT Core messaging        $1.00 per 1M messages (5 KB units; first 1B/month tier)
 *   IoT Core rules engine     $0.15 per 1M rules triggered + $0.15 per 1M actions executed
 *   DynamoDB on-demand        $0.625 per 1M write request units, $0.125 per 1M read request units
 *                             (prices after the November 2024 on-demand reduction)
 */
const PRICE = {
  transition: 0.025 / 1000,
  lambdaRequest: 0.2 / 1e6,
  lambdaGbSecond: 0.0000166667,
  iotMessage: 1.0 / 1e6,
  iotRule: 0.15 / 1e6,
  iotAction: 0.15 / 1e6,
  wru: 0.625 / 1e6,
  rru: 0.125 / 1e6,
};
/** task-steps and bmc-result: 256 MB, ~60 ms billed per invocation (mostly one or two DynamoDB calls). */
const LAMBDA_GB = 0.25;
const LAMBDA_SECONDS = 0.06;

function usd(x: number): string {
  return x < 0.01 ? `$${x.toFixed(5)}` : `$${x.toFixed(4)}`;
}

function log(line: string): void {
  if (process.env.BENCH_VERBOSE) console.log(line);
}

async function main(): Promise<void> {
  const moto = await startLocalMoto();
  const client = new DynamoDBClient(
    awsClientConfig({
      endpoint: moto.endpoint,
      region: "us-east-1",
      credentials: { accessKeyId: "b", secretAccessKey: "b" },
    }),
  );
  const names = tableNames(`bench-${randomUUID().slice(0, 6)}-`);
  await createTables(client, names);
  const cipher = new LocalAesGcmCipher(Buffer.alloc(32, 3));
  // Default figures: moto's where it answers with some (its placeholders), estimates elsewhere.
  const capacityMeter = installCapacityMeter(client);
  const stores = createDynamoStores(client, names, { cipher });
  const fleetRacks: InventoryRack[] = generateDemoFleet({ racks: Math.max(RACKS, 1) });
  await stores.inventory.upsertRacks(fleetRacks);

  const broker = await startMqttBroker();
  const shim = await startIotShim(broker);
  const fleet = await startBmcFleet({
    brokerUrl: broker.url,
    racks: fleetRacks,
    config: { defaults: { outcome: "succeed", updateMs: UPDATE_MS }, racks: {}, components: {} },
  });
  let evtMessages = 0;
  await broker.subscribe("flow/bmc/+/evt", () => {
    evtMessages += 1;
  });

  // One wave per group: every group of a GB200 rack (at most 18 trays) flashes at once.
  const settings: Partial<ChildTaskSettings> = {
    maxParallel: 18,
    pollSeconds: 1,
    maxPollSeconds: 1,
    updateTimeoutSeconds: 120,
    preflightTimeoutSeconds: 60,
  };
  let dispatcher: ReturnType<typeof createDispatcher> | undefined;
  const child = await createLocalChildTasks({
    stores,
    tables: names,
    broker,
    iotEndpoint: shim.endpoint,
    cipher,
    settings,
    waitOverrideMs: WAIT_MS,
    waker: inProcessWaker(() => dispatcher, silentLogger),
    log,
  });
  dispatcher = createDispatcher({ runs: stores.runs, submitter: child.submitter, clock: Date.now, log });
  const runsApi = createRunService({
    runs: stores.runs,
    inventory: stores.inventory,
    clock: Date.now,
    newId: randomUUID,
  });

  const chosen = fleetRacks.slice(0, RACKS);
  const input: CreateRunInput = {
    name: `bench-${RACKS}`,
    description: "rollout benchmark",
    configuration: {
      selector: { kind: "percentage", percentage: 100, seed: "bench" },
      options: {
        maxConcurrentTargets: CONCURRENCY,
        safetyPolicy: { gates: [{ kind: "failureCount", scope: "CUMULATIVE_RUN", thresholdCount: 5 }] },
        phasePolicy: { plan: { kind: "equal", phaseCount: 1 }, advancePolicy: { autoAdvance: true } },
      },
      operation: {
        upgradeFirmware: {
          targetSpec: {
            kind: "racks",
            racks: chosen.map((r) => ({ ref: { by: "id", id: r.id }, componentTypes: [] })),
          },
          targetVersion: "9.9.9",
          description: "bench",
          subTargets: [],
          overrideReadinessCheck: false,
          overrideVersionCheck: false,
        },
        targetScope: { excludeOperationRunIds: [] },
      },
    },
  };

  capacityMeter.reset();
  const t0 = Date.now();
  const { id: runId } = await runsApi.createRun(input);
  const ticker = setInterval(() => void dispatcher?.tick().catch(() => {}), 1000);
  let run = await stores.runs.getRun(runId);
  let lastProgress = Date.now();
  while (
    run !== undefined &&
    !["COMPLETED", "COMPLETED_WITH_FAILURES", "FAILED", "CANCELLED"].includes(run.status)
  ) {
    await new Promise((r) => setTimeout(r, 200));
    run = await stores.runs.getRun(runId);
    if (Date.now() - lastProgress > 15_000 && run !== undefined) {
      lastProgress = Date.now();
      const c = run.counters[0];
      const ended = (c?.completed ?? 0) + (c?.failed ?? 0) + (c?.terminated ?? 0);
      process.stderr.write(
        `[bench] ${((Date.now() - t0) / 1000).toFixed(0)} s: ${ended}/${RACKS} racks done\n`,
      );
    }
    if (Date.now() - t0 > 30 * 60_000) throw new Error("benchmark did not finish within 30 minutes");
  }
  const wallMs = Date.now() - t0;
  clearInterval(ticker);
  await child.idle();

  const exec = child.executor.stats();
  const meter = capacityMeter.snapshot();
  const reports = child.reportStats();
  const commandsPublished = shim.published();
  const { targets } = (await stores.runs.listTargets(runId, {
    phaseFrom: 0,
    phaseTo: 0,
    page: { offset: 0, limit: 1000 },
  })) ?? {
    targets: [],
  };
  const taskIds = targets.flatMap((t) => (t.taskId ? [t.taskId] : []));
  const tasks = await stores.tasks.getTasks(taskIds);
  const durations = tasks
    .map((t) => (t.finishedAt ?? 0) - (t.startedAt ?? t.createdAt))
    .sort((a, b) => a - b);
  const upgraded = tasks.filter((t) => t.status === "COMPLETED").length;
  const n = Math.max(1, upgraded);

  // Ideal: each rack's groups one after another, one wave each, nothing but the flash itself.
  const groupCount = UPGRADE_GROUP_ORDER.filter((type: ComponentType) =>
    chosen[0]?.components.some((c) => c.type === type),
  ).length;
  const rackIdealMs = groupCount * UPDATE_MS;
  const rolloutIdealMs = Math.ceil(RACKS / CONCURRENCY) * rackIdealMs;

  // moto reports CapacityUnits per call but no read/write split: split by operation instead.
  const READS = new Set(["GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"]);
  let readUnits = 0;
  let writeUnits = 0;
  for (const [op, v] of Object.entries(meter.byOperation)) {
    if (READS.has(op)) readUnits += v.capacityUnits;
    else writeUnits += v.capacityUnits;
  }
  const perRack = {
    transitions: exec.stateTransitions / n,
    taskSteps: exec.taskInvocations / n,
    bmcResult: reports.received / n,
    iot: (commandsPublished + evtMessages) / n,
    wcu: writeUnits / n,
    rcu: readUnits / n,
    cu: meter.capacityUnits / n,
  };
  const lambdaPerRack = perRack.taskSteps + perRack.bmcResult;
  const cost = {
    sfn: perRack.transitions * PRICE.transition,
    lambda: lambdaPerRack * (PRICE.lambdaRequest + LAMBDA_GB * LAMBDA_SECONDS * PRICE.lambdaGbSecond),
    iot: perRack.iot * PRICE.iotMessage + perRack.bmcResult * (PRICE.iotRule + PRICE.iotAction),
    ddb: perRack.wcu * PRICE.wru + perRack.rcu * PRICE.rru,
  };
  const total = cost.sfn + cost.lambda + cost.iot + cost.ddb;

  const components = chosen[0]?.components.length ?? 0;
  // Production model: a 10-minute flash, default polling (10 s doubling to 60 s): checks per component.
  const prod = DEFAULT_CHILD_TASK_SETTINGS;
  let waited = 0;
  let checks = 0;
  while (waited < 600) {
    waited += Math.min(prod.maxPollSeconds, prod.pollSeconds * 2 ** checks);
    checks += 1;
  }
  // Polling is per wave: each extra check is 3 transitions (Wait, CheckWave, WaveDone?), one
  // task-steps invocation and one BatchGetItem of the wave's records (~1 RRU per component).
  const waves = (exec.byStep.sendWave ?? 0) / n;
  const checksMeasured = (exec.byStep.checkWave ?? 0) / Math.max(1, exec.byStep.sendWave ?? 1);
  const extraChecks = Math.max(0, checks - checksMeasured);
  const prodTransitions = perRack.transitions + waves * 3 * extraChecks;
  const prodTaskSteps = perRack.taskSteps + waves * extraChecks;
  const prodRcu = perRack.rcu + components * extraChecks;
  const prodCost =
    prodTransitions * PRICE.transition +
    (prodTaskSteps + perRack.bmcResult) *
      (PRICE.lambdaRequest + LAMBDA_GB * LAMBDA_SECONDS * PRICE.lambdaGbSecond) +
    cost.iot +
    perRack.wcu * PRICE.wru +
    prodRcu * PRICE.rru;

  const p = (q: number) => durations[Math.min(durations.length - 1, Math.floor(q * durations.length))] ?? 0;
  const lines = [
    `Rollout benchmark: ${RACKS} racks × ${components} BMCs, ${CONCURRENCY} at a time, one phase; every flash ${UPDATE_MS} ms; Wait states ${WAIT_MS} ms (local override)`,
    `Run ${run?.status} in ${(wallMs / 1000).toFixed(1)} s; ${upgraded}/${tasks.length} racks upgraded; ${fleet.stats().flashes} flashes; driven through the dispatcher (src/app/dispatcher.ts)`,
    "",
    "Per rack upgraded (measured on the local stack)",
    `  state transitions        ${perRack.transitions.toFixed(1)}`,
    `  Lambda invocations       ${lambdaPerRack.toFixed(1)}  (task-steps ${perRack.taskSteps.toFixed(1)}: ${Object.entries(
      exec.byStep,
    )
      .map(([k, v]) => `${k} ${(v / n).toFixed(1)}`)
      .join(", ")}; bmc-result ${perRack.bmcResult.toFixed(1)})`,
    `  IoT messages             ${perRack.iot.toFixed(1)}  (commands ${(commandsPublished / n).toFixed(1)}, BMC reports ${(evtMessages / n).toFixed(1)})`,
    `  DynamoDB requests        ${(meter.calls / n).toFixed(1)}  (${Object.entries(meter.byOperation)
      .sort((a, b) => b[1].calls - a[1].calls)
      .map(([k, v]) => `${k} ${(v.calls / n).toFixed(1)}`)
      .join(", ")})`,
    `  DynamoDB capacity units  ${perRack.cu.toFixed(1)}  (${perRack.wcu.toFixed(1)} WRU, ${perRack.rcu.toFixed(1)} RRU; dispatcher and run bookkeeping included)`,
    `  cost at list prices      ${usd(total)}  = Step Functions ${usd(cost.sfn)} + Lambda ${usd(cost.lambda)} + IoT ${usd(cost.iot)} + DynamoDB ${usd(cost.ddb)}`,
    "",
    `Per rack, modelled for production timing (10-min flashes, polling ${prod.pollSeconds}s doubling to ${prod.maxPollSeconds}s: ${checks} checks per wave instead of ${checksMeasured.toFixed(1)}, ${waves.toFixed(1)} waves per rack)`,
    `  state transitions ${prodTransitions.toFixed(0)}, task-steps invocations ${prodTaskSteps.toFixed(0)}, RRU ${prodRcu.toFixed(0)} → ${usd(prodCost)} per rack, ${usd(prodCost * 1000)} per 1,000 racks`,
    "",
    "Prices: us-east-1 list prices (checked 2026-11): Step Functions Standard $0.025/1k transitions; Lambda $0.20/1M requests + $0.0000166667/GB-s (256 MB × 60 ms assumed);",
    "        IoT Core $1.00/1M messages + rules $0.15/1M triggered + $0.15/1M actions; DynamoDB on-demand $0.625/1M WRU, $0.125/1M RRU. Not included: IoT connectivity",
    "        ($0.08 per million connection-minutes, a fleet cost, not per upgrade), CloudWatch logs/metrics, the ticker and dispatcher Lambdas.",
    "",
    "Wall time",
    `  rollout   ${(wallMs / 1000).toFixed(1)} s   ideal ${(rolloutIdealMs / 1000).toFixed(1)} s  (${Math.ceil(RACKS / CONCURRENCY)} rounds of ${CONCURRENCY} racks × ${groupCount} groups × ${UPDATE_MS} ms)  → ${(wallMs / rolloutIdealMs).toFixed(2)}× ideal`,
    `  one rack  p50 ${(p(0.5) / 1000).toFixed(2)} s, p90 ${(p(0.9) / 1000).toFixed(2)} s, max ${(p(1) / 1000).toFixed(2)} s   ideal ${(rackIdealMs / 1000).toFixed(2)} s  → p50 ${(p(0.5) / rackIdealMs).toFixed(2)}× ideal`,
    `  DynamoDB calls ${meter.calls} (${(meter.calls / (wallMs / 1000)).toFixed(0)}/s on serialized moto); top: ${Object.entries(
      meter.byOperation,
    )
      .sort((a, b) => b[1].calls - a[1].calls)
      .slice(0, 4)
      .map(([k, v]) => `${k} ${v.calls}`)
      .join(", ")}`,
  ];
  console.log(lines.join("\n"));

  await child.stop();
  await fleet.stop();
  await shim.stop();
  await broker.stop();
  client.destroy();
  await moto.stop();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
