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
 *     as it is and as it was before its steps started the next step, bench/lib/rollout-paths.ts,
 *     alternating run by run on the same machine).
 * The dispatcher is driven as deployed: the tables' streams wake it (local/stream-poller.ts and the
 * stream evaluator, as the Lambda event source mapping does: a new run starts at once, a finished
 * target refills its slot), the outcome recorder wakes it directly, and the ticker passes every
 * `--tick-ms` (10 s, the deployed interval: infra/constructs/ticker.ts). Until this file's
 * revision of 2026-12-01 it ticked every second with no stream, which filed about four requests per
 * rack more under "claim" and "run bookkeeping" (most of them ticks with nothing to do).
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
 *                            [--path both|before|after] [--health-check | --update-only]
 */

import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { startBmcFleet } from "../local/bmc-fleet.js";
import { createLocalChildTasks, LOCAL_REPORT_BATCH_MS } from "../local/child-tasks.js";
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
import { BMC_EVT_TOPIC_FILTER } from "../src/domain/bmc-topics.js";
import { AWAIT_SAFETY_NET_POLLS } from "../src/domain/component-verdict.js";
import type { CreateRunInput } from "../src/domain/create-run-input.js";
import type { InventoryRack } from "../src/domain/inventory.js";
import type { ComponentType } from "../src/domain/model.js";
import { DEFAULT_RULE } from "../src/domain/operation-rules.js";
import { UPGRADE_GROUP_ORDER } from "../src/domain/task-report.js";
import { registerBenchImages } from "./lib/bench-images.js";
import { installCapacityMeter } from "./lib/capacity-meter.js";
import { modelProductionWave } from "./lib/production-model.js";
import { modelRack, type RackModel, ROLLOUT_MAX_PARALLEL } from "./lib/rack-model.js";
import {
  kindOfPart,
  orderParts,
  PART,
  PartLabeller,
  partOfCall,
  type StepKind,
} from "./lib/rollout-parts.js";
import { definitionFor, type RolloutPath } from "./lib/rollout-paths.js";
import { benchRule } from "./lib/rollout-rules.js";
import { median } from "./lib/stats.js";
import { formatTable } from "./lib/table.js";
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
    // Which child-task path to run (bench/lib/rollout-paths.ts): both, one after the other, by default.
    path: { type: "string", default: "both" },
    // --health-check: the run pins a rule that is the default with a CHECK_HEALTH step closing
    // every stage, so the per-kind rows show what the health check costs beside the flash.
    "health-check": { type: "boolean", default: false },
    // --update-only: the run pins the default rule with its update step alone (6 wave steps a
    // rack), the workload the per-rack aims of 2026-12-04 were set against.
    "update-only": { type: "boolean", default: false },
  },
});
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
const PATHS: RolloutPath[] =
  args.path === "both" ? ["before", "after"] : args.path === "before" ? ["before"] : ["after"];
if (!["both", "before", "after"].includes(String(args.path)))
  throw new Error(`--path must be both, before or after, not ${args.path}`);

/**
 * List prices, us-east-1, as published on the AWS pricing pages (checked 2026-11; on-demand,
 * no free tier, x86 Lambda):
 *   Step Functions Standard   $0.025 per 1,000 state transitions
 *   Lambda                    $0.20 per 1M requests + $0.0000166667 per GB-second
 *   IoT Core messaging        $1.00 per 1M messages (5 KB units; first 1B/month tier)
 *   IoT Core rules engine     $0.15 per 1M rules triggered + $0.15 per 1M actions executed
 *   SQS standard              $0.40 per 1M requests (each report sent by the rule's action)
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
  sqsRequest: 0.4 / 1e6,
  wru: 0.625 / 1e6,
  rru: 0.125 / 1e6,
};
/** task-steps and bmc-result: 256 MB, ~60 ms billed per invocation (mostly one or two DynamoDB calls). */
const LAMBDA_GB = 0.25;
const LAMBDA_SECONDS = 0.06;
const LAMBDA_PRICE = PRICE.lambdaRequest + LAMBDA_GB * LAMBDA_SECONDS * PRICE.lambdaGbSecond;

