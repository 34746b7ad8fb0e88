/**
 * The task service: firmware tasks (one rack, one operation) as an API (UpgradeFirmware,
 * GetTasksByIDs, ListTasks, CancelTask) and as the dispatcher's ChildTaskSubmitter.
 *
 * Submission order, and why a crash anywhere plus a retry yields the same task and ONE execution:
 *   1. idempotency lookup: the key already names a task → (re)start its execution, done;
 *   2. the rack lock, owner = the task id. Run children derive the task id from the idempotency key
 *      (`taskIdForKey`), so a retry after a crash re-acquires its OWN lock instead of finding the
 *      rack "busy" with the crashed attempt;
 *   3. createTask under the key (the key item and the task commit together); losing that race to a
 *      task with another id releases our lock and returns the winner;
 *   4. executor.start: the execution name is the task id, so starting twice is a no-op.
 *      crash after 2: the lock is ours, the retry re-acquires it (extends) and goes on;
 *      crash after 3: the retry finds the task in 1 and starts it;
 *      crash after 4 (before the dispatcher recorded SUBMITTED): the retry finds the task, start
 *      returns the same execution.
 *
 * Secrets: `authentication` of a plain task is sealed into the task's secret item before the task
 * exists, read only by the SendUpdate step, and never part of a Task, a log line or a response.
 *
 * Maintenance windows: a plain task carries its request's start_time and end_time. With start_time
 * ahead it is created WAITING ("waiting for maintenance window: opens at T") and takes no rack lock
 * at submission (whether the rack is busy now says nothing about T); its execution waits in
 * AcquireLock until start_time (lock.ts) and fails with `maintenance window closed before the task
 * started` if it has not started by end_time; a QUEUE task's queue timeout counts from start_time.
 * Because the task waits inside its execution, whose timeout bounds the wait, start_time may lie at
 * most MAX_START_DELAY_MS ahead. Run children carry neither time: the run's window bounds the
 * claim, and a child claimed in time runs to its end.
 */
import { createHash } from "node:crypto";
import { updateParts } from "../../domain/command-sets.js";
import { formatGoDuration } from "../../domain/duration.js";
import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  ValidationError,
} from "../../domain/errors.js";
import { versionOf } from "../../domain/firmware-baselines.js";
import { flashNeeds } from "../../domain/firmware-images.js";
import { type FirmwareTemplateInput, validateFirmwareTask } from "../../domain/firmware-template.js";
import type { ListTasksQuery } from "../../domain/list-queries.js";
import type { ComponentType, FirmwareTemplate } from "../../domain/model.js";
import { DEFAULT_RULE, type OperationRule, ruleTypeOrder } from "../../domain/operation-rules.js";
import { mergeRows, narrowRows, resolveTargetSpec } from "../../domain/planner.js";
import { waitingMessage } from "../../domain/run-machine.js";
import { rackConflictMessage } from "../../domain/step-errors.js";
import { flashedBy, subTargetsOf } from "../../domain/sub-targets.js";
import type { Task } from "../../domain/task.js";
import { TERMINAL_TASK_STATUSES } from "../../domain/task.js";
import { initialReport, serializeReport, type TaskOutcomeStatus } from "../../domain/task-report.js";
import { rackPlace } from "../access.js";
import type { TasksApi } from "../api.js";
import { requireImages } from "../firmware-images.js";
import { freezePolicy } from "../firmware-policy.js";
import { errorText, type Logger, silentLogger, taskKeys } from "../observability.js";
import { type PlanInventory, racksForTargetSpec } from "../plan-inventory.js";
import type {
  ChildTaskRequest,
  ChildTaskSubmitter,
  CommandSetStore,
  CreateTaskOutcome,
  FirmwareImageStore,
  FirmwarePolicyStore,
  FirmwareVersionRecorder,
  RackLockStore,
  RunStore,
  RunWaker,
  SubmitOutcome,
  TaskExecutor,
  TaskSecretStore,
  TaskStore,
} from "../ports.js";
import { recordTaskOutcome } from "./outcome.js";
import { foldedTask, withLiveReport } from "./task-item.js";

export const UPGRADE_FIRMWARE_OPERATION = "UpgradeFirmware";

/** From submission until the execution takes it for the whole task (AcquireLock). */
export const DEFAULT_SUBMIT_LOCK_TTL_MS = 15 * 60_000;

