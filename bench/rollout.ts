/**
 * Rollout benchmark: a run of N racks (default 100, one phase, 10 at a time) upgraded on the local
 * stack end to end: moto (serialized, like DynamoDB's transactions), the aedes broker, the IoT
 * shim, the simulated demo fleet (GB200-shaped racks of 39 BMCs), the real dispatcher and the real
 * child-task ASL on aws-local-stepfunctions. Stops by itself and prints:
 *   - per rack upgraded and per step (the run's create, claim, submit, lock, preflight, each wave,
 *     the BMC reports, the outcome, run bookkeeping): DynamoDB requests and capacity units (by
 *     operation), Lambda invocations (task-steps states + bmc-result) and state transitions;
 *   - the totals per rack, what they cost at list prices (the run pins no rule_id: the built-in
 *     default rule), and the same modelled for production timing (10-minute flashes: the checks
 *     the product's poll schedule would make, each with its transitions, invocation and read; the
 *     requests figure is printed both ways, since local checks are as many as fit in the flash);
 *   - wall time of the rollout and of a rack against their ideals;
 *   - the per-rack cost aims (set 2026-12-01) next to the figures measured then and to these;
 *   - per kind of rule step (flash, activation, bring-up, health check): requests, transitions,
 *     invocations, checks and the time the executions spent in them;
 *   - the per-rack aims set 2026-12-04 (requests, invocations, modelled cost) with the old path's
 *     and the new path's figures side by side (--path both, the default: the child-task definition
 *     as it is and as it was before AwaitWave sent its step, two writes a step; --path all adds the
 *     one before AwaitWave's heartbeat and the one before the steps started the next step;
 *     bench/lib/rollout-paths.ts, alternating run by run on the same machine).
 * A run of the default rule on the path as it is writes its per-rack figures to
 * bench/rollout-rack.json (`--no-record`: not), which bench:fleet reads for the DynamoDB requests
 * of a child task (the one figure it cannot derive from the definition).
 * The dispatcher is driven as deployed: the tables' streams wake it (local/stream-poller.ts and the
 * stream evaluator, as the Lambda event source mapping does: a new run starts at once, a finished
 * target refills its slot), the outcome recorder wakes it directly, and the ticker passes every
 * `--tick-ms` (10 s, the deployed interval: infra/constructs/ticker.ts). Until this file's
 * revision of 2026-12-01 it ticked every second with no stream, which filed about four requests per
 * rack more under "claim" and "run bookkeeping" (most of them ticks with nothing to do).
 * Its parts in bench/lib: rollout-figures.ts (the figures, prices and aims), rollout-cost.ts (the
 * cost as measured and modelled), rollout-report.ts (the printout), rollout-rules.ts (the rules of
 * --health-check and --update-only), rack-model.ts (the definition's model of a rack, printed
 * beside the measured figures and spread by bench:fleet), rollout-parts.ts and rollout-paths.ts.
 * With --repeat N it runs N times (a fresh moto each) and prints the median of each figure.
 *
 * Every DynamoDB call is filed under the step it was made in: an AsyncLocalStorage scope
 * (bench/lib/work-scope.ts) set around each step handler and each BMC report by the local
 * stand-ins' hooks, and around each dispatcher pass and submission here; nothing in src/ knows.
 * Capacity units are estimated from item sizes by DynamoDB's rules for every call
 * (bench/lib/capacity-estimate.ts): moto's own figures are placeholders. The figure the benchmark
 * quoted before the per-rack cost work of 2026-12-01 (moto's placeholders where it gives any, estimates elsewhere) is printed
 * beside it.
 *
 *   npx tsx bench/rollout.ts [--racks 100] [--concurrency 10] [--update-ms 300] [--wait-ms 100]
 *                            [--tick-ms 10000] [--quick] [--repeat N] [--json FILE] [--timeline]
 *                            [--path both|all|before|timeout|twowrites|choice|after] [--health-check | --update-only]
 *                            [--no-record] [--basic-ingest]
 * Every run prices the BMC reports both ways: through the message broker and through Basic
 * Ingest (no messaging charge); with --basic-ingest the simulated BMCs send them that way.
 */

