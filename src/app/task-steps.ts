/**
 * The child task's steps: what every Task state of state-machines/child-task.asl.json does. One
 * Lambda (lambdas/task-steps.ts) serves them all by switching on `event.step`; locally the local
 * executor binds every Task state to the same `handle` (src/adapters/stepfunctions/local-executor.ts).
 *
 * The state machine, in short (state-machines/README.md has the picture and the reasons):
 *
 *   AcquireLock ─(queued: Wait, again)─► SendQueries ─► Wait ◄─► CheckPreflight
 *     └─► for each component-type group in UPGRADE_GROUP_ORDER, for each wave of ≤ maxParallel
 *         of its components:  SendWave ─► Wait ◄─► CheckWave ─► FinishWave
 *     └─► RecordSuccess | (any failure, caught) RecordFailure
 *
 * How the execution waits for a BMC: polling. SendWave writes one request record per component
 * and publishes its command; the IoT rule hands the BMCs' reports to lambdas/bmc-result.ts, which
 * stores them on those records (first result wins, so duplicate and late messages change nothing);
 * CheckWave reads the wave's records after a Wait whose length backs off (pollSeconds · 2^polls,
 * capped at maxPollSeconds and at the deadline). aws-local-stepfunctions has no task tokens, and the
 * local stack must run the very same states, so a callback design would leave the local runner
 * exercising something else. Polling per WAVE rather than per component keeps the billed state
 * transitions ~6× lower for a 39-BMC rack (bench/rollout.ts prints the figures).
 *
 * Errors thrown here carry stable `name`s (STEP_ERROR_NAMES): Step Functions matches Retry and Catch
 * on them, and RecordFailure turns them into the task's message. Every message names the component
 * and the cause, e.g.
 *   `component 7a00…0102 (COMPUTE): BMC reported FLASH_FAILED: flashing 2.0.0 failed; still on 1.0.0`
 *
 * Secrets: the firmware credentials are read here (run secrets, or the task's own encrypted secret
 * for a plain UpgradeFirmware), sealed for the one BMC by `BmcAuthSealer`, and only the sealed blob
 * goes into the command. No step returns them, so they never appear in execution history or logs.
 */
import { createHash } from "node:crypto";
import type { BmcCommandPublisher } from "../adapters/iot/publisher.js";
import {
  type BmcError,
  type BmcEvent,
  decodeBmcEvent,
  type EncryptedAuth,
  type FirmwareImageRef,
  type UpdateCommand,
  updateRequestId,
} from "../domain/bmc-protocol.js";
import {
  type ComponentType,
  type FirmwareAuthentication,
  type Task,
  TERMINAL_TASK_STATUSES,
} from "../domain/model.js";
import type { Metrics } from "./observability.js";
import type { RackLockStore, RunStore, TaskStore } from "./ports.js";
import type { RunWaker } from "./task-ports.js";

// ---------------------------------------------------------------------------------------------
// Execution input and settings

/** Tunables carried in the execution input, so tests and the local stack can shorten them. */
export interface ChildTaskSettings {
  /** Components of one group flashed at once (the inner Map's MaxConcurrencyPath). */
  maxParallel: number;
  /** The first Wait after a command; later Waits double up to maxPollSeconds. */
  pollSeconds: number;
  maxPollSeconds: number;
  /** From an update command to its result; past it the component fails with BmcTimeout. */
  updateTimeoutSeconds: number;
  /** From the preflight queries to every answer; past it the task fails with BmcUnreachable. */
  preflightTimeoutSeconds: number;
  /** How often a queued (QUEUE strategy) task retries the rack lock. */
  queuePollSeconds: number;
}

export const DEFAULT_CHILD_TASK_SETTINGS: Readonly<ChildTaskSettings> = {
  maxParallel: 8,
  pollSeconds: 10,
  maxPollSeconds: 60,
  updateTimeoutSeconds: 1800,
  preflightTimeoutSeconds: 60,
  queuePollSeconds: 30,
};

/** The execution input. Everything else (components, version, run) is read from the task item. */
export interface ChildTaskInput {
  taskId: string;
  rackId: string;
  settings: ChildTaskSettings;
}

/**
 * The order component-type groups are upgraded in, one group at a time:
 * - POWERSHELF first: power-shelf firmware governs power sequencing and capping that newer tray
 *   firmware relies on, and if it fails nothing else has been touched yet;
 * - NVSWITCH before COMPUTE: compute trays negotiate NVLink with the switch trays when they come
 *   back, so the fabric is brought to the new level first (the usual vendor order for NVL racks);
 * - COMPUTE: the bulk of the rack;
 * - CDU and UMS: cooling and management, independent of the fabric, done once the valuable part has
 *   succeeded;
 * - TORSWITCH last: its reboot drops the rack's network, which the other BMCs' reports travel over.
 * A failed group stops the task: later groups are NOT_ATTEMPTED, because the order exists precisely
 * so that no group runs against a predecessor at the wrong level.
 */
export const UPGRADE_GROUP_ORDER: readonly ComponentType[] = [
  "POWERSHELF",
  "NVSWITCH",
  "COMPUTE",
  "CDU",
  "UMS",
  "TORSWITCH",
];

