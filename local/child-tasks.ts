/**
 * Wiring of the child-task machinery on the local stand-ins, for local/main.ts, the tests and the
 * benchmark, through the AWS roots' own assembly (src/service/child-tasks.ts). What runs is the
 * production code: the step handlers, the IoT publisher (pointed at the IoT shim), the DynamoDB
 * stores (on moto) and the same ASL (aws-local-stepfunctions). The two
 * things AWS would do for us are played here:
 *   - the IoT rules `SELECT *, topic(3) AS rackId, topic(5) AS componentId FROM
 *     'flow/rack/+/bmc/+/evt'` (also reached through Basic Ingest, `$aws/rules/<reportsRule>/...`)
 *     and `SELECT *, topic(3) AS rackId FROM 'flow/rack/+/reports'` (a rack agent's batches, also
 *     through Basic Ingest to the first rule), and `SELECT *, topic(3) AS componentId FROM
 *     'flow/bmc/+/evt'` (v1–v3 topics) → the reports queue →
 *     bmc-result in batches: a broker subscription that collects reports for `reportBatchMs` (the
 *     event source mapping's batching window) and hands each batch to the receiver's recorder,
 *     as lambdas/bmc-result.ts does with an SQS batch (one invocation per batch);
 *   - the EventBridge rule on execution status (ABORTED, TIMED_OUT, FAILED) → bmc-result: the
 *     local executor's `onEnded`, SUCCEEDED left out as the rule leaves it out.
 *
 *   const child = await createLocalChildTasks({ stores, tables: names, broker,
 *                                                iotEndpoint: shim.endpoint, cipher });
 *   dispatcher uses child.submitter; the gRPC API uses child.tasksApi; at exit: await child.stop().
 */

import { randomUUID } from "node:crypto";
import { IoTDataPlaneClient } from "@aws-sdk/client-iot-data-plane";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { connectAsync } from "mqtt";
import {
  DynamoFirmwareRecorder,
  UpsertFirmwareRecorder,
} from "../src/adapters/dynamodb/firmware-version-recorder.js";
import { DynamoReadinessStore } from "../src/adapters/dynamodb/readiness-store.js";
import type { TableNames } from "../src/adapters/dynamodb/schema.js";
import { AwsExternalCheckRunner } from "../src/adapters/external-checks/runner.js";
import { IotPublisher } from "../src/adapters/iot/publisher.js";
import type { AslMachine } from "../src/adapters/stepfunctions/asl.js";
import type { TasksApi } from "../src/app/api.js";
import { reconcileExecutionEnd } from "../src/app/child-task/outcome.js";
import { type BmcReportMessage, createReportRecorder } from "../src/app/child-task/receiving.js";
import { finishLostOutcomes, prepareRedrive } from "../src/app/child-task/redrive.js";
import type { ChildTaskSettings } from "../src/app/child-task/settings.js";
import type { TaskSteps } from "../src/app/child-task/steps.js";
import { type Logger, lineLogger } from "../src/app/observability.js";
import type { PlanInventory } from "../src/app/plan-inventory.js";
import type {
  BmcCommandPublisher,
  ChildTaskSubmitter,
  Cipher,
  FirmwareImageStore,
  FirmwarePolicyStore,
  ImageObjectStore,
  InventoryStore,
  RackLockStore,
  RunStore,
  RunWaker,
  TaskStore,
} from "../src/app/ports.js";
import {
  BMC_EVT_TOPIC_FILTER,
  basicIngestEvtTopicFilter,
  basicIngestRackReportsTopicFilter,
  LEGACY_BMC_EVT_TOPIC_FILTER,
  parseBmcTopic,
  parseRackReportsTopic,
  RACK_REPORTS_TOPIC_FILTER,
} from "../src/domain/bmc-topics.js";
import type { ExternalCheckConfig } from "../src/domain/external-check.js";
import { childTaskParts, childTaskService, childTaskSteps } from "../src/service/child-tasks.js";
import { LocalCommandChecks } from "./external-checks.js";
import { retryWhileUnavailable } from "./retry-unavailable.js";
import { type LocalExecutorOptions, LocalStepFunctionsExecutor } from "./step-functions.js";

