/**
 * The local stack for an e2e suite, driven the way a customer drives the product: through gRPC.
 *
 *   let s: TestStack;
 *   beforeAll(async () => { s = await startTestStack({ label: "controls", groups }); });
 *   afterAll(() => s?.stop());
 *   const { id } = await s.flow.createOperationRun(runRequest({ rackIds: [...] }));
 *
 * Every suite uses its worker's moto, one of those the e2e project's globalSetup starts
 * (`testEndpoint()`), and isolates itself with a unique table prefix. Every call carries a deadline, so a hung server
 * fails one test quickly instead of the whole file at its timeout.
 *
 * Also here: the request builders every suite uses (`runRequest` and friends), `failure()` to
 * read a rejected call as `{ code: "INVALID_ARGUMENT", details }`, polling with deadlines
 * (`eventually`, `waitForTerminal`) and `countItems()` (raw item counts of the runs and targets
 * tables, to prove that a rejected request wrote nothing).
 */

import { randomUUID } from "node:crypto";
import { ScanCommand } from "@aws-sdk/lib-dynamodb";
import * as grpc from "@grpc/grpc-js";
import { service as healthService } from "grpc-health-check";
import type { BmcBehaviour } from "../../local/fleet-file.js";
import { type LocalStack, type LocalStackOptions, startLocalStack } from "../../local/stack.js";
import {
  type CallOptions,
  createFlowAdminClient,
  createFlowClient,
  type FlowAdminClient,
  type FlowClient,
} from "../../src/adapters/grpc/client.js";
import type { Clock } from "../../src/app/ports.js";
import {
  type ComponentType,
  type CreateOperationRunRequest,
  type MaintenanceWindow,
  type OperationRun,
  type OperationRunConflictPolicy,
  type OperationRunFailureDomainSpread,
  type OperationRunPhasePolicy,
  type OperationRunSafetyGate,
  OperationRunSafetyGateScope,
  OperationRunStatus,
  type OperationRunTarget,
  OperationRunTargetPhaseScope,
  type OperationRunTargetScope,
  OperationRunTargetStatus,
  type OperationTargetSpec,
  type UpgradeFirmwareRequest,
} from "../../src/gen/flow/v1/flow.js";
import { fleetOf, HANG, inventoryOf, type RackGroup } from "./fixtures-inventory.js";
import { eventually } from "./poll.js";
import { testEndpoint } from "./test-endpoint.js";

/**
 * What every Wait state of a child task should last in the e2e stack. The child-task state machine
 * polls its BMCs every 10 s and more; a two-phase run then takes a minute, and the suites several.
 * `createLocalChildTasks` can shorten the waits (`waitOverrideMs`), but `LocalStackOptions` does
 * not pass one through yet; once it has `childTaskWaitMs`, this takes effect (the field is sent
 * already, and ignored until then).
 */
export const CHILD_TASK_WAIT_MS = 200;

interface FastChildTasks {
  childTaskWaitMs?: number;
}

/** Per-call deadline: generous for 2 busy cores, far below the test timeout. */
export const CALL_DEADLINE_MS = 15_000;

export interface TestStack {
  local: LocalStack;
  flow: FlowClient;
  admin: FlowAdminClient;
  /** `127.0.0.1:<port>` */
  address: string;
  /** What the stack logged, for a failing test to print. */
  logs: string[];
  /** Its tables' prefix: a stack started again with it (`TestStackOptions.tablePrefix`) resumes them. */
  tablePrefix: string;
  /** Raw item counts of the runs and targets tables (committed or not). */
  countItems(): Promise<{ runs: number; targets: number }>;
  /** The standard gRPC health check for `service` ("" = the whole server). */
  health(service: string): Promise<string>;
  /**
   * Sends `bytes` as the request of the method at `path` (e.g. `/v1.Flow/CreateOperationRun`),
   * unencoded: garbage in, to see what comes out. `code` is `OK` on success.
   */
  rawCall(path: string, bytes: Uint8Array): Promise<RpcFailure>;
  stop(): Promise<void>;
}

