/**
 * The child-task machinery on the local stand-ins, for the child-task and tasks integration suites:
 * moto (fresh tables), the aedes broker, the IoT shim, a simulated fleet and createLocalChildTasks
 * running the real ASL with aws-local-stepfunctions. BMC timeouts are seconds (FAST_SETTINGS) and
 * every Wait is overridden to a few milliseconds, so a hung BMC costs 4 s, not 30 minutes; suites
 * whose fleet never hangs take HEALTHY_FLEET_SETTINGS instead.
 */

import { randomUUID } from "node:crypto";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { IoTDataPlaneClient } from "@aws-sdk/client-iot-data-plane";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { type BmcFleet, startBmcFleet } from "../../local/bmc-fleet.js";
import { createLocalChildTasks, type LocalChildTasks } from "../../local/child-tasks.js";
import type { FleetConfig } from "../../local/fleet-file.js";
import { type IotShim, startIotShim } from "../../local/iot-shim.js";
import { type LocalMqttBroker, startMqttBroker } from "../../local/mqtt-broker.js";
import type { LocalExecutorOptions } from "../../local/step-functions.js";
import { DynamoCommandSetStore } from "../../src/adapters/dynamodb/command-set-store.js";
import {
  createDynamoStores,
  type DynamoStores,
  LocalAesGcmCipher,
  type TableNames,
} from "../../src/adapters/dynamodb/index.js";
import { IotPublisher } from "../../src/adapters/iot/publisher.js";
import { createS3Client, S3ImageObjectStore } from "../../src/adapters/s3/image-bucket.js";
import type { AslMachine } from "../../src/adapters/stepfunctions/asl.js";
import type { ChildTaskSettings } from "../../src/app/child-task/settings.js";
import type { BmcCommandPublisher, RunWaker, TaskStore } from "../../src/app/ports.js";
import { encodeBmcMessage } from "../../src/domain/bmc-protocol.js";
import { bmcCmdTopic } from "../../src/domain/bmc-topics.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import type { ComponentType, Target } from "../../src/domain/model.js";
import type { OperationRule } from "../../src/domain/operation-rules.js";
import { freezeComponents } from "../../src/domain/planner.js";
import type { Task } from "../../src/domain/task.js";
import { runWithTargets } from "../support/dynamodb-fixtures.js";
import { everyImage } from "../support/memory-images.js";
import { freshTables, testClient } from "../support/moto.js";
import { eventually, until } from "../support/poll.js";
import { testEndpoint } from "../support/test-endpoint.js";

/** A fleet whose every BMC answers at once and flashes in 60 ms, succeeding. */
export const SUCCEEDING_FLEET: FleetConfig = {
  defaults: { outcome: "succeed", updateMs: 60 },
  racks: {},
  components: {},
};

/** A rule of one COMPUTE stage whose one step is the update (an hour's timeout), `maxParallel` at a time. */
export function computeUpdateRule(id: string, name: string, maxParallel = 1): OperationRule {
  return {
    id,
    version: 1,
    createdAt: 1,
    name,
    description: "",
    readinessTimeoutSeconds: 0,
    stages: [
      {
        name: "compute",
        componentTypes: ["COMPUTE"],
        maxParallel,
        steps: [{ action: "UPDATE_FIRMWARE", timeoutSeconds: 3_600, sleepSeconds: 0 }],
      },
    ],
  };
}

/** Each wave of COMPUTE components flashed, then verified, one component at a time. */
export const FLASH_THEN_VERIFY: OperationRule = {
  id: "cb000000-0000-4000-8000-0000000000ff",
  version: 1,
  createdAt: 1,
  name: "flash-then-verify",
  description: "",
  readinessTimeoutSeconds: 0,
  stages: [
    {
      name: "compute",
      componentTypes: ["COMPUTE"],
      maxParallel: 1,
      steps: [
        { action: "UPDATE_FIRMWARE", timeoutSeconds: 0, sleepSeconds: 0 },
        { action: "VERIFY_VERSION", timeoutSeconds: 0, sleepSeconds: 0 },
      ],
    },
  ],
};

/**
 * A RUNNING run on the store, of two phases of one target each, the first on rack `own` (its
 * components frozen on the target): no auto-advance, a failure-count gate of 1 over the whole run,
 * the flash-then-verify rule. Its first dispatch pass claims that target and submits its task.
 * `runId`'s first eight characters name its targets (and so their tasks): one prefix per run.
 */
