/**
 * CheckWave: judges one step of one wave from what its BMCs reported (the answers its wake-up
 * brought, else one read of the wave's record): each component gets its verdict
 * (src/domain/component-verdict.ts); a wave with components pending waits again, one whose every
 * component has a verdict is ended in the same call (wave-cursor.ts `finishWave`: the next cursor,
 * a retry, or ComponentsFailed) and, when the next cursor is a step to run now, that step is
 * made in the same call too (`sendNext` "wait": AwaitWave sends it; `true`, the definition before:
 * sent here). A wave that comes back unsent (its wait failed before its write) is sent here. The
 * last step of the last wave reads the task with it and records the task's outcome there.
 */
import { type CommandFamily, type CommandSet, commandRecord, entryKey } from "../../domain/command-sets.js";
import {
  type ComponentResult,
  nextCheckWaitSeconds,
  nextWaitSeconds,
  type PendingCommand,
  type QueryStepName,
  queryVerdict,
  verdict,
} from "../../domain/component-verdict.js";
import type { ComponentType } from "../../domain/model.js";
import type { RuleAction } from "../../domain/operation-rules.js";
import type { Task } from "../../domain/task.js";
import { completionMessage } from "../../domain/task-report.js";
import type { StepDeps } from "./deps.js";
import { externalCheckDue } from "./external-check-due.js";
import { recordTaskOutcome } from "./outcome.js";
import {
  type ChildTaskSettings,
  currentCursor,
  currentGroups,
  currentWave,
  type StepEventOf,
  type UpgradeGroup,
  type WavePlan,
  type WaveState,
} from "./settings.js";
import { isTerminalTask, loadTaskWith } from "./task-item.js";
import { finishWave, nextCursor } from "./wave-cursor.js";
import { awaiting } from "./wave-wait.js";
import { answersComplete, familyOf, planWave, sendWave, waveAddress } from "./waves.js";

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

/** The update set's parts a plan's waves store their updates in. */
const planParts = (groups: readonly UpgradeGroup[]): number[] =>
  groups.flatMap((g) => (g.part === undefined ? [] : [g.part]));

/**
 * Reads the wave's commands (one read): done once every component has a verdict (answer, result or
 * timeout), and then finished at once (finishWave: the next cursor, or ComponentsFailed), so the
 * plan comes back with the wave and its next cursor; with `sendNext`, the next step already made
 * (the plan's wave is then that step's, pending: unsent with "wait", sent with `true`). Else the next check after the backoff, or
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
  // What the wake-up brought is this check's alone: the wave goes on without it; and after the
  // wait, the wave is no longer to be sent by one.
  // A woken wave carries its own cursor (its wait's resume: `$.plan.cursor` may be a step behind)
  // and the judging wait's marks: the plan goes on with the cursor, the wave without them.
  const {
    answers,
    unsent,
    cursor: waveCursor,
    checkNeeded,
    ended: _,
    ...wave
  } = currentWave(e.wave, e.settings);
  const family = familyOf(wave.action);
  const planCursor = waveCursor ?? e.cursor;
  const plan =
    e.groups === undefined || planCursor === undefined || e.rackId === undefined
      ? undefined
      : { groups: e.groups, cursor: planCursor, rackId: e.rackId };
  const last =
    plan !== undefined &&
    !nextCursor(currentGroups(plan.groups, e.settings), currentCursor(plan.cursor)).more &&
    externalCheckDue(deps, currentGroups(plan.groups, e.settings), currentCursor(plan.cursor)) === undefined;
  // What the wake-up brought, when it is this wave's and complete: no read of the wave's record.
  const woken = family === undefined ? undefined : answersFor(e.taskId, family, wave, answers);
  // One read: the wave's set, and on the last step the task and its whole update set with it.
  const read = last
    ? await lastRead(deps, e.taskId, currentGroups(plan.groups, e.settings), wave)
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
  if (unsent === true && plan !== undefined && family !== undefined && !allStored(e.taskId, wave, set)) {
    // Never sent: its wait failed (or timed out) before it wrote the commands. Sent now, from a
    // fresh window, as SendWave would; the wait that follows stores its token alone. Commands a
    // wait stored and published keep their entries and request ids (sendCommands).
    const next = await sendWave(deps, { step: "sendWave", taskId: e.taskId, settings: e.settings, ...plan });
    return { groups: plan.groups, cursor: plan.cursor, wave: next };
  }
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
  if (read === undefined || cursor.more || cursor.retry) {
    // A rack handed to an external check waits for its verdict (AwaitExternalCheck) before any next step.
    const starts = e.sendNext === true || e.sendNext === "wait";
    if (!starts || !cursor.more || cursor.retry || cursor.external !== undefined)
      return { groups: plan.groups, cursor, wave: judged };
    // The next step starts here rather than in a SendWave state: one invocation and two state
    // transitions fewer per step. A retried check judges the same answers to the same cursor and
    // sends the same commands again under the same request ids (sendWave), so nothing is flashed
    // twice. With "wait" it only makes the step: AwaitWave sends it, its token in the same write.
    const made = await (e.sendNext === "wait" ? planWave : sendWave)(deps, {
      step: "sendWave",
      taskId: e.taskId,
      settings: e.settings,
      rackId: plan.rackId,
      groups: plan.groups,
      cursor,
    });
    // A woken wave whose wait timed out or failed (not one its judging wait handed over: that one
    // sent nothing) may have had this next step sent by that wait's invocation (wave-judge.ts):
    // then it goes on from the deadline its stored commands carry, not from now.
    const mayBeSent = e.nextMayBeSent === true && answers !== undefined && checkNeeded === undefined;
    const next =
      mayBeSent && made.unsent === true ? await sentAlready(deps, e.taskId, e.settings, made) : made;
    return { groups: plan.groups, cursor, wave: next };
  }
  // Where the preflight saw each component in the inventory: the verified versions are written
  // there without a read of the rack (in the ending's own transaction, where the store can).
  const inventoryAt = Object.assign({}, ...plan.groups.map((g) => g.facts?.inventoryAt ?? {}));
  const ended = await recordTaskOutcome(deps, e.taskId, { ...success, inventoryAt }, read.task, {
    set: read.sets.u,
  });
  return { groups: plan.groups, cursor, wave: judged, ended: ended.status };
}

/**
 * The last check's read: the task and its whole update set (the set's first record if some group's
 * updates are there, and every stage's part), and the wave's own set when it is not an update's,
 * in ONE strongly consistent request (they share the Tasks table). The earlier stages' parts are
 * read strongly too, though they were judged a stage ago: a copy that could be stale would need a
 * check and a second read, and one request a rack is worth more than the read units of a few
 * parts of a few hundred bytes each.
 */
