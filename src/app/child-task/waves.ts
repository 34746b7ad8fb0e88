/**
 * The upgrade loop: for each group (a stage of the task's rule, in the rule's order), for each
 * wave of ≤ maxParallel of its components, for each step of the stage:
 * SendWave ─► AwaitWave ◄─► CheckWave, which ends the wave (finishWave) in the same call once every
 * component has its verdict; AwaitWave waits for the wave's results, woken by the receiver when
 * the last is stored (or by its timeout, the poll's net). Wave w of group g is
 * `groups[g].componentIds.slice(w·maxParallel, (w+1)·maxParallel)`; the cursor finishWave returns
 * names the next (group, wave, step), or the same step again for the components that failed when
 * the step has retries left (after a Wait of the retry's backoff). A failure left after its retries
 * stops the task (ComponentsFailed), so no later wave or stage runs against a predecessor at the
 * wrong level.
 *
 * Steps (src/domain/operation-rules.ts):
 *   UPDATE_FIRMWARE      one update command per component (request id per attempt), verdict from
 *                        its result (src/domain/component-verdict.ts `verdict`)
 *   VERIFY_VERSION       one query per component; its answer must be the component's target
 *   VERIFY_REACHABILITY  one query per component; it must answer
 *   SLEEP                no command: the wait lasts the sleep, CheckWave passes once it is over
 *   RESET_BMC, POWER_CYCLE_HOST, AC_CYCLE
 *                        one `reset` per component (BMC protocol v3; kind bmc, host, ac), answered
 *                        with the BMC's versions once it is back; kept in the verify set
 *   WAIT_BRING_UP        one query per component: it must answer with its versions in time
 * The stage's read-back step (operation-rules.ts `readBackStep`) must find the target active:
 * NotActivated when it is only pending (staged), VersionMismatch when it is neither.
 */
import type { ResetCommand, ResetKind, UpdateCommand } from "../../domain/bmc-protocol.js";
import {
  type CommandFamily,
  type CommandSet,
  commandRecord,
  entryKey,
  isAnswered,
  mergeParts,
  updateAddress,
  verifyAddress,
} from "../../domain/command-sets.js";
import {
  awaitSeconds,
  type ComponentResult,
  nextCheckWaitSeconds,
  nextWaitSeconds,
  type PendingCommand,
  type QueryStepName,
  queryVerdict,
  secretFor,
  verdict,
} from "../../domain/component-verdict.js";
import { updatesSucceeded } from "../../domain/live-report.js";
import type { ComponentType, FirmwareAuthentication, Task } from "../../domain/model.js";
import {
  isActivation,
  type RuleAction,
  type RuleStep,
  readBackStep,
  retryWaitSeconds,
} from "../../domain/operation-rules.js";
import { causeText, StepError } from "../../domain/step-errors.js";
import {
  completionMessage,
  parseReport,
  serializeReport,
  type TaskReport,
  targetOf,
} from "../../domain/task-report.js";
import { awaitEntries, sendCommands } from "./commands.js";
import type { StepDeps } from "./deps.js";
import { commandImages, type SentImage } from "./images.js";
import { knownLeaseEnd, renewLockIfNeeded } from "./lock.js";
import { isTerminalTask, loadTask, loadTaskWith, recordTaskOutcome, updateTask } from "./outcome.js";
import {
  type ChildTaskSettings,
  currentCursor,
  currentGroups,
  currentWave,
  type GroupFacts,
  type StepEventOf,
  type UpgradeGroup,
  type WaveCursor,
  type WavePlan,
  type WaveState,
} from "./settings.js";

