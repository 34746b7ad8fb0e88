/**
 * The local executor (local/step-functions.ts) runs AwaitWave's Retry and Catch as Step Functions
 * does now that its Lambda sends its step: the real AwaitWave state (its Payload, Retry and
 * Catch), after a Pass that stands in for the check that made the wave, each state it can go on to
 * a Succeed of its own so the path is observable. The step handler stands in for the Lambda:
 * - BmcPublishError is retried, each try with a new token (the write replaces it), and the wait
 *   then ends with its wake-up, whose output replaces the wave (AwaitNextWave then judges it);
 * - the judge's own ends (SendTaskFailure): OutcomeRecorded to AlreadyFinished, StepHandedOver to
 *   CheckWave with the error on the wave as `checkNeeded`, the woken wave kept;
 * - TaskEnded (a closed set) and BmcPublishError after its retries go to RecordFailure with the
 *   error on `$.error`;
 * - WaitNotStored and a store outage go to WaitForWave's poll.
 * Timers run on a clock the test moves: nothing sleeps.
 */
import { describe, expect, it } from "vitest";
import { LocalStepFunctionsExecutor } from "../../local/step-functions.js";
import {
  type AslMachine,
  type AslState,
  loadChildTaskDefinition,
} from "../../src/adapters/stepfunctions/asl.js";
import type { StepEvent } from "../../src/app/child-task/settings.js";
import { runningTask } from "../support/domain-fixtures.js";
import { movedTimers } from "../support/moved-timers.js";
import { until } from "../support/poll.js";

const WAVE = {
  action: "UPDATE_FIRMWARE",
  componentIds: ["c1"],
  awaitSeconds: 300,
  awaitTimeoutSeconds: 1_800,
  unsent: true,
};

/** The real AwaitWave after a Pass that makes the plan; where it goes next, a Succeed each. */
function definition(): AslMachine {
  const awaitWave = structuredClone(loadChildTaskDefinition().States.AwaitWave as AslState);
  return {
    StartAt: "MadeWave",
    States: {
      MadeWave: {
        Type: "Pass",
        Result: { wave: WAVE, groups: [], cursor: { group: 0, wave: 0, step: 0 } },
        ResultPath: "$.plan",
        Next: "AwaitWave",
      },
      AwaitWave: awaitWave,
      CheckWave: { Type: "Succeed" },
      AwaitNextWave: { Type: "Succeed" },
      AlreadyFinished: { Type: "Succeed" },
      WaitForWave: { Type: "Succeed" },
      RecordFailure: { Type: "Succeed" },
    },
  };
}

const failure = (name: string, message: string) => Object.assign(new Error(message), { name });

/** Runs the definition with `step` as AwaitWave's Lambda: what it was called with, where it went. */
async function run(
  step: (
    event: Extract<StepEvent, { step: "awaitWave" }>,
    call: number,
    executor: LocalStepFunctionsExecutor,
  ) => Promise<unknown>,
) {
  const clock = movedTimers();
  const events: Extract<StepEvent, { step: "awaitWave" }>[] = [];
  const entered: { name: string; input: unknown }[] = [];
  const executor = new LocalStepFunctionsExecutor({
    steps: {
      handle: async (event: StepEvent) => {
        if (event.step !== "awaitWave") throw new Error(`unexpected step ${event.step}`);
        events.push(event);
        return step(event, events.length, executor);
      },
    },
    onEnded: async () => {},
    definition: definition(),
    // Made of the validated definition's states: the library's check (a schema compile that
    // blocks for seconds on a loaded machine when the text is new) is not what this file tests.
    validate: false,
    callbackClock: clock,
    retryIntervalOverrideMs: 0,
    onStateEntered: (_, state) => entered.push(state),
  });
  await executor.start(runningTask({ id: "7a5c0000-0000-4000-8000-0000000000c1", rackId: "r1" }));
  const ended = async () => {
    await executor.idle();
    const last = entered.at(-1);
    if (last === undefined) throw new Error("the execution entered no state");
    return last;
  };
  return { clock, executor, events, ended };
}

