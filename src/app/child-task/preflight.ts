/**
 * The preflight: AcquireLock, once it has the lock, makes the first ask of every component's BMC
 * for its running version (`acquireLockAndAsk`; with `ask` "wait" AwaitPreflight sends it, the
 * queries and its token in one write; without, the definitions before, AcquireLock sends it, and
 * SendQueries did before that), AwaitPreflight waits until the receiver has stored the answers
 * (`awaitQueries`), CheckPreflight reads them (and polls,
 * Wait ◄─► CheckPreflight, when the wait timed out with some missing, until the preflight's
 * deadline), then requires every component it is about to flash to be ready, records each version
 * in the report, skips components already at their target (unless override_version_check), and
 * returns the upgrade groups: the task's rule's stages (src/domain/operation-rules.ts; the
 * built-in default is one stage per type in UPGRADE_GROUP_ORDER), each with its components still
 * to flash and what its waves need of the task (`facts`: types, target versions, sub-targets,
 * run, lock lease, and the images its updates carry, looked up once for the whole task), so no
 * wave reads the task or the image catalog again. With `sendFirst` it also starts the task's
 * first step in the same call, so the execution goes straight to AwaitWave: "wait" (the
 * definition's CheckPreflight) makes it for AwaitWave to send (waves.ts `planWave`), `true` (the
 * definitions before) sends it (`sendWave`).
 *
 * Readiness (src/domain/readiness.ts): a component to flash is ready when the inventory says so
 * (READY, the default) and its BMC's answer did not say `ready: false`. While some are not, the
 * loop goes on (Wait ◄─► CheckPreflight): the inventory is read again each round and each BMC that
 * said it was not ready is asked again (a new query attempt), until the readiness timeout; then
 * the target fails with ComponentNotReady, `component <id> (<TYPE>) not ready: <reason>`. The
 * timeout is the rule's readinessTimeoutSeconds, else the deployment's. With
 * override_readiness_check nothing waits: a warning naming those components goes to the log and
 * the task report, and they are flashed.
 */
import {
  type CommandSet,
  commandRecord,
  entryKey,
  queryAddress,
  wakeDue,
} from "../../domain/command-sets.js";
import { awaitSeconds, nextWaitSeconds } from "../../domain/component-verdict.js";
import type { ComponentType } from "../../domain/model.js";
import { DEFAULT_RULE } from "../../domain/operation-rules.js";
import { priorVersionsOf } from "../../domain/prior-versions.js";
import {
  type NotReady,
  notReadyMessage,
  notReadyReason,
  readinessOverrideWarning,
} from "../../domain/readiness.js";
import { componentLabel, StepError } from "../../domain/step-errors.js";
import type { Task } from "../../domain/task.js";
import { parseReport, serializeReport, type TaskReport, targetOf } from "../../domain/task-report.js";
import { taskKeys } from "../observability.js";
import type { SaveTaskOutcome } from "../ports.js";
import { awaitEntries, sendCommands } from "./commands.js";
import type { StepDeps } from "./deps.js";
import { type FlashedComponent, planImages, readRackAndImages, toFlash } from "./images.js";
import { takeLock } from "./lock.js";
import { carriedImageKeys, readPreflight } from "./preflight-read.js";
import { isRackCycle, shelfIn } from "./rack-cycle.js";
import type {
  AcquireLockResult,
  ChildTaskSettings,
  PreflightResult,
  PreflightState,
  StepEventOf,
  UpgradeGroup,
  WaveCursor,
} from "./settings.js";
import { isTerminalTask, loadTask, updateTask } from "./task-item.js";
import { groupFacts, planWave, sendWave } from "./waves.js";

function reportOf(task: Task): TaskReport {
  try {
    return parseReport(task.report);
  } catch (err) {
    throw new StepError(
      "TaskMisconfigured",
      `task ${task.id} has no readable report: ${(err as Error).message}`,
    );
  }
}

