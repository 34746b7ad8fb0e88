/**
 * The gRPC server over a real socket (127.0.0.1:0) with a fake application behind it: every RPC
 * through the typed client, status codes and messages, deadlines, health, reflection, TLS and mutual
 * TLS with certificates made by openssl (test/support/certificates.ts), graceful and forced
 * shutdown, and fuzzed requests.
 *
 * The fake implements `FlowApi` itself, so a change to the application surface breaks this file at
 * compile time instead of letting the fake drift.
 */
import { createRequire } from "node:module";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import fc from "fast-check";
import { service as healthService } from "grpc-health-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createFlowAdminClient,
  createFlowClient,
  type FlowAdminClient,
  type FlowClient,
} from "../../src/adapters/grpc/client.js";
import { createRunInputFromProto } from "../../src/adapters/grpc/convert/run-request.js";
import { decodeRequest } from "../../src/adapters/grpc/request-text.js";
import { type GrpcLogger, type RunningGrpcServer, startGrpcServer } from "../../src/adapters/grpc/server.js";
import { clientCredentials } from "../../src/adapters/grpc/tls.js";
import type { BuildInfo, CreateRunOptions, FlowApi, TargetView } from "../../src/app/api.js";
import type { Actor } from "../../src/domain/actor.js";
import {
  CandidateLimitError,
  FailedPreconditionError,
  NotFoundError,
  ValidationError,
} from "../../src/domain/errors.js";
import type { BaselineKey, FirmwareBaseline } from "../../src/domain/firmware-baselines.js";
import type { BeginUploadInput, CompleteUploadInput } from "../../src/domain/firmware-images.js";
import { type FirmwareTemplateInput, validateFirmwareTask } from "../../src/domain/firmware-template.js";
import type {
  ComponentReadiness,
  ComponentType,
  CreateRunInput,
  InventoryRack,
  ListRunsQuery,
  ListTargetsQuery,
  ListTasksQuery,
  Page,
  Plan,
  Run,
  RunConfig,
  RunStats,
  Task,
} from "../../src/domain/model.js";
import { DEFAULT_RULE, DEFAULT_RULE_ID, type RuleDefinition } from "../../src/domain/operation-rules.js";
import type { RunHistoryEvent } from "../../src/domain/run-history.js";
import * as pb from "../../src/gen/flow/v1/flow.js";
import { makeCertificates } from "../support/certificates.js";
import { imageRecord } from "../support/memory-images.js";

// ---------------------------------------------------------------------------------------------
// Fixtures

const RUN_ID = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
const NEW_RUN_ID = "9b2c6a44-1d7e-4c1b-8c55-0d9f3a7e6b21";
const TERMINAL_RUN_ID = "c0ffee00-1234-4abc-8def-0123456789ab";
const SLOW_RUN_ID = "5a1e0000-0000-4000-8000-000000000001";
const RACK_ID = "aaaaaaaa-0000-4000-8000-000000000001";
const TASK_ID = "bbbbbbbb-0000-4000-8000-000000000002";
const COMPONENT_ID = "cccccccc-0000-4000-8000-000000000003";

const CONFIG: RunConfig = {
  selector: { kind: "percentage", percentage: 100, seed: "sel" },
  maxConcurrentTargets: 2,
  safetyGates: [{ kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 1 }],
  conflictRetry: { retryTimeoutMs: 3_600_000, initialRetryDelayMs: 30_000, maxRetryDelayMs: 300_000 },
  ordering: { kind: "random", seed: "ord" },
  phasePlan: { kind: "equal", phaseCount: 1 },
  autoAdvance: false,
  operation: {
    kind: "upgradeFirmware",
    firmware: {
      targetVersion: "2.0",
      description: "fw",
      subTargets: [],
      overrideReadinessCheck: false,
      authentication: { kind: "shared", secret: "hunter2" },
      overrideVersionCheck: false,
    },
  },
  targetScope: { excludeOperationRunIds: [] },
};

const RUN: Run = {
  id: RUN_ID,
  name: "canary",
  description: "first wave",
  config: CONFIG,
  status: "RUNNING",
  reason: "NONE",
  statusMessage: "",
  phaseSizes: [3],
  currentPhaseIndex: 0,
  counters: [{ completed: 1, failed: 0, terminated: 0, skipped: 0 }],
  inFlight: 2,
  createdAt: 1_800_000_000_000,
  updatedAt: 1_800_000_001_000,
  startedAt: 1_800_000_000_500,
};

const STATS: RunStats = {
  current: {
    phaseIndex: 0,
    selectedTargets: 3,
    outcomes: { completed: 1, failed: 0, terminated: 0, skipped: 0 },
  },
  cumulative: {
    phaseIndex: 0,
    selectedTargets: 3,
    outcomes: { completed: 1, failed: 0, terminated: 0, skipped: 0 },
  },
};

const TARGET: TargetView = {
  id: "dddddddd-0000-4000-8000-000000000004",
  runId: RUN_ID,
  rackId: RACK_ID,
  sequenceIndex: 0,
  phaseIndex: 0,
  status: "SUBMITTED",
  message: "",
  taskId: TASK_ID,
  componentsByType: [{ type: "COMPUTE", componentIds: [COMPONENT_ID] }],
  createdAt: 1_800_000_000_000,
  updatedAt: 1_800_000_000_700,
  conflictAttempts: 0,
  rackExternalId: "rack-ext-1",
};

const TASK: Task = {
  id: TASK_ID,
  operation: "UpgradeFirmware",
  rackId: RACK_ID,
  componentIds: [COMPONENT_ID],
  description: "fw",
  executorType: "STEP_FUNCTIONS",
  executionId: "arn:aws:states:us-east-1:000000000000:execution:flow-child:t1",
  status: "RUNNING",
  message: "",
  createdAt: 1_800_000_000_000,
  updatedAt: 1_800_000_000_900,
  report: '{"version":1,"components":[]}',
};

const BASELINE: FirmwareBaseline = { componentType: "NVSWITCH", version: "2.0" };
const RULE_ID = "aaaaaaaa-0000-4000-8000-0000000000e1";

const RACK: InventoryRack = {
  id: RACK_ID,
  name: "rack-1",
  externalId: "rack-ext-1",
  components: [{ id: COMPONENT_ID, type: "COMPUTE", firmwareVersion: "1.0" }],
};

const PLAN: Plan = {
  candidateCount: 3,
  phaseSizes: [1],
  targets: [{ rackId: RACK_ID, sequenceIndex: 0, phaseIndex: 0, componentsByType: [] }],
};

const BUILD: BuildInfo = { version: "1.2.3", buildTime: "2026-11-29T00:00:00Z", gitCommit: "abc123" };

const OPS: Actor = {
  name: "ops",
  source: "CLIENT_CERTIFICATE",
  authenticated: true,
  subjectAltNames: ["DNS:ops.example.com"],
  declaredName: "alice",
};

