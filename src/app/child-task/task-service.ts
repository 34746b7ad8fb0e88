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
 */
import { createHash } from "node:crypto";
import {
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
  ValidationError,
} from "../../domain/errors.js";
import { versionOf } from "../../domain/firmware-baselines.js";
import type { ComponentType, FirmwareTemplate, ListTasksQuery, Task } from "../../domain/model.js";
import { TERMINAL_TASK_STATUSES } from "../../domain/model.js";
import { DEFAULT_RULE, type OperationRule, ruleTypeOrder } from "../../domain/operation-rules.js";
import { mergeRows, narrowRows, resolveTargetSpec } from "../../domain/planner.js";
import { validateFirmwareTask } from "../../domain/run-config.js";
import { rackConflictMessage } from "../../domain/step-errors.js";
import { flashedBy, subTargetsOf } from "../../domain/sub-targets.js";
import { initialReport, serializeReport, type TaskOutcomeStatus } from "../../domain/task-report.js";
import type { TasksApi } from "../api.js";
import { freezePolicy } from "../firmware-policy.js";
import type {
  ChildTaskRequest,
  ChildTaskSubmitter,
  FirmwarePolicyStore,
  InventoryStore,
  RackLockStore,
  RunStore,
  RunWaker,
  SubmitOutcome,
  TaskExecutor,
  TaskSecretStore,
  TaskStore,
} from "../ports.js";
import { recordTaskOutcome } from "./outcome.js";

export const UPGRADE_FIRMWARE_OPERATION = "UpgradeFirmware";

/** From submission until the execution re-asserts it (AcquireLock, then each group). */
export const DEFAULT_SUBMIT_LOCK_TTL_MS = 15 * 60_000;

export interface TaskServiceDeps {
  tasks: TaskStore;
  runs: Pick<RunStore, "recordOutcome">;
  locks: RackLockStore;
  inventory: Pick<InventoryStore, "loadAll">;
  secrets: TaskSecretStore;
  /** With `executionIdFor`, the execution id is stored with the task before it starts. */
  executor: TaskExecutor & { executionIdFor?: (taskId: string) => string };
  clock: () => number;
  newId: () => string;
  waker?: RunWaker;
  /** Baselines (UpgradeFirmware without target_version) and rules (rule_id); absent = none. */
  policy?: Pick<FirmwarePolicyStore, "listBaselines" | "getRule">;
  submitLockTtlMs?: number;
  log?: (line: string) => void;
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
  const log = deps.log ?? (() => {});
  const lockTtl = deps.submitLockTtlMs ?? DEFAULT_SUBMIT_LOCK_TTL_MS;