/** Where the per-rack cost work started, 2026-12-01 (`npm run bench` on this machine, 10 racks × 39 BMCs, 5 at a time). */
const TODAY = {
  requests: 500,
  capacityUnits: 558,
  lambda: 271,
  rolloutVsIdeal: 7.2,
  rackVsIdeal: 7,
  cost10min: 0.0069,
};
/** The per-rack figures of 2026-12-03, measured before activation joined the default rule, and the aims set against them. */
const BEFORE_ACTIVATION = { requests: 46, lambda: 32, transitions: 36, iot: 312, cost10min: 0.00193 };
const HALVED_AIMS = { requests: 25, lambda: 16, cost10min: 0.001 };
const AIMS = {
  requests: 60,
  capacityUnits: 150,
  lambda: 60,
  rolloutVsIdeal: 2.5,
  rackVsIdeal: 2,
  cost10min: 0.004,
};

function usd(x: number): string {
  return x < 0.01 ? `$${x.toFixed(5)}` : `$${x.toFixed(4)}`;
}

function log(line: string): void {
  if (process.env.BENCH_VERBOSE) console.log(line);
}

interface PartFigures {
  requests: number;
  rcu: number;
  wcu: number;
  lambda: number;
  transitions: number;
  byOperation: Record<string, number>;
}

/** Per rack, the wave steps of one kind (flash, activation, bring-up, health check...). */
interface KindFigures {
  steps: number;
  requests: number;
  transitions: number;
  lambda: number;
  checks: number;
  /** The time the racks' executions spent in these steps (their states, entered to left), per rack. */
  wallMs: number;
}