/** One event of RUN per detail shape, as the application returns them. */
const EVENTS: RunHistoryEvent[] = [
  {
    runId: RUN_ID,
    at: 1_800_000_000_000,
    seq: 0,
    kind: "CREATED",
    runName: "canary",
    status: "PENDING",
    reason: "NONE",
    message: "operation run created: 3 targets in 1 phase",
    phaseIndex: 0,
    totalPhases: 1,
    stats: STATS,
    actor: OPS,
    detail: { type: "plan", targets: 3, phaseSizes: [3], selectionSeed: "sel", orderingSeed: "ord" },
  },
  {
    runId: RUN_ID,
    at: 1_800_000_001_000,
    seq: 1,
    kind: "GATE_TRIPPED",
    runName: "canary",
    status: "PAUSED",
    reason: "SAFETY_GATE",
    message: "failure_count safety gate tripped for current_phase: 1/3 targets failed (threshold 1)",
    phaseIndex: 0,
    totalPhases: 1,
    stats: STATS,
    detail: {
      type: "gate",
      gateIndex: 0,
      gate: { kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 1 },
      failed: 1,
      selected: 3,
    },
  },
  {
    runId: RUN_ID,
    at: 1_800_000_002_000,
    seq: 0,
    kind: "WINDOW_CLOSED",
    runName: "canary",
    status: "RUNNING",
    reason: "NONE",
    message: "maintenance window closed: next opens at 2027-01-15T08:00:00Z",
    phaseIndex: 0,
    totalPhases: 1,
    stats: STATS,
    detail: { type: "window", opensAt: 1_800_000_100_000 },
  },
];

/**
 * The application as the server sees it. Scripted by id and name: SLOW_RUN_ID waits until released,
 * TERMINAL_RUN_ID refuses controls, names "crash" and "too-wide" fail the way a store and the planner
 * would. Every call is recorded with its decoded arguments.
 */
class FakeFlowApi implements FlowApi {
  readonly calls: { method: string; args: unknown[] }[] = [];
  /** The caller each recording call was given (create and the controls). */
  readonly actors: { method: string; actor: Actor | undefined }[] = [];
  private releaseSlow: (() => void)[] = [];

  /** Lets every call waiting on SLOW_RUN_ID finish. */
  release(): void {
    for (const r of this.releaseSlow.splice(0)) r();
  }

  private record(method: string, ...args: unknown[]): void {
    this.calls.push({ method, args });
  }

  private run(id: string): Run {
    if (id === RUN_ID || id === SLOW_RUN_ID) return { ...RUN, id };
    if (id === TERMINAL_RUN_ID) return { ...RUN, id, status: "COMPLETED", reason: "NONE" };
    throw new NotFoundError(`operation run ${id} not found`);
  }

  async createRun(input: CreateRunInput, options?: CreateRunOptions): Promise<{ id: string }> {
    this.record("createRun", input);
    this.actors.push({ method: "createRun", actor: options?.actor });
    if (input.name === "crash")
      throw new Error("ProvisionedThroughputExceeded on table flow-runs (internal detail)");
    if (input.name === "too-wide") throw new CandidateLimitError(100);
    if (input.name.trim() === "") throw new ValidationError([{ field: "name", rule: "name is required" }]);
    return { id: NEW_RUN_ID };
  }

  async planRun(input: CreateRunInput) {
    this.record("planRun", input);
    return {
      config: CONFIG,
      plan: PLAN,
      rackExternalIds: new Map([[RACK_ID, "rack-ext-1"]]),
      nextWindowOpenings: [],
    };
  }

  async getRun(id: string, includeStats: boolean): Promise<{ run: Run; stats?: RunStats }> {
    this.record("getRun", id, includeStats);
    if (id === SLOW_RUN_ID) await new Promise<void>((resolve) => this.releaseSlow.push(resolve));
    // Returns stats even when not asked, to check the adapter drops them.
    return { run: this.run(id), stats: STATS };
  }

  async listRuns(query: ListRunsQuery) {
    this.record("listRuns", query);
    return { runs: [RUN], total: 7 };
  }

  async listTargets(query: ListTargetsQuery) {
    this.record("listTargets", query);
    this.run(query.runId);
    return { targets: [TARGET], total: 1 };
  }

  async listRunEvents(query: { runId: string; page: { offset: number; limit: number } }) {
    this.record("listRunEvents", query);
    this.run(query.runId);
    return { events: EVENTS, total: 9 };
  }

  async pauseRun(id: string, actor?: Actor): Promise<Run> {
    this.record("pauseRun", id);
    this.actors.push({ method: "pauseRun", actor });
    const run = this.run(id);
    if (run.status === "COMPLETED")
      throw new FailedPreconditionError("cannot pause a COMPLETED operation run");
    return {
      ...run,
      status: "PAUSED",
      reason: "OPERATOR_PAUSED",
      statusMessage: "operation run paused by operator",
    };
  }

  async resumeRun(id: string, actor?: Actor): Promise<Run> {
    this.record("resumeRun", id);
    this.actors.push({ method: "resumeRun", actor });
    return { ...this.run(id), statusMessage: "operation run resumed" };
  }

  async advancePhase(id: string, expectedPhaseIndex: number | undefined, actor?: Actor): Promise<Run> {
    this.record("advancePhase", id, expectedPhaseIndex);
    this.actors.push({ method: "advancePhase", actor });
    return { ...this.run(id), statusMessage: "advanced to phase 1" };
  }

  async cancelRun(id: string, reason: string, actor?: Actor): Promise<Run> {
    this.record("cancelRun", id, reason);
    this.actors.push({ method: "cancelRun", actor });
    return {
      ...this.run(id),
      status: "CANCELLED",
      statusMessage: `operation run cancelled: ${reason.trim()}`,
    };
  }

  /** Validates as the task service does (the adapter only decodes), then records the template. */
  async upgradeFirmware(request: FirmwareTemplateInput) {
    const validated = validateFirmwareTask(request, Date.now());
    if (!validated.ok) throw new ValidationError(validated.violations);
    this.record("upgradeFirmware", validated.template);
    return { taskIds: [TASK_ID] };
  }

  async getTasks(ids: string[]) {
    this.record("getTasks", ids);
    return ids.includes(TASK_ID) ? [TASK] : [];
  }

  async listTasks(query: ListTasksQuery) {
    this.record("listTasks", query);
    return { tasks: [TASK], total: 1 };
  }

  async cancelTask(id: string): Promise<Task> {
    this.record("cancelTask", id);
    if (id !== TASK_ID) throw new NotFoundError(`task ${id} not found`);
    return { ...TASK, status: "TERMINATED", finishedAt: 1_800_000_002_000 };
  }

  async importInventory(racks: InventoryRack[], baselines: FirmwareBaseline[] = []) {
    this.record("importInventory", racks, baselines);
    return {
      racks: racks.length,
      components: racks.reduce((n, r) => n + r.components.length, 0),
      baselines: baselines.length,
    };
  }

  async setBaselines(baselines: FirmwareBaseline[]) {
    this.record("setBaselines", baselines);
    return baselines;
  }

  async listBaselines() {
    this.record("listBaselines");
    return [BASELINE];
  }

  async setReadiness(componentId: string, readiness: ComponentReadiness | undefined) {
    this.record("setReadiness", componentId, readiness);
    return { id: componentId, type: "COMPUTE" as const, ...(readiness ? { readiness } : {}) };
  }

  async createRule(definition: RuleDefinition, options: { id?: string; expectedVersion?: number } = {}) {
    this.record("createRule", definition, options);
    return {
      ...definition,
      id: options.id ?? RULE_ID,
      version: (options.expectedVersion ?? 0) + 1,
      createdAt: 1,
    };
  }

  async getRule(id: string, version?: number) {
    this.record("getRule", id, version);
    if (id !== DEFAULT_RULE_ID) throw new NotFoundError(`rule ${id} not found`);
    return { ...DEFAULT_RULE };
  }

  async listRules(page: Page) {
    this.record("listRules", page);
    return { rules: [{ ...DEFAULT_RULE }], total: 1 };
  }