/** Where each of these components is in the rack's inventory; undefined unless every one is there. */
function positionsOf(
  rack: readonly { id: string }[],
  componentIds: readonly string[],
): Record<string, number> | undefined {
  const index = new Map(rack.map((c, i) => [c.id, i] as const));
  const at: Record<string, number> = {};
  for (const id of componentIds) {
    const i = index.get(id);
    if (i === undefined) return undefined;
    at[id] = i;
  }
  return at;
}

const flashes = (group: UpgradeGroup): boolean => group.steps.some((s) => s.action === "UPDATE_FIRMWARE");

/** The components a group's update steps flash, as its facts say; none for a group without one. */
function flashedBy(group: UpgradeGroup): FlashedComponent[] {
  const facts = group.facts;
  if (facts === undefined || !flashes(group)) return [];
  return group.componentIds.map((id) => {
    const parts = facts.subTargets?.[id];
    return {
      id,
      type: facts.types[id] as ComponentType,
      version: facts.versions[id] ?? "",
      ...(parts === undefined ? {} : { subTargets: parts }),
    };
  });
}

/**
 * Asks these components again (attempt `attempt`) through the task's query set: one write for the
 * entries, each query published once (commands.ts). Returns the earliest deadline the entries
 * carry (a retried step keeps the first one).
 */
async function ask(
  deps: StepDeps,
  { id: taskId, rackId }: Pick<Task, "id" | "rackId">,
  componentIds: readonly string[],
  attempt: number,
  deadline: number,
  wait?: { token: string },
): Promise<{ deadline: number; set: CommandSet }> {
  const address = queryAddress(taskId, attempt);
  const set = await sendCommands(
    deps,
    taskId,
    "q",
    componentIds.map((componentId) => ({ componentId, address })),
    { sentAt: deps.clock(), deadline },
    (componentId, requestId) =>
      deps.publisher.publish({ rackId, componentId }, { v: 1, type: "query", requestId }),
    wait,
    rackId,
  );
  const earliest = componentIds.reduce(
    (min, id) => Math.min(min, set.entries[entryKey(address, id)]?.deadline ?? deadline),
    deadline,
  );
  return { deadline: earliest, set };
}

/**
 * The preflight's first step: every component asked for its version (attempt 0). What comes back
 * names them (`asked`) for AwaitPreflight, and how long it waits for their answers before its
 * check runs anyway (`awaitSeconds`: as a wave's, at most until the deadline).
 */
async function startPreflight(
  deps: StepDeps,
  task: Task,
  settings: ChildTaskSettings,
  send = true,
): Promise<PreflightState> {
  const deadline = deps.clock() + settings.preflightTimeoutSeconds * 1000;
  // Made, not sent (the definition's AcquireLock): AwaitPreflight sends them with its token.
  const first = send ? (await ask(deps, task, task.componentIds, 0, deadline)).deadline : deadline;
  const now = deps.clock();
  const waitSeconds = nextWaitSeconds(settings, 0, first, now);
  const imageKeys = carriedImageKeys(task);
  return {
    done: false,
    deadline: first,
    polls: 0,
    waitSeconds,
    asked: [...task.componentIds],
    awaitSeconds: awaitSeconds(settings, waitSeconds, first, now),
    ...(send ? {} : { unsent: true }),
    ...(imageKeys === undefined ? {} : { imageKeys }),
  };
}

/**
 * AwaitPreflight: the execution waits (a `.waitForTaskToken` Task) until every component asked
 * has answered (commands.ts `awaitEntries`: the token on the task's query set, the receiver wakes
 * it), then CheckPreflight runs; not woken by `awaitSeconds`, CheckPreflight runs anyway. Waiting
 * for the answers rather than for a first poll (pollSeconds, 10 s) spares each task most of a
 * poll when the BMCs answer at once. Only the first ask is awaited: a BMC asked again while it is not ready answers at
 * once, and that loop is paced by WaitForPreflight. A first ask AcquireLock made but did not send
 * (`unsent`, with the rack in the Payload) is sent here: its queries and the token in one write.
 */