interface Figures {
  path: RolloutPath;
  status: string;
  racks: number;
  upgraded: number;
  components: number;
  flashes: number;
  wallMs: number;
  rolloutIdealMs: number;
  rackIdealMs: number;
  rack: { p50: number; p90: number; max: number };
  /** Per rack upgraded. */
  perRack: {
    requests: number;
    capacityUnits: number;
    rcu: number;
    wcu: number;
    /** What the benchmark quoted before the per-rack cost work: moto's placeholders where it gives any. */
    capacityUnitsAsMotoReports: number;
    lambda: number;
    taskSteps: number;
    bmcResult: number;
    reportsReceived: number;
    transitions: number;
    commands: number;
    reports: number;
    waves: number;
    checksPerWave: number;
  };
  taskStepsByStep: Record<string, number>;
  parts: Record<string, PartFigures>;
  byKind: Partial<Record<StepKind, KindFigures>>;
  cost: {
    measured: number;
    breakdown: Record<string, number>;
    model: {
      checksPerWave: number;
      transitions: number;
      /** The same wave polled by the backoff alone (no progress estimate): its checks and transitions. */
      backoffChecksPerWave: number;
      backoffTransitions: number;
      /** The same schedule in Wait states, no wake-up. */
      pollChecksPerWave: number;
      taskSteps: number;
      rru: number;
      wru: number;
      /** DynamoDB requests per rack: the measured ones and, per extra check, its read and its AwaitWave's write. */
      requests: number;
      /** The flash steps per rack, and the checks each took here (only they gain checks in the model). */
      flashSteps: number;
      flashChecksPerStep: number;
      total: number;
    };
  };
  callsPerSecond: number;
  /** The definition's model of a rack (bench/lib/rack-model.ts): at this stack's timing (one check a step) and at production's. */
  rackModel: { local: RackModel; production: RackModel };
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
  });
  let evtMessages = 0;
  const reportTypes: Record<string, number> = {};
  await broker.subscribe(BMC_EVT_TOPIC_FILTER, (_topic, payload) => {
    evtMessages += 1;
    const type = String((JSON.parse(payload.toString("utf8")) as { type?: unknown }).type);
    reportTypes[type] = (reportTypes[type] ?? 0) + 1;
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
        if ((event as { step?: unknown }).step === "checkWave") add(checksByPart, part);
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
  const checks = (exec.byStep.checkWave ?? 0) / n;
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
    waves,
    checksPerWave: checks / Math.max(1, waves),
  };
  // bmc-result: one IoT rule action per report; one SQS request per report when the rule sends
  // them to a queue (the receiver then takes them in batches), else one Lambda invocation each.
  const queued = perRack.bmcResult < perRack.reportsReceived;
  const iotCost =
    (perRack.commands + perRack.reports) * PRICE.iotMessage +
    perRack.reports * (PRICE.iotRule + PRICE.iotAction + (queued ? PRICE.sqsRequest : 0));
  const breakdown = {
    "Step Functions": perRack.transitions * PRICE.transition,
    Lambda: perRack.lambda * LAMBDA_PRICE,
    [queued ? "IoT + SQS" : "IoT"]: iotCost,
    DynamoDB: perRack.wcu * PRICE.wru + perRack.rcu * PRICE.rru,
  };
  const measured = Object.values(breakdown).reduce((a, b) => a + b, 0);

  // Production timing: every wave a 10-minute flash; the product's own schedule decides how many
  // checks that takes (bench/lib/production-model.ts). Each extra check costs what a check costs
  // here: its state transitions, its task-steps invocation and read, and the AwaitWave before it
  // (an invocation and its write of the set, measured as a wave's average write).
  const prod = modelProductionWave(DEFAULT_CHILD_TASK_SETTINGS);
  const wavePart = (p: string) => p.startsWith("wave ");
  const checkRcu =
    checks > 0
      ? Object.entries(parts)
          .filter(([p]) => wavePart(p))
          .reduce((sum, [, v]) => sum + v.rcu, 0) / checks
      : 0;
  // Each check is one read (the wave's results, with the task at the last step).
  const checkReads =
    checks > 0
      ? Object.entries(parts)
          .filter(([p]) => wavePart(p))
          .reduce((sum, [, v]) => sum + (v.byOperation.GetItem ?? 0) + (v.byOperation.BatchGetItem ?? 0), 0) /
        checks
      : 0;
  const awaitsPerCheck = checks > 0 ? (exec.byStep.awaitWave ?? 0) / n / checks : 0;
  const waveWrites = Object.entries(parts)
    .filter(([p]) => wavePart(p))
    .reduce((sum, [, v]) => ({ wcu: sum.wcu + v.wcu, n: sum.n + (v.byOperation.UpdateItem ?? 0) }), {
      wcu: 0,
      n: 0,
    });
  const awaitWru = waveWrites.n > 0 ? waveWrites.wcu / waveWrites.n : 0;
  // Only the flashes take 10 minutes: an activation or a bring-up (a BMC or host back within a
  // few minutes) is assumed woken within its first wait, as here, so only flash steps gain checks.
  // Each extra check is a timed-out AwaitWave (its write) and a check that reads the wave's set.
  const flash = byKind.flash ?? { steps: waves, checks };
  const flashChecksPerStep = flash.steps > 0 ? flash.checks / flash.steps : 0;
  const extraChecks = Math.max(0, prod.checksPerWave - flashChecksPerStep) * flash.steps;
  const backoffExtraChecks = Math.max(0, prod.backoffChecksPerWave - flashChecksPerStep) * flash.steps;
  const model = {
    checksPerWave: prod.checksPerWave,
    transitions: perRack.transitions + extraChecks * prod.transitionsPerCheck,
    backoffChecksPerWave: prod.backoffChecksPerWave,
    backoffTransitions: perRack.transitions + backoffExtraChecks * prod.transitionsPerCheck,
    pollChecksPerWave: prod.pollChecksPerWave,
    taskSteps: perRack.taskSteps + extraChecks * (1 + awaitsPerCheck),
    rru: perRack.rcu + extraChecks * Math.max(1, checkRcu),
    wru: perRack.wcu + extraChecks * awaitsPerCheck * awaitWru,
    requests: perRack.requests + extraChecks * (Math.max(1, checkReads) + awaitsPerCheck),
    flashSteps: flash.steps,
    flashChecksPerStep,
    total: 0,
  };
  model.total =
    model.transitions * PRICE.transition +
    (model.taskSteps + perRack.bmcResult) * LAMBDA_PRICE +
    iotCost +
    model.wru * PRICE.wru +
    model.rru * PRICE.rru;

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
    cost: { measured, breakdown, model },
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

/** The median of each number over the runs (objects field by field; other values from the first run). */
function medianOf<T>(runs: readonly T[]): T {
  const first = runs[0] as T;
  if (typeof first === "number") return median(runs as unknown as number[]) as T;
  if (typeof first !== "object" || first === null) return first;
  const keys = new Set(runs.flatMap((r) => Object.keys(r as object)));
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const values = runs.map((r) => (r as Record<string, unknown>)[key]);
    const present = values.filter((v) => v !== undefined);
    out[key] = present.every((v) => typeof v === "number")
      ? median([...(present as number[]), ...Array(values.length - present.length).fill(0)])
      : medianOf(present as unknown[]);
  }
  return out as T;
}