  async beginImageUpload(input: BeginUploadInput) {
    this.record("beginImageUpload", input);
    return {
      uploadId: "0b0b0b0b-0000-4000-8000-000000000001",
      url: "https://images.example/put",
      expiresAt: 0,
    };
  }

  async completeImageUpload(input: CompleteUploadInput, actor: Actor) {
    this.record("completeImageUpload", input, actor);
    return {
      image: imageRecord({ componentType: "COMPUTE", version: input.version }),
      alreadyRegistered: false,
    };
  }

  async listImages(query: { componentType?: ComponentType; page: Page }) {
    this.record("listImages", query);
    return { images: [], total: 0 };
  }

  async deleteBaseline(key: BaselineKey) {
    this.record("deleteBaseline", key);
    if (key.componentType !== BASELINE.componentType) throw new NotFoundError("no firmware baseline for UMS");
    return BASELINE;
  }

  async listRacks(offset: number, limit: number) {
    this.record("listRacks", offset, limit);
    return { racks: [RACK], total: 1 };
  }

  version(): BuildInfo {
    return BUILD;
  }
}

function recordingLogger(): GrpcLogger & { errors: Record<string, unknown>[]; warnings: string[] } {
  const errors: Record<string, unknown>[] = [];
  const warnings: string[] = [];
  return {
    errors,
    warnings,
    info: () => {},
    warn: (message, fields) => warnings.push(`${message} ${JSON.stringify(fields ?? {})}`),
    error: (_m, fields) => errors.push(fields ?? {}),
  };
}

/** The gRPC error a call rejected with; fails when it resolved. */
async function failure(call: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await call;
  } catch (err) {
    const { code, details } = err as grpc.ServiceError;
    return { code, details };
  }
  throw new Error("expected the call to fail");
}

const soon = (ms = 5000) => ({ deadline: Date.now() + ms });

type HealthClient = grpc.Client & {
  check(
    req: { service: string },
    cb: (err: grpc.ServiceError | null, res?: { status: string }) => void,
  ): void;
};

// ---------------------------------------------------------------------------------------------