  function newTask(args: {
    id: string;
    rackId: string;
    /** `targetVersion`: the component's own (baselines); the template's applies to the rest. */
    components: { id: string; type: ComponentType; targetVersion?: string }[];
    template: FirmwareTemplate;
    /** The pinned rule as frozen; absent: DEFAULT_RULE. */
    rule?: OperationRule;
    now: number;
    status: "PENDING" | "WAITING";
    queueExpiresAt?: number;
    idempotencyKey?: string;
    runId?: string;
    targetId?: string;
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
      message: args.status === "WAITING" ? `waiting for rack ${args.rackId} to be free` : "",
      createdAt: args.now,
      updatedAt: args.now,
      report: serializeReport(report),
    };
    if (args.queueExpiresAt !== undefined) task.queueExpiresAt = args.queueExpiresAt;
    // The rule that runs: the pinned one as frozen, else the built-in default (a run created before
    // rules were acted on has a rule_id but no frozen rule: it runs, and says, the default).
    task.appliedRuleId = rule.id;
    if (args.rule !== undefined) task.rule = args.rule;
    if (args.idempotencyKey !== undefined) task.idempotencyKey = args.idempotencyKey;
    if (args.runId !== undefined) task.runId = args.runId;
    if (args.targetId !== undefined) task.targetId = args.targetId;
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
        log(`tasks: stopping ${executionId} failed: ${(error as Error).message}`);
      }
    }
    return ended;
  }

  // -------------------------------------------------------------------------------------------
  // The dispatcher's submitter

  const submitter: ChildTaskSubmitter = {
    async submit(request: ChildTaskRequest, now: number): Promise<SubmitOutcome> {
      const existing = await tasks.getTaskByIdempotencyKey(request.idempotencyKey);
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
      if ((await locks.acquire(request.rackId, taskId, lockTtl, now)) === "held") {
        return { kind: "conflict", message: rackConflictMessage(request.rackId) };
      }
      const created = await tasks.createTask(
        newTask({
          id: taskId,
          rackId: request.rackId,
          components,
          template: request.template,
          ...(request.rule ? { rule: request.rule } : {}),
          now,
          status: "PENDING",
          idempotencyKey: request.idempotencyKey,
          runId: request.runId,
          targetId: request.targetId,
        }),
      );
      if (!created.created && created.task.id !== taskId) await locks.release(request.rackId, taskId);
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
    async upgradeFirmware(request: FirmwareTemplate): Promise<{ taskIds: string[] }> {
      const validated = validateFirmwareTask(request);
      if (!validated.ok) throw new ValidationError(validated.violations);
      const template = validated.template;
      const spec = template.targetSpec;
      if (spec === undefined)
        throw new ValidationError([{ field: "target_spec", rule: "target_spec is required" }]);
      const rows = narrowRows(
        mergeRows(resolveTargetSpec(spec, await deps.inventory.loadAll())),
        flashedBy(template.subTargets),
      );
      if (rows.length === 0) throw new InvalidArgumentError("upgrade firmware request matches no components");
      // Without target_version each component takes its baseline's version; rule_id pins a rule.
      const policy = await freezePolicy(deps.policy, template, rows, "");
      const versions = versionOf([...(policy.versions?.values() ?? [])].flat());

      const queue = template.queueOptions?.conflictStrategy === "QUEUE";
      const now = clock();
      const drafts = rows.map((row) => ({ id: deps.newId(), row }));

      if (!queue) {
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
      const queueExpiresAt = queue
        ? now + Math.max(0, template.queueOptions?.queueTimeoutSeconds ?? 0) * 1000
        : undefined;
      const taskIds: string[] = [];
      for (const d of drafts) {
        if (template.authentication !== undefined) await deps.secrets.put(d.id, template.authentication);
        const task = newTask({
          id: d.id,
          rackId: d.row.rackId,
          components: d.row.components.map((c) => {
            const targetVersion = versions.get(c.id);
            return targetVersion === undefined
              ? { id: c.id, type: c.type }
              : { id: c.id, type: c.type, targetVersion };
          }),
          template,
          ...(policy.rule ? { rule: policy.rule } : {}),
          now,
          status: queue ? "WAITING" : "PENDING",
          ...(queueExpiresAt !== undefined ? { queueExpiresAt } : {}),
        });
        await tasks.createTask(task);
        await startExecution(task);
        taskIds.push(task.id);
      }
      return { taskIds };
    },

    async getTasks(ids: string[]): Promise<Task[]> {
      return tasks.getTasks(ids.map((id) => id.toLowerCase()));
    },

    async listTasks(query: ListTasksQuery): Promise<{ tasks: Task[]; total: number }> {
      const options = { activeOnly: query.activeOnly, page: query.page } as Parameters<
        TaskStore["listTasks"]
      >[0];
      if (query.rackId !== undefined) options.rackId = query.rackId;
      if (query.componentId !== undefined) options.componentId = query.componentId;
      const out = await tasks.listTasks(options);
      return query.withReport
        ? out
        : { tasks: out.tasks.map((t) => ({ ...t, report: "" })), total: out.total };
    },

    async cancelTask(id: string): Promise<Task> {
      const [task] = await tasks.getTasks([id.toLowerCase()]);
      if (task === undefined) throw taskNotFound(id);
      return stopAndTerminate(task, "task cancelled");
    },
  };

  return { submitter, api };
}