/**
 * How far ahead a plain task's start_time may lie. The task waits for it inside its child-task
 * execution, and the deployed state machine stops an execution after 6 h (infra/constructs/
 * child-task.ts): 5 h of waiting leaves an hour for the flash itself.
 */
export const MAX_START_DELAY_MS = 5 * 3_600_000;

export interface TaskServiceDeps {
  tasks: TaskStore;
  runs: Pick<RunStore, "recordOutcome">;
  locks: RackLockStore;
  inventory: PlanInventory;
  secrets: TaskSecretStore;
  /** The tasks' update sets: a running task's report is read with them (src/domain/live-report.ts). */
  commands: Pick<CommandSetStore, "get" | "getUpdates" | "getMany" | "close">;
  /** Where an ending task's verified versions go (recordTaskOutcome). */
  firmware: FirmwareVersionRecorder;
  /** With `executionIdFor`, the execution id is stored with the task before it starts. */
  executor: TaskExecutor & { executionIdFor?: (taskId: string) => string };
  clock: () => number;
  newId: () => string;
  waker?: RunWaker;
  /** Baselines (UpgradeFirmware without target_version) and rules (rule_id); absent = none. */
  policy?: Pick<FirmwarePolicyStore, "listBaselines" | "getRule">;
  /** The firmware image catalog: every flash a task plans needs its image (requireImages). */
  images: Pick<FirmwareImageStore, "getImages">;
  submitLockTtlMs?: number;
  /** Gets the task's ending ("task cancelled", …) through recordTaskOutcome, and failed stops. */
  logger?: Logger;
}

export interface TaskService {
  submitter: ChildTaskSubmitter;
  api: TasksApi;
}

/**
 * A run child's task id, derived from its idempotency key: a UUID (version nibble 8, "custom")
 * from sha256("flow-task:" + key), e.g. for `operation-run-target:<targetId>`. Every attempt to
 * submit the same target computes the same id, so the lock it took before a crash is its own.
 */