export async function runOnRack(h: Harness, runId: string, own: InventoryRack): Promise<Target> {
  const { run, targets } = runWithTargets(runId, { phaseSizes: [1, 1], maxConcurrent: 1, status: "RUNNING" });
  run.startedAt = run.createdAt;
  run.config.autoAdvance = false;
  run.config.safetyGates = [{ kind: "failureCount", scope: "CUMULATIVE_RUN", thresholdCount: 1 }];
  run.rule = FLASH_THEN_VERIFY;
  const target = targets[0] as Target;
  target.rackId = own.id;
  target.componentsByType = freezeComponents(own.components);
  await h.stores.runs.createRun(run, targets);
  return target;
}

export const FAST_SETTINGS: Partial<ChildTaskSettings> = {
  maxParallel: 4,
  pollSeconds: 1,
  maxPollSeconds: 1,
  updateTimeoutSeconds: 4,
  preflightTimeoutSeconds: 4,
  queuePollSeconds: 1,
};

/**
 * FAST_SETTINGS for suites whose fleet never hangs or falls silent: update and preflight timeouts
 * as long as a test's own limit (60 s), so no BMC timeout can end a wave before it does. The 4 s
 * are a margin a loaded machine eats (a command reached its healthy BMC 2.5 s after it was sent,
 * its result came past 4 s, and the task FAILED). Suites that test a hung or silent BMC keep
 * FAST_SETTINGS, or give that test's step its own short timeout.
 */
export const HEALTHY_FLEET_SETTINGS: Partial<ChildTaskSettings> = {
  ...FAST_SETTINGS,
  updateTimeoutSeconds: 60,
  preflightTimeoutSeconds: 60,
};

export interface Harness {
  client: DynamoDBClient;
  names: TableNames;
  stores: DynamoStores;
  broker: LocalMqttBroker;
  shim: IotShim;
  fleet: BmcFleet;
  child: LocalChildTasks;
  cipher: LocalAesGcmCipher;
  close(): Promise<void>;
}

export async function startHarness(options: {
  label: string;
  racks: InventoryRack[];
  fleet: FleetConfig;
  settings?: Partial<ChildTaskSettings>;
  waker?: RunWaker;
  /** The task service's and the steps' clock (default Date.now). */
  clock?: () => number;
  /** Wraps the real IoT publisher (tests that act on a command before it reaches the fleet). */
  wrapPublisher?: (publisher: BmcCommandPublisher) => BmcCommandPublisher;
  /**
   * How long a wave waits for its wake-up before its check, with AwaitWave's heartbeat how long
   * with nothing heard from its BMCs (default: the Waits' 40 ms).
   */
  awaitTimeoutOverrideMs?: number;
  /** Wraps each step call (tests that hold a task at a step). */
  aroundStep?: LocalExecutorOptions["aroundStep"];
  /** Told of every state an execution enters. */
  onStateEntered?: LocalExecutorOptions["onStateEntered"];
  /** Wraps the task store the machinery writes through (tests that act between two of its writes). */
  wrapTasks?: (tasks: TaskStore) => TaskStore;
  /** The child-task definition to run (default the one file). */
  definition?: AslMachine;
  /** The clock the executor's callback timeouts and heartbeats run on (default the system's). */
  callbackClock?: LocalExecutorOptions["callbackClock"];
  /**
   * The stores' own catalog (the test registers the images its tasks flash) instead of one that
   * has every image: for tests of how the steps read it.
   */
  ownCatalog?: boolean;
}): Promise<Harness> {
  const client = testClient(testEndpoint());
  const { names, drop } = await freshTables(client, options.label);
  const cipher = new LocalAesGcmCipher(Buffer.alloc(32, 9));
  const stores = createDynamoStores(client, names, { cipher });
  await stores.inventory.upsertRacks(options.racks);
  const broker = await startMqttBroker();
  const shim = await startIotShim(broker);
  const fleet = await startBmcFleet({ brokerUrl: broker.url, racks: options.racks, config: options.fleet });
  const child = await createLocalChildTasks({
    // The catalog is not what these tables are about: every version has an image (unless
    // `ownCatalog`), presigned for real against moto's S3 (a URL is computed, nothing is fetched).
    stores: {
      ...(options.wrapTasks ? { ...stores, tasks: options.wrapTasks(stores.tasks) } : stores),
      images: options.ownCatalog === true ? stores.images : everyImage,
    },
    imageUrls: new S3ImageObjectStore(createS3Client({ endpoint: testEndpoint() }), "harness-images"),
    tables: names,
    broker,
    iotEndpoint: shim.endpoint,
    cipher,
    settings: { ...FAST_SETTINGS, ...options.settings },
    waitOverrideMs: 40,
    retryIntervalOverrideMs: 5,
    ...(options.awaitTimeoutOverrideMs !== undefined
      ? { awaitTimeoutOverrideMs: options.awaitTimeoutOverrideMs }
      : {}),
    ...(options.waker ? { waker: options.waker } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.definition ? { definition: options.definition } : {}),
    ...(options.callbackClock ? { callbackClock: options.callbackClock } : {}),
    hooks: {
      ...(options.aroundStep ? { aroundStep: options.aroundStep } : {}),
      ...(options.onStateEntered ? { onStateEntered: options.onStateEntered } : {}),
    },
    ...(options.wrapPublisher
      ? {
          publisher: options.wrapPublisher(
            new IotPublisher({
              client: new IoTDataPlaneClient({
                endpoint: shim.endpoint,
                region: "us-east-1",
                credentials: { accessKeyId: "local", secretAccessKey: "local" },
              }),
            }),
          ),
        }
      : {}),
  });
  return {
    client,
    names,
    stores,
    broker,
    shim,
    fleet,
    child,
    cipher,
    async close() {
      await child.stop();
      await fleet.stop();
      await shim.stop();
      await broker.stop();
      await drop();
      client.destroy();
    },
  };
}