import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { startBmcFleet } from "../local/bmc-fleet.js";
import { createLocalChildTasks, LOCAL_REPORT_BATCH_MS, LOCAL_REPORTS_RULE } from "../local/child-tasks.js";
import { generateDemoFleet } from "../local/demo-fleet.js";
import { startIotShim } from "../local/iot-shim.js";
import { startLocalMoto } from "../local/moto.js";
import { startMqttBroker } from "../local/mqtt-broker.js";
import { startStreamPoller } from "../local/stream-poller.js";
import { awsClientConfig } from "../src/adapters/aws-config.js";
import {
  createDynamoStores,
  createTables,
  LocalAesGcmCipher,
  tableNames,
} from "../src/adapters/dynamodb/index.js";
import { streamBatchHandler } from "../src/adapters/dynamodb/stream-records.js";
import { createS3Client, S3ImageObjectStore } from "../src/adapters/s3/image-bucket.js";
import { loadChildTaskDefinition } from "../src/adapters/stepfunctions/asl.js";
import { systemClock } from "../src/adapters/system-clock.js";
import { type ChildTaskSettings, DEFAULT_CHILD_TASK_SETTINGS } from "../src/app/child-task/settings.js";
import { createDispatcher, inProcessWaker } from "../src/app/dispatcher.js";
import { silentLogger } from "../src/app/observability.js";
import type { ChildTaskSubmitter } from "../src/app/ports.js";
import { createRunService } from "../src/app/runs.js";
import { createStreamEvaluator } from "../src/app/stream-evaluator.js";
import { BMC_EVT_TOPIC_FILTER, basicIngestEvtTopicFilter } from "../src/domain/bmc-topics.js";
import { AWAIT_SAFETY_NET_POLLS } from "../src/domain/component-verdict.js";
import type { CreateRunInput } from "../src/domain/create-run-input.js";
import type { InventoryRack } from "../src/domain/inventory.js";
import type { ComponentType } from "../src/domain/model.js";
import { DEFAULT_RULE } from "../src/domain/operation-rules.js";
import { UPGRADE_GROUP_ORDER } from "../src/domain/task-report.js";
import { registerBenchImages } from "./lib/bench-images.js";
import { installCapacityMeter } from "./lib/capacity-meter.js";
import { modelProductionWave } from "./lib/production-model.js";
import { modelRack, ROLLOUT_MAX_PARALLEL } from "./lib/rack-model.js";
import { costOf } from "./lib/rollout-cost.js";
import { type Figures, type KindFigures, medianOf, type PartFigures } from "./lib/rollout-figures.js";
import {
  kindOfPart,
  orderParts,
  PART,
  PartLabeller,
  partOfCall,
  type StepKind,
} from "./lib/rollout-parts.js";
import { definitionFor, heartbeats, type RolloutPath } from "./lib/rollout-paths.js";
import { ROLLOUT_RACK_FILE, rackRecord } from "./lib/rollout-rack-record.js";
import { halvedAims, printTimeline, report, type Sitting } from "./lib/rollout-report.js";
import { benchRule } from "./lib/rollout-rules.js";
import { currentScope, inScope } from "./lib/work-scope.js";

