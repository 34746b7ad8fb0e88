/**
 * A wave's wait (AwaitWave): its heartbeat and timeout (`awaiting`, from the step's timeout,
 * `timeoutOf`), the heartbeat stored with its token (`waitHeartbeat`), and, in the definition
 * whose wait judges the step it was woken for (wave-judge.ts), the resume stored beside the token
 * (`resumeFor`): the wave without what a wake-up or a check adds to it (`bareWave`), with its
 * cursor and the heartbeat and timeout of the wait after it (`followingAwait`).
 */
import type { WaitResume } from "../../domain/command-sets.js";
import { awaitSeconds, awaitTimeoutSeconds, nextWaitSeconds } from "../../domain/component-verdict.js";
import { isActivation, type RuleStep } from "../../domain/operation-rules.js";
import {
  type ChildTaskSettings,
  currentCursor,
  currentGroups,
  type StepEventOf,
  type UpgradeGroup,
  type WaveCursor,
  type WaveState,
} from "./settings.js";
import { nextCursor } from "./wave-cursor.js";

/**
 * A step's timeout: its own, else the deployment's: the update timeout for the update and for
 * activation and bring-up (a tray's AC cycle and boot take minutes, like a flash), the preflight
 * timeout for a verify.
 */
export function timeoutOf(step: RuleStep, settings: ChildTaskSettings): number {
  if (step.action === "SLEEP") return step.sleepSeconds;
  if (step.timeoutSeconds > 0) return step.timeoutSeconds;
  const long =
    step.action === "UPDATE_FIRMWARE" || step.action === "WAIT_BRING_UP" || isActivation(step.action);
  return long ? settings.updateTimeoutSeconds : settings.preflightTimeoutSeconds;
}

/**
 * The wave with AwaitWave's heartbeat (`awaitSeconds`) and timeout (`awaitTimeoutSeconds`, until
 * the deadline), from its wait and deadline.
 */
export function awaiting(settings: ChildTaskSettings, wave: WaveState, now: number): WaveState {
  const heartbeat = awaitSeconds(settings, wave.waitSeconds, wave.deadline, now);
  return {
    ...wave,
    awaitSeconds: heartbeat,
    awaitTimeoutSeconds: awaitTimeoutSeconds(heartbeat, wave.deadline, now),
  };
}

/**
 * A wave without what a wake-up brought (`answers`), whether it is sent (`unsent`) and the judging
 * wait's marks (`cursor`, `checkNeeded`, `ended`): the wave a step is sent as and a wait stores.
 */
export function bareWave(wave: WaveState): WaveState {
  const { answers: _a, unsent: _u, cursor: _c, checkNeeded: _n, ended: _e, ...bare } = wave;
  return bare;
}

/**
 * Seconds added to the timeout a resume carries for the wait that follows it (`followingAwait`):
 * that wait's state starts its timeout before its invocation runs and sets the step's deadline
 * (a cold start, the judging read), and it must not time out before the deadline it waits for.
 */
export const AWAIT_START_MARGIN_SECONDS = 5;

/**
 * A wait's heartbeat and timeout where the next wait does not send a step (its step is the last,
 * a sleep, or it ends otherwise): it judges and wakes itself at once, so any valid pair will do
 * (Step Functions wants the heartbeat ≥ 1 and below the timeout); a minute outlasts the judging
 * invocation (a cold start, the last step's read and record), so it never times out first.
 */
export const JUDGE_ONLY_AWAIT = { awaitSeconds: 60, awaitTimeoutSeconds: 60 + AWAIT_START_MARGIN_SECONDS };

/**
 * The heartbeat and timeout of the wait that follows the step at `cursor` once it passes (the
 * next cursor's step): what planWave and `awaiting` make for it (they depend on its timeout and
 * the settings alone, not on when it is made), the timeout with AWAIT_START_MARGIN_SECONDS more.
 * A woken wave carries these (in its wait's resume), so the next AwaitWave state, which reads its
 * HeartbeatSecondsPath and TimeoutSecondsPath from it before its invocation judges the wave and
 * sends the next step, waits as long as that step's own wait would.
 *   update step next, timeout 1,800 s, max poll 60 s → { awaitSeconds 300, awaitTimeoutSeconds 1,805 }
 *   the last step, or a sleep next → JUDGE_ONLY_AWAIT
 */
export function followingAwait(
  groups: readonly UpgradeGroup[],
  cursor: WaveCursor,
  settings: ChildTaskSettings,
): { awaitSeconds: number; awaitTimeoutSeconds: number } {
  const current = currentGroups(groups as UpgradeGroup[], settings);
  const next = nextCursor(current, currentCursor(cursor));
  const step = next.more ? current[next.group]?.steps[next.step] : undefined;
  if (step === undefined || step.action === "SLEEP") return JUDGE_ONLY_AWAIT;
  const timeoutSeconds = timeoutOf(step, settings);
  const deadline = timeoutSeconds * 1000;
  const waitSeconds = nextWaitSeconds(settings, 0, deadline, 0);
  const made = awaiting(settings, { deadline, waitSeconds } as WaveState, 0);
  return {
    awaitSeconds: made.awaitSeconds as number,
    awaitTimeoutSeconds: (made.awaitTimeoutSeconds as number) + AWAIT_START_MARGIN_SECONDS,
  };
}

/**
 * What a wait of the definition that judges in AwaitWave (`judge`) stores with its token
 * (`WaitToStore.resume`): the wave it waits for, with its cursor, without what the wake-up and
 * the check add (`answers`, `unsent`, `results`, the judge's marks), its heartbeat and timeout
 * those of the wait that follows it (`followingAwait`). Its groups are not stored (~10 KB for a
 * 39-BMC rack; the plan keeps them): the wave is 0.4-2.9 KB of JSON, stored deflated
 * (command-set-store.ts). Undefined for the definitions before,
 * whose ResultPath takes the answers alone, and where the plan is not in the event.
 */
export function resumeFor(
  e: StepEventOf<"awaitWave">,
  wave: WaveState,
  cursor: WaveCursor | undefined,
  groups: UpgradeGroup[] | undefined,
): WaitResume | undefined {
  if (e.judge !== true || cursor === undefined || groups === undefined || e.settings === undefined)
    return undefined;
  const { results: _, ...kept } = bareWave(wave);
  return { ...kept, cursor, ...followingAwait(groups, cursor, e.settings) };
}

/**
 * The heartbeat a wave's wait is stored with, and its start (`now`, the step's clock: the
 * heartbeat clock starts with the state): a wave with `awaitTimeoutSeconds` is of the definition
 * with heartbeats, whose `awaitSeconds` is its HeartbeatSecondsPath; a wave without has none, and
 * the receiver keeps only a wait that has one alive.
 */
export function waitHeartbeat(
  wave: WaveState,
  now: number,
): { heartbeatSeconds?: number; startedAt?: number } {
  return wave.awaitTimeoutSeconds === undefined
    ? {}
    : { heartbeatSeconds: wave.awaitSeconds, startedAt: now };
}