/** `ab000000-0000-4000-8000-<rack 4 digits><n 8 digits>`: readable, distinct ids per suite prefix. */
export function id(prefix: string, rack: number, n: number): string {
  return `${prefix}-0000-4000-8000-${String(rack).padStart(4, "0")}${String(n).padStart(8, "0")}`;
}

/** A small rack of every kind the default rule orders: a power shelf, two switches, three trays. */
export const SMALL_RACK: { type: ComponentType; count: number }[] = [
  { type: "POWERSHELF", count: 1 },
  { type: "NVSWITCH", count: 2 },
  { type: "COMPUTE", count: 3 },
];

/** A rack with `shape` components (in the order given), all at `version`. */
export function rack(
  prefix: string,
  n: number,
  shape: { type: ComponentType; count: number }[],
  version = "1.0.0",
): InventoryRack {
  const components: InventoryRack["components"] = [];
  for (const { type, count } of shape) {
    for (let i = 0; i < count; i++)
      components.push({ id: id(prefix, n, components.length + 1), type, firmwareVersion: version });
  }
  return {
    id: id(prefix, n, 0),
    name: `rack-${prefix.slice(0, 2)}-${n}`,
    externalId: `EXT-${prefix.slice(0, 2)}-${n}`,
    components,
  };
}

/** Polls the task as GetTask shows it (a running task's report live from its update set) until `done`. */
export async function waitForTask(
  h: Harness,
  taskId: string,
  done: (t: Task) => boolean = (t) => ["COMPLETED", "FAILED", "TERMINATED"].includes(t.status),
  timeoutMs = 20_000,
): Promise<Task> {
  const task = await eventually(
    async () => (await h.child.tasksApi.getTasks([taskId]))[0],
    (task) => task !== undefined && done(task),
    `task ${taskId} to get there`,
    timeoutMs,
    25,
  );
  return task as Task;
}

/** The task's preflight queries as stored (undefined: none was ever sent). */
export function queriesOf(h: Harness, taskId: string) {
  return new DynamoCommandSetStore(DynamoDBDocumentClient.from(h.client), h.names.tasks).get(taskId, "q");
}

export { until };

/**
 * Resolves once the fleet has received every command published to these components before the
 * call: a probe query goes to each the same way (into the broker, to the fleet's one subscription,
 * in order per topic) and the fleet counts it when done (FleetStats.doneByRequest).
 */
export async function fleetCaughtUp(h: Harness, componentIds: readonly string[]): Promise<void> {
  const probes = await Promise.all(
    componentIds.map(async (componentId) => {
      const requestId = `probe-${randomUUID()}`;
      const rackId = h.fleet.rackOf(componentId) ?? "";
      await h.broker.publish(
        bmcCmdTopic({ rackId, componentId }),
        encodeBmcMessage({ v: 1, type: "query", requestId }),
      );
      return requestId;
    }),
  );
  await until("the fleet to answer the probes", () =>
    probes.every((p) => (h.fleet.stats().doneByRequest[p] ?? 0) > 0),
  );
}

export function upgradeRequest(rackIds: string[], extra: Record<string, unknown> = {}) {
  return {
    targetSpec: {
      kind: "racks" as const,
      racks: rackIds.map((rid) => ({ ref: { by: "id" as const, id: rid }, componentTypes: [] })),
    },
    targetVersion: "2.0.0",
    description: "integration",
    subTargets: [],
    overrideReadinessCheck: false,
    overrideVersionCheck: false,
    ...extra,
  };
}
