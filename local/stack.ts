/**
 * The whole product on one machine: the same use cases and adapters as in AWS, every AWS service
 * replaced by a local stand-in that speaks its wire protocol (see docs and architecture.md):
 * moto for DynamoDB and its streams, aws-local-stepfunctions for the child-task state machine, an
 * aedes MQTT broker plus an IoT data-plane shim for IoT Core, a simulated BMC fleet, an in-process
 * ticker for EventBridge Scheduler, stream pollers for the Lambda event source mappings, and
 * moto's EventBridge for the run events.
 *
 * `startLocalStack` is what `npm start` runs (local/main.ts) and what the e2e tests start.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { DescribeTableCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import { awsClientConfig, createDynamoDbClient } from "../src/adapters/aws-config.js";
import {
  createDynamoStores,
  createTables,
  type DynamoStores,
  LocalAesGcmCipher,
  type TableNames,
  tableNames,
} from "../src/adapters/dynamodb/index.js";
import { runEventsBatchHandler } from "../src/adapters/dynamodb/run-event-records.js";
import { storeProbe } from "../src/adapters/dynamodb/store-probe.js";
import { streamBatchHandler } from "../src/adapters/dynamodb/stream-records.js";
import { EventBridgeRunEventBus } from "../src/adapters/eventbridge/run-event-bus.js";
import { type AccessPolicySource, accessPolicySource } from "../src/adapters/grpc/access-policy-source.js";
import type { AdmissionLimits } from "../src/adapters/grpc/admission.js";
import { startGrpcServer } from "../src/adapters/grpc/server.js";
import type { ServerTlsFiles } from "../src/adapters/grpc/tls.js";
import { LocalRequestMac } from "../src/adapters/kms/request-mac.js";
import { createS3Client, S3ImageObjectStore } from "../src/adapters/s3/image-bucket.js";
import { systemClock } from "../src/adapters/system-clock.js";
import type { BuildInfo, FlowApi } from "../src/app/api.js";
import { createDispatcher, type Dispatcher, inProcessWaker } from "../src/app/dispatcher.js";
import { lineLogger, noopMetrics } from "../src/app/observability.js";
import type { Clock } from "../src/app/ports.js";
import { createRunEventRelay } from "../src/app/run-event-relay.js";
import { createStoreHealth, failFastWhileUnreachable } from "../src/app/store-health.js";
import { createStreamEvaluator } from "../src/app/stream-evaluator.js";
import { AWAIT_SAFETY_NET_POLLS } from "../src/domain/component-verdict.js";
import type { ExternalCheckConfig } from "../src/domain/external-check.js";
import type { FirmwareBaseline } from "../src/domain/firmware-baselines.js";
import type { InventoryRack } from "../src/domain/inventory.js";
import { accessControl } from "../src/service/access.js";
import { assembleFlowApi } from "../src/service/flow-api.js";
import type { BmcFleet } from "./bmc-fleet.js";
import { startBmcSide } from "./bmc-side.js";
import { createLocalChildTasks, type LocalChildTasks } from "./child-tasks.js";
import { generateDemoFleet } from "./demo-fleet.js";
import type { FleetConfig } from "./fleet-file.js";
import { ensureBucket, localImageBucket, seedImages, seedVersions } from "./image-catalog.js";
import type { LocalMoto } from "./moto.js";
import { startSupervisedMoto } from "./moto-supervisor.js";
import { quietTicks } from "./quiet-ticks.js";
import type { RedfishFleet } from "./redfish-fleet.js";
import { type StreamPoller, startStreamPoller } from "./stream-poller.js";
import { startTicker } from "./ticker.js";
import { reportWrites } from "./write-nudges.js";

export interface LocalStackOptions {
  /** gRPC port on 127.0.0.1; 0 picks a free one. */
  port: number;
  /** Racks to load at start; absent: the demo fleet (unless a data dir restored an inventory). */
  inventory?: InventoryRack[];
  /** Firmware baselines to set at start (the inventory file's `baselines`). */
  baselines?: FirmwareBaseline[];
  /**
   * Versions to seed the image catalog with, for every component type, besides the demo fleet's,
   * the examples' and the baselines' (local/image-catalog.ts).
   */
  imageVersions?: readonly string[];
  /**
   * The image catalog's bucket; default one of the stack's own, named from the table prefix
   * (`localImageBucket`). Stacks that share an endpoint may share one: the seeded objects are
   * content-addressed (the same bytes at the same key), so a stack finds those an earlier one put
   * there and puts none, and puts back any that were changed or lost.
   */
  imageBucket?: string;
  fleet?: FleetConfig;
  tickMs: number;
  /**
   * Keeps state across restarts: the spawned moto's tables (`<dataDir>/dynamodb`: a write-ahead log
   * and snapshots, see local/moto-launcher.py) and the credentials key. With `awsEndpoint` the
   * tables are that endpoint's to keep.
   */
  dataDir?: string;
  /** An AWS-compatible endpoint that is already running; absent: spawn moto. */
  awsEndpoint?: string;
  /** Table-name prefix (default `flow-`); tests pass a unique one to share an endpoint. */
  tablePrefix?: string;
  /**
   * Every Wait state of the child-task state machine lasts this long instead of its ASL duration
   * (the AWS poll interval suits real BMCs; the simulated ones answer in ~0.5 s). Default 500 ms.
   */
  childTaskWaitMs?: number;
  /**
   * The AES-256-GCM key of firmware credentials (32 bytes). Absent: the data dir's `secrets.key`
   * (written on first use), else a fresh key per process.
   */
  secretsKey?: Uint8Array;
  /**
   * IoT Core and the BMCs outside this process, at this MQTT broker (`mqtt://…`): commands are
   * published to it and reports taken from it, and neither the local broker nor the simulated
   * fleet starts (`fleet` is absent). The restart tests keep broker and fleet in the test process,
   * as hardware outlives a control plane that restarts.
   */
  bmcBroker?: string;
  /**
   * Start no simulated BMCs: the broker's BMC topics are served by whatever connects to it (a
   * `flow-bmc-agent` started by hand, docs/agent.md). Not with `bmcBroker`.
   */
  noFleet?: boolean;
  /**
   * What answers on the BMC topics: `simulated` (default) the simulated fleet (local/bmc-fleet.ts);
   * `redfish` an emulated Redfish BMC per component and a BMC agent per rack
   * (local/redfish-fleet.ts). Not with `noFleet`, `fleet` or `bmcBroker`.
   */
  bmc?: "simulated" | "redfish";
  /** The local broker's port on 127.0.0.1 (default: any free one); not with `bmcBroker`. */
  mqttPort?: number;
  /** The dispatcher's claim lease (default the reference's 30 s); the restart tests shorten it. */
  claimLeaseMs?: number;
  /** What the Version RPC reports (default version `0.1.0-local`). */
  buildInfo?: BuildInfo;
  /** The gRPC server's admission limits (default: the front's; `npm start` passes the local stack's). */
  admission?: AdmissionLimits;
  /**
   * The EventBridge bus the run events are published to, on the same endpoint (moto serves
   * EventBridge): default `default`, the account's default bus. Tests give each stack its own.
   */
  eventBusName?: string;
  /**
   * How long a child task's preflight waits for components that are not ready before it fails the
   * target (default 10 min; whole seconds, rounded up).
   */
  readinessTimeoutMs?: number;
  /** External health checks a rule's CHECK_HEALTH may name (commands, or HTTPS endpoints). */
  externalChecks?: readonly ExternalCheckConfig[];
  /**
   * Called with each DynamoDB client (the workers', then the gRPC API's) before the stores are built
   * on it and the inventory is loaded (the API benchmark installs its capacity meter there).
   */
  onDynamoDbClient?: (client: DynamoDBClient) => void;
  /**
   * The clock every part of the stack reads (the dispatcher's claims and windows, the API's
   * schedules, the child tasks, the store-health timers). Default the system clock; tests start the
   * stack on a `shiftableClock()` (local/clock.ts) to reach a window's opening without waiting.
   */
  clock?: Clock;
  log?: (line: string) => void;
  /** TLS on the gRPC server; with `clientCaFile`, mutual TLS (clients must present a certificate it signed). */
  tls?: ServerTlsFiles;
  /**
   * The access policy file (src/adapters/grpc/access-policy-source.ts): read before anything
   * starts (a bad one stops the start), reloaded by `accessPolicy.reload()` (SIGHUP in `npm
   * start`). Absent: the stack runs open, and says so in one line.
   */
  authzPolicyFile?: string;
  /**
   * Called once the stack has stopped itself for good (its moto died and there is no data
   * directory to restart it from), after saying why in one log line. Default: nothing more.
   */
  onFatal?: (reason: string) => void;
}