export interface TestStackOptions {
  /** Goes into the table prefix, so a leftover table says which suite made it. */
  label: string;
  groups: readonly RackGroup[];
  /** BMCs of racks whose group sets no behaviour. Default: hang. */
  defaults?: BmcBehaviour;
  /** Dispatcher tick. Default 150 ms: runs progress quickly once their BMCs answer. */
  tickMs?: number;
  /** How long a child task waits for components that are not ready (default: the stack's, 10 min). */
  readinessTimeoutMs?: number;
  /** The EventBridge bus (on moto) the stack publishes run events to; default the default bus. */
  eventBusName?: string;
  /** The stack's clock (default the system clock): a `shiftableClock()` lets a test jump to a window. */
  clock?: Clock;
  /** No simulated BMCs: the test connects its own to `local.mqttUrl` (a BMC agent). */
  noFleet?: boolean;
  /** `redfish`: an emulated Redfish BMC per component and a BMC agent per rack, not the simulated fleet. */
  bmc?: "redfish";
  /**
   * A bucket of the stack's own for its image catalog, for a test that changes the seeded objects
   * (default: the bucket every stack on the worker's moto shares, SHARED_IMAGE_BUCKET).
   */
  ownImageBucket?: boolean;
  /** Versions the image catalog has for every type (beside the stack's own seed); default TEST_IMAGE_VERSIONS. */
  imageVersions?: readonly string[];
  /** The tables of a stack that was stopped (its `tablePrefix`): this one is that stack restarted. */
  tablePrefix?: string;
  /** External health checks a rule's CHECK_HEALTH may name (local/external-checks.ts). */
  externalChecks?: LocalStackOptions["externalChecks"];
}

/**
 * Every version the suites flash or name in a baseline: the stack seeds the image catalog with
 * each, for every component type, as an upload would leave it (local/image-catalog.ts).
 * A version not here (and not the demo fleet's or examples/') has no image: create refuses it.
 */
export const TEST_IMAGE_VERSIONS = [
  "1.0.0",
  "1.2.3",
  "2.0",
  "2.0.0",
  "2.1.0",
  "2.2.0",
  "3.0.0",
  "3.1.0",
  "4.0",
  "5.0",
  "9.9.9",
] as const;

/**
 * The image bucket of every test stack on one moto (each worker's moto has its own S3): a stack's
 * seed PUTs the ~90 objects of TEST_IMAGE_VERSIONS and the stack's own versions once per moto, not
 * once per stack; the next stack's seed lists the bucket and finds them (local/image-catalog.ts).
 * Each stack still registers its own catalog records, in its own tables. The objects are
 * content-addressed, so stacks that share them cannot tell; a test that changes one of them asks
 * for its own bucket (`ownImageBucket`), and a seed puts back an object of the wrong size.
 */
export const SHARED_IMAGE_BUCKET = "e2e-images";

export async function startTestStack(options: TestStackOptions): Promise<TestStack> {
  const logs: string[] = [];
  const stackOptions: LocalStackOptions & FastChildTasks = {
    port: 0,
    inventory: inventoryOf(options.groups),
    fleet: fleetOf(options.groups, options.defaults ?? HANG),
    tickMs: options.tickMs ?? 150,
    awsEndpoint: testEndpoint(),
    tablePrefix: options.tablePrefix ?? `e2e-${options.label}-${randomUUID().slice(0, 8)}-`,
    log: (line) => {
      logs.push(line);
    },
    childTaskWaitMs: CHILD_TASK_WAIT_MS,
    imageVersions: options.imageVersions ?? TEST_IMAGE_VERSIONS,
    ...(options.ownImageBucket ? {} : { imageBucket: SHARED_IMAGE_BUCKET }),
    ...(options.readinessTimeoutMs === undefined ? {} : { readinessTimeoutMs: options.readinessTimeoutMs }),
    ...(options.eventBusName === undefined ? {} : { eventBusName: options.eventBusName }),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    ...(options.noFleet ? { noFleet: true } : {}),
    ...(options.bmc === undefined ? {} : { bmc: options.bmc }),
    ...(options.externalChecks === undefined ? {} : { externalChecks: options.externalChecks }),
  };
  const local = await startLocalStack(stackOptions);
  const address = `127.0.0.1:${local.port}`;
  const credentials = grpc.credentials.createInsecure();
  const flow = withDeadline(createFlowClient(address, credentials));
  const admin = withDeadline(createFlowAdminClient(address, credentials));
  const raw = new grpc.Client(address, credentials);
  const Health = grpc.makeGenericClientConstructor(healthService, "Health");
  const healthClient = new Health(address, credentials) as unknown as HealthClient;

  const countTable = async (TableName: string): Promise<number> => {
    let count = 0;
    let ExclusiveStartKey: Record<string, unknown> | undefined;
    do {
      const page = await local.stores.doc.send(
        new ScanCommand({ TableName, Select: "COUNT", ConsistentRead: true, ExclusiveStartKey }),
      );
      count += page.Count ?? 0;
      ExclusiveStartKey = page.LastEvaluatedKey;
    } while (ExclusiveStartKey !== undefined);
    return count;
  };

  return {
    local,
    flow,
    admin,
    address,
    logs,
    tablePrefix: stackOptions.tablePrefix as string,
    async countItems() {
      const [runs, targets] = await Promise.all([
        countTable(local.tables.runs),
        countTable(local.tables.targets),
      ]);
      return { runs, targets };
    },
    health: (service) =>
      new Promise((resolve, reject) => {
        healthClient.check({ service }, { deadline: Date.now() + CALL_DEADLINE_MS }, (err, res) =>
          err ? reject(err) : resolve(res?.status ?? ""),
        );
      }),
    rawCall: (path, bytes) =>
      new Promise((resolve) => {
        const identity = (b: Buffer) => b;
        raw.makeUnaryRequest(
          path,
          identity,
          identity,
          Buffer.from(bytes),
          new grpc.Metadata(),
          { deadline: Date.now() + CALL_DEADLINE_MS },
          (err) =>
            resolve(err ? { code: statusName(err.code), details: err.details } : { code: "OK", details: "" }),
        );
      }),
    async stop() {
      raw.close();
      flow.close();
      admin.close();
      healthClient.close();
      await local.stop();
    },
  };
}

