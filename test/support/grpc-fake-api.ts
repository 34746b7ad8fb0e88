/**
 * The gRPC server's e2e suites' shared set-up (test/e2e/grpc-*.test.ts): the fixtures a fake
 * application answers with, the fake itself (`FakeFlowApi`, scripted by id and name, recording every
 * call and the caller of create and the controls), a recording logger, and the helpers to read a
 * rejected call and to give each call a deadline.
 *
 * The fake implements `FlowApi` itself, so a change to the application surface breaks the suites
 * at compile time instead of letting the fake drift.
 */

import type * as grpc from "@grpc/grpc-js";
import type { GrpcLogger } from "../../src/adapters/grpc/server.js";
import type { BuildInfo, CreateRunOptions, FlowApi, TargetView } from "../../src/app/api.js";
import type { Actor } from "../../src/domain/actor.js";
import type { CreateRunInput } from "../../src/domain/create-run-input.js";
import {
  CandidateLimitError,
  FailedPreconditionError,
  NotFoundError,
  ValidationError,
} from "../../src/domain/errors.js";
import type { BaselineKey, FirmwareBaseline } from "../../src/domain/firmware-baselines.js";
import type {
  BeginUploadInput,
  CompleteUploadInput,
  ImageKeyInput,
} from "../../src/domain/firmware-images.js";
import { type FirmwareTemplateInput, validateFirmwareTask } from "../../src/domain/firmware-template.js";
import type { RunHistoryEvent } from "../../src/domain/history-event.js";
import type { ComponentReadiness, InventoryRack } from "../../src/domain/inventory.js";
import { checkLateFailureRequest, type LateFailureRequest } from "../../src/domain/late-failure.js";
import type { ListRunsQuery, ListTargetsQuery, ListTasksQuery, Page } from "../../src/domain/list-queries.js";
import type { ComponentType, Plan, Run, RunConfig } from "../../src/domain/model.js";
import { DEFAULT_RULE, DEFAULT_RULE_ID, type RuleDefinition } from "../../src/domain/operation-rules.js";
import type { RunStats } from "../../src/domain/stats.js";
import type { Task } from "../../src/domain/task.js";
import { imageRecord } from "./memory-images.js";

export const RUN_ID = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
export const NEW_RUN_ID = "9b2c6a44-1d7e-4c1b-8c55-0d9f3a7e6b21";
export const TERMINAL_RUN_ID = "c0ffee00-1234-4abc-8def-0123456789ab";
export const SLOW_RUN_ID = "5a1e0000-0000-4000-8000-000000000001";
export const RACK_ID = "aaaaaaaa-0000-4000-8000-000000000001";
export const TASK_ID = "bbbbbbbb-0000-4000-8000-000000000002";
export const COMPONENT_ID = "cccccccc-0000-4000-8000-000000000003";

export const CONFIG: RunConfig = {
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

export const RUN: Run = {
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

export const STATS: RunStats = {
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

export const TARGET: TargetView = {
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

export const TASK: Task = {
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

export const BASELINE: FirmwareBaseline = { componentType: "NVSWITCH", version: "2.0" };
export const RULE_ID = "aaaaaaaa-0000-4000-8000-0000000000e1";

export const RACK: InventoryRack = {
  id: RACK_ID,
  name: "rack-1",
  externalId: "rack-ext-1",
  components: [{ id: COMPONENT_ID, type: "COMPUTE", firmwareVersion: "1.0" }],
};

export const PLAN: Plan = {
  candidateCount: 3,
  phaseSizes: [1],
  targets: [{ rackId: RACK_ID, sequenceIndex: 0, phaseIndex: 0, componentsByType: [] }],
};

export const BUILD: BuildInfo = { version: "1.2.3", buildTime: "2026-11-29T00:00:00Z", gitCommit: "abc123" };

export const OPS: Actor = {
  name: "ops",
  source: "CLIENT_CERTIFICATE",
  authenticated: true,
  subjectAltNames: ["DNS:ops.example.com"],
  declaredName: "alice",
};

/** One event of RUN per detail shape, as the application returns them. */
export const EVENTS: RunHistoryEvent[] = [
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
export class FakeFlowApi implements FlowApi {
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

  async reportTargetFailure(request: LateFailureRequest, actor?: Actor): Promise<Run> {
    this.record("reportTargetFailure", request);
    this.actors.push({ method: "reportTargetFailure", actor });
    const violations = checkLateFailureRequest(request);
    if (violations.length > 0) throw new ValidationError(violations);
    return { ...this.run(request.runId), statusMessage: "submitted 1 operation run target" };
  }

  async approveRun(id: string, actor?: Actor): Promise<Run> {
    this.record("approveRun", id);
    this.actors.push({ method: "approveRun", actor });
    return { ...this.run(id), status: "PENDING", reason: "NONE", statusMessage: "operation run approved" };
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

  async importInventory(
    racks: InventoryRack[],
    baselines: FirmwareBaseline[] = [],
    options: { allowComponentTypeChange?: boolean } = {},
  ) {
    this.record("importInventory", racks, baselines, options.allowComponentTypeChange ?? false);
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

  async deleteImage(input: ImageKeyInput, actor: Actor) {
    this.record("deleteImage", input, actor);
    return {
      image: imageRecord({ componentType: "COMPUTE", version: input.version }),
      objectVersionsDeleted: 1,
    };
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

export function recordingLogger(): GrpcLogger & {
  errors: Record<string, unknown>[];
  warnings: string[];
  infos: string[];
} {
  const errors: Record<string, unknown>[] = [];
  const warnings: string[] = [];
  const infos: string[] = [];
  return {
    errors,
    warnings,
    infos,
    info: (message, fields) => infos.push(`${message} ${JSON.stringify(fields ?? {})}`),
    warn: (message, fields) => warnings.push(`${message} ${JSON.stringify(fields ?? {})}`),
    error: (_m, fields) => errors.push(fields ?? {}),
  };
}

/** The gRPC error a call rejected with; fails when it resolved. */
export async function failure(call: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await call;
  } catch (err) {
    const { code, details } = err as grpc.ServiceError;
    return { code, details };
  }
  throw new Error("expected the call to fail");
}

export const soon = (ms = 5000) => ({ deadline: Date.now() + ms });

export type HealthClient = grpc.Client & {
  check(
    req: { service: string },
    cb: (err: grpc.ServiceError | null, res?: { status: string }) => void,
  ): void;
};