describe("the local executor runs AwaitWave's Retry and Catch for a wait that sends its step", () => {
  it("BmcPublishError is retried with a new token each time; the wait then ends with its wake-up, whose output is the wave, into AwaitNextWave", async () => {
    const { executor, events, ended } = await run(async (_, call) => {
      if (call < 3) throw failure("BmcPublishError", "publish to c1 throttled");
      return { woken: false };
    });
    await until("the third try", () => (events.length === 3 ? true : undefined));
    // The Payload carries the plan beside the wave, for the Lambda to send the step.
    expect(events[0]).toMatchObject({
      step: "awaitWave",
      wave: WAVE,
      rackId: "r1",
      groups: [],
      cursor: { group: 0, wave: 0, step: 0 },
    });
    expect(new Set(events.map((e) => e.token)).size).toBe(3);
    await until("the wait armed", () => (executor.stats().stepsRunning === 0 ? true : undefined));
    const answers = { taskId: "t", family: "u" as const, entries: {} };
    await executor.wake(events[2]?.token as string, { ...WAVE, unsent: false, answers });
    const last = await ended();
    expect(last.name).toBe("AwaitNextWave");
    // The wake-up's output (the wave its wait stored, the answers in it) replaced the wave.
    expect((last.input as { plan: { wave: unknown } }).plan.wave).toEqual({
      ...WAVE,
      unsent: false,
      answers,
    });
  });

  it("the judge's own ends, untried again: OutcomeRecorded to AlreadyFinished; StepHandedOver to CheckWave, the wave as it came with the error on it as `checkNeeded`", async () => {
    for (const [error, to] of [
      ["OutcomeRecorded", "AlreadyFinished"],
      ["StepHandedOver", "CheckWave"],
    ] as const) {
      const { executor, events, ended } = await run(async () => ({ woken: true }));
      await until("the wait armed", () =>
        events.length === 1 && executor.stats().stepsRunning === 0 ? true : undefined,
      );
      await executor.fail(events[0]?.token as string, error, "why");
      const last = await ended();
      expect(last.name, error).toBe(to);
      expect(events, error).toHaveLength(1);
      expect(executor.stats().callbacks, error).toEqual({ woken: 0, timedOut: 0, failed: 1 });
      const wave = (last.input as { plan: { wave: unknown } }).plan.wave;
      expect(wave, error).toEqual(
        error === "StepHandedOver" ? { ...WAVE, checkNeeded: { Error: error, Cause: "why" } } : WAVE,
      );
    }
  });

  it("a step that ends its own wait, then takes a while to return: the end is caught (StepHandedOver to CheckWave), nothing reported unhandled meanwhile", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    const { events, ended } = await run(async (event, _, executor) => {
      await executor.fail(event.token, "StepHandedOver", "why");
      // A macrotask before the invocation returns: Node reports a rejection still unhandled when
      // the microtasks before it are done, so the ended wait's rejection is tested across one.
      await new Promise((resolve) => setImmediate(resolve));
      return { woken: true };
    });
    const last = await ended().finally(() => process.off("unhandledRejection", onUnhandled));
    expect(unhandled).toEqual([]);
    expect(last.name).toBe("CheckWave");
    expect(events).toHaveLength(1);
  });

  it("TaskEnded (a closed set) goes to RecordFailure with the error, untried again", async () => {
    const { events, ended } = await run(async () => {
      throw failure("TaskEnded", "task 7a5c0000-0000-4000-8000-0000000000c1 already ended");
    });
    const last = await ended();
    expect(last.name).toBe("RecordFailure");
    expect((last.input as { error: unknown }).error).toEqual({
      Error: "TaskEnded",
      Cause: "task 7a5c0000-0000-4000-8000-0000000000c1 already ended",
    });
    expect(events).toHaveLength(1);
  });

  it("BmcPublishError after its four retries goes to RecordFailure", async () => {
    const { events, ended } = await run(async () => {
      throw failure("BmcPublishError", "publish to c1 throttled");
    });
    const last = await ended();
    expect(last.name).toBe("RecordFailure");
    expect((last.input as { error: { Error: string } }).error.Error).toBe("BmcPublishError");
    expect(events).toHaveLength(5);
  });

  it("WaitNotStored goes to WaitForWave's poll, its plan as it was (the wave still unsent)", async () => {
    const { events, ended } = await run(async () => {
      throw failure("WaitNotStored", "the wait could not be stored or woken: Rate exceeded");
    });
    const last = await ended();
    expect(last.name).toBe("WaitForWave");
    expect((last.input as { plan: { wave: unknown } }).plan.wave).toEqual(WAVE);
    expect(events).toHaveLength(1);
  });
});
