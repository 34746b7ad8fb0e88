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
import { type UpdateCommand, updateRequestId } from "../../domain/bmc-protocol.js";
import {
  type BmcRequestRecord,
  type ComponentResult,
  nextWaitSeconds,
  queryRequestId,
  secretFor,
} from "../../domain/component-verdict.js";
import type { ComponentType, FirmwareAuthentication, Task } from "../../domain/model.js";
import {
  causeText,
  componentLabel,
  rackConflictMessage,
  StepError,
  type StepErrorName,
} from "../../domain/step-errors.js";
import {
  completionMessage,
  type OutcomeStatus,
  parseReport,
  serializeReport,
  type TaskReport,
  UPGRADE_GROUP_ORDER,
} from "../../domain/task-report.js";
import { requestKey } from "../ports.js";
import type { TaskStepsDeps } from "./deps.js";
import { isTerminalTask, recordTaskOutcome, updateTask } from "./outcome.js";
import type {
  AcquireLockResult,
  ChildTaskSettings,
  PollState,
  PreflightResult,
  StepEvent,
  UpgradeGroup,
  WaveCursor,
  WaveState,
} from "./settings.js";

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