/** The cursor's group, step and wave components (only those retried, on a retry). */
function waveOf(
  groups: UpgradeGroup[],
  cursor: WaveCursor,
): { group: UpgradeGroup; step: RuleStep; componentIds: string[] } {
  const group = groups[cursor.group];
  const size = Math.max(1, Math.floor(group?.maxParallel ?? 1));
  const wave = group?.componentIds.slice(cursor.wave * size, (cursor.wave + 1) * size) ?? [];
  const componentIds = cursor.only === undefined ? wave : wave.filter((id) => cursor.only?.includes(id));
  const step = group?.steps[cursor.step];
  if (group === undefined || step === undefined || componentIds.length === 0) {
    throw new Error(
      `no step ${cursor.step} of wave ${cursor.wave} in group ${cursor.group} of ${groups.length}`,
    );
  }
  return { group, step, componentIds };
}

/**
 * A step's timeout: its own, else the deployment's: the update timeout for the update and for
 * activation and bring-up (a tray's AC cycle and boot take minutes, like a flash), the preflight
 * timeout for a verify.
 */
function timeoutOf(step: RuleStep, settings: ChildTaskSettings): number {
  if (step.action === "SLEEP") return step.sleepSeconds;
  if (step.timeoutSeconds > 0) return step.timeoutSeconds;
  const long =
    step.action === "UPDATE_FIRMWARE" || step.action === "WAIT_BRING_UP" || isActivation(step.action);
  return long ? settings.updateTimeoutSeconds : settings.preflightTimeoutSeconds;
}

/** What each activation asks of a BMC (BMC protocol v3 `reset`). */
const RESET_KIND: Record<"RESET_BMC" | "POWER_CYCLE_HOST" | "AC_CYCLE", ResetKind> = {
  RESET_BMC: "bmc",
  POWER_CYCLE_HOST: "host",
  AC_CYCLE: "ac",
};

/** A host power cycle is graceful for half its step's timeout (at most 5 minutes), then forced. */
export const graceSecondsOf = (timeoutSeconds: number): number =>
  Math.min(300, Math.floor(timeoutSeconds / 2));

/** How a query-answered step names itself in its verdicts. */
const QUERY_STEP_NAMES: Record<Exclude<RuleAction, "UPDATE_FIRMWARE" | "SLEEP">, QueryStepName> = {
  VERIFY_VERSION: "verify-version",
  VERIFY_REACHABILITY: "verify-reachability",
  RESET_BMC: "reset-bmc",
  POWER_CYCLE_HOST: "power-cycle-host",
  AC_CYCLE: "ac-cycle",
  WAIT_BRING_UP: "wait-bring-up",
  CHECK_HEALTH: "check-health",
};

async function credentialsFor(
  deps: StepDeps,
  taskId: string,
  runId: string | undefined,
): Promise<FirmwareAuthentication | undefined> {
  return runId ? deps.runs.getRunSecrets(runId) : deps.secrets.get(taskId);
}

/**
 * What the waves of these components need of the task (the preflight freezes it into each group):
 * what each component is and is upgraded to as its report says, the run, and the lock's known lease.
 */
export function groupFacts(
  task: Task,
  report: TaskReport,
  componentIds: readonly string[],
  settings: ChildTaskSettings,
): GroupFacts {
  const ids = new Set(componentIds);
  const facts: GroupFacts = { types: {}, versions: {} };
  const subTargets: Record<string, string[]> = {};
  for (const c of report.components) {
    if (!ids.has(c.id)) continue;
    facts.types[c.id] = c.type;
    facts.versions[c.id] = targetOf(report, c);
    if (c.subTargets !== undefined) subTargets[c.id] = c.subTargets;
  }
  if (Object.keys(subTargets).length > 0) facts.subTargets = subTargets;
  if (task.runId !== undefined) facts.runId = task.runId;
  const leaseEnd = knownLeaseEnd(task, settings);
  if (leaseEnd !== undefined) facts.leaseEnd = leaseEnd;
  return facts;
}

/**
 * The group's facts; a group made before they were frozen in the plan: read from the task, which
 * must not have ended (a closed update set says so for groups that carry their facts).
 */