const { values: args } = parseArgs({
  options: {
    racks: { type: "string", default: "100" },
    concurrency: { type: "string", default: "10" },
    "update-ms": { type: "string", default: "300" },
    "wait-ms": { type: "string", default: "100" },
    "tick-ms": { type: "string", default: "10000" },
    "report-batch-ms": { type: "string", default: String(LOCAL_REPORT_BATCH_MS) },
    // --quick: 10 racks, 5 at a time (about half a minute), for `npm run bench`.
    quick: { type: "boolean", default: false },
    repeat: { type: "string", default: "1" },
    json: { type: "string" },
    // --timeline: the median rack's states, each with the time it was entered.
    timeline: { type: "boolean", default: false },
    // Which child-task path to run (bench/lib/rollout-paths.ts): both (two writes a step, and
    // the one write of the definition as it is), one after the other, by default; all four; or one.
    path: { type: "string", default: "both" },
    // --no-record: leave bench/rollout-rack.json as it is.
    "no-record": { type: "boolean", default: false },
    // --health-check: the run pins a rule that is the default with a CHECK_HEALTH step closing
    // every stage, so the per-kind rows show what the health check costs beside the flash.
    "health-check": { type: "boolean", default: false },
    // --update-only: the run pins the default rule with its update step alone (6 wave steps a
    // rack), the workload the per-rack aims of 2026-12-04 were set against.
    "update-only": { type: "boolean", default: false },
    // --basic-ingest: the simulated BMCs send their reports through Basic Ingest
    // ($aws/rules/<the local rule>/flow/rack/...), as an agent with reportsRule does; the local
    // rule stand-in takes them. Either way the cost is priced both ways from the same counts.
    "basic-ingest": { type: "boolean", default: false },
  },
});
const BASIC_INGEST = args["basic-ingest"] === true;
const RULE = benchRule({
  healthCheck: args["health-check"] === true,
  updateOnly: args["update-only"] === true,
});
const RACKS = args.quick ? 10 : Number(args.racks);
const CONCURRENCY = args.quick ? 5 : Number(args.concurrency);
const UPDATE_MS = Number(args["update-ms"]);
const WAIT_MS = Number(args["wait-ms"]);
const TICK_MS = Number(args["tick-ms"]);
const REPEAT = Math.max(1, Number(args.repeat));
const PATH_CHOICES: Record<string, RolloutPath[]> = {
  both: ["twowrites", "after"],
  all: ["before", "timeout", "twowrites", "choice", "after"],
  before: ["before"],
  timeout: ["timeout"],
  twowrites: ["twowrites"],
  choice: ["choice"],
  after: ["after"],
};
const PATHS = PATH_CHOICES[String(args.path)] as RolloutPath[];
if (PATHS === undefined)
  throw new Error(`--path must be both, all, before, timeout, twowrites, choice or after, not ${args.path}`);

const SITTING: Sitting = {
  concurrency: CONCURRENCY,
  updateMs: UPDATE_MS,
  waitMs: WAIT_MS,
  tickMs: TICK_MS,
  paths: PATHS,
  rule: RULE,
  repeat: REPEAT,
};

function log(line: string): void {
  if (process.env.BENCH_VERBOSE) console.log(line);
}

