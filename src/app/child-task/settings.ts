/**
 * The child task's contract with its state machine (state-machines/child-task.asl.json): the
 * tunables and input an execution starts with, and the event every Task state sends (`step` picks
 * the handler) with the results the states pass on.
 */
import type { CommandSet } from "../../domain/command-sets.js";
import type { ComponentResult } from "../../domain/component-verdict.js";
import type { PlannedImage } from "../../domain/firmware-images.js";
import type { ComponentType } from "../../domain/model.js";
import { RULE_LIMITS, type RuleAction, type RuleStep } from "../../domain/operation-rules.js";
import type { CaughtError } from "../../domain/step-errors.js";
import type { Task, TaskStatus } from "../../domain/task.js";

// ---------------------------------------------------------------------------------------------
// Execution input and settings

/** Tunables carried in the execution input, so tests and the local stack can shorten them. */
export interface ChildTaskSettings {
  /** Components of one stage flashed at once when the rule's stage says 0 (the default rule does). */
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
  /**
   * How long the preflight waits for components that are not ready (inventory or BMC) before it
   * fails the target; override_readiness_check skips the wait.
   */
  readinessTimeoutSeconds: number;
}

export const DEFAULT_CHILD_TASK_SETTINGS: Readonly<ChildTaskSettings> = {
  maxParallel: 8,
  pollSeconds: 10,
  maxPollSeconds: 60,
  updateTimeoutSeconds: 1800,
  preflightTimeoutSeconds: 60,
  queuePollSeconds: 30,
  readinessTimeoutSeconds: 600,
};

/** The settings a deployment may set (the CDK app's context, the deployables' environment). */
export type DeploymentChildTaskSettings = Pick<
  ChildTaskSettings,
  "maxParallel" | "updateTimeoutSeconds" | "preflightTimeoutSeconds" | "readinessTimeoutSeconds"
>;

/** Their bounds, inclusive: the same an operation rule's stage and steps may ask for. */
export const DEPLOYMENT_SETTING_BOUNDS: Readonly<
  Record<keyof DeploymentChildTaskSettings, readonly [number, number]>
> = {
  maxParallel: [1, RULE_LIMITS.maxParallel],
  updateTimeoutSeconds: [1, RULE_LIMITS.seconds],
  preflightTimeoutSeconds: [1, RULE_LIMITS.seconds],
  readinessTimeoutSeconds: [1, RULE_LIMITS.seconds],
};

/**
 * The execution input. Everything else (components, version, run) is read from the task item, or
 * taken from `task` where the submitter carried it.
 */
export interface ChildTaskInput {
  taskId: string;
  rackId: string;
  settings: ChildTaskSettings;
  /**
   * The task item as the submitter held it when it started the execution (just created, or as it
   * read it on a re-submission or a re-drive), version (`updatedAt`) included, when its JSON is
   * small (sfn-executor.ts `CARRIED_TASK_MAX_BYTES`); absent for a larger one and in the inputs
   * of submitters from before. AcquireLock (which gets the input whole, `$$.Execution.Input`)
   * starts from it instead of reading the task: its write is pinned on that version, so a task
   * that moved since costs a re-read, never a wrong start (lock.ts `carriedTask`).
   */
  task?: Task;
}

// ---------------------------------------------------------------------------------------------
// Step events (what the ASL's Parameters build) and results

export interface PollState {
  done: boolean;
  deadline: number;
  polls: number;
  waitSeconds: number;
}

type Base = { taskId: string; settings: ChildTaskSettings };

/**
 * How a check starts the next step: `true` (the definitions before) sends it itself (its commands
 * written, then published); `"wait"` (the definition as it is) makes it and leaves the sending to
 * AwaitWave's Lambda, which writes the commands with its task token in one write.
 */