export function taskIdForKey(key: string): string {
  const h = createHash("sha256").update(`flow-task:${key}`, "utf8").digest("hex");
  const variant = ((Number.parseInt(h[16] as string, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export const taskNotFound = (id: string): NotFoundError => new NotFoundError(`task not found: ${id}`);

const isTerminal = (t: Task): boolean => TERMINAL_TASK_STATUSES.has(t.status);

export function createTaskService(deps: TaskServiceDeps): TaskService {
  const { tasks, locks, executor, clock } = deps;
  const logger = deps.logger ?? silentLogger;
  const lockTtl = deps.submitLockTtlMs ?? DEFAULT_SUBMIT_LOCK_TTL_MS;

  function newTask(args: {
    id: string;
    rackId: string;
    rackExternalId: string | undefined;
    /** `targetVersion`: the component's own (baselines); the template's applies to the rest. */
    components: { id: string; type: ComponentType; targetVersion?: string }[];
    template: FirmwareTemplate;
    /** The pinned rule as frozen; absent: DEFAULT_RULE. */
    rule?: OperationRule;
    now: number;
    status: "PENDING" | "WAITING";
    queueExpiresAt?: number;
    /** A plain task's window (run children have none). */
    startTime?: number;
    endTime?: number;
    idempotencyKey?: string;
    runId?: string;
    targetId?: string;
    targetPhaseIndex?: number;
  }): Task {
    // Each component's parts: the requested sub-targets its type has (none requested: all of it).
    const { subTargets } = args.template;
    const rule = args.rule ?? DEFAULT_RULE;
    const report = initialReport(
      args.components.map((c) => ({ ...c, subTargets: subTargetsOf(c.type, subTargets) })),
      args.template.targetVersion,
      args.template.overrideVersionCheck,
      args.template.overrideReadinessCheck,
      { id: rule.id, version: rule.version, name: rule.name, order: ruleTypeOrder(rule) },
    );
    const task: Task = {
      id: args.id,
      operation: UPGRADE_FIRMWARE_OPERATION,
      rackId: args.rackId,
      // In the order they will be upgraded (the report's order).
      componentIds: report.components.map((c) => c.id),
      description: args.template.description,
      executorType: "STEP_FUNCTIONS",
      executionId: executor.executionIdFor?.(args.id) ?? "",
      status: args.status,
      message:
        args.status !== "WAITING"
          ? ""
          : args.startTime !== undefined && args.startTime > args.now
            ? waitingMessage({ opensAt: args.startTime }, false)
            : `waiting for rack ${args.rackId} to be free`,
      createdAt: args.now,
      updatedAt: args.now,
      report: serializeReport(report),
    };
    task.rackExternalId = args.rackExternalId ?? "";
    if (args.queueExpiresAt !== undefined) task.queueExpiresAt = args.queueExpiresAt;
    if (args.startTime !== undefined) task.startTime = args.startTime;
    if (args.endTime !== undefined) task.endTime = args.endTime;
    // The rule that runs: the pinned one as frozen, else the built-in default (a run created before
    // rules were acted on has a rule_id but no frozen rule: it runs, and says, the default).
    task.appliedRuleId = rule.id;
    if (args.rule !== undefined) task.rule = args.rule;
    if (args.idempotencyKey !== undefined) task.idempotencyKey = args.idempotencyKey;
    if (args.runId !== undefined) task.runId = args.runId;
    if (args.targetId !== undefined) task.targetId = args.targetId;
    if (args.targetPhaseIndex !== undefined) task.targetPhaseIndex = args.targetPhaseIndex;
    return task;
  }

  /** Starts (idempotently) and stores the execution id if the executor could not tell it before. */
  async function startExecution(task: Task): Promise<void> {
    const { executionId } = await executor.start(task);
    if (executionId === task.executionId) return;
    for (let attempt = 0; attempt < 5; attempt++) {
      const [current] = await tasks.getTasks([task.id]);
      if (current === undefined || current.executionId === executionId) return;
      const next = { ...current, executionId, updatedAt: Math.max(clock(), current.updatedAt + 1) };
      if ((await tasks.saveTask(next, current.updatedAt)) !== "stale") return;
    }
  }

  /**
   * Tasks as readers see them: a running task's report as its update set says it stands. One
   * task: its set read strongly consistent; a listing: all running tasks' sets in one batch.
   */
  async function live(list: Task[]): Promise<Task[]> {
    if (list.length <= 1) return Promise.all(list.map((t) => withLiveReport(deps, t)));
    const running = list.filter((t) => !isTerminal(t));
    // Every part any of them may have (one request for all; a part a task lacks costs a minimal read).
    const parts = [...new Set(running.flatMap((t) => updateParts(t.rule)))];
    const sets =
      running.length === 0
        ? new Map()
        : await deps.commands.getMany(
            running.map((t) => t.id),
            "u",
            parts,
          );
    const now = clock();
    return list.map((t) => foldedTask(t, sets.get(t.id), now));
  }

  /** Tasks made before external ids were frozen on them: the inventory is asked about their racks only. */
  async function withRackExternalIds(list: Task[]): Promise<Task[]> {
    const missing = [...new Set(list.filter((t) => t.rackExternalId === undefined).map((t) => t.rackId))];
    if (missing.length === 0) return list;
    const racks = new Map((await deps.inventory.getRacksByIds(missing)).map((r) => [r.id, r.externalId]));
    return list.map((t) => {
      const externalId = t.rackExternalId ?? racks.get(t.rackId);
      return externalId ? { ...t, rackExternalId: externalId } : t;
    });
  }

  async function end(task: Task, status: TaskOutcomeStatus, message: string): Promise<Task> {
    return recordTaskOutcome(deps, task.id, { status, message });
  }

  /**
   * Records TERMINATED first, then stops the execution: the operator's words are the task's
   * message (the execution-status path that follows finds the task terminal and changes nothing),
   * and a stop that fails cannot leave the rack locked. Steps that were mid-flight when it landed
   * find the task terminal and write nothing.
   */
  async function stopAndTerminate(task: Task, message: string): Promise<Task> {
    if (isTerminal(task)) return task;
    const ended = await end(task, "TERMINATED", message);
    const executionId = task.executionId || executor.executionIdFor?.(task.id);
    if (executionId) {
      try {
        await executor.stop(executionId, message);
      } catch (error) {
        logger.warn("stopping the task's execution failed", {
          ...taskKeys(task),
          executionId,
          error: errorText(error),
        });
      }
    }
    return ended;
  }

  // -------------------------------------------------------------------------------------------
  // The dispatcher's submitter

  const submitter: ChildTaskSubmitter = {
    async submit(request: ChildTaskRequest, now: number): Promise<SubmitOutcome> {
      // A first attempt has no task to find (see ChildTaskRequest.firstAttempt): one round trip
      // less before the execution starts.
      const existing =
        request.firstAttempt === true
          ? undefined
          : await tasks.getTaskByIdempotencyKey(request.idempotencyKey);
      if (existing !== undefined) {
        if (!isTerminal(existing)) await startExecution(existing);
        return { kind: "submitted", taskId: existing.id };
      }
      // The run froze either one target_version or each component's version (from the baselines).
      const frozen = versionOf(request.versions ?? []);
      const components = request.componentsByType.flatMap((g) =>
        g.componentIds.map((id) => {
          const targetVersion = frozen.get(id);
          return targetVersion === undefined ? { id, type: g.type } : { id, type: g.type, targetVersion };
        }),
      );
      if (components.length === 0)
        return { kind: "rejected", message: `rack ${request.rackId} has no components to upgrade` };
      const unversioned = components.find((c) => c.targetVersion === undefined);
      if (request.template.targetVersion === undefined && unversioned !== undefined) {
        return {
          kind: "rejected",
          message: `target_version is not set and the run froze no firmware version for component ${unversioned.id} (${unversioned.type})`,
        };
      }

      const taskId = taskIdForKey(request.idempotencyKey);
      const task = newTask({
        id: taskId,
        rackId: request.rackId,
        rackExternalId: request.rackExternalId,
        components,
        template: request.template,
        ...(request.rule ? { rule: request.rule } : {}),
        now,
        status: "PENDING",
        idempotencyKey: request.idempotencyKey,
        runId: request.runId,
        targetId: request.targetId,
        ...(request.phaseIndex === undefined ? {} : { targetPhaseIndex: request.phaseIndex }),
      });
      let created: CreateTaskOutcome;
      if (tasks.createTaskWithLock !== undefined) {
        // The lock and the task in one transaction; a task already under the key took no lock.
        const made = await tasks.createTaskWithLock(task, lockTtl, now);
        if (made === "held") return { kind: "conflict", message: rackConflictMessage(request.rackId) };
        created = made;
      } else {
        if ((await locks.acquire(request.rackId, taskId, lockTtl, now)) === "held") {
          return { kind: "conflict", message: rackConflictMessage(request.rackId) };
        }
        created = await tasks.createTask(task);
        // Another attempt's task (whatever its id, the lock just taken is not its own), or ours
        // already finished: the lock taken for it is released.
        if (!created.created && (created.task.id !== taskId || isTerminal(created.task)))
          await locks.release(request.rackId, taskId);
      }
      if (!isTerminal(created.task)) await startExecution(created.task);
      return { kind: "submitted", taskId: created.task.id };
    },

    async cancel(taskId: string, reason: string): Promise<void> {
      const [task] = await tasks.getTasks([taskId]);
      if (task === undefined) return;
      await stopAndTerminate(task, reason.trim() === "" ? "task cancelled" : reason.trim());
    },
  };

  // -------------------------------------------------------------------------------------------
  // The API

  const api: TasksApi = {
    async upgradeFirmware(request: FirmwareTemplateInput, options = {}): Promise<{ taskIds: string[] }> {
      const now = clock();
      const validated = validateFirmwareTask(request, now);
      if (!validated.ok) throw new ValidationError(validated.violations);
      const template = validated.template;
      const { startTime, endTime } = template;
      if (startTime !== undefined && startTime > now + MAX_START_DELAY_MS) {
        throw new ValidationError([
          {
            field: "start_time",
            rule: `must be at most ${formatGoDuration(MAX_START_DELAY_MS)} from now: a task waits for its start inside its child-task execution, whose timeout bounds the wait`,
          },
        ]);
      }
      const waitsForStart = startTime !== undefined && startTime > now;
      const spec = template.targetSpec;
      if (spec === undefined)
        throw new ValidationError([{ field: "target_spec", rule: "target_spec is required" }]);
      const racks = await racksForTargetSpec(deps.inventory, spec);
      const externalIds = new Map(racks.map((r) => [r.id, r.externalId]));
      const rows = narrowRows(mergeRows(resolveTargetSpec(spec, racks)), flashedBy(template.subTargets));
      if (rows.length === 0) throw new InvalidArgumentError("upgrade firmware request matches no components");
      if (options.permitRacks !== undefined) {
        const used = new Set(rows.map((r) => r.rackId));
        options.permitRacks(racks.filter((r) => used.has(r.id)).map(rackPlace));
      }
      // Without target_version each component takes its baseline's version; rule_id pins a rule.
      const policy = await freezePolicy(deps.policy, template, rows, "");
      await requireImages(deps.images, flashNeeds(rows, template, policy.versions), "target_version");
      const versions = versionOf([...(policy.versions?.values() ?? [])].flat());

      const queue = template.queueOptions?.conflictStrategy === "QUEUE";
      const drafts = rows.map((row) => ({ id: deps.newId(), row }));

      if (!queue && !waitsForStart) {
        // REJECT (and UNSPECIFIED): all racks or none. Locks first, so a busy rack fails the
        // request before any task exists.
        const taken: { rackId: string; owner: string }[] = [];
        for (const d of drafts) {
          if ((await locks.acquire(d.row.rackId, d.id, lockTtl, now)) === "held") {
            await Promise.all(taken.map((t) => locks.release(t.rackId, t.owner)));
            throw new FailedPreconditionError(rackConflictMessage(d.row.rackId));
          }
          taken.push({ rackId: d.row.rackId, owner: d.id });
        }
      }
      // The queue timeout counts from when the task may start.
      const queueExpiresAt = queue
        ? Math.max(now, startTime ?? now) +
          Math.max(0, template.queueOptions?.queueTimeoutSeconds ?? 0) * 1000
        : undefined;
      const taskIds: string[] = [];
      for (const d of drafts) {
        if (template.authentication !== undefined) await deps.secrets.put(d.id, template.authentication);
        const task = newTask({
          id: d.id,
          rackId: d.row.rackId,
          rackExternalId: externalIds.get(d.row.rackId),
          components: d.row.components.map((c) => {
            const targetVersion = versions.get(c.id);
            return targetVersion === undefined
              ? { id: c.id, type: c.type }
              : { id: c.id, type: c.type, targetVersion };
          }),
          template,
          ...(policy.rule ? { rule: policy.rule } : {}),
          now,
          status: queue || waitsForStart ? "WAITING" : "PENDING",
          ...(queueExpiresAt !== undefined ? { queueExpiresAt } : {}),
          ...(startTime !== undefined ? { startTime } : {}),
          ...(endTime !== undefined ? { endTime } : {}),
        });
        await tasks.createTask(task);
        await startExecution(task);
        taskIds.push(task.id);
      }
      return { taskIds };
    },

    async getTasks(ids: string[]): Promise<Task[]> {
      return withRackExternalIds(await live(await tasks.getTasks(ids.map((id) => id.toLowerCase()))));
    },

    async listTasks(query: ListTasksQuery): Promise<{ tasks: Task[]; total: number }> {
      const options = { activeOnly: query.activeOnly, page: query.page } as Parameters<
        TaskStore["listTasks"]
      >[0];
      if (query.rackId !== undefined) options.rackId = query.rackId;
      if (query.componentId !== undefined) {
        options.componentId = query.componentId;
        // A component is in one rack: only that rack's tasks are read. An unknown component
        // lists nothing, as an unknown rack does; a rack_id not the component's rack reads that
        // rack's tasks, which hold the component only if it was there before.
        if (options.rackId === undefined) {
          const rack = (await deps.inventory.getRacksByComponentIds([query.componentId])).get(
            query.componentId,
          );
          if (rack === undefined) return { tasks: [], total: 0 };
          options.rackId = rack.id;
        }
      }
      const out = await tasks.listTasks(options);
      if (!query.withReport) {
        const listed = await withRackExternalIds(out.tasks);
        return { tasks: listed.map((t) => ({ ...t, report: "" })), total: out.total };
      }
      return {
        tasks: await withRackExternalIds(await live(out.tasks)),
        total: out.total,
      };
    },

    async cancelTask(id: string): Promise<Task> {
      const [task] = await tasks.getTasks([id.toLowerCase()]);
      if (task === undefined) throw taskNotFound(id);
      return stopAndTerminate(task, "task cancelled");
    },
  };

  return { submitter, api };
}