// ---------------------------------------------------------------------------------------------
// The task report (Task.report): a versioned JSON document

export const TASK_REPORT_VERSION = 1 as const;

export type ComponentProgress =
  | "PENDING"
  /** Already at the target version (preflight), and override_version_check was not set. */
  | "SKIPPED"
  | "UPDATING"
  | "COMPLETED"
  | "FAILED"
  /** Never commanded: an earlier group, the preflight or the lock failed first. */
  | "NOT_ATTEMPTED"
  /** Its update was in flight when the task was stopped. */
  | "TERMINATED";

export interface ComponentReport {
  id: string;
  type: ComponentType;
  status: ComponentProgress;
  /** What the BMC answered to the preflight query. */
  versionBefore?: string;
  /** What the BMC reported in its result. */
  versionAfter?: string;
  requestId?: string;
  /** Epoch ms. */
  startedAt?: number;
  finishedAt?: number;
  /** `name` is a STEP_ERROR_NAMES entry, `message` the sentence that names the cause. */
  error?: { name: string; message: string };
}

/**
 * `{"v":1,"targetVersion":"2.0.0","overrideVersionCheck":false,"groupOrder":[…],"components":[
 *    {"id":"…","type":"POWERSHELF","status":"COMPLETED","versionBefore":"1.0.0","versionAfter":"2.0.0",…}]}`
 * Readers must ignore fields they do not know; a breaking change bumps `v`.
 */
export interface TaskReport {
  v: typeof TASK_REPORT_VERSION;
  targetVersion: string;
  overrideVersionCheck: boolean;
  groupOrder: ComponentType[];
  components: ComponentReport[];
}

/** The first report of a task: every component PENDING, in upgrade order, then by id. */
export function initialReport(
  components: readonly { id: string; type: ComponentType }[],
  targetVersion: string,
  overrideVersionCheck: boolean,
): TaskReport {
  const rank = (t: ComponentType) => UPGRADE_GROUP_ORDER.indexOf(t);
  const sorted = [...components].sort(
    (a, b) => rank(a.type) - rank(b.type) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
  );
  return {
    v: TASK_REPORT_VERSION,
    targetVersion,
    overrideVersionCheck,
    groupOrder: [...UPGRADE_GROUP_ORDER],
    components: sorted.map((c) => ({ id: c.id, type: c.type, status: "PENDING" })),
  };
}

export function parseReport(text: string): TaskReport {
  const parsed = JSON.parse(text) as TaskReport;
  if (parsed.v !== TASK_REPORT_VERSION)
    throw new Error(`task report version ${String(parsed.v)} is not supported`);
  return parsed;
}

export function serializeReport(report: TaskReport): string {
  return JSON.stringify(report);
}

// ---------------------------------------------------------------------------------------------
// Errors (names are part of the state machine's contract)

export const STEP_ERROR_NAMES = [
  "RackLockHeld",
  "QueueTimeout",
  "BmcUnreachable",
  "BmcTimeout",
  "BmcUpdateFailed",
  "VersionMismatch",
  "ComponentsFailed",
  "TaskNotFound",
  /** The task ended (was cancelled) while the execution was still running. */
  "TaskEnded",
  "TaskMisconfigured",
] as const;
export type StepErrorName = (typeof STEP_ERROR_NAMES)[number];

export class StepError extends Error {
  constructor(
    readonly stepErrorName: StepErrorName,
    message: string,
  ) {
    super(message);
    this.name = stepErrorName;
  }
}

/** The reference's text for a busy rack (dispatcher conflicts, REJECT, the state's own re-check). */
export function rackConflictMessage(rackId: string): string {
  return `failed to create task for required rack ${rackId}: rack ${rackId} already has a conflicting task: rack conflict`;
}

const componentLabel = (id: string, type: ComponentType): string => `component ${id} (${type})`;

/**
 * The text of a caught error as Step Functions hands it to the next state: `{Error, Cause}`, where
 * Cause is, in AWS, the Lambda's JSON error document (`{"errorType","errorMessage","trace"}`) and,
 * in aws-local-stepfunctions, the message itself. `States.*` errors carry a plain Cause.
 */
export function causeText(error: { Error?: string; Cause?: unknown } | undefined): string {
  if (error === undefined) return "unknown error";
  const cause = error.Cause;
  let text = "";
  if (typeof cause === "string") {
    text = cause;
    if (cause.startsWith("{")) {
      try {
        const doc = JSON.parse(cause) as { errorMessage?: unknown };
        if (typeof doc.errorMessage === "string") text = doc.errorMessage;
      } catch {
        // not JSON after all: keep the raw text
      }
    }
  } else if (cause !== undefined && cause !== null) {
    text = JSON.stringify(cause);
  }
  const name = error.Error ?? "Error";
  if (text === "") return name;
  // Our own errors already say what happened; others get their name in front.
  return (STEP_ERROR_NAMES as readonly string[]).includes(name) ? text : `${name}: ${text}`;
}

// ---------------------------------------------------------------------------------------------
// Ports the steps need beyond the stores