interface HealthClient {
  check(
    request: { service: string },
    options: grpc.CallOptions,
    callback: (err: grpc.ServiceError | null, response?: { status: string }) => void,
  ): void;
  close(): void;
}

/** The same client, with a deadline on every call that does not bring its own. */
function withDeadline<C extends object>(client: C): C {
  return new Proxy(client, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== "function" || key === "close") return value;
      return (request: unknown, options?: CallOptions) =>
        value.call(target, request, { deadline: Date.now() + CALL_DEADLINE_MS, ...options });
    },
  });
}

// ---------------------------------------------------------------------------------------------
// Reading failures

export interface RpcFailure {
  /** The status name, e.g. `INVALID_ARGUMENT`, so a diff reads without a status table. */
  code: string;
  details: string;
}

export function statusName(code: number): string {
  return grpc.status[code] ?? `status ${code}`;
}

/** The status a call failed with; a call that succeeds fails the test, showing what it returned. */
export async function failure(call: Promise<unknown>): Promise<RpcFailure> {
  let response: unknown;
  try {
    response = await call;
  } catch (err) {
    const e = err as grpc.ServiceError;
    if (typeof e.code !== "number") throw err;
    return { code: statusName(e.code), details: e.details };
  }
  throw new Error(`expected the call to fail, but it returned ${JSON.stringify(response)}`);
}

/** Settles a call into `{ ok: true, value }` or its failure, for properties over both outcomes. */
export async function outcome<T>(
  call: Promise<T>,
): Promise<{ ok: true; value: T } | ({ ok: false } & RpcFailure)> {
  try {
    return { ok: true, value: await call };
  } catch (err) {
    const e = err as grpc.ServiceError;
    if (typeof e.code !== "number") throw err;
    return { ok: false, code: statusName(e.code), details: e.details };
  }
}

// ---------------------------------------------------------------------------------------------
// Waiting, always with a deadline

export { eventually };

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const TERMINAL_RUN = new Set([
  OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED,
  OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED_WITH_FAILURES,
  OperationRunStatus.OPERATION_RUN_STATUS_FAILED,
  OperationRunStatus.OPERATION_RUN_STATUS_CANCELLED,
]);

export async function getRun(flow: FlowClient, id: string, includeStats = false): Promise<OperationRun> {
  const { operationRun } = await flow.getOperationRun({ id: { id }, includeStats });
  if (operationRun === undefined) throw new Error(`GetOperationRun ${id} returned no operation_run`);
  return operationRun;
}

/** A run's status, reason and status message, for one `toEqual` per expected state. */
export function stateOf(run: OperationRun): { status: OperationRunStatus; reason: number; message: string } {
  return {
    status: run.summary?.state?.status ?? OperationRunStatus.OPERATION_RUN_STATUS_UNKNOWN,
    reason: run.summary?.state?.reason ?? 0,
    message: run.summary?.statusMessage ?? "",
  };
}