export type SendNext = boolean | "wait";
export type StepEvent =
  /**
   * `ask: "wait"` (the definition as it is): once the lock is taken, the preflight's queries are
   * made, not sent (`unsent`): AwaitPreflight's Lambda sends them with its token in one write.
   * Absent (the definitions before): sent here.
   */
  /**
   * `input`: the execution's input (`$$.Execution.Input`, always there, whoever started it), for
   * the task it may carry (ChildTaskInput.task). Absent (the definitions before): the task is read.
   */
  | (Base & { step: "acquireLock"; rackId: string; ask?: "wait"; input?: Partial<ChildTaskInput> })
  | (Base & { step: "sendQueries" })
  /**
   * `rackId`: the task's rack (absent in the definition before); the check reads the rack's
   * readiness from the task it has read, with the images, so it no longer needs it.
   */
  | (Base & {
      step: "checkQueries";
      preflight: PreflightState;
      rackId?: string;
      /**
       * A done preflight with a step to run starts the task's first step in the same call
       * (SendWave's work), and the plan comes back with it pending (`wave`). Absent (the
       * definitions before, whose PreflightDone? leads to MoreWaves? and SendWave): not.
       */
      sendFirst?: SendNext;
    })
  | (Base & { step: "sendWave"; rackId: string; groups: UpgradeGroup[]; cursor: WaveCursor })
  /**
   * With the plan (rackId, groups, cursor), as the definition sends it: a done wave is finished in
   * the same call and the plan comes back (WavePlan). Without it (an execution of the definition
   * before, whose FinishWave state follows): the wave alone.
   */
  | (Base & {
      step: "checkWave";
      wave: WaveState;
      rackId?: string;
      groups?: UpgradeGroup[];
      cursor?: WaveCursor;
      /**
       * With the plan: a done wave whose next cursor is a step to run now (neither a retry nor the
       * end) starts that step in the same call (SendWave's work), and the plan comes back with it
       * pending. Absent (the definitions before, whose WaveDone? leads to a SendWave state): not.
       */
      sendNext?: SendNext;
      /**
       * The definition whose AwaitWave judges and sends the next step (`judge`): a woken wave
       * (with answers) that comes here after its wait timed out or failed may have had its next
       * step sent by that wait's invocation, so the next step made here takes the deadline its
       * stored commands carry (one read, on this path only). Absent: the definitions before.
       */
      nextMayBeSent?: boolean;
    })
  | (Base & {
      step: "finishWave";
      rackId: string;
      groups: UpgradeGroup[];
      cursor: WaveCursor;
      wave: WaveState;
    })
  /**
   * AwaitWave (a `.waitForTaskToken` Task): stores the execution's task token on the wave's command
   * set, where the receiver finds it, and wakes the execution at once when the results are already
   * in. Its return value is not the state's: the state ends with the wake-up or its timeout.
   */
  | {
      step: "awaitWave";
      taskId: string;
      token: string;
      wave: WaveState;
      /**
       * The plan, as the definition whose AwaitWave sends its step passes it: a wave its check
       * made but did not send (`unsent`) is sent here, its commands and this wait's token in one
       * write. Absent (the definitions before): the wave was sent, only the token is stored.
       */
      rackId?: string;
      settings?: ChildTaskSettings;
      groups?: UpgradeGroup[];
      cursor?: WaveCursor;
      /**
       * The definition whose AwaitWave judges the wave it was woken with (`true`): every wait
       * stores its wave's resume with its token, so the wake-up brings the wave back with its
       * answers; a woken wave (`answers`) is judged here and its next step sent by this same
       * wait (wave-judge.ts `judgeAndSend`). Absent (the definitions before): waits store no resume.
       */
      judge?: boolean;
      /**
       * The definition whose AwaitWave and AwaitNextWave go on to each other (`true`): what the
       * judge does not send ends its wait with an error its Catch routes (SendTaskFailure:
       * OutcomeRecorded → AlreadyFinished, StepHandedOver → CheckWave), as a woken wave no longer
       * passes a Choice. Absent (the definitions before, whose WaveDone? routes a woken wave):
       * the judge wakes its wait with the wave marked `ended` or `checkNeeded`.
       */
      exitsAsErrors?: boolean;
    }
  /** AwaitPreflight (a `.waitForTaskToken` Task, like AwaitWave): the first ask's answers. */
  /** `rackId` (the definition as it is): queries made but not sent (`unsent`) are sent here. */
  | { step: "awaitQueries"; taskId: string; token: string; preflight: PreflightState; rackId?: string }
  | { step: "recordOutcome"; taskId: string; error?: CaughtError }
  /**
   * AwaitExternalCheck (a `.waitForTaskToken` Task): hands the rack to the external check
   * `cursor.external` names, with the token the check answers with (external-check.ts).
   */
  | {
      step: "startExternalCheck";
      taskId: string;
      rackId: string;
      token: string;
      groups: UpgradeGroup[];
      cursor: WaveCursor;
      /** For the rack lock, which must outlast the wait. */
      settings: ChildTaskSettings;
    }
  /** JudgeExternalCheck: `checked` is the check's answer, or the wait's caught error. */
  | (Base & {
      step: "judgeExternalCheck";
      rackId: string;
      groups: UpgradeGroup[];
      cursor: WaveCursor;
      checked?: unknown;
    });