async function factsOf(deps: StepDeps, taskId: string, group: UpgradeGroup, settings: ChildTaskSettings) {
  if (group.facts !== undefined) return group.facts;
  const task = await loadTask(deps, taskId);
  if (isTerminalTask(task))
    throw new StepError("TaskEnded", `task ${task.id} already ended (${task.status})`);
  return groupFacts(task, parseReport(task.report), group.componentIds, settings);
}

/**
 * Starts one step of one wave, from the plan alone: what to flash is in its group's facts (frozen
 * by the preflight), so no step reads or writes the task item. Every step renews the rack lock if
 * it could outlast the lease (lock.ts: normally AcquireLock's covers the whole task, and nothing is
 * written). UPDATE_FIRMWARE writes the wave's commands into the task's update set (one write: from
 * then on the components show UPDATING in Task.report) and publishes each update command; a
 * retried Lambda sends the unanswered ones again under their request ids, which a BMC does not
 * flash twice (commands.ts); a task ended from outside meanwhile closed the set, so nothing is
 * sent (TaskEnded). A verify step does the same with queries in the verify set; SLEEP only sets
 * the Wait.
 */
export async function sendWave(deps: StepDeps, event: StepEventOf<"sendWave">): Promise<WaveState> {
  const { clock } = deps;
  const e = {
    ...event,
    groups: currentGroups(event.groups, event.settings),
    cursor: currentCursor(event.cursor),
  };
  const { group, step, componentIds } = waveOf(e.groups, e.cursor);
  const attempt = e.cursor.attempt;
  const timeoutSeconds = timeoutOf(step, e.settings);
  const now = clock();
  const facts = await factsOf(deps, e.taskId, group, e.settings);
  await renewLockIfNeeded(
    deps,
    { taskId: e.taskId, rackId: e.rackId, leaseEnd: facts.leaseEnd },
    e.settings,
    { components: componentIds.length, timeoutSeconds },
    now,
  );
  const pick = <T>(all: Record<string, T> | undefined) => {
    const picked: Record<string, T> = {};
    for (const id of componentIds) if (all?.[id] !== undefined) picked[id] = all[id];
    return picked;
  };
  const types = pick(facts.types);
  const versions = pick(facts.versions);
  const subTargets = pick(facts.subTargets);
  const update = step.action === "UPDATE_FIRMWARE";
  // Every update command carries its image: a presigned GET valid until the wave's deadline.
  const images = update
    ? await commandImages(
        deps,
        componentIds.map((id) => ({
          id,
          type: types[id] as ComponentType,
          version: versions[id] ?? "",
          ...(subTargets[id] === undefined ? {} : { subTargets: subTargets[id] }),
        })),
        timeoutSeconds,
      )
    : new Map<string, SentImage>();
  const readBack = readBackStep(group.steps);
  const base = {
    stage: group.stage,
    step: e.cursor.step,
    action: step.action,
    ...(update && readBack > e.cursor.step ? { laterReadBack: true } : {}),
    ...(!update && readBack === e.cursor.step ? { readBack: true } : {}),
    attempt,
    timeoutSeconds,
    ...(update && group.part !== undefined ? { part: group.part } : {}),
    componentIds,
    types,
    versions,
    polls: 0,
    done: false,
  };

  if (step.action === "SLEEP") {
    const deadline = now + timeoutSeconds * 1000;
    return awaiting(e.settings, { ...base, deadline, waitSeconds: Math.max(1, timeoutSeconds) }, now);
  }
  const address = update
    ? updateAddress(e.taskId, attempt, group.part)
    : verifyAddress(e.taskId, group.stage, e.cursor.step, attempt);
  // Credentials are read only when an update is about to go out.
  let auth: Promise<FirmwareAuthentication | undefined> | undefined;
  const set = await sendCommands(
    deps,
    e.taskId,
    update ? "u" : "v",
    componentIds.map((componentId) => ({ componentId, address })),
    { sentAt: now, deadline: now + timeoutSeconds * 1000 },
    async (componentId, requestId) => {
      const action = step.action;
      if (action === "RESET_BMC" || action === "POWER_CYCLE_HOST" || action === "AC_CYCLE") {
        const reset: ResetCommand = {
          v: 3,
          type: "reset",
          requestId,
          taskId: e.taskId,
          kind: RESET_KIND[action],
          issuedAt: now,
        };
        if (action === "POWER_CYCLE_HOST") reset.graceSeconds = graceSecondsOf(timeoutSeconds);
        await deps.publisher.publish({ rackId: e.rackId, componentId }, reset);
        return;
      }
      if (!update) {
        await deps.publisher.publish({ rackId: e.rackId, componentId }, { v: 1, type: "query", requestId });
        return;
      }
      auth ??= credentialsFor(deps, e.taskId, facts.runId);
      const type = types[componentId] as ComponentType;
      const targetVersion = versions[componentId] ?? "";
      const command: UpdateCommand = {
        v: 1,
        type: "update",
        requestId,
        taskId: e.taskId,
        targetVersion,
        image: images.get(componentId) as SentImage,
        issuedAt: now,
      };
      const parts = subTargets[componentId];
      if (parts !== undefined) command.subTargets = parts;
      const secret = secretFor(await auth, type);
      if (secret !== undefined)
        command.auth = await deps.sealer.seal(secret, { rackId: e.rackId, componentId }, requestId);
      await deps.publisher.publish({ rackId: e.rackId, componentId }, command);
    },
  );
  // A retried Lambda keeps the first deadlines: the entries carry them.
  const deadline = Math.max(
    ...componentIds.map((id) => set.entries[entryKey(address, id)]?.deadline ?? now + timeoutSeconds * 1000),
  );
  const sent = clock();
  return awaiting(
    e.settings,
    {
      ...base,
      ...(Object.keys(subTargets).length > 0 ? { subTargets } : {}),
      deadline,
      waitSeconds: nextWaitSeconds(e.settings, 0, deadline, sent),
    },
    sent,
  );
}