describe("grpc server e2e: every RPC over the socket", () => {
  const api = new FakeFlowApi();
  const logger = recordingLogger();
  let server: RunningGrpcServer;
  let flow: FlowClient;
  let admin: FlowAdminClient;
  let address: string;

  beforeAll(async () => {
    server = await startGrpcServer({ api, host: "127.0.0.1", port: 0, logger });
    address = `127.0.0.1:${server.port}`;
    flow = createFlowClient(address, clientCredentials());
    admin = createFlowAdminClient(address, clientCredentials());
  });

  afterAll(async () => {
    flow.close();
    admin.close();
    api.release();
    await server.shutdown(1000);
  });

  const last = (method: string) => api.calls.filter((c) => c.method === method).at(-1)?.args;

  it("CreateOperationRun: decodes the request into CreateRunInput and returns only the new id", async () => {
    const response = await flow.createOperationRun(
      pb.CreateOperationRunRequest.fromPartial({
        name: "canary",
        description: "d",
        configuration: {
          selector: { selector: { $case: "percentage", value: { percentage: 10 } } },
          options: {
            maxConcurrentTargets: 3,
            conflictPolicy: { strategy: { $case: "retry", value: { retryTimeout: { seconds: 90 } } } },
          },
        },
      }),
      soon(),
    );
    expect(response).toEqual({ id: { id: NEW_RUN_ID } });
    expect(last("createRun")).toEqual([
      {
        name: "canary",
        description: "d",
        configuration: {
          selector: { kind: "percentage", percentage: 10, seed: "" },
          options: { maxConcurrentTargets: 3, conflictPolicy: { retry: { retryTimeoutMs: 90_000 } } },
        },
      },
    ]);
  });

  it("CreateOperationRun: an undefined enum number → INVALID_ARGUMENT naming the field; the application is not called", async () => {
    const before = api.calls.length;
    const err = await failure(
      flow.createOperationRun(
        pb.CreateOperationRunRequest.fromPartial({
          name: "n",
          configuration: {
            options: {
              safetyPolicy: {
                gates: [
                  {
                    gate: { $case: "failureRate", value: { scope: 42 as never, failureThresholdPercent: 5 } },
                  },
                ],
              },
            },
          },
        }),
        soon(),
      ),
    );
    expect(err).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: "configuration.options.safety_policy.gates[0].failure_rate.scope: unknown enum value 42",
    });
    expect(api.calls.length).toBe(before);
  });

  it("CreateOperationRun: the application's errors map to their statuses with their messages", async () => {
    expect(
      await failure(flow.createOperationRun(pb.CreateOperationRunRequest.fromPartial({ name: " " }), soon())),
    ).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: "name: name is required",
    });
    expect(
      await failure(
        flow.createOperationRun(pb.CreateOperationRunRequest.fromPartial({ name: "too-wide" }), soon()),
      ),
    ).toEqual({
      code: grpc.status.INTERNAL,
      details: "operation run candidate scope exceeds target limit 100",
    });
  });

  it("CreateOperationRun: an unexpected failure → INTERNAL 'internal error'; the detail is only logged", async () => {
    expect(
      await failure(
        flow.createOperationRun(pb.CreateOperationRunRequest.fromPartial({ name: "crash" }), soon()),
      ),
    ).toEqual({ code: grpc.status.INTERNAL, details: "internal error" });
    expect(logger.errors.at(-1)).toMatchObject({
      method: "/v1.Flow/CreateOperationRun",
      error: { message: "ProvisionedThroughputExceeded on table flow-runs (internal detail)" },
    });
  });

  it("PlanOperationRun: returns the effective configuration and the planned targets", async () => {
    const response = await flow.planOperationRun(
      pb.CreateOperationRunRequest.fromPartial({ name: "dry" }),
      soon(),
    );
    expect(response.candidateCount).toBe(3);
    expect(response.totalPhases).toBe(1);
    expect(response.targets.map((t) => [t.rackId?.id, t.rackExternalId, t.status])).toEqual([
      [RACK_ID, "rack-ext-1", pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_PENDING],
    ]);
    expect(response.configuration?.operation?.operation?.value.authenticationData).toBeUndefined();
  });

  it("GetOperationRun: summary, configuration without credentials, and stats only when asked", async () => {
    const withStats = await flow.getOperationRun(
      { id: { id: RUN_ID.toUpperCase() }, includeStats: true },
      soon(),
    );
    expect(last("getRun")).toEqual([RUN_ID, true]);
    expect(withStats.operationRun?.summary?.state).toEqual({
      status: pb.OperationRunStatus.OPERATION_RUN_STATUS_RUNNING,
      reason: pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_NONE,
    });
    expect(withStats.operationRun?.summary?.createdAt).toEqual(new Date(RUN.createdAt));
    expect(withStats.operationRun?.stats?.currentPhaseStats?.selectedTargets).toBe(3);
    expect(
      withStats.operationRun?.configuration?.operation?.operation?.value.authenticationData,
    ).toBeUndefined();
    expect(withStats.operationRun?.configuration?.operation?.operation?.value.targetVersion).toBe("2.0");

    const without = await flow.getOperationRun({ id: { id: RUN_ID }, includeStats: false }, soon());
    expect(without.operationRun?.stats).toBeUndefined();
  });

  it("GetOperationRun: unknown id → NOT_FOUND; missing or malformed id → INVALID_ARGUMENT 'operation run ID is required'", async () => {
    const unknown = "eeeeeeee-0000-4000-8000-000000000000";
    expect(await failure(flow.getOperationRun({ id: { id: unknown }, includeStats: false }, soon()))).toEqual(
      {
        code: grpc.status.NOT_FOUND,
        details: `operation run ${unknown} not found`,
      },
    );
    for (const id of [undefined, { id: "" }, { id: "run-1" }]) {
      expect(await failure(flow.getOperationRun({ id, includeStats: false }, soon()))).toEqual({
        code: grpc.status.INVALID_ARGUMENT,
        details: "operation run ID is required",
      });
    }
  });

  it("ListOperationRuns: default page, summaries and total", async () => {
    const response = await flow.listOperationRuns({ filter: undefined }, soon());
    expect(last("listRuns")).toEqual([{ states: [], kinds: [], page: { offset: 0, limit: 100 } }]);
    expect(response.total).toBe(7);
    expect(response.operationRuns.map((r) => [r.id?.id, r.name, r.operationKind])).toEqual([
      [RUN_ID, "canary", { type: pb.OperationType.OPERATION_TYPE_FIRMWARE_CONTROL, code: "upgrade" }],
    ]);
    expect(
      await failure(
        flow.listOperationRuns({ filter: undefined, pagination: { offset: -1, limit: 10 } }, soon()),
      ),
    ).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: "pagination.offset: offset must not be negative",
    });
  });

  it("ListOperationRunTargets: phase scope default, status filter, targets with rack external ids", async () => {
    const response = await flow.listOperationRunTargets(
      pb.ListOperationRunTargetsRequest.fromPartial({ operationRunId: { id: RUN_ID }, status: 3 }),
      soon(),
    );
    expect(last("listTargets")).toEqual([
      { runId: RUN_ID, status: "SUBMITTED", phaseScope: "CURRENT_PHASE", page: { offset: 0, limit: 100 } },
    ]);
    expect(response.total).toBe(1);
    expect(response.targets[0]).toMatchObject({
      rackId: { id: RACK_ID },
      taskId: { id: TASK_ID },
      rackExternalId: "rack-ext-1",
      status: pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_SUBMITTED,
    });
    expect(
      await failure(flow.listOperationRunTargets(pb.ListOperationRunTargetsRequest.fromPartial({}), soon())),
    ).toEqual({ code: grpc.status.INVALID_ARGUMENT, details: "operation run ID is required" });
  });

  it("Pause/Resume/Advance/Cancel: ids and arguments arrive; runs come back without stats", async () => {
    const paused = await flow.pauseOperationRun({ id: { id: RUN_ID } }, soon());
    expect(paused.summary?.state?.status).toBe(pb.OperationRunStatus.OPERATION_RUN_STATUS_PAUSED);
    expect(paused.summary?.statusMessage).toBe("operation run paused by operator");
    expect(paused.stats).toBeUndefined();

    expect((await flow.resumeOperationRun({ id: { id: RUN_ID } }, soon())).summary?.statusMessage).toBe(
      "operation run resumed",
    );

    await flow.advanceOperationRunPhase({ id: { id: RUN_ID }, expectedPhaseIndex: 1 }, soon());
    expect(last("advancePhase")).toEqual([RUN_ID, 1]);
    await flow.advanceOperationRunPhase({ id: { id: RUN_ID } }, soon());
    expect(last("advancePhase")).toEqual([RUN_ID, undefined]);

    const cancelled = await flow.cancelOperationRun({ id: { id: RUN_ID }, reason: " bad firmware " }, soon());
    expect(last("cancelRun")).toEqual([RUN_ID, " bad firmware "]);
    expect(cancelled.summary?.statusMessage).toBe("operation run cancelled: bad firmware");
  });

  it("PauseOperationRun on a terminal run → FAILED_PRECONDITION with the application's message", async () => {
    expect(await failure(flow.pauseOperationRun({ id: { id: TERMINAL_RUN_ID } }, soon()))).toEqual({
      code: grpc.status.FAILED_PRECONDITION,
      details: "cannot pause a COMPLETED operation run",
    });
  });

  it("UpgradeFirmware: a validated template reaches the application; a missing target spec does not", async () => {
    const response = await flow.upgradeFirmware(
      pb.UpgradeFirmwareRequest.fromPartial({
        targetSpec: {
          targets: {
            $case: "racks",
            value: { targets: [{ identifier: { $case: "name", value: "rack-1" } }] },
          },
        },
        authenticationData: { value: { $case: "shared", value: "s3cret" } },
      }),
      soon(),
    );
    expect(response).toEqual({ taskIds: [{ id: TASK_ID }] });
    expect(last("upgradeFirmware")).toEqual([
      {
        targetSpec: { kind: "racks", racks: [{ ref: { by: "name", name: "rack-1" }, componentTypes: [] }] },
        description: "",
        subTargets: [],
        overrideReadinessCheck: false,
        authentication: { kind: "shared", secret: "s3cret" },
        overrideVersionCheck: false,
      },
    ]);
    expect(await failure(flow.upgradeFirmware(pb.UpgradeFirmwareRequest.fromPartial({}), soon()))).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: "target_spec: target_spec is required",
    });
  });

  it("GetTasksByIDs, ListTasks (report only when asked) and CancelTask", async () => {
    const got = await flow.getTasksByIDs({ taskIds: [{ id: TASK_ID }] }, soon());
    expect(got.tasks.map((t) => [t.id?.id, t.executorType, t.report])).toEqual([
      [TASK_ID, pb.TaskExecutorType.TASK_EXECUTOR_TYPE_STEP_FUNCTIONS, TASK.report],
    ]);
    expect(await failure(flow.getTasksByIDs({ taskIds: [{ id: "t-1" }] }, soon()))).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: 'task_ids[0]: must be a UUID (got "t-1")',
    });

    const listed = await flow.listTasks(pb.ListTasksRequest.fromPartial({ rackId: { id: RACK_ID } }), soon());
    expect(last("listTasks")).toEqual([
      { rackId: RACK_ID, activeOnly: false, withReport: false, page: { offset: 0, limit: 100 } },
    ]);
    expect(listed.tasks[0]?.report).toBe("");
    const withReport = await flow.listTasks(pb.ListTasksRequest.fromPartial({ withReport: true }), soon());
    expect(withReport.tasks[0]?.report).toBe(TASK.report);

    const cancelled = await flow.cancelTask({ taskId: { id: TASK_ID } }, soon());
    expect(cancelled.task?.status).toBe(pb.TaskStatus.TASK_STATUS_TERMINATED);
    expect(cancelled.task?.finishedAt).toEqual(new Date(1_800_000_002_000));
    expect(await failure(flow.cancelTask({ taskId: undefined }, soon()))).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: "task ID is required",
    });
  });

  it("Version", async () => {
    expect(await flow.version({}, soon())).toEqual(BUILD);
  });

  it("FlowInventoryAdmin: ImportInventory and ListRacks", async () => {
    const imported = await admin.importInventory(
      {
        racks: [
          {
            id: { id: RACK_ID },
            name: "rack-1",
            externalId: "rack-ext-1",
            nvlDomainId: undefined,
            nvlDomainName: "",
            location: { datacenter: "dc1", row: "A", position: 3 },
            components: [
              {
                id: { id: COMPONENT_ID },
                type: 1,
                externalId: "",
                firmwareVersion: "1.0",
                model: "",
                vendor: "",
                readiness: undefined,
              },
            ],
          },
        ],
        baselines: [{ componentType: 2, model: "", vendor: "", version: "2.0" }],
      },
      soon(),
    );
    expect(imported).toEqual({ racksWritten: 1, componentsWritten: 1, baselinesWritten: 1 });
    expect(last("importInventory")).toEqual([
      [{ ...RACK, location: { datacenter: "dc1", row: "A", position: 3 } }],
      [{ componentType: "NVSWITCH", version: "2.0" }],
    ]);

    const listed = await admin.listRacks({ pagination: { offset: 0, limit: 5 } }, soon());
    expect(last("listRacks")).toEqual([0, 5]);
    expect(listed.racks.map((r) => [r.id?.id, r.externalId, r.components.length])).toEqual([
      [RACK_ID, "rack-ext-1", 1],
    ]);
  });

  it("a call that outlives its deadline → DEADLINE_EXCEEDED, and the server keeps serving", async () => {
    const err = await failure(
      flow.getOperationRun({ id: { id: SLOW_RUN_ID }, includeStats: false }, soon(150)),
    );
    expect(err.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    api.release();
    expect(await flow.version({}, soon())).toEqual(BUILD);
  });

  it("undecodable bytes → INVALID_ARGUMENT; an unknown method → UNIMPLEMENTED", async () => {
    const raw = new grpc.Client(address, clientCredentials());
    const send = (path: string, bytes: number[]) =>
      new Promise<{ code: number; details: string }>((resolve) => {
        raw.makeUnaryRequest(
          path,
          (b: Buffer) => b,
          (b: Buffer) => b,
          Buffer.from(bytes),
          new grpc.Metadata(),
          soon(),
          (err) => resolve({ code: err?.code ?? grpc.status.OK, details: err?.details ?? "" }),
        );
      });
    expect(await send("/v1.Flow/CreateOperationRun", [0x0f])).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: "malformed request: cant skip wire type 7",
    });
    expect((await send("/v1.Flow/DeleteEverything", [])).code).toBe(grpc.status.UNIMPLEMENTED);
    raw.close();
  });

  it("a request over the 4 MiB receive limit → RESOURCE_EXHAUSTED, and the server keeps serving", async () => {
    const err = await failure(
      flow.createOperationRun(
        pb.CreateOperationRunRequest.fromPartial({ name: "big", description: "x".repeat(5 << 20) }),
        soon(),
      ),
    );
    expect(err.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(await flow.version({}, soon())).toEqual(BUILD);
  });

  it("health: the server and both services report SERVING; an unknown service is NOT_FOUND", async () => {
    const Health = grpc.makeClientConstructor(healthService, "grpc.health.v1.Health");
    const health = new Health(address, clientCredentials()) as unknown as HealthClient;
    const check = (service: string) =>
      new Promise<{ status?: string; code?: number }>((resolve) => {
        health.check({ service }, (err, res) => resolve(err ? { code: err.code } : { status: res?.status }));
      });
    expect(await check("")).toEqual({ status: "SERVING" });
    expect(await check("v1.Flow")).toEqual({ status: "SERVING" });
    expect(await check("flowadmin.v1.FlowInventoryAdmin")).toEqual({ status: "SERVING" });
    expect(await check("v9.Nope")).toEqual({ code: grpc.status.NOT_FOUND });
    health.close();
  });

  it("reflection lists the services and serves flow.proto's descriptor", async () => {
    const require = createRequire(import.meta.url);
    const protoPath = join(
      require.resolve("@grpc/reflection"),
      "../../proto/grpc/reflection/v1/reflection.proto",
    );
    const loaded = grpc.loadPackageDefinition(
      protoLoader.loadSync(protoPath, { keepCase: true }),
    ) as unknown as {
      grpc: { reflection: { v1: { ServerReflection: grpc.ServiceClientConstructor } } };
    };
    const reflection = new loaded.grpc.reflection.v1.ServerReflection(address, clientCredentials());
    const ask = (request: Record<string, string>) =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        const stream = (
          reflection as unknown as { ServerReflectionInfo(): grpc.ClientDuplexStream<object, object> }
        ).ServerReflectionInfo();
        stream.on("data", (data: Record<string, unknown>) => {
          resolve(data);
          stream.end();
        });
        stream.on("error", reject);
        stream.write(request);
      });

    const listed = (await ask({ list_services: "*" })) as {
      list_services_response: { service: { name: string }[] };
    };
    expect(listed.list_services_response.service.map((s) => s.name).sort()).toEqual([
      "flowadmin.v1.FlowInventoryAdmin",
      "grpc.health.v1.Health",
      "v1.Flow",
    ]);

    const file = (await ask({ file_containing_symbol: "v1.Flow" })) as {
      file_descriptor_response: { file_descriptor_proto: Buffer[] };
    };
    const descriptors = file.file_descriptor_response.file_descriptor_proto.map((b) =>
      fromBinary(FileDescriptorProtoSchema, b),
    );
    // proto-loader (protobufjs) names generated files by package ("v1.proto"), not by path.
    const flowFile = descriptors.find((d) => d.package === "v1");
    expect(flowFile?.messageType.some((m) => m.name === "CreateOperationRunRequest")).toBe(true);
    expect(flowFile?.service.map((s) => s.name)).toEqual(["Flow"]);
    expect(flowFile?.service[0]?.method.length).toBe(15);
    expect(flowFile?.service[0]?.method.map((m) => m.name)).toContain("ListOperationRunEvents");
    reflection.close();
  });
});