export type StepName = StepEvent["step"];
export type StepEventOf<S extends StepName> = Extract<StepEvent, { step: S }>;

export type AcquireLockResult =
  /**
   * With the preflight's poll state once its queries went out (preflight.ts `acquireLockAndAsk`:
   * the definition's AwaitPreflight reads it from `$.plan`).
   */
  | ({ status: "acquired" } & Partial<PreflightState>)
  | { status: "waiting"; waitSeconds: number }
  /** The task is already terminal (cancelled before it started): nothing to do. */
  | { status: "finished" };

/** One stage of the task's rule (src/domain/operation-rules.ts), resolved against its components. */
export interface UpgradeGroup {
  /** The stage's index in the rule, and its name, for messages. */
  stage: number;
  name: string;
  /** The stage's components still to flash, in the stage's type order, then by id. */
  componentIds: string[];
  /** Components per wave: the stage's maxParallel, or the deployment's when it says 0. */
  maxParallel: number;
  steps: RuleStep[];
  /**
   * What SendWave needs of the task, frozen by the preflight so that no wave reads it. Absent in
   * groups an execution made before (then SendWave reads the task).
   */
  facts?: GroupFacts;
  /**
   * The part of the task's update set its updates are stored in (src/domain/command-sets.ts): the
   * stage's index. Absent in groups made before parts, and for a task whose updates were sent
   * before them (the set's first record holds them): its updates stay there.
   */
  part?: number;
}

/** The task as the preflight left it, for the waves of one group. */
export interface GroupFacts {
  /** Component id → its type, the version it is upgraded to, the parts it is flashed with. */
  types: Record<string, ComponentType>;
  versions: Record<string, string>;
  subTargets?: Record<string, string[]>;
  /** The run whose credentials the updates carry; absent: the task's own. */
  runId?: string;
  /** Until when the rack lock is known held (lock.ts `knownLeaseEnd`); absent: not known. */
  leaseEnd?: number;
  /**
   * The images the group's updates carry, looked up once by the preflight (images.ts
   * `planImages`); absent in a group without an update step and in groups made before they were
   * frozen (then each flash step reads the catalog).
   */
  images?: PlannedImage[];
  /**
   * Each component's index in its rack's inventory (the components list of the rack's item) as
   * the preflight read it, for the outcome's write of the verified versions without a read
   * (FirmwareVersionRecorder `at`); absent in groups made before.
   */
  inventoryAt?: Record<string, number>;
}

/**
 * Where the upgrade loop is: group g (a stage), wave w of it, step s of that wave. A group is run
 * in waves of at most `maxParallel` components, wave w being
 * `groups[g].componentIds.slice(w·maxParallel, (w+1)·maxParallel)`, each wave through every step.
 * `retry`: step s of wave w failed for the components in `only` and is retried (attempt n) after
 * a Wait of `waitSeconds`; the state machine's MoreWaves? Choice reads it first.
 */
export interface WaveCursor {
  group: number;
  wave: number;
  step: number;
  attempt: number;
  more: boolean;
  retry: boolean;
  waitSeconds: number;
  only?: string[];
  /**
   * Set by the wave's end when the step just passed hands the rack to an external check
   * (external-check.ts): the state machine's MoreWaves? goes to AwaitExternalCheck, whose judge
   * returns the next cursor.
   */
  external?: { name: string; timeoutSeconds: number };
}