/** One command's request record: what SendUpdate/SendQueries wrote and what the BMC reported. */
export interface BmcRequestRecord {
  componentId: string;
  requestId: string;
  taskId: string;
  kind: "update" | "query";
  sentAt: number;
  deadline: number;
  publishedAt?: number;
  ackedAt?: number;
  /** Highest progress percent reported. */
  progress?: number;
  /** An update's result (the first one stored; later ones are ignored). */
  result?: { ok: true; version: string } | { ok: false; version: string; error: BmcError };
  /** A query's answer. */
  status?: { version: string };
}

export type NewBmcRequest = Pick<
  BmcRequestRecord,
  "componentId" | "requestId" | "taskId" | "kind" | "sentAt" | "deadline"
>;

/**
 * Where BMC reports land (written by lambdas/bmc-result.ts from the IoT rule) and where the steps
 * read them. Reports are kept per (componentId, requestId): a report published on another
 * component's topic never reaches this component's record.
 */
export interface BmcRequestStore {
  /** Creates the record if absent; returns the stored one (a retried step keeps its first deadline). */
  open(request: NewBmcRequest): Promise<BmcRequestRecord>;
  markPublished(componentId: string, requestId: string, now: number): Promise<void>;
  /**
   * Stores one report. Idempotent and order-proof: only for a record that exists (unknown request
   * ids are 'ignored'), progress only upwards, and only the FIRST result or status is kept, so a
   * duplicate or late message changes nothing.
   */
  recordEvent(componentId: string, event: BmcEvent, now: number): Promise<"recorded" | "ignored">;
  /** Strongly consistent; missing records are absent from the map. Key: `${componentId}#${requestId}`. */
  get(keys: readonly { componentId: string; requestId: string }[]): Promise<Map<string, BmcRequestRecord>>;
}

export const requestKey = (componentId: string, requestId: string): string => `${componentId}#${requestId}`;

/** Firmware credentials of a plain UpgradeFirmware task (run children use RunStore.getRunSecrets). */
export interface TaskSecretStore {
  put(taskId: string, authentication: FirmwareAuthentication): Promise<void>;
  get(taskId: string): Promise<FirmwareAuthentication | undefined>;
}

/** Encrypts one credential for one BMC; only that BMC can open it. */
export interface BmcAuthSealer {
  seal(secret: string, componentId: string, requestId: string): Promise<EncryptedAuth>;
}

/** Records verified firmware versions on the inventory's components. Idempotent. */
export interface FirmwareVersionRecorder {
  record(rackId: string, versions: readonly { componentId: string; version: string }[]): Promise<void>;
}

export interface TaskStepsDeps {
  tasks: TaskStore;
  runs: Pick<RunStore, "getRunSecrets" | "recordOutcome">;
  locks: RackLockStore;
  requests: BmcRequestStore;
  secrets: TaskSecretStore;
  sealer: BmcAuthSealer;
  publisher: BmcCommandPublisher;
  firmware: FirmwareVersionRecorder;
  clock: () => number;
  /** Where a BMC fetches an image. Default `firmware://<TYPE>/<version>`. */
  imageFor?: (type: ComponentType, version: string) => FirmwareImageRef;
  /** Told when a run child's outcome is recorded, so the dispatcher refills the slot at once. */
  waker?: RunWaker;
  log?: (line: string) => void;
}

// ---------------------------------------------------------------------------------------------
// Step events (what the ASL's Parameters build) and results

export interface PollState {
  done: boolean;
  deadline: number;
  polls: number;
  waitSeconds: number;
}

export interface ComponentResult {
  componentId: string;
  ok: boolean;
  version?: string;
  error?: { Error?: string; Cause?: unknown };
}

type Base = { taskId: string; settings: ChildTaskSettings };
export type StepEvent =
  | (Base & { step: "acquireLock"; rackId: string })
  | (Base & { step: "sendQueries" })
  | (Base & { step: "checkQueries"; preflight: PollState })
  | (Base & { step: "sendWave"; rackId: string; groups: UpgradeGroup[]; cursor: WaveCursor })
  | (Base & { step: "checkWave"; wave: WaveState })
  | (Base & {
      step: "finishWave";
      rackId: string;
      groups: UpgradeGroup[];
      cursor: WaveCursor;
      wave: WaveState;
    })
  | { step: "recordOutcome"; taskId: string; error?: { Error?: string; Cause?: unknown } };

export type StepName = StepEvent["step"];

export type AcquireLockResult =
  | { status: "acquired" }
  | { status: "waiting"; waitSeconds: number }
  /** The task is already terminal (cancelled before it started): nothing to do. */
  | { status: "finished" };

export interface UpgradeGroup {
  type: ComponentType;
  componentIds: string[];
}

/**
 * Where the upgrade loop is. A group is flashed in waves of at most `settings.maxParallel`
 * components: wave w of group g is `groups[g].componentIds.slice(w·maxParallel, (w+1)·maxParallel)`.
 */
export interface WaveCursor {
  group: number;
  wave: number;
  more: boolean;
}

export interface PreflightResult extends PollState {
  /** When done: the groups to upgrade, in order, without skipped components and empty groups. */
  groups?: UpgradeGroup[];
  cursor?: WaveCursor;
}

