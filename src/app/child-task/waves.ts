/**
 * The upgrade loop: for each group (a stage of the task's rule, in the rule's order), for each
 * wave of ≤ maxParallel of its components, for each step of the stage:
 * AwaitWave sends the step (its commands and its wait's token in one write, then published) and
 * waits for its results, woken by the receiver when the last is stored (or by its timeout); woken,
 * its next invocation judges the step and sends the next (wave-judge.ts), or hands it to
 * CheckWave (wave-check.ts: a retry, an external check, a sleep next, and after a timeout), which
 * ends the wave (wave-cursor.ts `finishWave`) and makes the next step (`planWave`). This file
 * makes a step (`planWave`), sends one (SendWave after a retry's backoff, and the checks of the
 * definitions before) and waits for it (AwaitWave; its timing and resume: wave-wait.ts). Wave w of group g is
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
 *                        with the BMC's versions once it is back; kept in the verify set. A
 *                        whole-rack AC_CYCLE (acScope RACK): one `reset` of kind rack to the rack's
 *                        power shelf, judged by the shelf's answer (rack-cycle.ts)
 *   WAIT_BRING_UP        one query per component: it must answer with its versions in time
 * The stage's read-back step (operation-rules.ts `readBackStep`) must find the target active:
 * NotActivated when it is only pending (staged), VersionMismatch when it is neither.
 */

import type { ResetCommand, ResetKind, UpdateCommand } from "../../domain/bmc-protocol.js";
import {
  type CommandFamily,
  type CommandSet,
  entryKey,
  isAnswered,
  updateAddress,
  verifyAddress,
  type WaitToStore,
  wakeDue,
} from "../../domain/command-sets.js";
import { nextWaitSeconds, secretFor } from "../../domain/component-verdict.js";
import type { ComponentType, FirmwareAuthentication } from "../../domain/model.js";
import { type RuleAction, type RuleStep, readBackStep } from "../../domain/operation-rules.js";
import { StepError } from "../../domain/step-errors.js";
import type { Task } from "../../domain/task.js";
import { parseReport, type TaskReport, targetOf } from "../../domain/task-report.js";
import { awaitEntries, sendCommands } from "./commands.js";
import type { StepDeps } from "./deps.js";
import { commandImages, type SentImage } from "./images.js";
import { knownLeaseEnd, renewLockIfNeeded } from "./lock.js";
import { isRackCycle, powerShelfOf } from "./rack-cycle.js";
import {
  type ChildTaskSettings,
  currentCursor,
  currentGroups,
  type GroupFacts,
  type StepEventOf,
  type UpgradeGroup,
  type WaveCursor,
  type WaveState,
} from "./settings.js";
import { isTerminalTask, loadTask } from "./task-item.js";
import { awaiting, bareWave, resumeFor, timeoutOf, waitHeartbeat } from "./wave-wait.js";