/** The wave with its AwaitWave timeout (`awaitSeconds`), from its wait and deadline. */
function awaiting(settings: ChildTaskSettings, wave: WaveState, now: number): WaveState {
  return { ...wave, awaitSeconds: awaitSeconds(settings, wave.waitSeconds, wave.deadline, now) };
}

/** Where a wave's commands are: their family's address for this step and attempt (and part). */
function waveAddress(taskId: string, wave: WaveState) {
  return wave.action === "UPDATE_FIRMWARE"
    ? updateAddress(taskId, wave.attempt, wave.part)
    : verifyAddress(taskId, wave.stage, wave.step, wave.attempt);
}

/** The update set's parts a plan's waves store their updates in. */
const planParts = (groups: readonly UpgradeGroup[]): number[] =>
  groups.flatMap((g) => (g.part === undefined ? [] : [g.part]));

/**
 * AwaitWave: the execution waits (a `.waitForTaskToken` Task) until its wave's results are in
 * (commands.ts `awaitEntries`: the token on the wave's command set, the receiver wakes it). A
 * sleep has no commands: its wait's timeout is the sleep.
 */
export async function awaitWave(deps: StepDeps, e: StepEventOf<"awaitWave">): Promise<{ woken: boolean }> {
  const family = familyOf(e.wave.action);
  if (family === undefined) return { woken: false };
  const address = waveAddress(e.taskId, e.wave);
  const keys = e.wave.componentIds.map((componentId) => entryKey(address, componentId));
  return awaitEntries(deps, e.taskId, family, { token: e.token, keys }, e.wave.part);
}

/** The command family a step's commands are in; none for a sleep. */
const familyOf = (action: RuleAction): CommandFamily | undefined =>
  action === "UPDATE_FIRMWARE" ? "u" : action === "SLEEP" ? undefined : "v";