export interface LocalStack {
  port: number;
  endpoint: string;
  awsEndpoint: string;
  tables: TableNames;
  stores: DynamoStores;
  /** The moto this stack spawned (absent with `awsEndpoint`): tests kill it. */
  moto?: LocalMoto;
  /** The simulated BMCs; absent with `bmcBroker` or `noFleet`. */
  fleet?: BmcFleet;
  /** The image catalog's bucket (on the stack's S3 endpoint). */
  imageBucket: string;
  /** The emulated Redfish BMCs and their agents; present with `bmc: "redfish"`. */
  redfish?: RedfishFleet;
  /** The local broker (`mqtt://127.0.0.1:<port>`); absent with `bmcBroker`. */
  mqttUrl?: string;
  /**
   * The parts whose progress tests wait on instead of sleeping: `childTasks.idle()` (every
   * execution ended and its outcome recorded, which queues the run's wake-up pass) and
   * `dispatcher.dispatchRun` (queued behind any pass of the run still running or queued).
   */
  childTasks: LocalChildTasks;
  dispatcher: Dispatcher;
  /** The FlowApi the gRPC server serves (a test may serve it again, e.g. over mutual TLS). */
  api: FlowApi;
  /** The access policy in force, when the stack runs with one. */
  accessPolicy?: AccessPolicySource;
  stop(): Promise<void>;
}