function report(f: Figures, runs: number): string {
  const nf = (x: number, d = 1) => x.toFixed(d);
  const ops = (byOp: Record<string, number>) =>
    Object.entries(byOp)
      .filter(([, v]) => v > 0)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${nf(v)}`)
      .join(", ");
  const rows = Object.entries(f.parts).map(([part, v]) => [
    part,
    nf(v.requests),
    nf(v.rcu),
    nf(v.wcu),
    nf(v.lambda),
    nf(v.transitions),
    ops(v.byOperation),
  ]);
  const sum = (k: keyof PartFigures) => Object.values(f.parts).reduce((a, v) => a + (v[k] as number), 0);
  rows.push([
    "total",
    nf(sum("requests")),
    nf(sum("rcu")),
    nf(sum("wcu")),
    nf(sum("lambda")),
    nf(sum("transitions")),
    "",
  ]);
  const pr = f.perRack;
  const med = runs > 1 ? ` (medians of ${runs} runs)` : "";
  const aim = (
    label: string,
    aimText: string,
    today: string,
    value: number,
    text: string,
    ok: (v: number) => boolean,
  ) => [label, aimText, today, text, ok(value) ? "met" : "NOT met"];
  const aims = [
    aim(
      "DynamoDB requests per rack",
      `≤ ${AIMS.requests}`,
      `~${TODAY.requests}`,
      pr.requests,
      `${nf(pr.requests)} (10-min flashes: ${nf(f.cost.model.requests, 0)})`,
      (v) => v <= AIMS.requests,
    ),
    aim(
      "capacity units per rack (estimated)",
      `≤ ${AIMS.capacityUnits}`,
      `${TODAY.capacityUnits} (moto's figures)`,
      pr.capacityUnits,
      `${nf(pr.capacityUnits)} (moto's figures: ${nf(pr.capacityUnitsAsMotoReports)})`,
      (v) => v <= AIMS.capacityUnits,
    ),
    aim(
      "Lambda invocations per rack",
      `≤ ${AIMS.lambda}`,
      `${TODAY.lambda}`,
      pr.lambda,
      nf(pr.lambda),
      (v) => v <= AIMS.lambda,
    ),
    aim(
      "rollout wall time / ideal",
      `≤ ${AIMS.rolloutVsIdeal}×`,
      `${TODAY.rolloutVsIdeal}×`,
      f.wallMs / f.rolloutIdealMs,
      `${nf(f.wallMs / f.rolloutIdealMs, 2)}×`,
      (v) => v <= AIMS.rolloutVsIdeal,
    ),
    aim(
      "one rack p50 / ideal",
      `≤ ${AIMS.rackVsIdeal}×`,
      `${TODAY.rackVsIdeal}×`,
      f.rack.p50 / f.rackIdealMs,
      `${nf(f.rack.p50 / f.rackIdealMs, 2)}×`,
      (v) => v <= AIMS.rackVsIdeal,
    ),
    aim(
      "cost per rack, 10-minute flashes",
      `< $${AIMS.cost10min}`,
      `$${TODAY.cost10min}`,
      f.cost.model.total,
      usd(f.cost.model.total),
      (v) => v < AIMS.cost10min,
    ),
  ];
  return [
    `Rollout benchmark: ${f.racks} racks × ${f.components} BMCs, ${CONCURRENCY} at a time, one phase; every flash ${UPDATE_MS} ms; Wait states ${WAIT_MS} ms (local override)${med}`,
    `Run ${f.status} in ${(f.wallMs / 1000).toFixed(1)} s; ${f.upgraded}/${f.racks} racks upgraded; ${f.flashes} flashes; driven through the dispatcher (src/app/dispatcher.ts): stream and direct wake-ups, a tick every ${TICK_MS / 1000} s`,
    "",
    "Per rack upgraded, by step: DynamoDB requests, read and write capacity units (estimated), Lambda invocations, state transitions",
    formatTable(
      ["step", "requests", "RCU", "WCU", "Lambda", "transitions", "DynamoDB requests by operation"],
      rows,
    ),
    "",
    "Per rack upgraded (measured on the local stack)",
    `  state transitions        ${nf(pr.transitions)}`,
    `  Lambda invocations       ${nf(pr.lambda)}  (task-steps ${nf(pr.taskSteps)}: ${Object.entries(
      f.taskStepsByStep,
    )
      .map(([k, v]) => `${k} ${nf(v)}`)
      .join(", ")}; bmc-result ${nf(pr.bmcResult)} for ${nf(pr.reportsReceived)} reports)`,
    `  IoT messages             ${nf(pr.commands + pr.reports)}  (commands ${nf(pr.commands)}, BMC reports ${nf(pr.reports)})`,
    `  DynamoDB requests        ${nf(pr.requests)}`,
    `  the definition's model   ${f.rackModel.local.steps} wave steps: ${f.rackModel.local.transitions} state transitions, ${f.rackModel.local.taskSteps} task-steps invocations, ${f.rackModel.local.iotMessages} IoT messages at one check a step (bench/lib/rack-model.ts; measured above: ${nf(pr.transitions)}, ${nf(pr.taskSteps)}, ${nf(pr.commands + pr.reports)}, more where a wait timed out)`,
    `  DynamoDB capacity units  ${nf(pr.capacityUnits)}  (${nf(pr.wcu)} WRU, ${nf(pr.rcu)} RRU; estimated by DynamoDB's sizing rules; moto's own figures where it gives any: ${nf(pr.capacityUnitsAsMotoReports)})`,
    `  cost at list prices      ${usd(f.cost.measured)}  = ${Object.entries(f.cost.breakdown)
      .map(([k, v]) => `${k} ${usd(v)}`)
      .join(" + ")}`,
    "",
    `Per rack, modelled for production timing (10-min flashes, each wait woken by the wave's last result or timed out into a check on the default poll schedule, timed by the reported progress: ${nf(f.cost.model.checksPerWave)} checks per flash step instead of ${nf(f.cost.model.flashChecksPerStep)}, ${f.cost.model.flashSteps} flash steps of ${pr.waves} wave steps per rack, the activations and bring-ups assumed woken within their first wait as here; the same polls without the wake-up: ${nf(f.cost.model.pollChecksPerWave)} checks per wave; the backoff alone: ${nf(f.cost.model.backoffChecksPerWave)}, ${nf(f.cost.model.backoffTransitions, 0)} state transitions)`,
    `  the definition's model at this timing (bench/lib/rack-model.ts, what bench:fleet spreads over each rack): ${f.rackModel.production.transitions} state transitions, ${f.rackModel.production.taskSteps} task-steps invocations, ${f.rackModel.production.iotMessages} IoT messages, at most ${f.rackModel.production.bmcResultUnshared} bmc-result invocations (no batch shared)`,
    `  state transitions ${nf(f.cost.model.transitions, 0)} (measured here: ${nf(pr.transitions, 0)}), task-steps invocations ${nf(f.cost.model.taskSteps, 0)}, DynamoDB requests ${nf(f.cost.model.requests, 0)} (measured here: ${nf(pr.requests, 0)}), WRU ${nf(f.cost.model.wru, 0)}, RRU ${nf(f.cost.model.rru, 0)} → ${usd(f.cost.model.total)} per rack, ${usd(f.cost.model.total * 1000)} per 1,000 racks`,
    "",
    "Prices: us-east-1 list prices (checked 2026-11): Step Functions Standard $0.025/1k transitions; Lambda $0.20/1M requests + $0.0000166667/GB-s (256 MB × 60 ms assumed);",
    "        IoT Core $1.00/1M messages + rules $0.15/1M triggered + $0.15/1M actions; SQS $0.40/1M requests; DynamoDB on-demand $0.625/1M WRU, $0.125/1M RRU.",
    "        Not included: IoT connectivity ($0.08 per million connection-minutes, a fleet cost, not per upgrade), CloudWatch logs/metrics, the ticker and dispatcher Lambdas.",
    "",
    "Wall time",
    `  rollout   ${(f.wallMs / 1000).toFixed(1)} s   ideal ${(f.rolloutIdealMs / 1000).toFixed(1)} s  (${Math.ceil(f.racks / CONCURRENCY)} rounds of ${CONCURRENCY} racks × ${f.rackIdealMs / UPDATE_MS} groups × ${UPDATE_MS} ms)  → ${nf(f.wallMs / f.rolloutIdealMs, 2)}× ideal`,
    `  one rack  p50 ${(f.rack.p50 / 1000).toFixed(2)} s, p90 ${(f.rack.p90 / 1000).toFixed(2)} s, max ${(f.rack.max / 1000).toFixed(2)} s   ideal ${(f.rackIdealMs / 1000).toFixed(2)} s  → p50 ${nf(f.rack.p50 / f.rackIdealMs, 2)}× ideal`,
    `  DynamoDB calls ${nf(f.callsPerSecond, 0)}/s on serialized moto`,
    "",
    "Aims (set 2026-12-01), against the figures measured then",
    formatTable(["figure", "aim", "2026-12-01", "now", ""], aims),
    "",
    "Per rack, by the kind of step (the rule's steps of every wave): what the flash, the activation, the bring-up and any health check cost",
    formatTable(
      ["kind", "steps", "requests", "transitions", "Lambda", "checks", "wall s (sum)", "wall s per step"],
      Object.entries(f.byKind).map(([kind, k]) => [
        kind,
        nf(k.steps, 0),
        nf(k.requests),
        nf(k.transitions),
        nf(k.lambda),
        nf(k.checks),
        nf(k.wallMs / 1000, 2),
        nf(k.wallMs / 1000 / Math.max(1, k.steps), 2),
      ]),
    ),
  ].join("\n");
}

