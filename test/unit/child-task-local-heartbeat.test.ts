/**
 * The local executor (local/step-functions.ts) serves AwaitWave's heartbeat as Step Functions
 * does: the wave's `awaitSeconds` (or the executor's override) is the heartbeat interval, which
 * `heartbeat(token)` starts again, ending in States.HeartbeatTimeout when nothing is heard; the
 * wave's `awaitTimeoutSeconds` ends the wait in States.Timeout however many heartbeats came; a wave
 * without it, or a definition without a heartbeat, waits as before. The executor's timers run on a
 * clock the test moves (no sleeps): each case waits for the wait's timers to be armed, moves the
 * clock, and reads which state the execution went on to.
 *
 * The definition is the real AwaitWave state (its Resource, Parameters and paths) after a Pass
 * that stands in for the check that made the wave; its Catch and Next lead to a state per ending,
 * so the ending is observable (the real Catch sends both timeouts to CheckWave:
 * child-task-asl.test.ts).
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

/** The real AwaitWave after a Pass that puts `wave` on the plan; each ending its own state. */
function definitionWith(wave: Record<string, unknown>, change?: (state: AslState) => void): AslMachine {
  const awaitWave = structuredClone(loadChildTaskDefinition().States.AwaitWave as AslState);
  awaitWave.Retry = [];
  awaitWave.Catch = [
    { ErrorEquals: ["States.HeartbeatTimeout"], ResultPath: null, Next: "HeartbeatTimedOut" },
    { ErrorEquals: ["States.Timeout"], ResultPath: null, Next: "TimedOut" },
  ];
  awaitWave.Next = "Woken";
  change?.(awaitWave);
  return {
    StartAt: "MadeWave",
    States: {
      MadeWave: {
        Type: "Pass",
        Result: { wave, groups: [], cursor: { group: 0, wave: 0, step: 0 } },
        ResultPath: "$.plan",
        Next: "AwaitWave",
      },
      AwaitWave: awaitWave,
      Woken: { Type: "Succeed" },
      HeartbeatTimedOut: { Type: "Succeed" },
      TimedOut: { Type: "Succeed" },
    },
  };
}

const WAVE = {
  action: "UPDATE_FIRMWARE",
  componentIds: ["c1"],
  awaitSeconds: 300,
  awaitTimeoutSeconds: 1_800,
};

async function start(definition: AslMachine, awaitTimeoutOverrideMs?: number) {
  const clock = movedTimers();
  const tokens: string[] = [];
  const entered: string[] = [];
  const executor = new LocalStepFunctionsExecutor({
    steps: {
      handle: async (event: StepEvent) => {
        if (event.step === "awaitWave") tokens.push(event.token);
        return { woken: false };
      },
    },
    onEnded: async () => {},
    definition,
    // Made of the validated definition's states: the library's check (a schema compile that
    // blocks for seconds on a loaded machine when the text is new) is not what this file tests.
    validate: false,
    callbackClock: clock,
    ...(awaitTimeoutOverrideMs === undefined ? {} : { awaitTimeoutOverrideMs }),
    onStateEntered: (_, state) => entered.push(state.name),
  });
  await executor.start(runningTask({ id: "7a5c0000-0000-4000-8000-0000000000b1", rackId: "r1" }));
  const token = await until("AwaitWave's token", () => tokens[0]);
  const ended = async () => {
    await executor.idle();
    return entered.at(-1);
  };
  return { clock, executor, token, ended };
}

describe("the local executor serves AwaitWave's heartbeat", () => {
  it("a wait kept alive by heartbeats outlasts its heartbeat interval many times over, then ends with its wake-up", async () => {
    const { clock, executor, token, ended } = await start(definitionWith(WAVE));
    // The heartbeat interval (awaitSeconds) and the timeout (awaitTimeoutSeconds), both armed.
    await until("the wait's timers", () => clock.armed().length === 2);
    expect(clock.armed().sort((a, b) => a - b)).toEqual([300_000, 1_800_000]);
    for (let beat = 0; beat < 4; beat++) {
      clock.advance(250_000);
      await executor.heartbeat(token);
    }
    // 1,000 s in, 250 s since the last heartbeat: still waiting, each timer armed once.
    expect(clock.armed().sort((a, b) => a - b)).toEqual([300_000, 800_000]);
    await executor.wake(token, { taskId: "t", family: "u", entries: {} });
    expect(await ended()).toBe("Woken");
    expect(executor.stats().callbacks).toEqual({ woken: 1, timedOut: 0, failed: 0 });
    expect(executor.stats().heartbeats).toBe(4);
  });

  it("a wait with no heartbeat for its interval ends in States.HeartbeatTimeout there", async () => {
    const { clock, executor, ended } = await start(definitionWith(WAVE));
    await until("the wait's timers", () => clock.armed().length === 2);
    clock.advance(299_999);
    expect(clock.armed().length).toBe(2);
    clock.advance(1);
    expect(await ended()).toBe("HeartbeatTimedOut");
    expect(executor.stats().callbacks).toEqual({ woken: 0, timedOut: 1, failed: 0 });
  });

  it("heartbeats do not stretch the wait past its timeout (the wave's deadline): States.Timeout there", async () => {
    const { clock, executor, token, ended } = await start(definitionWith(WAVE));
    await until("the wait's timers", () => clock.armed().length === 2);
    for (let at = 0; at < 1_800_000; at += 200_000) {
      await executor.heartbeat(token);
      clock.advance(200_000);
    }
    expect(await ended()).toBe("TimedOut");
    expect(executor.stats().callbacks).toEqual({ woken: 0, timedOut: 1, failed: 0 });
  });

  it("the executor's override is the heartbeat interval; the timeout stays the wave's", async () => {
    const { clock, ended } = await start(definitionWith(WAVE), 50);
    await until("the wait's timers", () => clock.armed().length === 2);
    expect(clock.armed().sort((a, b) => a - b)).toEqual([50, 1_800_000]);
    clock.advance(50);
    expect(await ended()).toBe("HeartbeatTimedOut");
  });

  it("a wave without awaitTimeoutSeconds (made before heartbeats) waits awaitSeconds as it did: a heartbeat does not extend it", async () => {
    const { awaitTimeoutSeconds: _, ...before } = WAVE;
    const { clock, executor, token, ended } = await start(definitionWith(before));
    await until("the wait's timer", () => clock.armed().length === 1);
    expect(clock.armed()).toEqual([300_000]);
    clock.advance(200_000);
    await executor.heartbeat(token);
    clock.advance(100_000);
    expect(await ended()).toBe("TimedOut");
  });

  it("a definition before heartbeats (AwaitWave's timeout its awaitSeconds, no HeartbeatSecondsPath) waits awaitSeconds, heartbeats or not", async () => {
    const before = definitionWith(WAVE, (state) => {
      state.TimeoutSecondsPath = "$.plan.wave.awaitSeconds";
      delete state.HeartbeatSecondsPath;
    });
    const { clock, executor, token, ended } = await start(before);
    await until("the wait's timer", () => clock.armed().length === 1);
    expect(clock.armed()).toEqual([300_000]);
    clock.advance(200_000);
    await executor.heartbeat(token);
    clock.advance(100_000);
    expect(await ended()).toBe("TimedOut");
  });
});
