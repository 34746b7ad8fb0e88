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
import "./polyfills.js";
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
import { streamBatchHandler } from "../src/adapters/dynamodb/stream-records.js";
import { EventBridgeRunEventBus } from "../src/adapters/eventbridge/run-event-bus.js";
import { startGrpcServer } from "../src/adapters/grpc/server.js";
import type { BuildInfo, FlowApi } from "../src/app/api.js";
import { createDispatcher, type Dispatcher, inProcessWaker } from "../src/app/dispatcher.js";
import { lineLogger } from "../src/app/observability.js";
import { createRunEventRelay } from "../src/app/run-event-relay.js";
import { createStreamEvaluator } from "../src/app/stream-evaluator.js";
import type { InventoryRack } from "../src/domain/model.js";
import { assembleFlowApi } from "../src/service/flow-api.js";
import { type BmcFleet, startBmcFleet } from "./bmc-fleet.js";
import { createLocalChildTasks, type LocalChildTasks } from "./child-tasks.js";
import { generateDemoFleet } from "./demo-fleet.js";
import { defaultFleetConfig, type FleetConfig } from "./fleet-file.js";
import { startIotShim } from "./iot-shim.js";
import { type LocalMoto, startLocalMoto } from "./moto.js";
import { startMqttBroker } from "./mqtt-broker.js";
import { restoreSnapshot, saveSnapshot } from "./snapshot.js";
import { startStreamPoller } from "./stream-poller.js";
import { startTicker } from "./ticker.js";

export interface LocalStackOptions {
  /** gRPC port on 127.0.0.1; 0 picks a free one. */
  port: number;
  /** Racks to load at start; absent: the demo fleet (unless a data dir restored an inventory). */
  inventory?: InventoryRack[];
  fleet?: FleetConfig;
  tickMs: number;
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
  /** What the Version RPC reports (default version `0.1.0-local`). */
  buildInfo?: BuildInfo;
  /**
   * The EventBridge bus the run events are published to, on the same endpoint (moto serves
   * EventBridge): default `default`, the account's default bus. Tests give each stack its own.
   */
  eventBusName?: string;
  /** How often the data dir snapshot is written (default 5 s). */
  snapshotMs?: number;
  /**
   * Called with the DynamoDB client before the stores are built on it and the inventory is loaded
   * (the API benchmark installs its capacity meter there).
   */
  onDynamoDbClient?: (client: DynamoDBClient) => void;
  log?: (line: string) => void;
}

export interface LocalStack {
  port: number;
  endpoint: string;
  awsEndpoint: string;
  tables: TableNames;
  stores: DynamoStores;
  fleet: BmcFleet;
  /**
   * The parts whose progress tests wait on instead of sleeping: `childTasks.idle()` (every
   * execution ended and its outcome recorded, which queues the run's wake-up pass) and
   * `dispatcher.dispatchRun` (queued behind any pass of the run still running or queued).
   */
  childTasks: LocalChildTasks;
  dispatcher: Dispatcher;
  /** The FlowApi the gRPC server serves (a test may serve it again, e.g. over mutual TLS). */
  api: FlowApi;
  stop(): Promise<void>;
}

export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  const log = options.log ?? ((line: string) => console.log(line));
  const stops: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.reverse()) {
      await stop().catch((error: unknown) => log(`shutdown: ${(error as Error).message}`));
    }
  };
  try {
    let moto: LocalMoto | undefined;
    if (!options.awsEndpoint) {
      moto = await startLocalMoto();
      stops.push(() => moto!.stop());
    }
    const awsEndpoint = options.awsEndpoint ?? moto!.endpoint;
    const client = createDynamoDbClient({ endpoint: awsEndpoint });
    const names = tableNames(options.tablePrefix ?? "flow-");
    const created = await ensureTables(client, names);

    let restored = 0;
    if (options.dataDir && created) restored = await restoreSnapshot(client, names, options.dataDir);
    const cipher = new LocalAesGcmCipher(options.secretsKey ?? (await secretsKey(options.dataDir)));
    options.onDynamoDbClient?.(client);
    const stores = createDynamoStores(client, names, { cipher });

    // An explicit inventory always loads; the demo fleet only when nothing was restored.
    if (options.inventory) await stores.inventory.upsertRacks(options.inventory);
    else if (restored === 0) await stores.inventory.upsertRacks(generateDemoFleet());
    const racks = await stores.inventory.loadAll();

    const broker = await startMqttBroker();
    stops.push(() => broker.stop());
    const shim = await startIotShim(broker);
    stops.push(() => shim.stop());
    const fleet = await startBmcFleet({
      brokerUrl: broker.url,
      racks,
      config: options.fleet ?? defaultFleetConfig(),
    });
    stops.push(() => fleet.stop());

    const clock = () => Date.now();
    const childTasks = await createLocalChildTasks({
      stores,
      tables: names,
      broker,
      iotEndpoint: shim.endpoint,
      cipher,
      waitOverrideMs: options.childTaskWaitMs ?? 500,
      clock,
      // A recorded outcome queues a pass for its run at once (the Lambda waker's stand-in).
      waker: inProcessWaker(() => dispatcher, lineLogger(log)),
      log,
    });
    stops.push(() => childTasks.stop());

    const dispatcher: Dispatcher = createDispatcher({
      runs: stores.runs,
      submitter: childTasks.submitter,
      clock,
      log,
    });
    const evaluator = createStreamEvaluator({ dispatcher, log });
    const poller = await startStreamPoller({
      client,
      // Targets: a finished target frees a slot; runs: a new, resumed or advanced run starts at once.
      tableNames: [names.runs, names.targets],
      handler: streamBatchHandler(evaluator),
      // Only a plain moto_server (the serialized launcher could not start) orphans iterators.
      reacquireAfterEmptyRead: moto !== undefined && !moto.serialized,
      log,
    });
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
      log,
    });
    stops.push(() => eventPoller.stop());
    const ticker = startTicker({ intervalMs: options.tickMs, tick: () => dispatcher.tick(), log });
    stops.push(async () => ticker.stop());

    // The same API as the gRPC front on Fargate (src/service/grpc-front.ts), on the local task
    // service; resume and advance run their pass at once instead of waiting for the stream.
    const api = assembleFlowApi({
      stores,
      tasks: { submitter: childTasks.submitter, api: childTasks.tasksApi },
      clock,
      newId: randomUUID,
      logger: lineLogger(log),
      dispatcher,
      onRacksImported: (more) => fleet.addRacks(more),
      buildInfo: options.buildInfo ?? { version: "0.1.0-local", buildTime: "", gitCommit: "" },
    });

    const server = await startGrpcServer({
      api,
      host: "127.0.0.1",
      port: options.port,
      logger: lineLogger(log),
    });
    stops.push(() => server.shutdown(5_000));

    if (options.dataDir) {
      const dir = options.dataDir;
      const timer = setInterval(() => {
        saveSnapshot(client, names, dir).catch((error: unknown) =>
          log(`snapshot failed: ${(error as Error).message}`),
        );
      }, options.snapshotMs ?? 5_000);
      timer.unref();
      // Registered last so it runs first at shutdown, while the tables are still there.
      stops.push(async () => {
        clearInterval(timer);
        await saveSnapshot(client, names, dir);
      });
    }

    return {
      port: server.port,
      endpoint: `127.0.0.1:${server.port}`,
      awsEndpoint,
      tables: names,
      stores,
      fleet,
      childTasks,
      dispatcher,
      api,
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

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