/**
 * The local reports queue's batching window (ms). AWS gathers reports for up to 1 s against
 * 10-minute flashes; locally flashes take 300 ms (the benchmark) to a few seconds (the demo fleet),
 * so the window is scaled down with them: still long enough to gather a wave's reports, which the
 * simulated BMCs send within a few ms of each other, and short against a flash, since a wave ends
 * about one window after its last result. At 250 ms (until 2026-12-02) a wave's AwaitWave took
 * ~480–540 ms in bench:rollout for a 300 ms flash; at 50 ms (until 2026-12-03) the quick start
 * took 17.7–18.4 s against 17.1–17.6 s at 25 ms, alternating, for 11 bmc-result invocations a
 * rack instead of 7.5 (a wave's results still in one or two batches).
 * At 25 ms the window is 5 % of a local 500 ms flash; AWS's 1 s is 0.2 % of a 10-minute one.
 */
export const LOCAL_REPORT_BATCH_MS = 25;

export interface LocalChildTasksOptions {
  stores: {
    doc: DynamoDBDocumentClient;
    tasks: TaskStore;
    runs: Pick<
      RunStore,
      | "getRunSecrets"
      | "recordOutcome"
      | "recordPriorVersions"
      | "listActiveRunIds"
      | "getRun"
      | "saveRun"
      | "listTargets"
    >;
    locks: RackLockStore;
    inventory: PlanInventory & Pick<InventoryStore, "upsertRacks">;
    /** Baselines and rules, for an UpgradeFirmware without target_version or with rule_id; absent = none. */
    policy?: Pick<FirmwarePolicyStore, "listBaselines" | "getRule">;
    /** The firmware image catalog's records: create checks them, update commands carry them. */
    images: Pick<FirmwareImageStore, "getImages">;
  };
  /** Presigns each update command's image GET (the catalog's bucket on moto). */
  imageUrls: Pick<ImageObjectStore, "presignGet">;
  /**
   * Table names: command sets and task secrets live in Tasks; verified versions are written
   * in place on the Inventory rack item. `tasksTable` alone also works (versions are then written
   * through InventoryStore.upsertRacks, which rewrites the whole rack: slower, more capacity).
   */
  tables?: Pick<TableNames, "tasks" | "inventory">;
  tasksTable?: string;
  /**
   * Where the IoT rule stand-in listens: the in-process broker (local/mqtt-broker.ts, its
   * `subscribe`), or `brokerUrl` (an MQTT 3.1.1 client subscription). One of the two.
   */
  broker?: {
    subscribe(
      filter: string,
      handler: (topic: string, payload: Buffer) => void | Promise<void>,
    ): Promise<() => Promise<void>>;
  };
  brokerUrl?: string;
  /**
   * The name of the rack reports' rule the stand-in plays (default LOCAL_REPORTS_RULE): reports
   * sent to it through Basic Ingest, `$aws/rules/<name>/flow/rack/...`, are taken as the plain ones.
   */
  reportsRule?: string;
  /** The IoT shim's endpoint (local/iot-shim.ts), for the real IoTDataPlaneClient. */
  iotEndpoint: string;
  /** Seals credentials at rest and for the BMC; without one, tasks with credentials are refused. */
  cipher?: Cipher;
  settings?: Partial<ChildTaskSettings>;
  /**
   * The reports queue's batching window (ms): reports are handed to the receiver in batches
   * collected over this long (AWS: the event source mapping's MaximumBatchingWindowInSeconds, 1 s).
   * Default LOCAL_REPORT_BATCH_MS; 0 hands each report over on its own.
   */
  reportBatchMs?: number;
  /** Overrides every Wait state's duration (ms): quick demos and tests. */
  waitOverrideMs?: number;
  /** The child-task definition to run; default the one file (a benchmark runs an earlier path of it). */
  definition?: AslMachine;
  /**
   * How long a wave waits for its wake-up before its check (ms): with AwaitWave's heartbeat, how
   * long with nothing heard from its BMCs; default `waitOverrideMs`.
   */
  awaitTimeoutOverrideMs?: number;
  /** The clock the executor's callback timeouts and heartbeat intervals run on (tests: a moved one). */
  callbackClock?: LocalExecutorOptions["callbackClock"];
  retryIntervalOverrideMs?: number;
  executionTimeoutSeconds?: number;
  waker?: RunWaker;
  clock?: () => number;
  newId?: () => string;
  /** Replaces the IoT publisher (tests that drop or duplicate commands). */
  publisher?: BmcCommandPublisher;
  /** The local stand-ins' lines (executor, IoT rule), and the product parts' unless `logger` is given. */
  log?: (line: string) => void;
  /** The product parts' logger (steps, task service, receiver, outcome recorder); default: lines on `log`. */
  logger?: Logger;
  /** The external health checks a rule's CHECK_HEALTH may name (commands; HTTPS too). */
  externalChecks?: readonly ExternalCheckConfig[];
  /** Benchmarks: wrap each step call and each batch of reports' handling, and see each state entered. */
  hooks?: Pick<LocalExecutorOptions, "aroundStep" | "onStateEntered"> & {
    aroundReports?: (run: () => Promise<void>) => Promise<void>;
  };
}