/**
 * The per-rack aims against the figures measured before activation, with the old path's and the
 * new path's figures of this sitting side by side (bench/lib/rollout-paths.ts).
 */
function halvedAims(byPath: Partial<Record<RolloutPath, Figures>>): string {
  const nf = (x: number, d = 1) => x.toFixed(d);
  const columns = PATHS.map((p) =>
    p === "before" ? "old path (SendWave per step)" : "new path (the steps send)",
  );
  const row = (
    label: string,
    aim: number | undefined,
    then: string,
    value: (f: Figures) => number,
    text: (x: number) => string,
  ) => {
    const values = PATHS.map((p) => byPath[p]).map((f) => (f === undefined ? undefined : value(f)));
    const last = values[values.length - 1];
    const verdict = aim === undefined || last === undefined ? "" : last <= aim ? "met" : "NOT met";
    return [
      label,
      aim === undefined ? "-" : `≤ ${text(aim)}`,
      then,
      ...values.map((v) => (v === undefined ? "-" : text(v))),
      verdict,
    ];
  };
  const rows = [
    row(
      "DynamoDB requests per rack",
      HALVED_AIMS.requests,
      `${BEFORE_ACTIVATION.requests}`,
      (f) => f.perRack.requests,
      (x) => nf(x),
    ),
    row(
      "Lambda invocations per rack",
      HALVED_AIMS.lambda,
      `${BEFORE_ACTIVATION.lambda}`,
      (f) => f.perRack.lambda,
      (x) => nf(x),
    ),
    row(
      "… of them task-steps",
      undefined,
      "-",
      (f) => f.perRack.taskSteps,
      (x) => nf(x),
    ),
    row(
      "state transitions per rack",
      undefined,
      `${BEFORE_ACTIVATION.transitions}`,
      (f) => f.perRack.transitions,
      (x) => nf(x),
    ),
    row(
      "IoT messages per rack",
      undefined,
      `${BEFORE_ACTIVATION.iot}`,
      (f) => f.perRack.commands + f.perRack.reports,
      (x) => nf(x, 0),
    ),
    row(
      "modelled cost per rack, 10-minute flashes",
      HALVED_AIMS.cost10min,
      usd(BEFORE_ACTIVATION.cost10min),
      (f) => f.cost.model.total,
      usd,
    ),
    row(
      "… its state transitions",
      undefined,
      "-",
      (f) => f.cost.model.transitions,
      (x) => nf(x, 0),
    ),
    row(
      "rollout wall time / ideal",
      undefined,
      "-",
      (f) => f.wallMs / f.rolloutIdealMs,
      (x) => `${nf(x, 2)}×`,
    ),
  ];
  return [
    `Per-rack aims (set 2026-12-04, against 2026-12-03's figures measured before activation joined the default rule), ${PATHS.length > 1 ? "both paths in this sitting" : `the ${PATHS[0]} path`}${RULE === undefined ? "" : `, the rule "${RULE.name}"`}${REPEAT > 1 ? ` (medians of ${REPEAT} runs each)` : ""}`,
    formatTable(["figure", "aim", "2026-12-03", ...columns, ""], rows),
  ].join("\n");
}

