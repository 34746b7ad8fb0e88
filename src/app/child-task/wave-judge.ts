/**
 * AwaitWave of the definition whose wait judges the step it was woken for (`judge`): a step costs
 * one task-steps invocation and one state instead of three states and two invocations (AwaitWave,
 * CheckWave, WaveDone?). In JSONPath ASL a `.waitForTaskToken` state's result is its wake-up's
 * output, never its Lambda's return value, so what the invocation decides travels through the
 * wake-up: every wait stores its wave (its resume: wave-wait.ts `resumeFor`) with its token, the
 * wake-up's output is that wave with its answers in it (src/domain/command-sets.ts `wakeOutput`),
 * the state's ResultPath puts it on `$.plan.wave`, and the state goes on to its twin (AwaitWave and
 * AwaitNextWave: the same state, each the other's Next), whose invocation judges it here and sends
 * the next step. What it does not send ends its own wait with an error the Catch routes
 * (`exitsAsErrors`; the definition before woke it with a mark its WaveDone? Choice read).
 *
 *   AwaitWave(send 1) → woken {step 1, answers} → AwaitNextWave(judge 1, send 2) → woken
 *   {step 2, answers} → AwaitWave(judge 2, send 3) → … → (judge n: the last, outcome recorded)
 *   → OutcomeRecorded → AlreadyFinished
 */
import type { WakeOutput } from "../../domain/command-sets.js";
import { JUDGE_EXITS } from "../../domain/step-errors.js";
import type { TaskStatus } from "../../domain/task.js";
import type { WaveWaker } from "../ports.js";
import { waitStep } from "./commands.js";
import type { StepDeps } from "./deps.js";
import type { StepEventOf, WaveCursor, WaveState } from "./settings.js";
import { checkWave } from "./wave-check.js";
import { answersComplete, awaitWave, familyOf, sendAndAwait } from "./waves.js";

/**
 * AwaitWave's step (steps.ts): a woken wave (`answers`) of the judging definition is judged and
 * its next step sent here (`judgeAndSend`); anything else is AwaitWave's own (waves.ts `awaitWave`).
 */
export async function awaitOrJudgeWave(
  deps: StepDeps,
  e: StepEventOf<"awaitWave">,
): Promise<{ woken: boolean }> {
  if (e.judge === true && e.wave.answers !== undefined) return judgeAndSend(deps, e);
  return awaitWave(deps, e);
}

/**
 * AwaitWave woken with its wave's answers (`judge`, `answers`: the definition whose wait judges):
 * the check of that step (wave-check.ts `checkWave`, at the wave's own cursor: `$.plan.cursor` is
 * a step behind after a wake-up) runs here, in the invocation of the wait that sends the next
 * step, so a step costs one invocation and one state instead of one invocation more and a
 * CheckWave state. It judges from the answers with no read, so a retried invocation judges the
 * same answers to the same cursor and makes the same next step, which it sends as AwaitWave sends
 * a step its check made (`sendAndAwait`: the lock renewed if needed, its commands and this wait's
 * token, with the next wave's resume, in one write, then published; a retry re-sends only what is
 * neither out nor answered, under the same request ids, and replaces the token and the resume).
 * What this invocation does not send ends the wait at once (`exitWait`):
 *   - the task's last step: checkWave records the outcome → OutcomeRecorded (AlreadyFinished);
 *   - a retry, an external check, a sleep next, a wave still pending, answers not all in →
 *     StepHandedOver: CheckWave does it as it always has, on the judged wave as it came.
 * ComponentsFailed (and TaskEnded: a cancel closed the set, so nothing is sent) are thrown, and
 * the state's Catch goes to RecordFailure as CheckWave's did. Without a waker nothing wakes (no
 * wait of a deployment without callbacks is woken with answers): its timeout's check does it.
 */
export async function judgeAndSend(deps: StepDeps, e: StepEventOf<"awaitWave">): Promise<{ woken: boolean }> {
  const waker = deps.waveWaker;
  const cursor = e.wave.cursor ?? e.cursor;
  const { groups, settings, rackId } = e;
  if (
    waker === undefined ||
    cursor === undefined ||
    groups === undefined ||
    settings === undefined ||
    rackId === undefined
  )
    return { woken: false };
  const exit = (how: WaitExit) => waitStep(() => exitWait(waker, e, how));
  const family = familyOf(e.wave.action);
  if (family === undefined || !answersComplete(e.taskId, family, e.wave, e.wave.answers)) {
    await exit({ handedOver: "the step's answers are not all in" });
    return { woken: true };
  }
  const plan = await checkWave(deps, {
    step: "checkWave",
    taskId: e.taskId,
    settings,
    rackId,
    groups,
    cursor,
    // With its marks: checkWave drops them itself, as it does after a timeout.
    wave: e.wave,
    sendNext: "wait",
  });
  if (!("groups" in plan)) throw new Error("checkWave with the plan returned the wave alone");
  if (plan.ended !== undefined) {
    await exit({ ended: plan.ended });
    return { woken: true };
  }
  const handedOver = whyNotSent(plan.cursor, plan.wave);
  if (handedOver !== undefined) {
    await exit({ handedOver });
    return { woken: true };
  }
  return sendAndAwait(deps, e, { wave: plan.wave, cursor: plan.cursor, groups: plan.groups });
}

/** Why the judge leaves the next step to CheckWave, or undefined when it sends it itself. */
function whyNotSent(cursor: WaveCursor, next: WaveState): string | undefined {
  if (cursor.external !== undefined) return "an external check is next";
  if (cursor.retry) return "a retry of the step is next";
  if (next.action === "SLEEP") return "a sleep is next";
  if (next.unsent !== true) return "the step is still pending";
  return undefined;
}

/** Why a judging wait ends without a next step sent: the task ended, or the step is CheckWave's. */
type WaitExit = { ended: TaskStatus } | { handedOver: string };

/**
 * Ends the judging wait: with an error its Catch routes (`exitsAsErrors`: OutcomeRecorded, or
 * StepHandedOver with why as its cause, which the execution's history shows), or, for the
 * definition before, woken with the wave marked for its WaveDone? (`ended`, `checkNeeded`).
 */
async function exitWait(waker: WaveWaker, e: StepEventOf<"awaitWave">, how: WaitExit): Promise<void> {
  if (e.exitsAsErrors === true) {
    if ("ended" in how)
      await waker.fail(
        e.token,
        JUDGE_EXITS.outcomeRecorded,
        `the task's last step passed: the task is ${how.ended}`,
      );
    else await waker.fail(e.token, JUDGE_EXITS.stepHandedOver, how.handedOver);
    return;
  }
  const marked: WaveState =
    "ended" in how ? { ...e.wave, ended: how.ended } : { ...e.wave, checkNeeded: true };
  await waker.wake(e.token, marked as unknown as WakeOutput);
}