/**
 * Reads the wave's commands (one read): done once every component has a verdict (answer, result or
 * timeout), and then finished at once (finishWave: the next cursor, or ComponentsFailed), so the
 * plan comes back with the wave and its next cursor. Else the next check after the backoff, or
 * later when the pending updates' progress says the wave cannot be done before then
 * (nextCheckWaitSeconds), never past the deadline.
 *
 * The last step of the last wave reads the task with its sets (the same one request) and, once the
 * wave passes, records the task COMPLETED there and then (`ended` in the plan: the state machine
 * skips its RecordSuccess state), so the slot it frees refills one round trip and one state sooner;
 * a task found ended (cancelled) stops the wave as it is. An event without the plan (an execution
 * of the definition before, which has a FinishWave state) gets the wave alone.
 */
export async function checkWave(deps: StepDeps, e: StepEventOf<"checkWave">): Promise<WavePlan | WaveState> {
  // What the wake-up brought is this check's alone: the wave goes on without it.
  const { answers, ...wave } = currentWave(e.wave, e.settings);
  const family = familyOf(wave.action);
  const plan =
    e.groups === undefined || e.cursor === undefined || e.rackId === undefined
      ? undefined
      : { groups: e.groups, cursor: e.cursor, rackId: e.rackId };
  const last =
    plan !== undefined &&
    !nextCursor(currentGroups(plan.groups, e.settings), currentCursor(plan.cursor)).more;
  // What the wake-up brought, when it is this wave's and complete: no read of the wave's record.
  const woken = family === undefined ? undefined : answersFor(e.taskId, family, wave, answers);
  // One read: the wave's set, and on the last step the task and its whole update set with it.
  const read = last
    ? await lastRead(deps, e.taskId, currentGroups(plan.groups, e.settings), currentCursor(plan.cursor), wave)
    : undefined;
  const success = { status: "COMPLETED" as const, message: completionMessage, fromOutside: false };
  if (read !== undefined && isTerminalTask(read.task) && plan !== undefined) {
    // Ended already (cancelled, or this check retried after its own record): what is left of the
    // ending is finished (recordTaskOutcome keeps the first outcome), and the loop stops.
    const ended = await recordTaskOutcome(deps, e.taskId, success, read.task, { set: read.sets.u });
    return { groups: plan.groups, cursor: plan.cursor, wave, ended: ended.status };
  }
  const set =
    family === undefined
      ? undefined
      : read !== undefined
        ? read.sets[family]
        : (woken ?? (await deps.commands.get(e.taskId, family, wave.part)));
  const judged = judgeWave(e, wave, set, deps.clock());
  if (plan === undefined) return judged;
  if (!judged.done) return { groups: plan.groups, cursor: plan.cursor, wave: judged };
  // Done: the wave ends here, not in a state of its own (a retried call ends it again: the same).
  const cursor = await finishWave(deps, {
    step: "finishWave",
    taskId: e.taskId,
    settings: e.settings,
    rackId: plan.rackId,
    groups: plan.groups,
    cursor: plan.cursor,
    wave: judged,
  });
  if (read === undefined || cursor.more || cursor.retry) return { groups: plan.groups, cursor, wave: judged };
  const ended = await recordTaskOutcome(deps, e.taskId, success, read.task, { set: read.sets.u });
  return { groups: plan.groups, cursor, wave: judged, ended: ended.status };
}

/**
 * The last check's read: the task and its whole update set, in two requests at once. Strongly
 * consistent: the task, the set's first record (only if some group's updates are there) and the
 * wave's own stage's part (with the stage's other waves, steps and attempts); eventually
 * consistent (half the read units): the earlier stages' parts, written at least a stage ago and
 * already judged. Those can only be stale in one way: a component of an earlier stage whose latest
 * update is not the success it was (every earlier stage passed, or the task would have stopped);
 * then everything is read again, strongly.
 */