export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  const log = options.log ?? ((line: string) => console.log(line));
  const clock = options.clock ?? systemClock;
  // First, so that a bad policy stops the start before anything is spawned.
  const accessPolicy =
    options.authzPolicyFile === undefined
      ? undefined
      : accessPolicySource(options.authzPolicyFile, { logger: lineLogger(log), metrics: noopMetrics });
  const stops: (() => Promise<void>)[] = [];
  // The dispatcher's ticker stops before anything else: a pass during the gRPC server's drain
  // would start tasks that the rest of the stop then abandons.
  let stopTicker: (() => Promise<void>) | undefined;
  let stopping: Promise<void> | undefined;
  // Once, whoever asks first (a signal, a test, a moto that died for good).
  const stopAll = () => {
    stopping ??= (async () => {
      for (const stop of [...(stopTicker === undefined ? [] : [stopTicker]), ...stops.reverse()]) {
        await stop().catch((error: unknown) => log(`shutdown: ${(error as Error).message}`));
      }
    })();
    return stopping;
  };
  try {
    // The store-health monitor's, once it exists: a moto that exited is a store known to be down.
    let storeDown = (_reason: string): void => {};
    let moto: LocalMoto | undefined;
    if (!options.awsEndpoint) {
      const started = await startSupervisedMoto({
        ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
        stopping: () => stopping !== undefined,
        stopAll,
        storeDown: (reason) => storeDown(reason),
        ...(options.onFatal === undefined ? {} : { onFatal: options.onFatal }),
        log,
      });
      moto = started;
      stops.push(() => started.stop());
    }
    const awsEndpoint = options.awsEndpoint ?? moto!.endpoint;
    const client = createDynamoDbClient({ endpoint: awsEndpoint });
    const names = tableNames(options.tablePrefix ?? "flow-");
    // False when the tables were there already: restored from the data dir, or a shared endpoint's.
    const created = await ensureTables(client, names);
    const localKey = options.secretsKey ?? (await secretsKey(options.dataDir));
    const cipher = new LocalAesGcmCipher(localKey);
    // The gRPC API's own client, configured as on Fargate (aws-config.ts: the front profile).
    const frontClient = createDynamoDbClient({ endpoint: awsEndpoint, profile: "front" });
    stops.push(async () => frontClient.destroy());
    // Every write either client makes wakes the stream pollers of its tables (they idle backed
    // off, see below), so the stack reads its own writes at once.
    const pollers: StreamPoller[] = [];
    const nudgePollers = (tables: readonly string[] | undefined) => {
      for (const poller of pollers) {
        if (tables === undefined) poller.nudge();
        else for (const table of tables) poller.nudge(table);
      }
    };
    // A write of the runs table may make a run due: the quiet ticks end (see `quiet` below).
    let runsWritten = (): void => {};
    const onWrite = (tables: readonly string[] | undefined) => {
      if (tables === undefined || tables.includes(names.runs)) runsWritten();
      nudgePollers(tables);
    };
    reportWrites(client, onWrite);
    reportWrites(frontClient, onWrite);
    options.onDynamoDbClient?.(client);
    options.onDynamoDbClient?.(frontClient);
    // NOT_SERVING while the store cannot be reached (src/app/store-health.ts); the stores tell it
    // of every call that failed so.
    const storeHealth = createStoreHealth({
      probe: storeProbe({ endpoint: awsEndpoint }, names.runs),
      logger: lineLogger(log),
      clock,
    });
    const suspect = () => storeHealth.suspect();
    const stores = createDynamoStores(client, names, { cipher, onUnavailable: suspect });
    const frontStores = createDynamoStores(frontClient, names, { cipher, onUnavailable: suspect });
    storeHealth.start();
    storeDown = (reason) => storeHealth.down(reason);
    stops.push(() => storeHealth.stop());

    // An explicit inventory always loads; the demo fleet only into tables made just now.
    if (options.inventory) await stores.inventory.upsertRacks(options.inventory);
    else if (created) await stores.inventory.upsertRacks(generateDemoFleet());
    // The image catalog: its bucket on the same moto, seeded before any baseline names a version.
    const s3 = createS3Client({ endpoint: awsEndpoint });
    stops.push(async () => s3.destroy());
    const imageBucket = options.imageBucket ?? localImageBucket(options.tablePrefix ?? "flow-");
    await ensureBucket(s3, imageBucket);
    const imageObjects = new S3ImageObjectStore(s3, imageBucket);
    const seed = seedVersions([
      ...(options.baselines ?? []).map((b) => b.version),
      ...(options.imageVersions ?? []),
    ]);
    const catalog = { images: stores.images, objects: imageObjects, clock };
    const seeded = await seedImages(catalog, seed);
    if (seeded > 0) log(`image catalog: ${seeded} image(s) seeded in s3://${imageBucket}`);
    // A store back from an outage may be a restarted moto: its tables come back (a data dir) but
    // not its S3, so the bucket and the seeded images' bytes are put back (the same bytes: a no-op
    // where nothing was lost).
    storeHealth.onChange((reachable) => {
      if (!reachable) return;
      void (async () => {
        await ensureBucket(s3, imageBucket);
        await seedImages(catalog, seed);
        log(`image catalog: s3://${imageBucket} seeded again now the store is back`);
      })().catch((error: unknown) =>
        log(`image catalog: could not be seeded again: ${(error as Error).message}`),
      );
    });
    if (options.baselines) await stores.policy.putBaselines(options.baselines);
    const racks = await stores.inventory.loadAll();

    const { shim, rule, mqttUrl, fleet, redfish } = await startBmcSide(options, racks, stops, log);

    const childTasks = await createLocalChildTasks({
      stores,
      tables: names,
      ...rule,
      iotEndpoint: shim.endpoint,
      cipher,
      imageUrls: imageObjects,
      waitOverrideMs: options.childTaskWaitMs ?? 500,
      // A wave's wait for its wake-up is the product's safety net of AWAIT_SAFETY_NET_POLLS polls,
      // each one Wait here (the deployed waits are 10-60 s, each played as one override).
      awaitTimeoutOverrideMs: AWAIT_SAFETY_NET_POLLS * (options.childTaskWaitMs ?? 500),
      ...(options.readinessTimeoutMs === undefined
        ? {}
        : { settings: { readinessTimeoutSeconds: Math.ceil(options.readinessTimeoutMs / 1000) } }),
      clock: () => clock.now(),
      ...(options.externalChecks === undefined ? {} : { externalChecks: options.externalChecks }),
      // A recorded outcome queues a pass for its run at once (the Lambda waker's stand-in).
      waker: inProcessWaker(() => dispatcher, lineLogger(log)),
      log,
    });
    stops.push(() => childTasks.stop());

    const dispatcher: Dispatcher = createDispatcher({
      runs: stores.runs,
      submitter: childTasks.submitter,
      clock,
      ...(options.claimLeaseMs === undefined ? {} : { leaseMs: options.claimLeaseMs }),
      // A tick with nothing due learns when the next run falls due within this: `quiet` below.
      dueLookaheadMs: QUIET_TICKS_MAX_MS,
      log,
    });
    if (!created) {
      // Tables from before (the data dir, or an endpoint that keeps them): the child tasks that
      // were running lost their executions with the last process. Before any pass runs.
      const resumed = await childTasks.resume();
      if (resumed.redriven + resumed.ended + resumed.recorded > 0) {
        log(
          `resumed ${resumed.redriven} child task(s) from the store (${resumed.resent} command(s) to send again); ${resumed.ended} ended; ${resumed.recorded} outcome(s) recorded late`,
        );
      }
    }
    const evaluator = createStreamEvaluator({ dispatcher, log });
    let tickNow = async (): Promise<void> => {};
    const poller = await startStreamPoller({
      client,
      // Targets: a finished target frees a slot; runs: a new, resumed or advanced run starts at once.
      tableNames: [names.runs, names.targets],
      handler: streamBatchHandler(evaluator),
      // Only a plain moto_server (the serialized launcher could not start) orphans iterators.
      reacquireAfterEmptyRead: moto !== undefined && !moto.serialized,
      // A restored store: what changed before its new stream existed is found by a pass now.
      onStreamReplaced: () => void tickNow(),
      maxIdleIntervalMs: STREAM_IDLE_MAX_MS,
      nudgeDelayMs: EVALUATOR_NUDGE_DELAY_MS,
      log,
    });
    pollers.push(poller);
    stops.push(() => poller.stop());
    // The run history, out: the RunEvents stream → EventBridge, as the event-publisher Lambda does.
    const bus = new EventBridgeRunEventBus(
      new EventBridgeClient(awsClientConfig({ endpoint: awsEndpoint })),
      options.eventBusName ?? "default",
    );
    const eventPoller = await startStreamPoller({
      client,
      tableNames: [names.runEvents],
      handler: runEventsBatchHandler(createRunEventRelay({ bus, log })),
      reacquireAfterEmptyRead: moto !== undefined && !moto.serialized,
      maxIdleIntervalMs: STREAM_IDLE_MAX_MS,
      nudgeDelayMs: EVENTS_NUDGE_DELAY_MS,
      log,
    });
    pollers.push(eventPoller);
    stops.push(() => eventPoller.stop());
    // After a restart, a pass at once: the stream starts at its end, so what changed while no
    // poller read it (a finished target, a run to start) is found by this pass, not the next tick.
    // The ticks that would find nothing due are skipped (local/quiet-ticks.ts): an idle stack's
    // short ticks (the tests' 150 ms) made most of its requests.
    const quiet = quietTicks({
      tick: () => dispatcher.tick(),
      now: () => clock.now(),
      maxQuietMs: QUIET_TICKS_MAX_MS,
    });
    runsWritten = () => quiet.wrote();
    const ticker = startTicker({
      intervalMs: options.tickMs,
      tick: () => quiet.tick(),
      log,
      immediate: !created,
    });
    tickNow = () => {
      quiet.wrote();
      return ticker.runNow();
    };
    stopTicker = () => ticker.stop();

    // The same API as the gRPC front on Fargate (src/service/grpc-front.ts), on the local task
    // service; resume and advance run their pass at once instead of waiting for the stream.
    const api = failFastWhileUnreachable(
      assembleFlowApi({
        stores: frontStores,
        imageObjects,
        tasks: { submitter: childTasks.submitter, api: childTasks.tasksApi },
        clock,
        newId: randomUUID,
        logger: lineLogger(log),
        dispatcher,
        onRacksImported: (more) => {
          fleet?.addRacks(more);
          redfish
            ?.addRacks(more)
            .catch((error: unknown) => log(`BMCs: imported racks got no BMCs: ${(error as Error).message}`));
        },
        buildInfo: options.buildInfo ?? { version: "0.1.0-local", buildTime: "", gitCommit: "" },
        externalChecks: (options.externalChecks ?? []).map((c) => c.name),
        requestMac: new LocalRequestMac(localKey),
      }),
      storeHealth,
    );

    const access = accessControl(accessPolicy, {
      stores: frontStores,
      logger: lineLogger(log),
      metrics: noopMetrics,
      clock,
    });
    if (access === undefined)
      log("access control: none (no --authz-policy): every caller may make every call");
    const server = await startGrpcServer({
      api,
      host: "127.0.0.1",
      port: options.port,
      logger: lineLogger(log),
      ...(options.clock === undefined ? {} : { applicationNow: () => clock.now() }),
      ...(options.admission === undefined ? {} : { admission: options.admission }),
      ...(options.tls === undefined ? {} : { tls: options.tls }),
      ...(access === undefined ? {} : { access }),
      storeHealth,
    });
    stops.push(() => server.shutdown(5_000));

    return {
      port: server.port,
      endpoint: `127.0.0.1:${server.port}`,
      awsEndpoint,
      tables: names,
      stores,
      ...(moto === undefined ? {} : { moto }),
      fleet,
      imageBucket,
      ...(redfish === undefined ? {} : { redfish }),
      ...(mqttUrl === undefined ? {} : { mqttUrl }),
      childTasks,
      dispatcher,
      api,
      ...(accessPolicy === undefined ? {} : { accessPolicy }),
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

/**
 * The longest wait of an idle stream poller: the stack's own writes wake the pollers (every part
 * of the stack writes through its two clients), so this bounds only how late a write made by
 * anything else (a test writing to the endpoint, another process) is read.
 */
const STREAM_IDLE_MAX_MS = 5_000;

/**
 * The longest run of skipped ticks (local/quiet-ticks.ts), and how far ahead a tick reads the due
 * index: a write to the runs table by anything but the stack is found within this, as the stream
 * pollers find one within STREAM_IDLE_MAX_MS.
 */
const QUIET_TICKS_MAX_MS = 5_000;

/**
 * How long after the stack's own write the evaluator's poller reads the runs and targets streams:
 * the writes of one pass or one recorded outcome come within a few tens of milliseconds, and are
 * one read, not one each. The most the evaluator's reaction (a freed slot filled, a gate judged)
 * waits longer than it would reading at once; the dispatcher's tick catches up with a run anyway.
 */
const EVALUATOR_NUDGE_DELAY_MS = 50;

/**
 * The same for the run events' poller: events are published to EventBridge, where nothing waits
 * on them to within a few hundred milliseconds, so a longer burst is one read.
 */
const EVENTS_NUDGE_DELAY_MS = 200;

/** Creates the tables unless they exist (a shared endpoint or LocalStack); true when created now. */
async function ensureTables(client: DynamoDBClient, names: TableNames): Promise<boolean> {
  try {
    await client.send(new DescribeTableCommand({ TableName: names.runs }));
    return false;
  } catch (error) {
    if ((error as Error).name !== "ResourceNotFoundException") throw error;
  }
  await createTables(client, names);
  return true;
}

/** The AES key for firmware credentials when none is given: the data dir's, or fresh per process. */
async function secretsKey(dataDir: string | undefined): Promise<Uint8Array> {
  if (!dataDir) return randomBytes(32);
  const file = join(dataDir, "secrets.key");
  try {
    return Buffer.from((await readFile(file, "utf8")).trim(), "hex");
  } catch {
    const key = randomBytes(32);
    await mkdir(dataDir, { recursive: true });
    await writeFile(file, key.toString("hex"), { mode: 0o600 });
    return key;
  }
}