// ---------------------------------------------------------------------------------------------

describe("grpc server e2e: overload is shed over a real socket", () => {
  it("calls beyond the in-flight limit are RESOURCE_EXHAUSTED at once; a freed slot admits again", async () => {
    const api = new FakeFlowApi();
    const logger = recordingLogger();
    const server = await startGrpcServer({
      api,
      host: "127.0.0.1",
      port: 0,
      logger,
      protoDir: false,
      admission: { maxInFlightCalls: 2, maxConcurrentCreates: 1 },
    });
    const flow = createFlowClient(`127.0.0.1:${server.port}`, clientCredentials());
    const slow = () => flow.getOperationRun({ id: { id: SLOW_RUN_ID }, includeStats: false }, soon(10_000));
    const parked = [slow(), slow()];
    while (api.calls.filter((c) => c.method === "getRun").length < 2)
      await new Promise((r) => setTimeout(r, 5));

    const refused = await failure(flow.version({}, soon()));
    expect({ code: refused.code, details: refused.details }).toEqual({
      code: grpc.status.RESOURCE_EXHAUSTED,
      details:
        "server busy: 2 calls in progress, the most it admits at once; the call was not started and may be retried with backoff",
    });
    api.release();
    await Promise.all(parked);
    expect(await flow.version({}, soon())).toEqual(BUILD);
    flow.close();
    await server.shutdown(1000);
  });

  it("a create naming a run with a terminal escape is INVALID_ARGUMENT before the application sees it", async () => {
    const api = new FakeFlowApi();
    const server = await startGrpcServer({
      api,
      host: "127.0.0.1",
      port: 0,
      logger: recordingLogger(),
      protoDir: false,
    });
    const flow = createFlowClient(`127.0.0.1:${server.port}`, clientCredentials());
    const error = await failure(
      flow.createOperationRun(pb.CreateOperationRunRequest.fromPartial({ name: "\x1b[2Jrollout" }), soon()),
    );
    expect({ code: error.code, details: error.details }).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: "name: must not contain control characters (U+001B at character 0)",
    });
    expect(api.calls).toEqual([]);
    flow.close();
    await server.shutdown(1000);
  });
});

// ---------------------------------------------------------------------------------------------