/** Waits for ANY terminal state (never for success only) and returns the run, stats included. */
export function waitForTerminal(flow: FlowClient, id: string, timeoutMs = 60_000): Promise<OperationRun> {
  return eventually(
    () => getRun(flow, id, true),
    (run) => TERMINAL_RUN.has(stateOf(run).status),
    `run ${id} to reach a terminal state`,
    timeoutMs,
  );
}

/** Waits until the run's status is one of `statuses` (or terminal, which ends the wait too). */
export function waitForStatus(
  flow: FlowClient,
  id: string,
  statuses: readonly OperationRunStatus[],
  timeoutMs = 60_000,
): Promise<OperationRun> {
  return eventually(
    () => getRun(flow, id, true),
    (run) => statuses.includes(stateOf(run).status) || TERMINAL_RUN.has(stateOf(run).status),
    `run ${id} to reach ${statuses.map((s) => OperationRunStatus[s]).join(" or ")}`,
    timeoutMs,
  );
}

/**
 * One line per target (phase, sequence, rack, status, message) of every phase through the
 * current one: the assertion message of a run that ended other than expected.
 */
export async function targetReport(flow: FlowClient, id: string): Promise<string> {
  const targets = await listTargets(flow, id).catch((err: Error) => err);
  if (targets instanceof Error) return `targets of ${id}: ${targets.message}`;
  return targets
    .map(
      (t) =>
        `phase ${t.phaseIndex} #${t.sequenceIndex} rack ${t.rackId?.id} ${OperationRunTargetStatus[t.status]}: ${t.message}`,
    )
    .join("\n");
}

/** Every target of the run in the given phase scope (pages of 1000 are more than a run has). */
export async function listTargets(
  flow: FlowClient,
  id: string,
  phaseScope = OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_AND_COMPLETED_PHASES,
): Promise<OperationRunTarget[]> {
  const res = await flow.listOperationRunTargets({
    operationRunId: { id },
    status: 0,
    phaseScope,
    pagination: { offset: 0, limit: 1000 },
  });
  return res.targets;
}

// ---------------------------------------------------------------------------------------------
// Request builders

export interface RunSpec {
  name?: string;
  description?: string;
  /** Target spec by rack id; absent (with no `targetSpec`): the default scope. */
  rackIds?: readonly string[];
  /** Overrides `rackIds`. */
  targetSpec?: OperationTargetSpec;
  percentage?: number;
  /** "" (the default) asks the server to generate one. */
  seed?: string;
  /** Absent: no ordering policy at all (random with a generated seed). */
  orderingSeed?: string;
  maxConcurrent?: number;
  gates?: OperationRunSafetyGate[];
  /** Absent: no spread. */
  failureDomainSpread?: OperationRunFailureDomainSpread;
  /** Absent: no phase policy (one phase, no auto advance). */
  phasePolicy?: OperationRunPhasePolicy;
  conflictPolicy?: OperationRunConflictPolicy;
  targetScope?: OperationRunTargetScope;
  firmware?: Partial<UpgradeFirmwareRequest>;
  maintenanceWindows?: MaintenanceWindow[];
  /** Absent: none (every create makes a run). */
  clientRequestId?: string;
}

/**
 * A valid CreateOperationRunRequest: 100 % of the given racks, one count gate, a firmware version.
 * Every optional part is left out unless the spec sets it, so defaults can be observed.
 */
export function runRequest(spec: RunSpec = {}): CreateOperationRunRequest {
  const targetSpec = spec.targetSpec ?? (spec.rackIds === undefined ? undefined : racksSpec(spec.rackIds));
  const firmware: UpgradeFirmwareRequest = {
    targetSpec,
    targetVersion: "2.0.0",
    description: "e2e firmware",
    subTargets: [],
    overrideReadinessCheck: false,
    authenticationData: undefined,
    overrideVersionCheck: false,
    ...spec.firmware,
  };
  return {
    name: spec.name ?? `e2e-${randomUUID().slice(0, 8)}`,
    description: spec.description ?? "",
    configuration: {
      selector: {
        selector: {
          $case: "percentage",
          value: { percentage: spec.percentage ?? 100, seed: spec.seed ?? "" },
        },
      },
      options: {
        maxConcurrentTargets: spec.maxConcurrent ?? 10,
        safetyPolicy: { gates: spec.gates ?? [countGate(50)] },
        conflictPolicy: spec.conflictPolicy,
        orderingPolicy:
          spec.orderingSeed === undefined
            ? undefined
            : { ordering: { $case: "random", value: { seed: spec.orderingSeed } } },
        phasePolicy: spec.phasePolicy,
        maintenanceWindows: spec.maintenanceWindows ?? [],
        failureDomainSpread: spec.failureDomainSpread,
      },
      operation: {
        operation: { $case: "upgradeFirmware", value: firmware },
        targetScope: spec.targetScope,
      },
    },
    clientRequestId: spec.clientRequestId ?? "",
    retry: undefined,
    rollback: undefined,
  };
}