async function lastRead(
  deps: StepDeps,
  taskId: string,
  groups: readonly UpgradeGroup[],
  cursor: WaveCursor,
  wave: WaveState,
): Promise<{ task: Task; sets: Partial<Record<CommandFamily, CommandSet>> }> {
  const family = familyOf(wave.action);
  const first: CommandFamily[] = groups.some((g) => g.part === undefined) ? ["u"] : [];
  const families: CommandFamily[] = family === undefined || family === "u" ? first : [family, ...first];
  const ownPart = groups[cursor.group]?.part;
  const earlier = groups.filter((g) => g.part !== undefined && g.part !== ownPart);
  const [found, parts] = await Promise.all([
    loadTaskWith(deps, taskId, families, ownPart === undefined ? [] : [ownPart]),
    earlier.length === 0 ? [] : deps.commands.getParts(taskId, planParts(earlier)),
  ]);
  const updates = mergeParts(found.sets.u, parts);
  if (
    updatesSucceeded(
      updates,
      taskId,
      earlier.flatMap((g) => g.componentIds),
    )
  ) {
    return { task: found.task, sets: { ...found.sets, ...(updates === undefined ? {} : { u: updates }) } };
  }
  return loadTaskWith(deps, taskId, families, planParts(groups));
}

/**
 * The answers a wake-up brought, when they are this wave's and complete (every entry it waits for
 * answered, as the waker saw them stored); else undefined, and the check reads the set.
 */
function answersFor(
  taskId: string,
  family: CommandFamily,
  wave: WaveState,
  answers: CommandSet | undefined,
): CommandSet | undefined {
  if (answers?.taskId !== taskId || answers.family !== family || answers.part !== wave.part) return undefined;
  const address = waveAddress(taskId, wave);
  const complete = wave.componentIds.every((id) =>
    isAnswered(family, answers.entries?.[entryKey(address, id)]),
  );
  return complete ? answers : undefined;
}

function judgeWave(
  e: StepEventOf<"checkWave">,
  wave: WaveState,
  set: CommandSet | undefined,
  now: number,
): WaveState {
  if (wave.action === "SLEEP") {
    if (now < wave.deadline) {
      return awaiting(
        e.settings,
        { ...wave, polls: wave.polls + 1, waitSeconds: Math.max(1, Math.ceil((wave.deadline - now) / 1000)) },
        now,
      );
    }
    return {
      ...wave,
      done: true,
      results: wave.componentIds.map((componentId) => ({ componentId, ok: true })),
    };
  }
  const address = waveAddress(e.taskId, wave);
  const verdicts = wave.componentIds.map((componentId) => {
    const record = commandRecord(set, address, componentId);
    const type = wave.types[componentId] as ComponentType;
    if (wave.action === "UPDATE_FIRMWARE") {
      return verdict(
        componentId,
        type,
        record,
        wave.versions[componentId] ?? "",
        { updateTimeoutSeconds: wave.timeoutSeconds },
        wave.deadline,
        now,
        wave.subTargets?.[componentId],
        wave.laterReadBack === true,
      );
    }
    const expected = wave.action === "VERIFY_VERSION" || wave.readBack === true;
    const check = {
      step: QUERY_STEP_NAMES[wave.action as keyof typeof QUERY_STEP_NAMES],
      ...(expected ? { expected: wave.versions[componentId] ?? "" } : {}),
      timeoutSeconds: wave.timeoutSeconds,
    };
    return queryVerdict(componentId, type, record, check, wave.deadline, now);
  });
  if (verdicts.some((v) => v === "pending")) {
    const polls = wave.polls + 1;
    // Where the pending updates are: their progress says when the wave can be done at the earliest.
    const pending: PendingCommand[] = [];
    wave.componentIds.forEach((componentId, i) => {
      const entry = set?.entries[entryKey(address, componentId)];
      if (verdicts[i] === "pending" && entry !== undefined) pending.push(entry);
    });
    return awaiting(
      e.settings,
      {
        ...wave,
        done: false,
        polls,
        waitSeconds: nextCheckWaitSeconds(e.settings, polls, wave.deadline, now, pending),
      },
      now,
    );
  }
  return { ...wave, done: true, results: verdicts as ComponentResult[] };
}

