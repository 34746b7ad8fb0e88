/**
 * The child task's contract with its state machine (state-machines/child-task.asl.json): the
 * tunables and input an execution starts with, and the event every Task state sends (`step` picks
 * the handler) with the results the states pass on.
 */
import type { ComponentResult } from "../../domain/component-verdict.js";
import type { ComponentType } from "../../domain/model.js";
import type { CaughtError } from "../../domain/step-errors.js";

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

/** The execution input. Everything else (components, version, run) is read from the task item. */
export interface ChildTaskInput {
  taskId: string;
  rackId: string;
  settings: ChildTaskSettings;
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
export type StepEvent =
  | (Base & { step: "acquireLock"; rackId: string })
  | (Base & { step: "sendQueries" })
  | (Base & { step: "checkQueries"; preflight: PreflightState })
  | (Base & { step: "sendWave"; rackId: string; groups: UpgradeGroup[]; cursor: WaveCursor })
  | (Base & { step: "checkWave"; wave: WaveState })
  | (Base & {
      step: "finishWave";
      rackId: string;
      groups: UpgradeGroup[];
      cursor: WaveCursor;
      wave: WaveState;
    })
  | { step: "recordOutcome"; taskId: string; error?: CaughtError };

export type StepName = StepEvent["step"];
export type StepEventOf<S extends StepName> = Extract<StepEvent, { step: S }>;

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

/** The preflight's poll state, and while it waits for components to be ready, where that stands. */
export interface PreflightState extends PollState {
  /** Set when a component to flash was first seen not ready: the wait ends here. */
  readyDeadline?: number;
  /** The attempt the BMCs in `requery` were asked again with (queryRequestId's attempt). */
  attempt?: number;
  /** Components whose BMC said it was not ready, asked again at `attempt`: id → what it said. */
  requery?: Record<string, string>;
}

export interface PreflightResult extends PreflightState {
  /** When done: the groups to upgrade, in order, without skipped components and empty groups. */
  groups?: UpgradeGroup[];
  cursor?: WaveCursor;
}

/** One wave in flight: its components, and once done, each one's verdict. */
export interface WaveState extends PollState {
  type: ComponentType;
  componentIds: string[];
  /** Component id → the version it is being upgraded to. */
  versions: Record<string, string>;
  /** Component id → the parts it is flashed with (sub_targets); absent: whole components. */
  subTargets?: Record<string, string[]>;
  results?: ComponentResult[];
}