export async function awaitQueries(
  deps: StepDeps,
  e: StepEventOf<"awaitQueries">,
): Promise<{ woken: boolean }> {
  const address = queryAddress(e.taskId, e.preflight.attempt ?? 0);
  const asked = e.preflight.asked ?? [];
  if (e.preflight.unsent === true && e.rackId !== undefined) {
    // AcquireLock made the first ask: its queries and this wait's token in one write, then sent.
    const { set } = await ask(deps, { id: e.taskId, rackId: e.rackId }, asked, 0, e.preflight.deadline, {
      token: e.token,
    });
    return { woken: deps.waveWaker !== undefined && wakeDue(set) !== undefined };
  }
  const keys = asked.map((componentId) => entryKey(address, componentId));
  return awaitEntries(deps, e.taskId, "q", { token: e.token, keys });
}

/**
 * AcquireLock (lock.ts), and once the lock is taken the preflight's first ask, with the task as it
 * stands then (the one the execution's input carried, or read; lock.ts `carriedTask`): made (`ask` "wait": AwaitPreflight sends it) or sent in the same invocation
 * (beside the RUNNING write; the definitions before). Its result is the preflight's poll state (the definition's AwaitPreflight follows; WaitForPreflight in the
 * definition before). Executions of the definition before, which have a SendQueries state of
 * their own, find the queries already published there and send nothing again.
 */
export async function acquireLockAndAsk(
  deps: StepDeps,
  e: StepEventOf<"acquireLock">,
): Promise<AcquireLockResult> {
  const { result, locked } = await takeLock(deps, e, (task) =>
    startPreflight(deps, task, e.settings, e.ask !== "wait"),
  );
  if (result.status !== "acquired" || locked === undefined) return result;
  return { ...result, ...locked };
}

/** SendQueries, for executions of the definition before AcquireLock asked the BMCs itself. */
export async function sendQueries(deps: StepDeps, e: StepEventOf<"sendQueries">): Promise<PreflightState> {
  return startPreflight(deps, await loadTask(deps, e.taskId), e.settings);
}