/** One wave in flight: its components, and once done, each one's verdict. */
export interface WaveState extends PollState {
  type: ComponentType;
  componentIds: string[];
  targetVersion: string;
  results?: ComponentResult[];
}

export type OutcomeStatus = "COMPLETED" | "FAILED" | "TERMINATED";

/** Preflight query ids: like update ids, derived, so a retried step re-asks with the same id. */
export function queryRequestId(taskId: string, componentId: string): string {
  const digest = createHash("sha256").update(`flow-bmc-query:${taskId}:${componentId}`, "utf8").digest("hex");
  return `qry-${digest.slice(0, 32)}`;
}

/** pollSeconds · 2^polls, capped by maxPollSeconds and by what is left until the deadline; ≥ 1. */
export function nextWaitSeconds(
  settings: ChildTaskSettings,
  polls: number,
  deadline: number,
  now: number,
): number {
  const backoff = Math.min(settings.maxPollSeconds, settings.pollSeconds * 2 ** Math.min(polls, 30));
  const remaining = Math.ceil((deadline - now) / 1000);
  return Math.max(1, Math.min(backoff, remaining));
}

/** Which credential a component's BMC gets: the shared one, or its type's own. */
export function secretFor(auth: FirmwareAuthentication | undefined, type: ComponentType): string | undefined {
  if (auth === undefined) return undefined;
  if (auth.kind === "shared") return auth.secret;
  switch (type) {
    case "COMPUTE":
      return auth.compute;
    case "NVSWITCH":
      return auth.nvswitch;
    case "POWERSHELF":
      return auth.powershelf;
    default:
      return undefined;
  }
}

const isTerminalTask = (t: Task): boolean => TERMINAL_TASK_STATUSES.has(t.status);

// ---------------------------------------------------------------------------------------------
// Task updates and the one outcome recorder

/**
 * Read-modify-write of one task under optimistic concurrency (saveTask pins updatedAt). `mutate`
 * returns the new task or undefined to write nothing; a terminal task is never changed. Returns the
 * task as stored afterwards.
 */
export async function updateTask(
  deps: Pick<TaskStepsDeps, "tasks" | "clock">,
  taskId: string,
  mutate: (task: Task, now: number) => Task | undefined,
): Promise<{ task: Task; changed: boolean }> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const [task] = await deps.tasks.getTasks([taskId]);
    if (task === undefined) throw new StepError("TaskNotFound", `task ${taskId} not found`);
    if (isTerminalTask(task)) return { task, changed: false };
    const now = deps.clock();
    const next = mutate(structuredClone(task), now);
    if (next === undefined) return { task, changed: false };
    next.updatedAt = Math.max(now, task.updatedAt + 1);
    const saved = await deps.tasks.saveTask(next, task.updatedAt);
    if (saved === "saved") return { task: next, changed: true };
    if (saved === "not-found") throw new StepError("TaskNotFound", `task ${taskId} not found`);
  }
  throw new Error(`task ${taskId}: too many concurrent updates`);
}

/**
 * Ends a task. THE one path every ending takes: the last state (RecordSuccess/RecordFailure), the
 * stop of an execution (local abort path, the AWS execution-status rule) and CancelTask.
 *   1. the task: status, message, finishedAt, and the report's unfinished components
 *      (UPDATING → TERMINATED or FAILED, PENDING → NOT_ATTEMPTED); a task already terminal keeps
 *      its first outcome (the first recorder wins, later ones only finish steps 2 and 3);
 *   2. a run child's target: RunStore.recordOutcome with the task's final status (exactly once);
 *   3. the rack lock, released if this task holds it.
 * Every step is idempotent, so a retried or repeated call finishes what a crashed one started.
 */
export type OutcomeDeps = Pick<TaskStepsDeps, "tasks" | "locks" | "clock" | "waker"> & {
  runs: Pick<RunStore, "recordOutcome">;
  /** Targets by outcome and BMC failures, counted once per recorded target transition. */
  metrics?: Metrics;
};

const OUTCOME_METRIC = {
  COMPLETED: "TargetsCompleted",
  FAILED: "TargetsFailed",
  TERMINATED: "TargetsTerminated",
  SKIPPED: undefined,
} as const;

export async function recordTaskOutcome(
  deps: OutcomeDeps,
  taskId: string,
  outcome: { status: OutcomeStatus; message: string },
): Promise<Task> {
  const { task } = await updateTask(deps, taskId, (t, now) => {
    t.status = outcome.status;
    t.message = outcome.message;
    t.finishedAt = now;
    t.startedAt ??= now;
    t.report = finishReport(t.report, outcome.status, now);
    return t;
  });
  let recorded = false;
  if (task.runId !== undefined && task.targetId !== undefined && isTerminalTask(task)) {
    const result = await deps.runs.recordOutcome(
      task.runId,
      task.targetId,
      task.status as OutcomeStatus,
      task.message,
      deps.clock(),
    );
    recorded = result === "recorded";
    if (recorded) {
      // Emitted after the transition is persisted, and only by the call that recorded it.
      const metric = OUTCOME_METRIC[task.status as OutcomeStatus];
      if (metric && deps.metrics) {
        deps.metrics.add(metric, 1);
        if (task.status === "FAILED") deps.metrics.add("BmcFailures", 1);
        deps.metrics.flush();
      }
    }
  }
  await deps.locks.release(task.rackId, task.id);
  // After the lock is free: the slot this target held refills now, not at the stream's pace.
  if (recorded && task.runId !== undefined) await deps.waker?.wake(task.runId);
  return task;
}