async function lastRead(
  deps: StepDeps,
  taskId: string,
  groups: readonly UpgradeGroup[],
  wave: WaveState,
): Promise<{ task: Task; sets: Partial<Record<CommandFamily, CommandSet>> }> {
  const family = familyOf(wave.action);
  const first: CommandFamily[] = groups.some((g) => g.part === undefined) ? ["u"] : [];
  const families: CommandFamily[] = family === undefined || family === "u" ? first : [family, ...first];
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
  return answersComplete(taskId, family, wave, answers) ? answers : undefined;
}

/** Whether every command of the wave has its entry in the set: its one write was made. */
function allStored(taskId: string, wave: WaveState, set: CommandSet | undefined): boolean {
  const address = waveAddress(taskId, wave);
  return wave.componentIds.every((id) => set?.entries[entryKey(address, id)] !== undefined);
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
 * A step planWave made (`unsent`) that a wait's judging invocation may have sent already (the
 * check after that wait timed out or failed: wave-check.ts `nextMayBeSent`): one read of its
 * record; when every command of it is stored, the step is sent, and it goes on as sent (no
 * `unsent`) with the latest deadline its commands carry and the wait's timeouts from it, so a BMC
 * that never answers is found at its command's deadline, not a whole timeout later. Else it is
 * returned as made: AwaitWave sends it. A sleep has no commands: as made.
 *   made at 1,000 s with timeout 1,800 s, commands stored at 940 s → deadline 2,740 s, not 2,800 s
 */
async function sentAlready(
  deps: StepDeps,
  taskId: string,
  settings: ChildTaskSettings,
  made: WaveState,
): Promise<WaveState> {
  const family = familyOf(made.action);
  if (family === undefined) return made;
  const set = await deps.commands.get(taskId, family, made.part);
  if (!allStored(taskId, made, set)) return made;
  const { unsent: _, ...wave } = made;
  const address = waveAddress(taskId, made);
  const deadline = Math.max(
    ...made.componentIds.map((id) => set?.entries[entryKey(address, id)]?.deadline ?? made.deadline),
  );
  const now = deps.clock();
  return awaiting(
    settings,
    { ...wave, deadline, waitSeconds: nextWaitSeconds(settings, 0, deadline, now) },
    now,
  );
}