export function racksSpec(ids: readonly string[], types: ComponentType[] = []): OperationTargetSpec {
  return {
    targets: {
      $case: "racks",
      value: {
        targets: ids.map((id) => ({ identifier: { $case: "id", value: { id } }, componentTypes: types })),
      },
    },
  };
}

export function countGate(
  count: number,
  scope = OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_UNKNOWN,
): OperationRunSafetyGate {
  return { gate: { $case: "failureCount", value: { scope, failureThresholdCount: count } } };
}

export function rateGate(
  percent: number,
  scope = OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_UNKNOWN,
): OperationRunSafetyGate {
  return { gate: { $case: "failureRate", value: { scope, failureThresholdPercent: percent } } };
}

/** The observed-failure-rate gate: failed / finished, judged once `minFinished` (absent = 5) have finished. */
export function observedRateGate(
  percent: number,
  minFinished?: number,
  scope = OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_UNKNOWN,
): OperationRunSafetyGate {
  return {
    gate: {
      $case: "observedFailureRate",
      value: {
        scope,
        failureThresholdPercent: percent,
        ...(minFinished === undefined ? {} : { minFinished }),
      },
    },
  };
}

export function equalPhases(phaseCount: number, autoAdvance?: boolean): OperationRunPhasePolicy {
  return {
    plan: { $case: "equal", value: { phaseCount } },
    advancePolicy: autoAdvance === undefined ? undefined : { autoAdvance },
  };
}

export function percentagePhases(percentages: number[], autoAdvance?: boolean): OperationRunPhasePolicy {
  return {
    plan: { $case: "percentage", value: { phases: percentages.map((percentage) => ({ percentage })) } },
    advancePolicy: autoAdvance === undefined ? undefined : { autoAdvance },
  };
}

export function countPhases(counts: number[], autoAdvance?: boolean): OperationRunPhasePolicy {
  return {
    plan: { $case: "count", value: { phases: counts.map((count) => ({ count })) } },
    advancePolicy: autoAdvance === undefined ? undefined : { autoAdvance },
  };
}

/**
 * Pauses every PENDING or RUNNING run: one write each, and the dispatcher's ticks and the stream
 * wake-ups leave them alone from then on. Suites whose runs only need to exist call it after each
 * test, so a hundred earlier runs do not load the (single-threaded) moto for the tests that follow.
 * Child tasks already submitted keep running; the rack locks bound them to one per rack. A run
 * that finishes between the list and its pause is left as it ended.
 */
export async function pauseActiveRuns(flow: FlowClient): Promise<void> {
  const active = [
    OperationRunStatus.OPERATION_RUN_STATUS_PENDING,
    OperationRunStatus.OPERATION_RUN_STATUS_RUNNING,
  ];
  const { operationRuns } = await flow.listOperationRuns({
    filter: { name: undefined, states: active.map((status) => ({ status })), operationKinds: [] },
    pagination: { offset: 0, limit: 1000 },
  });
  await Promise.all(
    operationRuns.map(async (run) => {
      try {
        await flow.pauseOperationRun({ id: { id: run.id?.id ?? "" } });
      } catch (error) {
        // A run that ended between the list and its pause has nothing left to pause.
        const e = error as grpc.ServiceError;
        if (e.code !== grpc.status.FAILED_PRECONDITION || !e.details.includes("is in terminal state"))
          throw error;
      }
    }),
  );
}

/** The created run's id (the response must carry one). */
export async function createRun(flow: FlowClient, request: CreateOperationRunRequest): Promise<string> {
  const { id } = await flow.createOperationRun(request);
  if (id === undefined || id.id === "") throw new Error("CreateOperationRun returned no id");
  return id.id;
}