/**
 * Ends the step (from checkWave; the FinishWave state of executions of the definition before calls
 * it directly). Failures with retries left → the same step again for those components;
 * failures without → ComponentsFailed (nothing after runs; a verify step's failures are written
 * to the report, an update's are in its entries already). Else the cursor of the next step, wave
 * or stage.
 */
export async function finishWave(deps: StepDeps, event: StepEventOf<"finishWave">): Promise<WaveCursor> {
  const e = { ...event, groups: currentGroups(event.groups, event.settings) };
  const cursor = currentCursor(event.cursor);
  const wave = currentWave(event.wave, event.settings);
  const results = wave.results ?? [];
  const byId = new Map(results.map((r) => [r.componentId, r]));
  const failed = results.filter((r) => !r.ok);
  const step = e.groups[cursor.group]?.steps[cursor.step];
  const retry = step?.retry !== undefined && failed.length > 0 && cursor.attempt < step.retry.maxRetries;
  // An update's outcome is its entries in the update set, which Task.report folds in (live, and
  // for good with the verified versions on inventory at the task's end: outcome.ts), so an update
  // step writes nothing here. A verify step that fails for good marks its components FAILED in
  // the report; a sleep, a passed verify and a failure about to be retried write nothing.
  if (wave.action !== "UPDATE_FIRMWARE" && failed.length > 0 && !retry) {
    await updateTask(deps, e.taskId, (t, now) => {
      const r = parseReport(t.report);
      for (const c of r.components) {
        const result = byId.get(c.id);
        if (result === undefined || result.ok) continue;
        c.error = { name: result.error?.Error ?? "Error", message: causeText(result.error) };
        c.status = "FAILED";
        c.finishedAt = now;
      }
      t.report = serializeReport(r);
      return t;
    });
  }
  if (retry && step?.retry !== undefined) {
    const attempt = cursor.attempt + 1;
    deps.logger.warn("task step failed; retrying", {
      taskId: e.taskId,
      action: step.action,
      failed: failed.length,
      attempt,
      maxRetries: step.retry.maxRetries,
    });
    return {
      ...cursor,
      attempt,
      more: true,
      retry: true,
      waitSeconds: retryWaitSeconds(step.retry, attempt),
      only: failed.map((f) => f.componentId),
    };
  }
  if (failed.length > 0) {
    const failures = failed.map((r) => causeText(r.error));
    const kinds = [...new Set(failed.map((r) => wave.types[r.componentId]))];
    const kind = kinds.length === 1 ? `${kinds[0]} ` : "";
    const more = failures.length > 1 ? `; ${failures.length - 1} more ${kind}component(s) failed` : "";
    throw new StepError("ComponentsFailed", `${failures[0]}${more}`);
  }
  return nextCursor(e.groups, cursor);
}

/** The next step of the wave, else the next wave's first step, else the next group's. */
export function nextCursor(groups: readonly UpgradeGroup[], cursor: WaveCursor): WaveCursor {
  const group = groups[cursor.group];
  const size = Math.max(1, Math.floor(group?.maxParallel ?? 1));
  const steps = group?.steps.length ?? 0;
  const groupSize = group?.componentIds.length ?? 0;
  const next =
    cursor.step + 1 < steps
      ? { group: cursor.group, wave: cursor.wave, step: cursor.step + 1 }
      : (cursor.wave + 1) * size < groupSize
        ? { group: cursor.group, wave: cursor.wave + 1, step: 0 }
        : { group: cursor.group + 1, wave: 0, step: 0 };
  return { ...next, attempt: 0, more: next.group < groups.length, retry: false, waitSeconds: 0 };
}