function finishReport(text: string, status: OutcomeStatus, now: number): string {
  let report: TaskReport;
  try {
    report = parseReport(text);
  } catch {
    return text;
  }
  for (const c of report.components) {
    if (c.status === "UPDATING") {
      c.status = status === "TERMINATED" ? "TERMINATED" : "FAILED";
      c.finishedAt = now;
    } else if (c.status === "PENDING") {
      c.status = "NOT_ATTEMPTED";
    }
  }
  return serializeReport(report);
}

// ---------------------------------------------------------------------------------------------
// The steps

export interface TaskSteps {
  handle(event: StepEvent): Promise<unknown>;
}

export function createTaskSteps(deps: TaskStepsDeps): TaskSteps {
  const { tasks, locks, requests, clock } = deps;
  const log = deps.log ?? (() => {});
  const imageFor =
    deps.imageFor ?? ((type: ComponentType, version: string) => ({ uri: `firmware://${type}/${version}` }));

  async function loadTask(taskId: string): Promise<Task> {
    const [task] = await tasks.getTasks([taskId]);
    if (task === undefined) throw new StepError("TaskNotFound", `task ${taskId} not found`);
    return task;
  }

  async function reportOf(task: Task): Promise<TaskReport> {
    try {
      return parseReport(task.report);
    } catch (err) {
      throw new StepError(
        "TaskMisconfigured",
        `task ${task.id} has no readable report: ${(err as Error).message}`,
      );
    }
  }

  /**
   * Lock ttl for the coming stretch: the whole group at its worst (every wave times out), plus a
   * margin for polling and recording. Re-asserted at each group, so a crashed execution's lock
   * frees itself within one group's worth of time.
   */
  function lockTtlMs(settings: ChildTaskSettings, components: number): number {
    const waves = Math.max(1, Math.ceil(components / Math.max(1, settings.maxParallel)));
    return (
      (waves * settings.updateTimeoutSeconds +
        settings.preflightTimeoutSeconds +
        settings.maxPollSeconds +
        300) *
      1000
    );
  }

  async function acquireLock(e: Extract<StepEvent, { step: "acquireLock" }>): Promise<AcquireLockResult> {
    const task = await loadTask(e.taskId);
    if (isTerminalTask(task)) return { status: "finished" };
    const now = clock();
    const outcome = await locks.acquire(
      task.rackId,
      task.id,
      lockTtlMs(e.settings, task.componentIds.length),
      now,
    );
    if (outcome === "held") {
      if (task.queueExpiresAt !== undefined && now < task.queueExpiresAt) {
        const left = Math.ceil((task.queueExpiresAt - now) / 1000);
        return { status: "waiting", waitSeconds: Math.max(1, Math.min(e.settings.queuePollSeconds, left)) };
      }
      if (task.queueExpiresAt !== undefined) {
        throw new StepError(
          "QueueTimeout",
          `rack ${task.rackId} stayed busy with another task until the queue timeout expired`,
        );
      }
      throw new StepError("RackLockHeld", rackConflictMessage(task.rackId));
    }
    await updateTask(deps, task.id, (t, at) => {
      if (t.status === "RUNNING") return undefined;
      t.status = "RUNNING";
      t.startedAt ??= at;
      t.message = "";
      return t;
    });
    return { status: "acquired" };
  }

  async function sendQueries(e: Extract<StepEvent, { step: "sendQueries" }>): Promise<PollState> {
    const task = await loadTask(e.taskId);
    const now = clock();
    const deadline = now + e.settings.preflightTimeoutSeconds * 1000;
    const opened = await Promise.all(
      task.componentIds.map((componentId) =>
        requests.open({
          componentId,
          requestId: queryRequestId(task.id, componentId),
          taskId: task.id,
          kind: "query",
          sentAt: now,
          deadline,
        }),
      ),
    );
    await Promise.all(
      opened.map(async (record) => {
        if (record.publishedAt !== undefined) return;
        await deps.publisher.publish(record.componentId, {
          v: 1,
          type: "query",
          requestId: record.requestId,
        });
        await requests.markPublished(record.componentId, record.requestId, clock());
      }),
    );
    // A retried step keeps the first deadline: the records carry it.
    const first = opened.reduce((min, r) => Math.min(min, r.deadline), deadline);
    return {
      done: false,
      deadline: first,
      polls: 0,
      waitSeconds: nextWaitSeconds(e.settings, 0, first, clock()),
    };
  }

  async function checkQueries(e: Extract<StepEvent, { step: "checkQueries" }>): Promise<PreflightResult> {
    const task = await loadTask(e.taskId);
    const report = await reportOf(task);
    const keys = report.components.map((c) => ({
      componentId: c.id,
      requestId: queryRequestId(task.id, c.id),
    }));
    const records = await requests.get(keys);
    const now = clock();
    const missing = report.components.filter(
      (c) => records.get(requestKey(c.id, queryRequestId(task.id, c.id)))?.status === undefined,
    );
    if (missing.length > 0) {
      if (now < e.preflight.deadline) {
        const polls = e.preflight.polls + 1;
        return {
          done: false,
          deadline: e.preflight.deadline,
          polls,
          waitSeconds: nextWaitSeconds(e.settings, polls, e.preflight.deadline, now),
        };
      }
      const shown = missing
        .slice(0, 3)
        .map((c) => componentLabel(c.id, c.type))
        .join(", ");
      const more = missing.length > 3 ? ` and ${missing.length - 3} more` : "";
      throw new StepError(
        "BmcUnreachable",
        `preflight: ${shown}${more} did not answer the version query within ${e.settings.preflightTimeoutSeconds} s (BMC unreachable)`,
      );
    }
    const skip = new Set<string>();
    const { task: updated } = await updateTask(deps, task.id, (t) => {
      const r = parseReport(t.report);
      for (const c of r.components) {
        const version = records.get(requestKey(c.id, queryRequestId(task.id, c.id)))?.status?.version;
        if (version === undefined) continue;
        c.versionBefore = version;
        if (version === r.targetVersion && !r.overrideVersionCheck && c.status === "PENDING") {
          c.status = "SKIPPED";
          skip.add(c.id);
        }
      }
      t.report = serializeReport(r);
      return t;
    });
    const final = parseReport(updated.report);
    const groups: UpgradeGroup[] = isTerminalTask(updated)
      ? []
      : UPGRADE_GROUP_ORDER.flatMap((type) => {
          const componentIds = final.components
            .filter((c) => c.type === type && c.status === "PENDING")
            .map((c) => c.id);
          return componentIds.length === 0 ? [] : [{ type, componentIds }];
        });
    log(
      `task ${task.id}: preflight done, ${groups.reduce((n, g) => n + g.componentIds.length, 0)} to update, ${final.components.filter((c) => c.status === "SKIPPED").length} already at ${final.targetVersion}`,
    );
    return {
      done: true,
      deadline: e.preflight.deadline,
      polls: e.preflight.polls,
      waitSeconds: 1,
      groups,
      cursor: { group: 0, wave: 0, more: groups.length > 0 },
    };
  }

  function waveOf(groups: UpgradeGroup[], cursor: WaveCursor, settings: ChildTaskSettings): UpgradeGroup {
    const group = groups[cursor.group];
    const size = Math.max(1, Math.floor(settings.maxParallel));
    const componentIds = group?.componentIds.slice(cursor.wave * size, (cursor.wave + 1) * size) ?? [];
    if (group === undefined || componentIds.length === 0) {
      throw new Error(`no wave ${cursor.wave} in group ${cursor.group} of ${groups.length}`);
    }
    return { type: group.type, componentIds };
  }

  async function credentialsFor(
    taskId: string,
    runId: string | undefined,
  ): Promise<FirmwareAuthentication | undefined> {
    return runId ? deps.runs.getRunSecrets(runId) : deps.secrets.get(taskId);
  }

  /**
   * Starts one wave: re-asserts (extends) the rack lock, marks the components UPDATING, and for
   * each one writes its request record and publishes its update command, at most once: a retried
   * step finds the record published and sends nothing.
   */
  async function sendWave(e: Extract<StepEvent, { step: "sendWave" }>): Promise<WaveState> {
    const wave = waveOf(e.groups, e.cursor, e.settings);
    const now = clock();
    const { task } = await updateTask(deps, e.taskId, (t, at) => {
      const r = parseReport(t.report);
      for (const c of r.components) {
        if (wave.componentIds.includes(c.id) && c.status === "PENDING") {
          c.status = "UPDATING";
          c.startedAt = at;
          c.requestId = updateRequestId(t.id, c.id);
        }
      }
      t.report = serializeReport(r);
      return t;
    });
    if (isTerminalTask(task))
      throw new StepError("TaskEnded", `task ${task.id} already ended (${task.status})`);
    if (
      (await locks.acquire(task.rackId, task.id, lockTtlMs(e.settings, wave.componentIds.length), now)) ===
      "held"
    ) {
      throw new StepError("RackLockHeld", rackConflictMessage(task.rackId));
    }
    const { targetVersion } = parseReport(task.report);
    const records = await Promise.all(
      wave.componentIds.map((componentId) =>
        requests.open({
          componentId,
          requestId: updateRequestId(task.id, componentId),
          taskId: task.id,
          kind: "update",
          sentAt: now,
          deadline: now + e.settings.updateTimeoutSeconds * 1000,
        }),
      ),
    );
    const unpublished = records.filter((r) => r.publishedAt === undefined);
    if (unpublished.length > 0) {
      const auth = await credentialsFor(task.id, task.runId);
      await Promise.all(
        unpublished.map(async (record) => {
          const command: UpdateCommand = {
            v: 1,
            type: "update",
            requestId: record.requestId,
            taskId: task.id,
            targetVersion,
            image: imageFor(wave.type, targetVersion),
            issuedAt: now,
          };
          const secret = secretFor(auth, wave.type);
          if (secret !== undefined)
            command.auth = await deps.sealer.seal(secret, record.componentId, record.requestId);
          await deps.publisher.publish(record.componentId, command);
          await requests.markPublished(record.componentId, record.requestId, clock());
        }),
      );
    }
    // A retried step keeps the first deadlines: the records carry them.
    const deadline = Math.max(...records.map((r) => r.deadline));
    return {
      ...wave,
      targetVersion,
      done: false,
      deadline,
      polls: 0,
      waitSeconds: nextWaitSeconds(e.settings, 0, deadline, clock()),
    };
  }

  /** One component's verdict from its record, or "pending" while it may still report. */
  function verdict(
    componentId: string,
    type: ComponentType,
    record: BmcRequestRecord | undefined,
    targetVersion: string,
    settings: ChildTaskSettings,
    deadline: number,
    now: number,
  ): ComponentResult | "pending" {
    const label = componentLabel(componentId, type);
    const fail = (name: StepErrorName, message: string): ComponentResult => ({
      componentId,
      ok: false,
      error: { Error: name, Cause: `${label}: ${message}` },
    });
    const result = record?.result;
    if (result !== undefined) {
      if (!result.ok) {
        return fail(
          "BmcUpdateFailed",
          `BMC reported ${result.error.code}: ${result.error.message} (running ${result.version})`,
        );
      }
      if (result.version !== targetVersion) {
        return fail(
          "VersionMismatch",
          `BMC reported success but runs ${result.version}, expected ${targetVersion}`,
        );
      }
      return { componentId, ok: true, version: result.version };
    }
    if (now < (record?.deadline ?? deadline)) return "pending";
    const seconds = settings.updateTimeoutSeconds;
    if (record?.ackedAt === undefined) {
      return fail(
        "BmcUnreachable",
        `BMC never acknowledged the update command within ${seconds} s (unreachable)`,
      );
    }
    if (record.progress === undefined) {
      return fail(
        "BmcTimeout",
        `BMC acknowledged the update but reported no progress and no result within ${seconds} s (hung)`,
      );
    }
    return fail(
      "BmcTimeout",
      `BMC reported ${record.progress}% progress, then fell silent: no result within ${seconds} s (disconnected)`,
    );
  }

  /** Reads the wave's records: done once every component has a verdict (result or timeout). */
  async function checkWave(e: Extract<StepEvent, { step: "checkWave" }>): Promise<WaveState> {
    const { wave } = e;
    const records = await requests.get(
      wave.componentIds.map((componentId) => ({
        componentId,
        requestId: updateRequestId(e.taskId, componentId),
      })),
    );
    const now = clock();
    const verdicts = wave.componentIds.map((componentId) =>
      verdict(
        componentId,
        wave.type,
        records.get(requestKey(componentId, updateRequestId(e.taskId, componentId))),
        wave.targetVersion,
        e.settings,
        wave.deadline,
        now,
      ),
    );
    if (verdicts.some((v) => v === "pending")) {
      const polls = wave.polls + 1;
      return {
        ...wave,
        done: false,
        polls,
        waitSeconds: nextWaitSeconds(e.settings, polls, wave.deadline, now),
      };
    }
    return { ...wave, done: true, results: verdicts as ComponentResult[] };
  }

  /**
   * Records the wave: verified versions on inventory, every component's outcome in the report.
   * Any failed component → ComponentsFailed (so nothing after it runs); else the next cursor.
   */
  async function finishWave(e: Extract<StepEvent, { step: "finishWave" }>): Promise<WaveCursor> {
    const results = e.wave.results ?? [];
    const byId = new Map(results.map((r) => [r.componentId, r]));
    const verified = results.filter((r) => r.ok && r.version !== undefined);
    // Inventory first: a verified version is a fact about the hardware whatever happens to the task.
    if (verified.length > 0) {
      await deps.firmware.record(
        e.rackId,
        verified.map((r) => ({ componentId: r.componentId, version: r.version as string })),
      );
    }
    await updateTask(deps, e.taskId, (t, now) => {
      const r = parseReport(t.report);
      for (const c of r.components) {
        const result = byId.get(c.id);
        if (result === undefined) continue;
        c.finishedAt = now;
        if (result.ok) {
          c.status = "COMPLETED";
          if (result.version !== undefined) c.versionAfter = result.version;
          delete c.error;
        } else {
          c.status = "FAILED";
          c.error = { name: result.error?.Error ?? "Error", message: causeText(result.error) };
        }
      }
      t.report = serializeReport(r);
      return t;
    });
    const failures = results.filter((r) => !r.ok).map((r) => causeText(r.error));
    if (failures.length > 0) {
      const more =
        failures.length > 1 ? `; ${failures.length - 1} more ${e.wave.type} component(s) failed` : "";
      throw new StepError("ComponentsFailed", `${failures[0]}${more}`);
    }
    const size = Math.max(1, Math.floor(e.settings.maxParallel));
    const groupSize = e.groups[e.cursor.group]?.componentIds.length ?? 0;
    const next =
      (e.cursor.wave + 1) * size < groupSize
        ? { group: e.cursor.group, wave: e.cursor.wave + 1 }
        : { group: e.cursor.group + 1, wave: 0 };
    return { ...next, more: next.group < e.groups.length };
  }

  async function recordOutcome(
    e: Extract<StepEvent, { step: "recordOutcome" }>,
  ): Promise<{ status: string }> {
    let status: OutcomeStatus = "COMPLETED";
    let message: string;
    if (e.error !== undefined) {
      status = "FAILED";
      message = causeText(e.error);
    } else {
      const task = await loadTask(e.taskId);
      message = completionMessage(task);
    }
    const task = await recordTaskOutcome(deps, e.taskId, { status, message });
    log(`task ${task.id}: ${task.status}: ${task.message}`);
    return { status: task.status };
  }

  return {
    async handle(event: StepEvent): Promise<unknown> {
      switch (event.step) {
        case "acquireLock":
          return acquireLock(event);
        case "sendQueries":
          return sendQueries(event);
        case "checkQueries":
          return checkQueries(event);
        case "sendWave":
          return sendWave(event);
        case "checkWave":
          return checkWave(event);
        case "finishWave":
          return finishWave(event);
        case "recordOutcome":
          return recordOutcome(event);
        default:
          throw new Error(`unknown step ${JSON.stringify((event as { step?: unknown }).step)}`);
      }
    },
  };
}

