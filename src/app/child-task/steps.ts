/**
 * The child task's steps: what every Task state of state-machines/child-task.asl.json does. One
 * Lambda (lambdas/task-steps.ts) serves them all through `handle`, which picks the step by
 * `event.step`; locally the local executor binds every Task state to the same `handle`
 * (local/step-functions.ts). The steps live by concept: lock.ts (AcquireLock's lock),
 * preflight.ts (AcquireLock's queries, CheckPreflight; sendQueries is still a step for executions
 * of the definition before), waves.ts (SendWave, AwaitWave), wave-check.ts (CheckWave),
 * wave-cursor.ts (finishWave, which CheckWave calls once a wave is done; a step still for
 * executions of the definition before), outcome.ts (RecordSuccess, RecordFailure, and the last wave's
 * CheckWave records through it too); the BMC reports arrive through receiving.ts.
 *
 * The state machine, in short (state-machines/README.md has the picture and the reasons):
 *
 *   AcquireLock (then the preflight's queries) ─(queued: Wait, again)─►
 *     AwaitPreflight ─► CheckPreflight (not ready yet: Wait ◄─► CheckPreflight)
 *     └─► for each stage of the task's rule, for each wave of ≤ maxParallel of its components:
 *         (CheckPreflight makes the first step) AwaitWave (sends it) ◄─► CheckWave (ends the
 *         step once done and makes the next, so the loop is AwaitWave ◄─► CheckWave; the last
 *         one ends the task; SendWave only after a retry's backoff)
 *     └─► (any failure, caught) RecordFailure
 *
 * How the execution waits for a BMC: a callback, with a poll under it. AwaitWave writes the step's
 * commands into the task's command set with its task token (one write, src/domain/command-sets.ts)
 * and publishes them (SendWave, after a retry's backoff, writes the commands and AwaitWave the token);
 * the IoT rule queues the BMCs' reports for lambdas/bmc-result.ts, which stores each batch on the
 * command sets (first result wins, so duplicate and late messages change nothing). AwaitWave (and
 * AwaitPreflight, for the preflight's answers) stores the execution's task token on the set; the
 * receiver sends it back when it stores the last awaited result, and CheckWave judges the wave. A
 * wait not woken times out into its check, which polls on (a Wait whose length backs off:
 * pollSeconds · 2^polls, capped at maxPollSeconds and at the deadline). Locally
 * local/step-functions.ts serves the callback states, so the local runner runs the same states.
 * Waiting per WAVE rather than per component keeps the billed state transitions ~6× lower for a
 * 39-BMC rack (bench/rollout.ts prints the figures).
 *
 * Errors thrown by the steps carry stable `name`s (STEP_ERROR_NAMES, src/domain/step-errors.ts):
 * Step Functions matches Retry and Catch on them, and RecordFailure turns them into the task's
 * message. Every message names the component and the cause, e.g.
 *   `component 7a00…0102 (COMPUTE): BMC reported FLASH_FAILED: flashing 2.0.0 failed; still on 1.0.0`
 *
 * Secrets: SendWave reads the firmware credentials (run secrets, or the task's own encrypted
 * secret for a plain UpgradeFirmware), `BmcAuthSealer` seals each for its one BMC, and only the
 * sealed blob goes into the command. No step returns them, so they never appear in execution
 * history or logs.
 */
import { type StepDeps, type TaskStepsDeps, withDefaults } from "./deps.js";
import { judgeExternalCheckStep, startExternalCheck } from "./external-check.js";
import { recordOutcome } from "./outcome.js";
import { acquireLockAndAsk, awaitQueries, checkQueries, sendQueries } from "./preflight.js";
import type { StepEvent, StepEventOf, StepName } from "./settings.js";
import { checkWave } from "./wave-check.js";
import { finishWave } from "./wave-cursor.js";
import { awaitOrJudgeWave } from "./wave-judge.js";
import { sendWave } from "./waves.js";

export interface TaskSteps {
  handle(event: StepEvent): Promise<unknown>;
}

/** Every step the ASL names (its Parameters' `step`), and the function that serves it. */
const STEPS: { [S in StepName]: (deps: StepDeps, event: StepEventOf<S>) => Promise<unknown> } = {
  acquireLock: acquireLockAndAsk,
  sendQueries,
  awaitQueries,
  checkQueries,
  sendWave,
  awaitWave: awaitOrJudgeWave,
  checkWave,
  finishWave,
  recordOutcome,
  startExternalCheck,
  judgeExternalCheck: judgeExternalCheckStep,
};

export function createTaskSteps(deps: TaskStepsDeps): TaskSteps {
  const resolved = withDefaults(deps);
  return {
    async handle(event: StepEvent): Promise<unknown> {
      const step: unknown = (event as { step?: unknown }).step;
      if (typeof step !== "string" || !Object.hasOwn(STEPS, step)) {
        throw new Error(`unknown step ${JSON.stringify(step)}`);
      }
      const run = STEPS[step as StepName] as (deps: StepDeps, event: StepEvent) => Promise<unknown>;
      return run(resolved, event);
    },
  };
}