/** The preflight's poll state, and while it waits for components to be ready, where that stands. */
export interface PreflightState extends PollState {
  /** Set when a component to flash was first seen not ready: the wait ends here. */
  readyDeadline?: number;
  /** The attempt the BMCs in `requery` were asked again with (queryRequestId's attempt). */
  attempt?: number;
  /** Components whose BMC said it was not ready, asked again at `attempt`: id → what it said. */
  requery?: Record<string, string>;
  /**
   * The components whose answers AwaitPreflight waits for (the first ask's: all of them), and how
   * long it waits before CheckPreflight runs anyway. Absent in what the steps returned before it.
   */
  asked?: string[];
  awaitSeconds?: number;
  /**
   * The images CheckPreflight may need (preflight-read.ts `carriedImageKeys`: every candidate key, as
   * imageKeyId, of every component still PENDING at its target, whatever the answers will say),
   * worked out by AcquireLock from the task it has read, so the check reads its task, the
   * answers, the rack and these images in one request (FirmwareImageStore
   * `getImagesWithRackAndTask`). Absent (a state from before, a task with too many keys or an
   * unreadable report): the check's two reads. Dropped with the rest once the preflight is done.
   * E.g. `["POWERSHELF#2.0.0#", "COMPUTE#2.0.0#", "COMPUTE#2.0.0#bios"]`: ~115 bytes for a 39-BMC
   * rack at one version (six types), at most ~14 KB (96 keys of 128-character versions).
   */
  imageKeys?: string[];
  /**
   * The first ask made by AcquireLock (`ask: "wait"`) and not sent yet: AwaitPreflight's Lambda
   * sends it, its queries and its token in one write. Dropped by CheckPreflight, which sends the
   * queries itself if they are not all stored (AwaitPreflight failed before its write).
   */
  unsent?: boolean;
}

export interface PreflightResult extends PreflightState {
  /** When done: the groups to upgrade, in order, without skipped components and empty groups. */
  groups?: UpgradeGroup[];
  cursor?: WaveCursor;
  /** With `sendFirst`: the first step, pending: already sent (`true`), or made for AwaitWave to send (`"wait"`). */
  wave?: WaveState;
}

/** The upgrade loop's state between its states (`$.plan`): the groups, the cursor, the wave in flight. */
export interface WavePlan {
  groups: UpgradeGroup[];
  cursor: WaveCursor;
  wave: WaveState;
  /**
   * Set by the last wave's check once the task has ended (its outcome recorded there, or found
   * cancelled): the state machine goes to AlreadyFinished, not RecordSuccess.
   */
  ended?: TaskStatus;
}