async function once(path: RolloutPath): Promise<Figures> {
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
  // Every call estimated from its items (moto's figures are placeholders), filed under its step.
  const capacityMeter = installCapacityMeter(client, {
    reportedFigures: "ignore",
    tagOf: (operation, input) => partOfCall(currentScope()?.part, operation, input),
  });
  const stores = createDynamoStores(client, names, { cipher });
  const fleetRacks: InventoryRack[] = generateDemoFleet({ racks: Math.max(RACKS, 1) });
  await stores.inventory.upsertRacks(fleetRacks);

  const broker = await startMqttBroker();
  const shim = await startIotShim(broker);
  const fleet = await startBmcFleet({
    brokerUrl: broker.url,
    racks: fleetRacks,
    config: { defaults: { outcome: "succeed", updateMs: UPDATE_MS }, racks: {}, components: {} },
    ...(BASIC_INGEST ? { reportsRule: LOCAL_REPORTS_RULE } : {}),
  });
  let evtMessages = 0;
  let ingestedMessages = 0;
  const reportTypes: Record<string, number> = {};
  const countReport = (payload: Buffer) => {
    evtMessages += 1;
    const type = String((JSON.parse(payload.toString("utf8")) as { type?: unknown }).type);
    reportTypes[type] = (reportTypes[type] ?? 0) + 1;
  };
  await broker.subscribe(BMC_EVT_TOPIC_FILTER, (_topic, payload) => countReport(payload));
  await broker.subscribe(basicIngestEvtTopicFilter(LOCAL_REPORTS_RULE), (_topic, payload) => {
    ingestedMessages += 1;
    countReport(payload);
  });

  // Per-step counts: Lambda invocations (steps, report batches) and state transitions.
  const labeller = new PartLabeller();
  const lambdaByPart: Record<string, number> = {};
  const transitionsByPart: Record<string, number> = {};
  const add = (into: Record<string, number>, part: string, n = 1) => {
    into[part] = (into[part] ?? 0) + n;
  };
  let reportInvocations = 0;
  const checksByPart: Record<string, number> = {};
  /** Each execution's state in progress: since when, and its part (for the time per step kind). */
  const inState = new Map<string, { at: number; part: string }>();
  const msByPart: Record<string, number> = {};
  /** --timeline: each task's states as entered, [ms, name]. */
  const timelines = new Map<string, [number, string][]>();

  // One wave per group: every group of a GB200 rack (at most 18 trays) flashes at once.
  const settings: Partial<ChildTaskSettings> = {
    maxParallel: ROLLOUT_MAX_PARALLEL,
    pollSeconds: 1,
    maxPollSeconds: 1,
    updateTimeoutSeconds: 120,
    preflightTimeoutSeconds: 60,
  };
  let dispatcher: ReturnType<typeof createDispatcher> | undefined;
  const child = await createLocalChildTasks({
    stores,
    // The run's commands carry presigned GETs (computed, not fetched: the fleet does not download).
    imageUrls: new S3ImageObjectStore(createS3Client({ endpoint: moto.endpoint }), "bench-images"),
    tables: names,
    broker,
    iotEndpoint: shim.endpoint,
    cipher,
    settings,
    waitOverrideMs: WAIT_MS,
    definition: definitionFor(path, loadChildTaskDefinition()),
    // A wave's wait for its wake-up is its safety net of AWAIT_SAFETY_NET_POLLS polls, each a Wait
    // here (the product's seconds scaled like the Waits: the bench's polls are 1 s).
    awaitTimeoutOverrideMs: AWAIT_SAFETY_NET_POLLS * WAIT_MS,
    reportBatchMs: Number(args["report-batch-ms"]),
    waker: inProcessWaker(() => dispatcher, silentLogger),
    log,
    hooks: {
      aroundStep: (event, run) => {
        const part = labeller.ofStep(event as unknown as Record<string, unknown>);
        add(lambdaByPart, part);
        if (isWaveCheck(event)) add(checksByPart, part);
        return inScope({ part }, async () => {
          const result = await run();
          labeller.afterStep(event as unknown as Record<string, unknown>, result);
          return result;
        });
      },
      onStateEntered: (taskId, state) => {
        const part = labeller.ofState(taskId, state.name, state.input);
        add(transitionsByPart, part);
        const now = Date.now();
        const before = inState.get(taskId);
        if (before !== undefined) add(msByPart, before.part, now - before.at);
        inState.set(taskId, { at: now, part });
        if (args.timeline)
          timelines.set(taskId, [...(timelines.get(taskId) ?? []), [Date.now(), state.name]]);
      },
      aroundReports: (run) => {
        reportInvocations += 1;
        add(lambdaByPart, PART.reports);
        return inScope({ part: PART.reports }, run);
      },
    },
  });
  const submitter: ChildTaskSubmitter = {
    submit: (request, now) => inScope({ part: PART.submit }, () => child.submitter.submit(request, now)),
    cancel: (taskId, reason) => child.submitter.cancel(taskId, reason),
  };
  const inner = createDispatcher({ runs: stores.runs, submitter, clock: systemClock, log });
  dispatcher = {
    dispatchRun: (runId) => inScope({ part: "dispatch" }, () => inner.dispatchRun(runId)),
    tick: () => inScope({ part: "dispatch" }, () => inner.tick()),
  };
  await registerBenchImages(stores.images);
  const runsApi = createRunService({
    runs: stores.runs,
    inventory: stores.inventory,
    images: stores.images,
    clock: systemClock,
    newId: randomUUID,
    ...(RULE !== undefined
      ? {
          policy: {
            listBaselines: async () => [],
            getRule: async (id: string) => (id === RULE.id ? RULE : undefined),
          },
        }
      : {}),
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
          ...(RULE !== undefined ? { ruleId: RULE.id } : {}),
        },
        targetScope: { excludeOperationRunIds: [] },
      },
    },
  };

  // The stream's wake-ups, as the event source mapping delivers them (started before the run, so
  // its INSERT is seen): the poller's own reads are the Streams API's, not metered here.
  const poller = await startStreamPoller({
    client,
    tableNames: [names.runs, names.targets],
    handler: streamBatchHandler(createStreamEvaluator({ dispatcher, log })),
    reacquireAfterEmptyRead: false,
    log,
  });
  capacityMeter.reset();
  const t0 = Date.now();
  const { id: runId } = await inScope({ part: PART.create }, () => runsApi.createRun(input));
  const ticker = setInterval(() => void dispatcher?.tick().catch(() => {}), TICK_MS);
  // Not metered: the benchmark's own polling is not the product's work.
  const watch = createDynamoStores(
    new DynamoDBClient(
      awsClientConfig({
        endpoint: moto.endpoint,
        region: "us-east-1",
        credentials: { accessKeyId: "b", secretAccessKey: "b" },
      }),
    ),
    names,
    { cipher },
  );
  let run = await watch.runs.getRun(runId);
  let lastProgress = Date.now();
  while (
    run !== undefined &&
    !["COMPLETED", "COMPLETED_WITH_FAILURES", "FAILED", "CANCELLED"].includes(run.status)
  ) {
    await new Promise((r) => setTimeout(r, 200));
    run = await watch.runs.getRun(runId);
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
  // The run's own finishedAt ends the rollout (the watch loop's 200 ms are not the product's).
  const wallMs = (run?.finishedAt ?? Date.now()) - t0;
  clearInterval(ticker);
  await poller.stop();
  await child.idle();

  const exec = child.executor.stats();
  const meter = capacityMeter.snapshot();
  const reports = child.reportStats();
  const commandsPublished = shim.published();
  const { targets } = (await watch.runs.listTargets(runId, {
    phaseFrom: 0,
    phaseTo: 0,
    page: { offset: 0, limit: 1000 },
  })) ?? { targets: [] };
  const taskIds = targets.flatMap((t) => (t.taskId ? [t.taskId] : []));
  const tasks = await watch.tasks.getTasks(taskIds);
  watch.doc.destroy();
  const durations = tasks
    .map((t) => (t.finishedAt ?? 0) - (t.startedAt ?? t.createdAt))
    .sort((a, b) => a - b);
  if (args.timeline) printTimeline(tasks, timelines);
  const upgraded = tasks.filter((t) => t.status === "COMPLETED").length;
  const n = Math.max(1, upgraded);

  // Ideal: each rack's groups one after another, one wave each, nothing but the flash itself.
  const groupCount = UPGRADE_GROUP_ORDER.filter((type: ComponentType) =>
    chosen[0]?.components.some((c) => c.type === type),
  ).length;
  const rackIdealMs = groupCount * UPDATE_MS;
  const rolloutIdealMs = Math.ceil(RACKS / CONCURRENCY) * rackIdealMs;

  const parts: Record<string, PartFigures> = {};
  const partNames = orderParts([
    ...Object.keys(meter.byTag),
    ...Object.keys(lambdaByPart),
    ...Object.keys(transitionsByPart),
  ]);
  for (const part of partNames) {
    const t = meter.byTag[part];
    parts[part] = {
      requests: (t?.calls ?? 0) / n,
      rcu: (t?.readCapacityUnits ?? 0) / n,
      wcu: (t?.writeCapacityUnits ?? 0) / n,
      lambda: (lambdaByPart[part] ?? 0) / n,
      transitions: (transitionsByPart[part] ?? 0) / n,
      byOperation: Object.fromEntries(
        Object.entries(t?.byOperation ?? {}).map(([op, v]) => [op, v.calls / n]),
      ),
    };
  }

  const components = chosen[0]?.components.length ?? 0;
  // A "wave" row is one step of one wave (the default rule's stages: flash, activation, bring-up).
  const waves = Object.keys(parts).filter((p) => p.startsWith("wave ")).length;
  const byKind: Partial<Record<StepKind, KindFigures>> = {};
  for (const part of partNames) {
    const kind = kindOfPart(part);
    if (kind === undefined) continue;
    const k = byKind[kind] ?? { steps: 0, requests: 0, transitions: 0, lambda: 0, checks: 0, wallMs: 0 };
    byKind[kind] = k;
    const v = parts[part] as PartFigures;
    k.steps += 1;
    k.requests += v.requests;
    k.transitions += v.transitions;
    k.lambda += v.lambda;
    k.checks += (checksByPart[part] ?? 0) / n;
    k.wallMs += (msByPart[part] ?? 0) / n;
  }
  const checks = Object.values(checksByPart).reduce((sum, c) => sum + c, 0) / n;
  const perRack = {
    requests: meter.calls / n,
    capacityUnits: meter.capacityUnits / n,
    rcu: meter.readCapacityUnits / n,
    wcu: meter.writeCapacityUnits / n,
    capacityUnitsAsMotoReports: meter.preferReported.capacityUnits / n,
    lambda: (exec.taskInvocations + reportInvocations) / n,
    taskSteps: exec.taskInvocations / n,
    bmcResult: reportInvocations / n,
    reportsReceived: reports.received / n,
    transitions: exec.stateTransitions / n,
    commands: commandsPublished / n,
    reports: evtMessages / n,
    reportsIngested: ingestedMessages / n,
    waves,
    checksPerWave: checks / Math.max(1, waves),
  };
  // A 10-minute flash's checks on this path: one when heartbeats keep its wait, else two.
  const schedule = modelProductionWave(DEFAULT_CHILD_TASK_SETTINGS);
  const prod = heartbeats(path)
    ? schedule
    : { ...schedule, checksPerWave: schedule.noHeartbeatChecksPerWave };
  const cost = costOf({
    perRack,
    parts,
    byKind,
    checks,
    awaits: (exec.byStep.awaitWave ?? 0) / n,
    prod,
    flashMs: UPDATE_MS,
  });

  const modelOf = (checksPerFlashStep: number) =>
    modelRack(RULE ?? DEFAULT_RULE, chosen[0]?.components ?? [], {
      maxParallel: ROLLOUT_MAX_PARALLEL,
      checksPerFlashStep,
      path,
    });
  const rackModel = { local: modelOf(1), production: modelOf(prod.checksPerWave) };

  const p = (q: number) => durations[Math.min(durations.length - 1, Math.floor(q * durations.length))] ?? 0;
  const figures: Figures = {
    path,
    status: run?.status ?? "missing",
    racks: RACKS,
    upgraded,
    components,
    flashes: fleet.stats().flashes,
    wallMs,
    rolloutIdealMs,
    rackIdealMs,
    rack: { p50: p(0.5), p90: p(0.9), max: p(1) },
    perRack,
    taskStepsByStep: Object.fromEntries(Object.entries(exec.byStep).map(([k, v]) => [k, v / n])),
    parts,
    byKind,
    cost,
    callsPerSecond: meter.calls / (wallMs / 1000),
    rackModel,
  };

  await child.stop();
  await fleet.stop();
  await shim.stop();
  await broker.stop();
  client.destroy();
  await moto.stop();
  return figures;
}