/** `"upgraded 18 components to 2.0.0 (3 already at 2.0.0)"`. */
export function completionMessage(task: Task): string {
  try {
    const report = parseReport(task.report);
    const done = report.components.filter((c) => c.status === "COMPLETED").length;
    const skipped = report.components.filter((c) => c.status === "SKIPPED").length;
    if (done === 0) return `all ${skipped} components already at ${report.targetVersion}`;
    const tail = skipped > 0 ? ` (${skipped} already at ${report.targetVersion})` : "";
    return `upgraded ${done} component${done === 1 ? "" : "s"} to ${report.targetVersion}${tail}`;
  } catch {
    return "completed";
  }
}

// ---------------------------------------------------------------------------------------------
// The receiving half: BMC reports (IoT rule → lambdas/bmc-result.ts) and execution endings

/**
 * Stores one BMC report as the IoT rule delivers it: the message's own fields plus `componentId`
 * (the rule's `topic(3)`). Undecodable messages are dropped with a log line that names fields and
 * rules only (never values: an update's auth blob must not reach a log even when echoed back).
 */
export async function recordBmcReport(
  requests: BmcRequestStore,
  message: Record<string, unknown>,
  now: number,
  log: (line: string) => void = () => {},
): Promise<"recorded" | "ignored" | "invalid"> {
  const { componentId, ...payload } = message;
  if (typeof componentId !== "string" || componentId === "") {
    log("bmc-result: report without componentId (the IoT rule adds topic(3) AS componentId)");
    return "invalid";
  }
  const decoded = decodeBmcEvent(JSON.stringify(payload));
  if (!decoded.ok) {
    log(`bmc-result: undecodable report from ${componentId}: ${decoded.message}`);
    return "invalid";
  }
  return requests.recordEvent(componentId.toLowerCase(), decoded.value, now);
}