export interface LocalChildTasks {
  submitter: ChildTaskSubmitter;
  tasksApi: TasksApi;
  executor: LocalStepFunctionsExecutor;
  steps: TaskSteps;
  /** BMC reports the rule stand-in handed on, and what became of them. */
  reportStats(): { received: number; recorded: number; ignored: number; invalid: number };
  /** Resolves when every execution started so far has ended and been recorded. */
  idle(): Promise<void>;
  /**
   * After a restart of the local stack: re-drives every active task (local executions live in
   * memory only), i.e. prepares it (src/app/child-task/redrive.ts: UPDATING components back to
   * PENDING, commands without an answer to be sent again under their request ids, a task whose
   * components already failed ended) and starts its execution again from the top. Safe because
   * every step is idempotent: the lock is the task's own, a command with its answer is not sent
   * again, stored results are read back, and a BMC answers a request id it knows from memory.
   * Then records the outcome of every task that ended without its target being told
   * (`recorded`).
   */
  resume(): Promise<{ redriven: number; ended: number; resent: number; recorded: number }>;
  /** Unsubscribes the rule and aborts running executions WITHOUT recording them (process exit). */
  stop(): Promise<void>;
}

export async function createLocalChildTasks(options: LocalChildTasksOptions): Promise<LocalChildTasks> {
  const { stores } = options;
  const tasksTable = options.tables?.tasks ?? options.tasksTable;
  if (tasksTable === undefined) throw new Error("createLocalChildTasks needs `tables` (or `tasksTable`)");
  const log = options.log ?? (() => {});
  const logger = options.logger ?? lineLogger(log);
  const clock = options.clock ?? Date.now;
  // The same assembly as the AWS roots (src/service/child-tasks.ts); only the executor and the
  // publisher's client are local.
  const parts = childTaskParts({
    doc: stores.doc,
    tasksTable,
    stores,
    firmware: options.tables
      ? new DynamoFirmwareRecorder(stores.doc, options.tables.inventory)
      : new UpsertFirmwareRecorder(stores.inventory),
    ...(options.cipher ? { cipher: { cipher: options.cipher, keyId: "local-aes-256-gcm" } } : {}),
    clock,
    ...(options.waker ? { waker: options.waker } : {}),
    // The executor below is the local Step Functions: its wake is the local SendTaskSuccess, its fail SendTaskFailure.
    waveWaker: {
      wake: (token, answers) => executor.wake(token, answers),
      heartbeat: (token) => executor.heartbeat(token),
      fail: (token, error, cause) => executor.fail(token, error, cause),
    },
    logger,
  });
  const iot = new IoTDataPlaneClient({
    endpoint: options.iotEndpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
    maxAttempts: 3,
  });
  const externalChecks =
    options.externalChecks === undefined || options.externalChecks.length === 0
      ? {}
      : {
          externalChecks: {
            checks: options.externalChecks,
            // The executor below is the local Step Functions: the check answers through it.
            runner: new LocalCommandChecks(
              { sendTaskSuccess: (token, output) => executor.sendTaskSuccess(token, output) },
              new AwsExternalCheckRunner(undefined),
              log,
            ),
            runs: stores.runs,
          },
        };
  const steps = childTaskSteps(parts, {
    ...externalChecks,
    images: stores.images,
    imageUrls: options.imageUrls,
    publisher: options.publisher ?? new IotPublisher({ client: iot }),
    readiness: options.tables
      ? new DynamoReadinessStore(stores.doc, options.tables)
      : {
          // Without the table names: the rack read through InventoryStore.
          notReady: async (rackId: string) => {
            const [rack] = await stores.inventory.getRacksByIds([rackId]);
            return new Map(
              rack?.components.flatMap((c) => (c.readiness ? [[c.id, c.readiness] as const] : [])),
            );
          },
          rackComponents: async (rackId: string) => {
            const [rack] = await stores.inventory.getRacksByIds([rackId]);
            return rack?.components ?? [];
          },
        },
  });
  const executor = new LocalStepFunctionsExecutor({
    steps,
    // The execution-status rule matches ABORTED, TIMED_OUT and FAILED only (infra/constructs/
    // child-task.ts): a SUCCEEDED execution recorded its outcome in its last state.
    onEnded: async (ending) => {
      if (ending.status !== "SUCCEEDED") await reconcileExecutionEnd(parts.outcome, ending);
    },
    ...(options.settings ? { settings: options.settings } : {}),
    ...(options.waitOverrideMs !== undefined ? { waitOverrideMs: options.waitOverrideMs } : {}),
    ...(options.definition !== undefined ? { definition: options.definition } : {}),
    ...(options.awaitTimeoutOverrideMs !== undefined
      ? { awaitTimeoutOverrideMs: options.awaitTimeoutOverrideMs }
      : {}),
    ...(options.retryIntervalOverrideMs !== undefined
      ? { retryIntervalOverrideMs: options.retryIntervalOverrideMs }
      : {}),
    ...(options.executionTimeoutSeconds !== undefined
      ? { executionTimeoutSeconds: options.executionTimeoutSeconds }
      : {}),
    ...(options.hooks?.aroundStep ? { aroundStep: options.hooks.aroundStep } : {}),
    ...(options.hooks?.onStateEntered ? { onStateEntered: options.hooks.onStateEntered } : {}),
    ...(options.callbackClock ? { callbackClock: options.callbackClock } : {}),
    log,
  });
  const service = childTaskService(parts, {
    inventory: stores.inventory,
    executor,
    newId: options.newId ?? randomUUID,
    images: stores.images,
    ...(stores.policy ? { policy: stores.policy } : {}),
  });

  const counts = { received: 0, recorded: 0, ignored: 0, invalid: 0 };
  const recorder = createReportRecorder(parts.commands, logger, parts.waveWaker);
  // One batch as the Lambda gets it; what could not be stored (a dead store) is delivered again,
  // as SQS redelivers a batch's failed items.
  const deliver = async (batch: BmcReportMessage[]): Promise<void> => {
    let pending = batch;
    await retryWhileUnavailable(async () => {
      const outcomes = await recorder.record(pending.map((message) => ({ message, at: clock() })));
      const failed: { message: BmcReportMessage; error: unknown }[] = [];
      outcomes.forEach((outcome, i) => {
        const message = pending[i] as BmcReportMessage;
        if (typeof outcome === "object") failed.push({ message, error: outcome.error });
        else counts[outcome] += 1;
      });
      pending = failed.map((f) => f.message);
      if (failed[0] !== undefined) throw failed[0].error;
    });
  };
  const around = options.hooks?.aroundReports;
  const handleBatch = (batch: BmcReportMessage[]) => (around ? around(() => deliver(batch)) : deliver(batch));
  const windowMs = options.reportBatchMs ?? LOCAL_REPORT_BATCH_MS;
  let buffer: BmcReportMessage[] = [];
  let timer: NodeJS.Timeout | undefined;
  const flush = (): Promise<void> => {
    timer = undefined;
    const batch = buffer;
    buffer = [];
    return batch.length === 0 ? Promise.resolve() : handleBatch(batch);
  };
  const onReport = async (topic: string, payload: Buffer): Promise<void> => {
    counts.received += 1;
    const where = parseBmcTopic(topic);
    const batchRack = where === undefined ? parseRackReportsTopic(topic) : undefined;
    let message: unknown;
    try {
      message = JSON.parse(payload.toString("utf8"));
    } catch {
      message = undefined;
    }
    if (
      (where === undefined && batchRack === undefined) ||
      typeof message !== "object" ||
      message === null ||
      Array.isArray(message)
    ) {
      counts.invalid += 1;
      return;
    }
    // As the IoT rules do: the topic's component, and its rack on a rack-scoped topic; a rack's
    // batch of reports gets its rack (the receiver reads its components from it).
    if (where === undefined) buffer.push({ ...message, rackId: batchRack });
    else {
      const rack = where.rackId === undefined ? {} : { rackId: where.rackId };
      buffer.push({ ...message, componentId: where.componentId, ...rack });
    }
    if (windowMs <= 0) return flush();
    timer ??= setTimeout(() => {
      flush().catch((error: unknown) => {
        log(`bmc-result (local rule): storing a batch of reports failed: ${(error as Error).message}`);
      });
    }, windowMs);
  };
  const unsubscribe = await subscribeRule(options, onReport, log);

  let stopping: Promise<void> | undefined;
  return {
    submitter: service.submitter,
    tasksApi: service.api,
    executor,
    steps,
    reportStats: () => ({ ...counts }),
    idle: () => executor.idle(),
    async resume() {
      const { tasks } = await stores.tasks.listTasks({
        activeOnly: true,
        page: { offset: 0, limit: 100_000 },
      });
      const counts = { redriven: 0, ended: 0, resent: 0, recorded: 0 };
      for (const task of tasks) {
        const prepared = await prepareRedrive({ ...parts.outcome, commands: parts.commands }, task);
        counts.resent += prepared.resent;
        if (prepared.status === "ended") {
          counts.ended += 1;
          continue;
        }
        await executor.start(task);
        counts.redriven += 1;
      }
      counts.recorded = await finishLostOutcomes({ ...parts.outcome, runs: stores.runs });
      return counts;
    },
    stop() {
      stopping ??= (async () => {
        await unsubscribe();
        clearTimeout(timer);
        await executor.shutdown();
        iot.destroy();
      })();
      return stopping;
    },
  };
}