export async function checkQueries(deps: StepDeps, e: StepEventOf<"checkQueries">): Promise<PreflightResult> {
  // After its wait the first ask is no longer to be sent by one.
  const { unsent, ...p } = e.preflight;
  // The task, its answers and its update set's first record: one read; the rack and the images
  // AcquireLock named in it too, where the catalog can (readPreflight).
  const {
    task,
    sets: { q: set, u: updatesBefore },
    rack: rackRead,
  } = await readPreflight(deps, e.taskId, e.rackId, p.imageKeys);
  const report = reportOf(task);
  const rule = task.rule ?? DEFAULT_RULE;
  // Components asked again while the task waits for them to be ready: their latest attempt counts.
  const requery: Record<string, string> = p.requery ?? {};
  const answer = (id: string) =>
    commandRecord(set, queryAddress(task.id, id in requery ? (p.attempt ?? 0) : 0), id)?.status;
  const now = deps.clock();
  const first = queryAddress(task.id, 0);
  if (unsent === true && (p.asked ?? []).some((id) => set?.entries[entryKey(first, id)] === undefined)) {
    // Never sent: AwaitPreflight failed (or timed out) before its write. Asked here, as AcquireLock
    // of the definition before would have; the poll waits for the answers.
    const asked = await ask(deps, task, p.asked ?? [], 0, now + e.settings.preflightTimeoutSeconds * 1000);
    const polls = p.polls + 1;
    return {
      ...p,
      deadline: asked.deadline,
      done: false,
      polls,
      waitSeconds: nextWaitSeconds(e.settings, polls, asked.deadline, now),
    };
  }
  const missing = report.components.filter((c) => answer(c.id) === undefined && !(c.id in requery));
  if (missing.length > 0) {
    if (now < p.deadline) {
      const polls = p.polls + 1;
      return { ...p, done: false, polls, waitSeconds: nextWaitSeconds(e.settings, polls, p.deadline, now) };
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

  // Readiness of what is about to be flashed: components not already at their version.
  const atVersion = (c: TaskReport["components"][number]) =>
    answer(c.id)?.version === targetOf(report, c) && !report.overrideVersionCheck;
  // Once every answer is in: the rack's components as the inventory holds them (their readiness,
  // and where each one is, kept in the plan for the outcome's write of the verified versions)
  // and, in the same read, the images of every component the task may flash (those still to
  // flash, whatever their stage's steps). Read with the task already where the state named the
  // images (a poll that finds answers missing then read them for nothing, in the same request);
  // else read here (a poll that finds some missing reads nothing more).
  const { rack, read: imagesRead } =
    rackRead ??
    (await readRackAndImages(
      deps,
      task.rackId,
      report.components.filter((c) => c.status === "PENDING" && !atVersion(c)).map((c) => toFlash(report, c)),
    ));
  const inventory = new Map(
    rack.flatMap((c) => (c.readiness === undefined ? [] : [[c.id, c.readiness] as const])),
  );
  const notReady: NotReady[] = report.components.flatMap((c) => {
    if (c.status !== "PENDING" || atVersion(c)) return [];
    // A BMC asked again that has not answered yet is still as it last said.
    const bmc = answer(c.id) ?? { ready: false, reason: requery[c.id] ?? "" };
    const reason = notReadyReason(inventory.get(c.id), bmc);
    return reason === undefined ? [] : [{ id: c.id, type: c.type, reason }];
  });
  if (notReady.length > 0 && report.overrideReadinessCheck !== true) {
    const timeout = rule.readinessTimeoutSeconds || e.settings.readinessTimeoutSeconds;
    const readyDeadline = p.readyDeadline ?? now + timeout * 1000;
    if (now >= readyDeadline) throw new StepError("ComponentNotReady", notReadyMessage(notReady));
    if (p.readyDeadline === undefined) {
      deps.logger.info("task waiting for components to be ready", {
        ...taskKeys(task),
        timeoutSeconds: timeout,
        notReady: notReadyMessage(notReady),
      });
    }
    const again: Record<string, string> = {};
    for (const c of notReady) {
      const said = answer(c.id) ?? (c.id in requery ? { ready: false, reason: requery[c.id] } : undefined);
      if (said?.ready === false) again[c.id] = said.reason ?? "";
    }
    const attempt = (p.attempt ?? 0) + 1;
    await ask(deps, task, Object.keys(again), attempt, readyDeadline);
    const polls = p.polls + 1;
    return {
      ...p,
      done: false,
      polls,
      waitSeconds: nextWaitSeconds(e.settings, polls, readyDeadline, now),
      readyDeadline,
      attempt,
      requery: again,
    };
  }
  const warning = notReady.length > 0 ? readinessOverrideWarning(notReady) : undefined;
  if (warning !== undefined) deps.logger.warn("readiness check overridden", { ...taskKeys(task), warning });

  // A run child keeps what each component ran on its target before anything is flashed: the
  // first flash follows this step, and a rollback run reads them from there. Where the store can
  // (TaskStore.saveTaskWithPriorVersions), in the report's own write: one transaction, both or
  // neither, the versions those of the report as saved (a task that moved is read again and its
  // versions made again). Otherwise (a task that is no run child, a store without it) the report
  // is saved alone and the versions are recorded after it, below.
  const withPriors = deps.tasks.saveTaskWithPriorVersions;
  let priorsKept = false;
  const save = async (next: Task, expectedUpdatedAt: number): Promise<SaveTaskOutcome | "target-gone"> => {
    if (withPriors === undefined || next.runId === undefined || next.targetId === undefined)
      return deps.tasks.saveTask(next, expectedUpdatedAt);
    const saved = await withPriors.call(deps.tasks, next, expectedUpdatedAt, {
      runId: next.runId,
      targetId: next.targetId,
      priors: priorVersionsOf(parseReport(next.report)),
    });
    priorsKept = saved === "saved";
    return saved;
  };
  const targetGone = (t: Task) =>
    new StepError("TaskMisconfigured", `task ${t.id}: its run's target ${t.targetId} is gone`);
  const { task: updated, refused } = await updateTask(
    deps,
    task.id,
    (t) => {
      const r = parseReport(t.report);
      for (const c of r.components) {
        const version = answer(c.id)?.version;
        if (version === undefined) continue;
        c.versionBefore = version;
        if (version === targetOf(r, c) && !r.overrideVersionCheck && c.status === "PENDING") {
          c.status = "SKIPPED";
        }
      }
      if (warning !== undefined) r.warnings = [...(r.warnings ?? []), warning];
      t.report = serializeReport(r);
      return t;
    },
    task,
    save,
  );
  // No target for the versions: nothing written, the task as it was.
  if (refused === "target-gone") throw targetGone(updated);
  const final = parseReport(updated.report);
  // A task that ended meanwhile was not written, and its target gets nothing either.
  const { runId, targetId } = updated;
  if (runId !== undefined && targetId !== undefined && !priorsKept && !isTerminalTask(updated)) {
    const kept = await deps.runs.recordPriorVersions(runId, targetId, priorVersionsOf(final));
    if (kept === "not-found") throw targetGone(updated);
  }
  // Each stage's updates go in its part of the update set, unless updates were sent before parts
  // (an execution re-driven across the deploy): they stay in the set's first record, so every
  // update keeps its entry and its request id (a BMC that has it flashes nothing again).
  const parted = Object.keys(updatesBefore?.entries ?? {}).length === 0;
  // The rule's stages, each with its components still to flash (stage types in order, then by id).
  const unplanned: UpgradeGroup[] = isTerminalTask(updated)
    ? []
    : rule.stages.flatMap((stage, index) => {
        const componentIds = stage.componentTypes.flatMap((type) =>
          final.components.filter((c) => c.type === type && c.status === "PENDING").map((c) => c.id),
        );
        if (componentIds.length === 0) return [];
        const maxParallel = Math.max(1, Math.floor(stage.maxParallel || e.settings.maxParallel));
        const facts = groupFacts(updated, final, componentIds, e.settings);
        const inventoryAt = positionsOf(rack, componentIds);
        if (inventoryAt !== undefined) facts.inventoryAt = inventoryAt;
        const group: UpgradeGroup = {
          stage: index,
          name: stage.name,
          componentIds,
          maxParallel,
          steps: stage.steps,
          facts,
        };
        return [parted ? { ...group, part: index } : group];
      });
  // A whole-rack AC cycle needs the rack's power shelf (in the rack already read): a rack without
  // one fails here, before anything is flashed, rather than with its trays flashed and never
  // activated. Then the images of every update the task will send, as read with the rack (or one
  // read of the catalog), frozen into the groups' facts (images.ts), so no flash step reads it;
  // an image missing fails here too.
  if (unplanned.some((g) => g.steps.some(isRackCycle))) shelfIn(task.rackId, rack);
  const images = await planImages(deps, unplanned.map(flashedBy), imagesRead);
  const groups = unplanned.map((g, i) =>
    g.facts === undefined || !flashes(g) ? g : { ...g, facts: { ...g.facts, images: images[i] ?? [] } },
  );
  deps.logger.info("task preflight done", {
    ...taskKeys(task),
    toUpdate: groups.reduce((n, g) => n + g.componentIds.length, 0),
    alreadyAtTarget: final.components.filter((c) => c.status === "SKIPPED").length,
    targetVersion: final.targetVersion ?? "their version",
  });
  const cursor: WaveCursor = {
    group: 0,
    wave: 0,
    step: 0,
    attempt: 0,
    more: groups.length > 0,
    retry: false,
    waitSeconds: 0,
  };
  const result = { done: true, deadline: p.deadline, polls: p.polls, waitSeconds: 1, groups, cursor };
  if ((e.sendFirst !== true && e.sendFirst !== "wait") || !cursor.more) return result;
  // The first step starts here rather than in a SendWave state: one invocation and two state
  // transitions (MoreWaves?, SendWave) fewer per task. A retried check finds the same answers,
  // makes the same groups and sends the same commands under the same request ids (sendWave), so
  // nothing is flashed twice; a cancel meanwhile closed the set: TaskEnded, nothing sent. With
  // "wait" it only makes the step: AwaitWave sends it, with its token in the same write.
  const wave = await (e.sendFirst === "wait" ? planWave : sendWave)(deps, {
    step: "sendWave",
    taskId: e.taskId,
    settings: e.settings,
    rackId: updated.rackId,
    groups,
    cursor,
  });
  return { ...result, wave };
}