/** One step of one wave in flight: its components, and once done, each one's verdict. */
export interface WaveState extends PollState {
  /** Where in the rule: the stage's index and the step's (a verify step's query ids name both). */
  stage: number;
  step: number;
  action: RuleAction;
  /** 0 for the first try; n for the n-th retry (a new request id: a BMC flashes again). */
  attempt: number;
  /** The step's timeout in seconds (its own, or the deployment's), for deadlines and messages. */
  timeoutSeconds: number;
  /** An update step's part of the update set (its group's `part`); absent: the set's first record. */
  part?: number;
  componentIds: string[];
  types: Record<string, ComponentType>;
  /** Component id → the version it is being upgraded to. */
  versions: Record<string, string>;
  /** Component id → the parts it is flashed with (sub_targets); absent: whole components. */
  subTargets?: Record<string, string[]>;
  /**
   * The stage's read-back (operation-rules.ts `readBackStep`): on an update, a step after it
   * activates a staged flash and reads it back (`laterReadBack`); on an activation or bring-up
   * step, this one's answer must show the target active (`readBack`). Absent: neither.
   */
  readBack?: boolean;
  laterReadBack?: boolean;
  results?: ComponentResult[];
  /**
   * AwaitWave's heartbeat (HeartbeatSecondsPath): how long it waits with nothing heard from the
   * wave's BMCs before the check runs anyway (src/domain/component-verdict.ts `awaitSeconds`);
   * the definitions before heartbeats read it as the wait's timeout. Absent in waves of executions
   * of the definition before AwaitWave, which wait in WaitForWave for `waitSeconds`.
   */
  awaitSeconds?: number;
  /**
   * AwaitWave's timeout (TimeoutSecondsPath) in the definition with heartbeats: until the wave's
   * deadline (`awaitTimeoutSeconds`), always longer than the heartbeat. Absent in waves made before
   * it: such a wave waits `awaitSeconds`, as it did.
   */
  awaitTimeoutSeconds?: number;
  /**
   * What woke AwaitWave (its result, the wake-up's output: on the wave in the definitions before,
   * in the woken wave itself in the judging one, `wakeOutput`): the entries the wave waited for, as
   * stored once they were all answered (src/domain/command-sets.ts `awaitedAnswers`), so the check
   * reads nothing. Absent after a timeout, and dropped by the check.
   */
  answers?: CommandSet;
  /**
   * Made by a check (`sendNext` / `sendFirst` "wait") and not sent yet: AwaitWave's Lambda sends
   * it. Dropped by the check after the wait; a check that gets it back (the wait failed, or timed
   * out before its Lambda wrote) sends the step itself if its commands are not all stored.
   */
  unsent?: boolean;
  /**
   * The cursor the wave was made at, on a wave woken from its wait's resume (wave-wait.ts
   * `resumeFor`): after a wake-up `$.plan.cursor` is the cursor of a step before (the step that
   * judges and sends the next runs inside the wait, whose result is the wake-up's), so the wave's
   * own is the one to judge it at. Dropped by CheckWave, which returns the plan's cursor.
   */
  cursor?: WaveCursor;
  /**
   * Set when AwaitWave's judging invocation leaves the wave to CheckWave (a retry, an external
   * check, a sleep next, answers not complete), which drops it: `true` on the wave it wakes its
   * wait with (the definitions whose WaveDone? routes it), else the StepHandedOver error its wait
   * ended with, which the Catch puts here. Either way nothing was sent after the wave.
   */
  checkNeeded?: true | CaughtError;
  /**
   * Set by AwaitWave's judging invocation when the judged step was the task's last and its outcome
   * is recorded (the task's status), on the wave it wakes its wait with (the definitions whose
   * WaveDone? goes to AlreadyFinished on it; the others end the wait with OutcomeRecorded).
   */
  ended?: TaskStatus;
}

// ---------------------------------------------------------------------------------------------
// State of executions that started before operation rules

const UPDATE_STEP: RuleStep = { action: "UPDATE_FIRMWARE", timeoutSeconds: 0, sleepSeconds: 0 };

/**
 * A Standard execution keeps the definition it started with, so across a deploy an execution that
 * began before operation rules calls these steps with the state it already holds: groups
 * `{type, componentIds}`, a cursor `{group, wave, more}`, a wave `{type, componentIds,
 * targetVersion}` (or `versions`). Read as the default rule's: one update step per group, the
 * deployment's maxParallel, no retry. Current state passes through unchanged.
 */
export function currentGroups(groups: readonly UpgradeGroup[], settings: ChildTaskSettings): UpgradeGroup[] {
  return groups.map((g, i) => {
    if (g.steps !== undefined) return g;
    const type = (g as { type?: ComponentType }).type;
    return {
      stage: i,
      name: type?.toLowerCase() ?? "",
      componentIds: g.componentIds,
      maxParallel: Math.max(1, Math.floor(settings.maxParallel)),
      steps: [UPDATE_STEP],
    };
  });
}

export function currentCursor(cursor: WaveCursor): WaveCursor {
  const c: Partial<WaveCursor> = cursor;
  return {
    ...cursor,
    step: c.step ?? 0,
    attempt: c.attempt ?? 0,
    retry: c.retry ?? false,
    waitSeconds: c.waitSeconds ?? 0,
  };
}

export function currentWave(wave: WaveState, settings: ChildTaskSettings): WaveState {
  if (wave.action !== undefined) return wave;
  const old = wave as WaveState & { type?: ComponentType; targetVersion?: string };
  const each = <T>(value: T) => Object.fromEntries(wave.componentIds.map((id) => [id, value]));
  return {
    ...wave,
    stage: 0,
    step: 0,
    action: "UPDATE_FIRMWARE",
    attempt: 0,
    timeoutSeconds: settings.updateTimeoutSeconds,
    types: wave.types ?? (each(old.type) as Record<string, ComponentType>),
    versions: wave.versions ?? each(old.targetVersion ?? ""),
  };
}