async function main(): Promise<void> {
  const byPath: Partial<Record<RolloutPath, Figures>> = {};
  const all: Record<string, Figures[]> = {};
  // Alternating the paths run by run, so both see the same machine load.
  for (let i = 0; i < REPEAT; i++) {
    for (const path of PATHS) {
      all[path] = [...(all[path] ?? []), await once(path)];
      process.stderr.write(`[bench] ${path} path: run ${i + 1}/${REPEAT} done\n`);
    }
  }
  for (const path of PATHS) {
    const runs = all[path] ?? [];
    byPath[path] = medianOf(runs);
    if (REPEAT > 1) {
      console.log(
        `Runs of the ${path} path: ${runs.map((r) => `${(r.wallMs / 1000).toFixed(1)} s, ${r.perRack.requests.toFixed(1)} requests, ${r.perRack.capacityUnits.toFixed(0)} units, ${r.perRack.lambda.toFixed(1)} Lambda per rack`).join("; ")}\n`,
      );
    }
    console.log(`=== The ${path} path ===\n${report(byPath[path] as Figures, runs.length, SITTING)}\n`);
  }
  console.log(halvedAims(byPath, SITTING));
  const measured = byPath.after;
  if (RULE === undefined && measured !== undefined && args["no-record"] !== true) {
    writeFileSync(ROLLOUT_RACK_FILE, `${JSON.stringify(rackRecord(measured, SITTING, RACKS), null, 2)}\n`);
    console.log(
      `Per-rack figures of the default rule written to ${ROLLOUT_RACK_FILE} (bench:fleet reads them).`,
    );
  }
  if (args.json)
    writeFileSync(
      args.json,
      JSON.stringify({ runs: all, median: byPath[PATHS[PATHS.length - 1] as RolloutPath], byPath }, null, 2),
    );
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);

/**
 * Whether a step judges a wave: CheckWave, or AwaitWave woken with a wave's answers in the
 * definition whose wait judges (src/app/child-task/wave-judge.ts), which checks the step in the
 * invocation that sends the next.
 */
function isWaveCheck(event: unknown): boolean {
  const e = event as { step?: unknown; judge?: unknown; wave?: { answers?: unknown } };
  return (
    e.step === "checkWave" || (e.step === "awaitWave" && e.judge === true && e.wave?.answers !== undefined)
  );
}