describe("grpc server e2e: fuzzed CreateOperationRun requests", () => {
  /** Always accepts: any status other than OK comes from the adapter. */
  class AcceptingApi extends FakeFlowApi {
    override async createRun(input: CreateRunInput): Promise<{ id: string }> {
      this.calls.push({ method: "createRun", args: [input] });
      return { id: NEW_RUN_ID };
    }
  }
  const api = new AcceptingApi();
  let server: RunningGrpcServer;
  let flow: FlowClient;
  let raw: grpc.Client;

  beforeAll(async () => {
    server = await startGrpcServer({
      api,
      host: "127.0.0.1",
      port: 0,
      logger: recordingLogger(),
      protoDir: false,
    });
    flow = createFlowClient(`127.0.0.1:${server.port}`, clientCredentials());
    raw = new grpc.Client(`127.0.0.1:${server.port}`, clientCredentials());
  });

  afterAll(async () => {
    flow.close();
    raw.close();
    await server.shutdown(1000);
  });

  /** What the adapter must answer for these bytes, worked out locally with the same converter. */
  function expected(bytes: Uint8Array): { code: number; details: string; input?: CreateRunInput } {
    let request: pb.CreateOperationRunRequest;
    try {
      // The adapter's own decoder: strict UTF-8, no control characters in string fields.
      request = decodeRequest(pb.FlowService.createOperationRun, bytes);
    } catch (err) {
      if (err instanceof ValidationError) return { code: grpc.status.INVALID_ARGUMENT, details: err.message };
      return { code: grpc.status.INVALID_ARGUMENT, details: `malformed request: ${(err as Error).message}` };
    }
    try {
      return { code: grpc.status.OK, details: "", input: createRunInputFromProto(request) };
    } catch (err) {
      return { code: grpc.status.INVALID_ARGUMENT, details: (err as Error).message };
    }
  }

  function send(bytes: Uint8Array): Promise<{ code: number; details: string }> {
    return new Promise((resolve) => {
      raw.makeUnaryRequest(
        "/v1.Flow/CreateOperationRun",
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.from(bytes),
        new grpc.Metadata(),
        soon(),
        (err) => resolve({ code: err?.code ?? grpc.status.OK, details: err?.details ?? "" }),
      );
    });
  }

  it("random bytes: always answered, OK or INVALID_ARGUMENT exactly as the decoder and converter say", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 200 }), async (bytes) => {
        const want = expected(bytes);
        const got = await send(bytes);
        expect(got).toEqual({ code: want.code, details: want.details });
      }),
      { numRuns: 300 },
    );
    expect(await flow.version({}, soon())).toEqual(BUILD);
  });

  const enumValue = fc.oneof(
    fc.integer({ min: 0, max: 3 }),
    fc.integer({ min: -5, max: 200 }),
  ) as fc.Arbitrary<never>;
  const duration = fc.option(
    fc.record({ seconds: fc.integer({ min: -400_000_000_000, max: 400_000_000_000 }), nanos: fc.integer() }),
    { nil: undefined },
  );
  const gate = fc.oneof(
    fc.constant({ gate: undefined }),
    fc.record({
      gate: fc.record({
        $case: fc.constant("failureRate" as const),
        value: fc.record({ scope: enumValue, failureThresholdPercent: fc.integer({ min: -5, max: 200 }) }),
      }),
    }),
    fc.record({
      gate: fc.record({
        $case: fc.constant("failureCount" as const),
        value: fc.record({ scope: enumValue, failureThresholdCount: fc.integer({ min: -5, max: 200 }) }),
      }),
    }),
  );
  const request = fc.record({
    name: fc.string({ maxLength: 300 }),
    description: fc.string({ maxLength: 50 }),
    configuration: fc.option(
      fc.record({
        selector: fc.option(fc.record({ percentage: fc.integer(), seed: fc.string({ maxLength: 10 }) }), {
          nil: undefined,
        }),
        gates: fc.array(gate, { maxLength: 40 }),
        retry: fc.record({ retryTimeout: duration, initialRetryDelay: duration, maxRetryDelay: duration }),
        strategy: enumValue,
        phases: fc.array(fc.integer({ min: -5, max: 120 }), { maxLength: 110 }),
        componentTypes: fc.array(enumValue, { maxLength: 20 }),
        excludeIds: fc.array(fc.oneof(fc.uuid(), fc.string({ maxLength: 40 })), { maxLength: 105 }),
      }),
      { nil: undefined },
    ),
  });

  it("random well-formed messages: the application receives exactly the converter's input, or INVALID_ARGUMENT", async () => {
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const c = r.configuration;
        const message = pb.CreateOperationRunRequest.fromPartial({
          name: r.name,
          description: r.description,
          configuration: c && {
            selector: c.selector && { selector: { $case: "percentage", value: c.selector } },
            options: {
              safetyPolicy: { gates: c.gates },
              conflictPolicy: { strategy: { $case: "retry", value: c.retry } },
              orderingPolicy: { ordering: { $case: "physicalLocation", value: { strategy: c.strategy } } },
              phasePolicy: {
                plan: {
                  $case: "percentage",
                  value: { phases: c.phases.map((percentage) => ({ percentage })) },
                },
              },
            },
            operation: {
              operation: {
                $case: "upgradeFirmware",
                value: {
                  targetSpec: {
                    targets: {
                      $case: "racks",
                      value: {
                        targets: [
                          { identifier: { $case: "name", value: "r" }, componentTypes: c.componentTypes },
                        ],
                      },
                    },
                  },
                },
              },
              targetScope: { excludeOperationRunIds: c.excludeIds.map((id) => ({ id })) },
            },
          },
        });
        const bytes = pb.CreateOperationRunRequest.encode(message).finish();
        const want = expected(bytes);
        const before = api.calls.length;
        let got: { code: number; details: string };
        try {
          await flow.createOperationRun(message, soon());
          got = { code: grpc.status.OK, details: "" };
        } catch (err) {
          got = { code: (err as grpc.ServiceError).code, details: (err as grpc.ServiceError).details };
        }
        expect(got).toEqual({ code: want.code, details: want.details });
        if (want.code === grpc.status.OK)
          expect(api.calls.slice(before)).toEqual([{ method: "createRun", args: [want.input] }]);
        else expect(api.calls.length).toBe(before);
      }),
      { numRuns: 200 },
    );
  });
});

// ---------------------------------------------------------------------------------------------