/** The cursor's group, step and wave components (only those retried, on a retry). */
function waveOf(
  groups: UpgradeGroup[],
  cursor: WaveCursor,
): { group: UpgradeGroup; step: RuleStep; componentIds: string[] } {
  const group = groups[cursor.group];
  const size = Math.max(1, Math.floor(group?.maxParallel ?? 1));
  const wave = group?.componentIds.slice(cursor.wave * size, (cursor.wave + 1) * size) ?? [];
  const step = group?.steps[cursor.step];
  // A whole-rack cycle's retry is the shelf's again, for the whole wave (rack-cycle.ts).
  const componentIds =
    cursor.only === undefined || (step !== undefined && isRackCycle(step))
      ? wave
      : wave.filter((id) => cursor.only?.includes(id));
  if (group === undefined || step === undefined || componentIds.length === 0) {
    throw new Error(
      `no step ${cursor.step} of wave ${cursor.wave} in group ${cursor.group} of ${groups.length}`,
    );
  }
  return { group, step, componentIds };
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

/** A step of a wave made from the plan: its state, and what sending it needs. */
interface MadeWave {
  e: StepEventOf<"sendWave">;
  group: UpgradeGroup;
  step: RuleStep;
  facts: GroupFacts;
  /** The wave's state without its window (deadline, waits). */
  base: Omit<WaveState, "deadline" | "waitSeconds">;
  /** A whole-rack AC cycle's power shelf: the one component it resets (rack-cycle.ts). */
  shelf?: string;
}

/** The step the cursor names, made from the plan: no write, nothing sent. */
async function makeWave(deps: StepDeps, event: StepEventOf<"sendWave">): Promise<MadeWave> {
  const e = {
    ...event,
    groups: currentGroups(event.groups, event.settings),
    cursor: currentCursor(event.cursor),
  };
  const { group, step, componentIds: wave } = waveOf(e.groups, e.cursor);
  // A whole-rack AC cycle is one reset, to the rack's power shelf, for the wave (rack-cycle.ts).
  const shelf = isRackCycle(step) ? await powerShelfOf(deps, e.rackId) : undefined;
  const componentIds = shelf === undefined ? wave : [shelf];
  const facts = await factsOf(deps, e.taskId, group, e.settings);
  const pick = <T>(all: Record<string, T> | undefined) => {
    const picked: Record<string, T> = {};
    for (const id of componentIds) if (all?.[id] !== undefined) picked[id] = all[id];
    return picked;
  };
  const update = step.action === "UPDATE_FIRMWARE";
  const subTargets = pick(facts.subTargets);
  const readBack = readBackStep(group.steps);
  const base = {
    stage: group.stage,
    step: e.cursor.step,
    action: step.action,
    ...(update && readBack > e.cursor.step ? { laterReadBack: true } : {}),
    ...(!update && readBack === e.cursor.step ? { readBack: true } : {}),
    attempt: e.cursor.attempt,
    timeoutSeconds: timeoutOf(step, e.settings),
    ...(update && group.part !== undefined ? { part: group.part } : {}),
    componentIds,
    types: shelf === undefined ? pick(facts.types) : { [shelf]: "POWERSHELF" as const },
    versions: pick(facts.versions),
    ...(Object.keys(subTargets).length > 0 ? { subTargets } : {}),
    polls: 0,
    done: false,
  };
  return { e, group, step, facts, base, ...(shelf === undefined ? {} : { shelf }) };
}

/** Renews the rack lock when the step could outlast the lease (lock.ts: normally nothing is written). */
function renewFor(deps: StepDeps, made: MadeWave, now: number): Promise<unknown> {
  const { e, facts, base } = made;
  return renewLockIfNeeded(
    deps,
    { taskId: e.taskId, rackId: e.rackId, leaseEnd: facts.leaseEnd },
    e.settings,
    { components: base.componentIds.length, timeoutSeconds: base.timeoutSeconds },
    now,
  );
}

/**
 * Writes the step's commands (one write; with `wait`, the wait's token in it) and publishes them
 * (commands.ts `sendCommands`): `window` for entries not there yet, a retry keeping the first.
 * Not for a sleep, which has no commands.
 */
async function publishWave(
  deps: StepDeps,
  made: MadeWave,
  window: { sentAt: number; deadline: number },
  wait?: Omit<WaitToStore, "keys">,
) {
  const { e, step, facts, base, shelf } = made;
  const { componentIds, types, versions, subTargets = {}, timeoutSeconds } = base;
  const update = step.action === "UPDATE_FIRMWARE";
  const now = window.sentAt;
  // Every update command carries its image: a presigned GET valid until the wave's deadline, of
  // the record the preflight froze (a plan from before: read from the catalog here).
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
        facts.images,
      )
    : new Map<string, SentImage>();
  const address = update
    ? updateAddress(e.taskId, base.attempt, base.part)
    : verifyAddress(e.taskId, base.stage, base.step, base.attempt);
  // Credentials are read only when an update is about to go out.
  let auth: Promise<FirmwareAuthentication | undefined> | undefined;
  const set = await sendCommands(
    deps,
    e.taskId,
    update ? "u" : "v",
    componentIds.map((componentId) => ({ componentId, address })),
    window,
    async (componentId, requestId) => {
      const action = step.action;
      if (action === "RESET_BMC" || action === "POWER_CYCLE_HOST" || action === "AC_CYCLE") {
        const reset: ResetCommand = {
          v: 3,
          type: "reset",
          requestId,
          taskId: e.taskId,
          kind: shelf === undefined ? RESET_KIND[action] : "rack",
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
    wait,
    e.rackId,
  );
  return { set, address };
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
 * the Wait. SendWave, and the checks of the definitions before AwaitWave sent its step.
 */
export async function sendWave(deps: StepDeps, event: StepEventOf<"sendWave">): Promise<WaveState> {
  const { clock } = deps;
  const made = await makeWave(deps, event);
  const { e, base } = made;
  const now = clock();
  await renewFor(deps, made, now);
  const timeoutMs = base.timeoutSeconds * 1000;
  if (base.action === "SLEEP") {
    const deadline = now + timeoutMs;
    return awaiting(e.settings, { ...base, deadline, waitSeconds: Math.max(1, base.timeoutSeconds) }, now);
  }
  const { set, address } = await publishWave(deps, made, { sentAt: now, deadline: now + timeoutMs });
  // A retried Lambda keeps the first deadlines: the entries carry them.
  const deadline = Math.max(
    ...base.componentIds.map((id) => set.entries[entryKey(address, id)]?.deadline ?? now + timeoutMs),
  );
  const sent = clock();
  return awaiting(
    e.settings,
    { ...base, deadline, waitSeconds: nextWaitSeconds(e.settings, 0, deadline, sent) },
    sent,
  );
}

/**
 * The step the cursor names, made but not sent (the checks of the definition whose AwaitWave sends
 * its step): its window starts now, so AwaitWave's heartbeat and timeout are known before its
 * Lambda runs; `unsent` tells AwaitWave to write the commands with its token (one write) and
 * publish them, and the check after a wait that failed that they may not be out.
 */
export async function planWave(deps: StepDeps, event: StepEventOf<"sendWave">): Promise<WaveState> {
  const { e, base } = await makeWave(deps, event);
  const now = deps.clock();
  const deadline = now + base.timeoutSeconds * 1000;
  const waitSeconds =
    base.action === "SLEEP"
      ? Math.max(1, base.timeoutSeconds)
      : nextWaitSeconds(e.settings, 0, deadline, now);
  return { ...awaiting(e.settings, { ...base, deadline, waitSeconds }, now), unsent: true };
}

/**
 * Whether a wake-up's answers are this wave's and complete: the task's, the wave's family and
 * part, every entry the wave waits for answered (as the waker saw them stored).
 */
export function answersComplete(
  taskId: string,
  family: CommandFamily,
  wave: WaveState,
  answers: CommandSet | undefined,
): answers is CommandSet {
  if (answers?.taskId !== taskId || answers.family !== family || answers.part !== wave.part) return false;
  const address = waveAddress(taskId, wave);
  return wave.componentIds.every((id) => isAnswered(family, answers.entries?.[entryKey(address, id)]));
}

/** Where a wave's commands are: their family's address for this step and attempt (and part). */
export function waveAddress(taskId: string, wave: WaveState) {
  return wave.action === "UPDATE_FIRMWARE"
    ? updateAddress(taskId, wave.attempt, wave.part)
    : verifyAddress(taskId, wave.stage, wave.step, wave.attempt);
}

/**
 * AwaitWave: the execution waits (a `.waitForTaskToken` Task) until its wave's results are in
 * (commands.ts `awaitEntries`: the token on the wave's command set, the receiver wakes it). A
 * step its check made but did not send (`unsent`, with the plan in the Payload) is sent here
 * first, its commands and the token in one write (`sendAndAwait`). A sleep has no commands: its
 * wait's timeout is the sleep. The wait's heartbeat is stored with it (`waitHeartbeat`).
 */
export async function awaitWave(deps: StepDeps, e: StepEventOf<"awaitWave">): Promise<{ woken: boolean }> {
  const cursor = e.wave.cursor ?? e.cursor;
  if (e.wave.unsent === true && e.groups !== undefined && cursor !== undefined)
    return sendAndAwait(deps, e, { wave: e.wave, cursor, groups: e.groups });
  const family = familyOf(e.wave.action);
  if (family === undefined) return { woken: false };
  const address = waveAddress(e.taskId, e.wave);
  const keys = e.wave.componentIds.map((componentId) => entryKey(address, componentId));
  const resume = resumeFor(e, e.wave, cursor, e.groups);
  return awaitEntries(
    deps,
    e.taskId,
    family,
    {
      token: e.token,
      keys,
      ...waitHeartbeat(e.wave, deps.clock()),
      ...(resume === undefined ? {} : { resume }),
    },
    e.wave.part,
  );
}

/** The command family a step's commands are in; none for a sleep. */
export const familyOf = (action: RuleAction): CommandFamily | undefined =>
  action === "UPDATE_FIRMWARE" ? "u" : action === "SLEEP" ? undefined : "v";

/**
 * AwaitWave of a step its check made but did not send (`unsent`): the lock renewed if the step
 * could outlast it, then the step's commands and this wait's token in ONE conditional write (a
 * closed set refuses both: TaskEnded, nothing sent), then each command published. A retried wait
 * (a publish that failed, a Lambda error) has a new token, which the write replaces; the entries
 * stay, so only the commands not yet out nor answered are published again, under the same request
 * ids, and a wait whose entries were all answered already wakes itself.
 */
export async function sendAndAwait(
  deps: StepDeps,
  e: StepEventOf<"awaitWave">,
  planned: { wave: WaveState; cursor: WaveCursor; groups: UpgradeGroup[] },
): Promise<{ woken: boolean }> {
  const settings = e.settings as ChildTaskSettings;
  const groups = currentGroups(planned.groups, settings);
  const cursor = currentCursor(planned.cursor);
  const group = groups[cursor.group];
  const step = group?.steps[cursor.step];
  if (group === undefined || step === undefined)
    throw new Error(`no step ${cursor.step} in group ${cursor.group} of ${groups.length}`);
  // The check made the wave (its components, its window: the wait's timeouts follow from it).
  const wave = bareWave(planned.wave);
  const shelf = isRackCycle(step) ? wave.componentIds[0] : undefined;
  const made: MadeWave = {
    e: { step: "sendWave", taskId: e.taskId, settings, rackId: e.rackId as string, groups, cursor },
    group,
    step,
    facts: await factsOf(deps, e.taskId, group, settings),
    base: wave,
    ...(shelf === undefined ? {} : { shelf }),
  };
  const now = deps.clock();
  await renewFor(deps, made, now);
  if (familyOf(wave.action) === undefined) return { woken: false };
  const resume = resumeFor(e, wave, cursor, planned.groups);
  const wait = { token: e.token, ...waitHeartbeat(wave, now), ...(resume === undefined ? {} : { resume }) };
  const { set } = await publishWave(deps, made, { sentAt: now, deadline: wave.deadline }, wait);
  return { woken: deps.waveWaker !== undefined && wakeDue(set) !== undefined };
}