/** The median rack's states from its submission: when each was entered, and how long until the next. */
function printTimeline(
  tasks: readonly { id: string; createdAt: number; finishedAt?: number }[],
  timelines: Map<string, [number, string][]>,
): void {
  const byDuration = [...tasks].sort(
    (a, b) => (a.finishedAt ?? 0) - a.createdAt - ((b.finishedAt ?? 0) - b.createdAt),
  );
  const task = byDuration[Math.floor(byDuration.length / 2)];
  const states = task === undefined ? undefined : timelines.get(task.id);
  if (task === undefined || states === undefined) return;
  const lines = [`Timeline of the median rack (task ${task.id}), ms from its submission:`];
  const ends = [...states.slice(1).map(([t]) => t), task.finishedAt ?? Date.now()];
  states.forEach(([t, name], i) => {
    lines.push(
      `  ${String(t - task.createdAt).padStart(6)}  ${name.padEnd(28)} ${String((ends[i] ?? t) - t).padStart(5)} ms`,
    );
  });
  lines.push(`  ${String((task.finishedAt ?? Date.now()) - task.createdAt).padStart(6)}  (task finished)`);
  console.log(`${lines.join("\n")}\n`);
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
    console.log(`=== The ${path} path ===\n${report(byPath[path] as Figures, runs.length)}\n`);
  }
  console.log(halvedAims(byPath));
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