describe("grpc server e2e: ListOperationRunEvents and the caller of create and the controls", () => {
  const api = new FakeFlowApi();
  let server: RunningGrpcServer;
  let flow: FlowClient;
  let trusting: RunningGrpcServer;
  let behindLb: FlowClient;
  const certs = makeCertificates({
    clients: { lb: { subject: "/O=Flow/CN=deployer", san: "DNS:deployer.example.com,URI:spiffe://flow/ci" } },
  });

  beforeAll(async () => {
    server = await startGrpcServer({
      api,
      host: "127.0.0.1",
      port: 0,
      logger: recordingLogger(),
      protoDir: false,
    });
    flow = createFlowClient(`127.0.0.1:${server.port}`, clientCredentials());
    trusting = await startGrpcServer({
      api,
      host: "127.0.0.1",
      port: 0,
      logger: recordingLogger(),
      protoDir: false,
      trustLoadBalancerClientCert: true,
    });
    behindLb = createFlowClient(`127.0.0.1:${trusting.port}`, clientCredentials());
  });

  afterAll(async () => {
    flow.close();
    behindLb.close();
    certs.remove();
    await Promise.all([server.shutdown(1000), trusting.shutdown(1000)]);
  });

  const withMetadata = (entries: [string, string][]) => {
    const metadata = new grpc.Metadata();
    for (const [key, value] of entries) metadata.add(key, value);
    return { ...soon(), metadata };
  };
  const lastActor = () => api.actors.at(-1);
  /** The leaf as ALB verify mode forwards it: URL-encoded PEM, with +=/ left as they are. */
  const forwarded = (pem: string) =>
    encodeURIComponent(pem).replace(/%2B/g, "+").replace(/%3D/g, "=").replace(/%2F/g, "/");

  it("ListOperationRunEvents: the run id and page are decoded; every event comes back with its id, kind, state, stats, actor and detail", async () => {
    const response = await flow.listOperationRunEvents(
      { operationRunId: { id: RUN_ID }, pagination: { offset: 1, limit: 2 } },
      soon(),
    );
    expect(api.calls.at(-1)).toEqual({
      method: "listRunEvents",
      args: [{ runId: RUN_ID, page: { offset: 1, limit: 2 } }],
    });
    expect(response.total).toBe(9);
    expect(response.events.map((e) => [e.id, e.kind, e.detail?.$case])).toEqual([
      [`${RUN_ID}/001800000000000.00`, pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_CREATED, "plan"],
      [
        `${RUN_ID}/001800000001000.01`,
        pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_GATE_TRIPPED,
        "gate",
      ],
      [
        `${RUN_ID}/001800000002000.00`,
        pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_WINDOW_CLOSED,
        "window",
      ],
    ]);
    expect(response.events[0]).toMatchObject({
      operationRunId: { id: RUN_ID },
      time: new Date(1_800_000_000_000),
      state: {
        status: pb.OperationRunStatus.OPERATION_RUN_STATUS_PENDING,
        reason: pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_NONE,
      },
      message: "operation run created: 3 targets in 1 phase",
      totalPhases: 1,
      stats: { currentPhaseStats: { selectedTargets: 3, outcomeCounts: { completed: 1 } } },
      actor: {
        name: "ops",
        source: pb.OperationRunActorSource.OPERATION_RUN_ACTOR_SOURCE_CLIENT_CERTIFICATE,
        authenticated: true,
        subjectAltNames: ["DNS:ops.example.com"],
        declaredName: "alice",
      },
      detail: {
        $case: "plan",
        value: { targets: 3, phaseSizes: [3], selectionSeed: "sel", orderingSeed: "ord" },
      },
    });
    expect(response.events[1]?.actor).toBeUndefined();
    expect(response.events[1]?.detail).toEqual({
      $case: "gate",
      value: {
        gateIndex: 0,
        gate: {
          gate: {
            $case: "failureCount",
            value: {
              scope: pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CURRENT_PHASE,
              failureThresholdCount: 1,
            },
          },
        },
        failed: 1,
        selected: 3,
      },
    });
    expect(response.events[2]?.detail).toEqual({
      $case: "window",
      value: { opensAt: new Date(1_800_000_100_000), closesAt: undefined, closedAt: undefined },
    });
  });

  it("ListOperationRunEvents: a malformed run id → INVALID_ARGUMENT; an unknown run → NOT_FOUND; a negative offset names the field", async () => {
    expect(
      await failure(
        flow.listOperationRunEvents({ operationRunId: { id: "nope" }, pagination: undefined }, soon()),
      ),
    ).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: (await failure(flow.pauseOperationRun({ id: { id: "nope" } }, soon()))).details,
    });
    expect(
      (
        await failure(
          flow.listOperationRunEvents({ operationRunId: { id: NEW_RUN_ID }, pagination: undefined }, soon()),
        )
      ).code,
    ).toBe(grpc.status.NOT_FOUND);
    expect(
      await failure(
        flow.listOperationRunEvents(
          { operationRunId: { id: RUN_ID }, pagination: { offset: -1, limit: 0 } },
          soon(),
        ),
      ),
    ).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: "pagination.offset: offset must not be negative",
    });
  });

  it("no certificate, no name: every control and create records an ANONYMOUS caller", async () => {
    await flow.pauseOperationRun({ id: { id: RUN_ID } }, soon());
    expect(lastActor()).toEqual({
      method: "pauseRun",
      actor: { name: "", source: "ANONYMOUS", authenticated: false, subjectAltNames: [] },
    });
  });

  it("x-flow-actor: the declared name, unauthenticated, on create and on every control", async () => {
    const alice = { name: "alice", source: "DECLARED", authenticated: false, subjectAltNames: [] };
    await flow.createOperationRun(
      pb.CreateOperationRunRequest.fromPartial({ name: "canary" }),
      withMetadata([["x-flow-actor", "alice"]]),
    );
    await flow.resumeOperationRun({ id: { id: RUN_ID } }, withMetadata([["x-flow-actor", "alice"]]));
    await flow.advanceOperationRunPhase({ id: { id: RUN_ID } }, withMetadata([["x-flow-actor", "alice"]]));
    await flow.cancelOperationRun(
      { id: { id: RUN_ID }, reason: "" },
      withMetadata([["x-flow-actor", "alice"]]),
    );
    expect(api.actors.slice(-4)).toEqual(
      ["createRun", "resumeRun", "advancePhase", "cancelRun"].map((method) => ({ method, actor: alice })),
    );
  });

  it("x-flow-actor longer than 128 characters → INVALID_ARGUMENT naming it; the application is not called", async () => {
    const before = api.calls.length;
    expect(
      await failure(
        flow.pauseOperationRun({ id: { id: RUN_ID } }, withMetadata([["x-flow-actor", "a".repeat(129)]])),
      ),
    ).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: "metadata x-flow-actor: must be at most 128 printable ASCII characters (got 129 characters)",
    });
    expect(api.calls.length).toBe(before);
  });

  it("reads never ask who is calling: a malformed x-flow-actor does not fail GetOperationRun", async () => {
    const { operationRun } = await flow.getOperationRun(
      { id: { id: RUN_ID }, includeStats: false },
      withMetadata([["x-flow-actor", "a".repeat(200)]]),
    );
    expect(operationRun?.summary?.id?.id).toBe(RUN_ID);
  });

  it("the load balancer's certificate header is ignored unless the front is configured to trust it", async () => {
    const header = forwarded(certs.pem("lb.crt"));
    await flow.pauseOperationRun(
      { id: { id: RUN_ID } },
      withMetadata([
        ["x-amzn-mtls-clientcert-leaf", header],
        ["x-flow-actor", "mallory"],
      ]),
    );
    expect(lastActor()?.actor).toEqual({
      name: "mallory",
      source: "DECLARED",
      authenticated: false,
      subjectAltNames: [],
    });
  });

  it("behind the load balancer (trusted): its forwarded certificate is the caller, CN and SANs; the declared name rides along", async () => {
    await behindLb.pauseOperationRun(
      { id: { id: RUN_ID } },
      withMetadata([
        ["x-amzn-mtls-clientcert-leaf", forwarded(certs.pem("lb.crt"))],
        ["x-flow-actor", "alice"],
      ]),
    );
    expect(lastActor()?.actor).toEqual({
      name: "deployer",
      source: "LOAD_BALANCER_CERTIFICATE",
      authenticated: true,
      subjectAltNames: ["DNS:deployer.example.com", "URI:spiffe://flow/ci"],
      declaredName: "alice",
    });
    // Without the header (not via the load balancer's mTLS listener): the declared name, unauthenticated.
    await behindLb.pauseOperationRun({ id: { id: RUN_ID } }, withMetadata([["x-flow-actor", "alice"]]));
    expect(lastActor()?.actor).toMatchObject({ name: "alice", source: "DECLARED", authenticated: false });
    expect(
      await failure(
        behindLb.pauseOperationRun(
          { id: { id: RUN_ID } },
          withMetadata([["x-amzn-mtls-clientcert-leaf", "garbage"]]),
        ),
      ),
    ).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: "metadata x-amzn-mtls-clientcert-leaf: must be a URL-encoded PEM certificate",
    });
  });
});