/** The end of an execution as Step Functions reports it (EventBridge detail, or the local runner). */
export interface ExecutionEnding {
  /** The execution name: the task id. */
  taskId: string;
  status: "SUCCEEDED" | "FAILED" | "TIMED_OUT" | "ABORTED";
  error?: string;
  cause?: string;
}

/**
 * Makes sure a finished execution left its task finished. Normally the last state already recorded
 * the outcome and this changes nothing (recordTaskOutcome keeps the first outcome). It matters when
 * the machine could not record: stopped (ABORTED → TERMINATED), timed out (→ FAILED: a rack that
 * took too long is a failure for the gates, not an operator's stop), or failed inside
 * RecordFailure itself (→ FAILED with the execution's error).
 */
export async function reconcileExecutionEnd(
  deps: OutcomeDeps,
  ending: ExecutionEnding,
): Promise<Task | undefined> {
  const [task] = await deps.tasks.getTasks([ending.taskId]);
  if (task === undefined) return undefined;
  switch (ending.status) {
    case "ABORTED":
      return recordTaskOutcome(deps, task.id, {
        status: "TERMINATED",
        message: ending.cause ? `task execution stopped: ${ending.cause}` : "task execution stopped",
      });
    case "TIMED_OUT":
      return recordTaskOutcome(deps, task.id, { status: "FAILED", message: "task execution timed out" });
    case "FAILED":
      return recordTaskOutcome(deps, task.id, {
        status: "FAILED",
        message: `task execution failed: ${causeText({ Error: ending.error ?? "Error", Cause: ending.cause })}`,
      });
    case "SUCCEEDED":
      // The machine only succeeds through RecordSuccess or AlreadyFinished; both leave the task
      // terminal. Anything else would be a bug: record it rather than leave the rack locked.
      if (TERMINAL_TASK_STATUSES.has(task.status))
        return recordTaskOutcome(deps, task.id, { status: "COMPLETED", message: task.message });
      return recordTaskOutcome(deps, task.id, {
        status: "FAILED",
        message: "task execution ended without recording an outcome",
      });
  }
}