/**
 * The local stack's name for the rack reports' rule (what a local agent's `reportsRule` names);
 * in AWS the stack's output BmcReportsRuleName.
 */
export const LOCAL_REPORTS_RULE = "Flow_local_rack_bmc_events";

/**
 * What the two IoT rules select: the rack-scoped reports (v4) and the per-component ones (v1–v3),
 * and the rack reports' rule's Basic Ingest topics, named apart: an MQTT wildcard never matches a
 * topic starting with `$`.
 */
const ruleTopicFilters = (reportsRule: string): string[] => [
  BMC_EVT_TOPIC_FILTER,
  LEGACY_BMC_EVT_TOPIC_FILTER,
  RACK_REPORTS_TOPIC_FILTER,
  basicIngestEvtTopicFilter(reportsRule),
  basicIngestRackReportsTopicFilter(reportsRule),
];

/** The IoT rule stand-in's subscription; returns its removal. */
async function subscribeRule(
  options: LocalChildTasksOptions,
  onReport: (topic: string, payload: Buffer) => Promise<void>,
  log: (line: string) => void,
): Promise<() => Promise<void>> {
  const handle = (topic: string, payload: Buffer): Promise<void> =>
    onReport(topic, payload).catch((error: unknown) => {
      log(`bmc-result (local rule): storing a report from ${topic} failed: ${(error as Error).message}`);
    });
  const filters = ruleTopicFilters(options.reportsRule ?? LOCAL_REPORTS_RULE);
  if (options.broker !== undefined) {
    const broker = options.broker;
    const removals = await Promise.all(filters.map((filter) => broker.subscribe(filter, handle)));
    return async () => {
      for (const remove of removals) await remove();
    };
  }
  if (options.brokerUrl === undefined) throw new Error("createLocalChildTasks needs `broker` or `brokerUrl`");
  const client = await connectAsync(options.brokerUrl, {
    protocolVersion: 4, // aedes 1.2.0 refuses MQTT 5
    clientId: `flow-iot-rule-${process.pid}-${randomUUID().slice(0, 8)}`,
    clean: true,
    reconnectPeriod: 1000,
  });
  client.on("message", (topic, payload) => void handle(topic, payload));
  await client.subscribeAsync(filters, { qos: 1 });
  return () => client.endAsync(true);
}