// ---------------------------------------------------------------------------------------------

describe("grpc server e2e: TLS and mutual TLS", () => {
  const servers: RunningGrpcServer[] = [];
  /** A CA, a server certificate for 127.0.0.1/localhost and a client certificate, all P-256. */
  const certs = makeCertificates({
    clients: { client: { cn: "flowctl", san: "DNS:ops.example.com,URI:spiffe://flow/ops" } },
  });
  const file = certs.file;

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.shutdown(500)));
    certs.remove();
  });

  async function serve(clientCaFile?: string, api = new FakeFlowApi()): Promise<string> {
    const server = await startGrpcServer({
      api,
      host: "127.0.0.1",
      port: 0,
      logger: recordingLogger(),
      protoDir: false,
      tls: { certFile: file("server.crt"), keyFile: file("server.key"), clientCaFile },
    });
    servers.push(server);
    return `127.0.0.1:${server.port}`;
  }

  it("TLS: a client trusting the CA is served; a plaintext client is not", async () => {
    const address = await serve();
    const trusted = createFlowClient(address, clientCredentials({ caFile: file("ca.crt") }));
    expect(await trusted.version({}, soon())).toEqual(BUILD);
    trusted.close();

    const plain = createFlowClient(address, clientCredentials());
    expect((await failure(plain.version({}, soon(2000)))).code).toBe(grpc.status.UNAVAILABLE);
    plain.close();
  });

  it("mutual TLS: a client without a certificate is refused; one with a CA-signed certificate is served", async () => {
    const address = await serve(file("ca.crt"));
    const anonymous = createFlowClient(address, clientCredentials({ caFile: file("ca.crt") }));
    expect((await failure(anonymous.version({}, soon(2000)))).code).toBe(grpc.status.UNAVAILABLE);
    anonymous.close();

    const identified = createFlowClient(
      address,
      clientCredentials({
        caFile: file("ca.crt"),
        certFile: file("client.crt"),
        keyFile: file("client.key"),
      }),
    );
    expect(await identified.version({}, soon())).toEqual(BUILD);
    identified.close();
  });

  it("mutual TLS: the verified client certificate is the caller (CN, SANs), whatever name it also declares", async () => {
    const api = new FakeFlowApi();
    const address = await serve(file("ca.crt"), api);
    const identified = createFlowClient(
      address,
      clientCredentials({
        caFile: file("ca.crt"),
        certFile: file("client.crt"),
        keyFile: file("client.key"),
      }),
    );
    const metadata = new grpc.Metadata();
    metadata.set("x-flow-actor", "alice");
    await identified.cancelOperationRun({ id: { id: RUN_ID }, reason: "x" }, { ...soon(), metadata });
    await identified.pauseOperationRun({ id: { id: RUN_ID } }, soon());
    identified.close();
    const certificate = {
      name: "flowctl",
      source: "CLIENT_CERTIFICATE",
      authenticated: true,
      subjectAltNames: ["DNS:ops.example.com", "URI:spiffe://flow/ops"],
    };
    expect(api.actors).toEqual([
      { method: "cancelRun", actor: { ...certificate, declaredName: "alice" } },
      { method: "pauseRun", actor: certificate },
    ]);
  });

  it("TLS without a client CA: no certificate is asked for; the declared name is the caller", async () => {
    const api = new FakeFlowApi();
    const address = await serve(undefined, api);
    const client = createFlowClient(
      address,
      clientCredentials({
        caFile: file("ca.crt"),
        certFile: file("client.crt"),
        keyFile: file("client.key"),
      }),
    );
    const metadata = new grpc.Metadata();
    metadata.set("x-flow-actor", "alice");
    await client.pauseOperationRun({ id: { id: RUN_ID } }, { ...soon(), metadata });
    client.close();
    expect(api.actors).toEqual([
      {
        method: "pauseRun",
        actor: { name: "alice", source: "DECLARED", authenticated: false, subjectAltNames: [] },
      },
    ]);
  });

  it("a missing key file fails at start, naming the setting and the file", async () => {
    await expect(
      startGrpcServer({
        api: new FakeFlowApi(),
        host: "127.0.0.1",
        port: 0,
        logger: recordingLogger(),
        protoDir: false,
        tls: { certFile: file("server.crt"), keyFile: file("nope.key") },
      }),
    ).rejects.toThrow(`tls.keyFile: cannot read ${file("nope.key")}: file not found`);
  });
});

// ---------------------------------------------------------------------------------------------

describe("grpc server e2e: shutdown", () => {
  it("graceful: health turns NOT_SERVING, an in-flight call still completes, then the server stops", async () => {
    const api = new FakeFlowApi();
    const server = await startGrpcServer({
      api,
      host: "127.0.0.1",
      port: 0,
      logger: recordingLogger(),
      protoDir: false,
      drainMs: 300,
    });
    const address = `127.0.0.1:${server.port}`;
    const flow = createFlowClient(address, clientCredentials());
    const Health = grpc.makeClientConstructor(healthService, "grpc.health.v1.Health");
    const health = new Health(address, clientCredentials()) as unknown as HealthClient;
    const check = () =>
      new Promise<string | undefined>((resolve) =>
        health.check({ service: "" }, (_e, res) => resolve(res?.status)),
      );
    expect(await check()).toBe("SERVING");

    const inFlight = flow.getOperationRun({ id: { id: SLOW_RUN_ID }, includeStats: false }, soon(10_000));
    while (!api.calls.some((c) => c.method === "getRun")) await new Promise((r) => setTimeout(r, 5));

    let stopped = false;
    const closing = server.shutdown(5000).then(() => {
      stopped = true;
    });
    expect(await check()).toBe("NOT_SERVING");
    // The drain is over once the server takes no new call (a health check fails to connect); the
    // one in flight still holds the shutdown open.
    while ((await check()) !== undefined) await new Promise((r) => setTimeout(r, 20));
    expect(stopped).toBe(false);

    api.release();
    const response = await inFlight;
    expect(response.operationRun?.summary?.id).toEqual({ id: SLOW_RUN_ID });
    await closing;
    expect(stopped).toBe(true);
    flow.close();
    health.close();
  });

  it("forced: a call still running when the grace period ends is cancelled and shutdown resolves", async () => {
    const api = new FakeFlowApi();
    const logger = recordingLogger();
    const server = await startGrpcServer({
      api,
      host: "127.0.0.1",
      port: 0,
      logger,
      protoDir: false,
    });
    const flow = createFlowClient(`127.0.0.1:${server.port}`, clientCredentials());
    const stuck = failure(
      flow.getOperationRun({ id: { id: SLOW_RUN_ID }, includeStats: false }, soon(10_000)),
    );
    while (!api.calls.some((c) => c.method === "getRun")) await new Promise((r) => setTimeout(r, 5));

    await server.shutdown(200);
    // The grace timer ended it: the call was still waiting on the API (released only below).
    expect(logger.warnings).toEqual(['gRPC grace period over: cancelling in-flight calls {"graceMs":200}']);
    expect([grpc.status.CANCELLED, grpc.status.UNAVAILABLE]).toContain((await stuck).code);
    api.release();
    flow.close();
  });
});
