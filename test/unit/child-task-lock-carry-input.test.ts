/**
 * The task an execution's input carries for AcquireLock (ChildTaskInput.task), up to the Lambda:
 * - childTaskInput carries the task when its JSON is at most CARRIED_TASK_MAX_BYTES (bytes, not
 *   characters), none larger; the AWS executor's StartExecution input is that;
 * - the definition's AcquireLock passes the input from the context object
 *   (`$$.Execution.Input`), and no state reads a `$.task` path: such a path fails the state
 *   (States.Runtime) on an input without one (an older submitter's, a large task's), as the
 *   control below shows on the same executor;
 * - on the local executor (aws-local-stepfunctions, which serves `$$.Execution.Input`), the real
 *   AcquireLock, LockAcquired? and WaitForLock: every try of the lock-wait loop gets the same
 *   input (a copy, as through StartExecution's JSON), the task in it when carried, and an input
 *   without one runs the loop all the same.
 * The Lambda stands in for the steps; the states AcquireLock leads to are Succeeds of their own.
 */

import { SFNClient, StartExecutionCommand } from "@aws-sdk/client-sfn";
import { mockClient } from "aws-sdk-client-mock";
import { describe, expect, it } from "vitest";
import { LocalStepFunctionsExecutor } from "../../local/step-functions.js";
import {
  type AslMachine,
  type AslState,
  allStates,
  loadChildTaskDefinition,
} from "../../src/adapters/stepfunctions/asl.js";
import {
  CARRIED_TASK_MAX_BYTES,
  childTaskInput,
  StepFunctionsTaskExecutor,
} from "../../src/adapters/stepfunctions/sfn-executor.js";
import type { ExecutionEnding } from "../../src/app/child-task/outcome.js";
import {
  type ChildTaskInput,
  DEFAULT_CHILD_TASK_SETTINGS,
  type StepEvent,
} from "../../src/app/child-task/settings.js";
import type { Task } from "../../src/domain/task.js";
import { pendingTask } from "../support/domain-fixtures.js";

const settings = { ...DEFAULT_CHILD_TASK_SETTINGS };

/** `pendingTask` padded (its description) to exactly `bytes` of JSON, in `char`s of one or two bytes. */
function taskOf(bytes: number, char = "x"): Task {
  const task = pendingTask({ id: "7a5c0000-0000-4000-8000-00000000c4a1", rackId: "r1", description: "" });
  const pad = bytes - Buffer.byteLength(JSON.stringify(task));
  const size = Buffer.byteLength(char);
  return { ...task, description: char.repeat(Math.floor(pad / size)) + "x".repeat(pad % size) };
}

describe("childTaskInput: the task carried when its JSON is small", () => {
  it("at most CARRIED_TASK_MAX_BYTES of JSON: carried as given; a byte more: not", () => {
    const fits = taskOf(CARRIED_TASK_MAX_BYTES);
    expect(Buffer.byteLength(JSON.stringify(fits))).toBe(CARRIED_TASK_MAX_BYTES);
    expect(childTaskInput(fits, settings)).toEqual({ taskId: fits.id, rackId: "r1", settings, task: fits });
    const over = taskOf(CARRIED_TASK_MAX_BYTES + 1);
    expect(childTaskInput(over, settings)).toEqual({ taskId: over.id, rackId: "r1", settings });
  });

  it("counted in bytes, as Step Functions counts its state: two-byte characters fill it at half the length", () => {
    const wide = taskOf(CARRIED_TASK_MAX_BYTES + 2, "é");
    expect(JSON.stringify(wide).length).toBeLessThan(CARRIED_TASK_MAX_BYTES);
    expect(childTaskInput(wide, settings)).not.toHaveProperty("task");
  });

  it("the AWS executor's StartExecution input is childTaskInput's: the task in it", async () => {
    const sfn = mockClient(SFNClient);
    sfn.on(StartExecutionCommand).resolves({ executionArn: "arn:aws:states:r:a:execution:m:t" });
    const executor = new StepFunctionsTaskExecutor(
      new SFNClient({ region: "us-east-1" }),
      "arn:aws:states:r:a:stateMachine:m",
    );
    const task = pendingTask({ id: "7a5c0000-0000-4000-8000-00000000c4a2" });
    await executor.start(task);
    const input = JSON.parse(sfn.commandCalls(StartExecutionCommand)[0]?.args[0].input.input ?? "");
    expect(input).toEqual({ taskId: task.id, rackId: task.rackId, settings, task });
    sfn.restore();
  });
});

describe("the definition: AcquireLock gets the input from the context object", () => {
  const definition = loadChildTaskDefinition();

  it("its Parameters: `input` from $$.Execution.Input; no state reads a $.task path", () => {
    expect(definition.States.AcquireLock?.Parameters).toMatchObject({ "input.$": "$$.Execution.Input" });
    const paths: string[] = [];
    const walk = (value: unknown): void => {
      if (typeof value === "string") paths.push(value);
      else if (value !== null && typeof value === "object") Object.values(value).forEach(walk);
    };
    for (const [, state] of allStates(definition)) walk(state);
    expect(paths.filter((p) => /^\$\.task($|[.[])/.test(p))).toEqual([]);
  });
});

/** The real AcquireLock, LockAcquired? and WaitForLock; where the loop goes on to, a Succeed each. */
function lockLoop(change?: (acquire: AslState) => void): AslMachine {
  const states = loadChildTaskDefinition().States;
  const acquire = structuredClone(states.AcquireLock as AslState);
  change?.(acquire);
  return {
    StartAt: "AcquireLock",
    States: {
      AcquireLock: acquire,
      "LockAcquired?": structuredClone(states["LockAcquired?"] as AslState),
      WaitForLock: structuredClone(states.WaitForLock as AslState),
      AwaitPreflight: { Type: "Succeed" },
      AlreadyFinished: { Type: "Succeed" },
      RecordFailure: { Type: "Succeed" },
    },
  };
}

/**
 * Runs `definition` for `task`, the Lambda answering `waiting` twice and then `finished`: the
 * events AcquireLock sent it, the states entered, how the execution ended.
 */
async function runLoop(definition: AslMachine, task: Task) {
  const events: Extract<StepEvent, { step: "acquireLock" }>[] = [];
  const entered: string[] = [];
  let ended: (ending: ExecutionEnding) => void = () => {};
  const ending = new Promise<ExecutionEnding>((resolve) => {
    ended = resolve;
  });
  const executor = new LocalStepFunctionsExecutor({
    steps: {
      handle: async (event: StepEvent) => {
        if (event.step !== "acquireLock") throw new Error(`unexpected step ${event.step}`);
        events.push(event);
        return events.length <= 2 ? { status: "waiting", waitSeconds: 30 } : { status: "finished" };
      },
    },
    onEnded: async (e) => ended(e),
    definition,
    // Made of the validated definition's states: the library's schema check is not what this tests.
    validate: false,
    waitOverrideMs: 1,
    onStateEntered: (_, state) => entered.push(state.name),
  });
  await executor.start(task);
  return { events, entered, ending: await ending };
}

const LOOP = ["AcquireLock", "LockAcquired?", "WaitForLock"];

describe("the local executor: the lock-wait loop with the task carried, and without", () => {
  it("carried: every try gets the same input, the task in it as the submitter gave it", async () => {
    const task = pendingTask({ id: "7a5c0000-0000-4000-8000-00000000c4a3", rackId: "r3" });
    const { events, entered, ending } = await runLoop(lockLoop(), task);
    expect(ending.status).toBe("SUCCEEDED");
    expect(entered).toEqual([...LOOP, ...LOOP, "AcquireLock", "LockAcquired?", "AlreadyFinished"]);
    expect(events).toHaveLength(3);
    for (const event of events) {
      expect(event).toMatchObject({ step: "acquireLock", taskId: task.id, rackId: "r3", ask: "wait" });
      expect(event.input).toEqual({ taskId: task.id, rackId: "r3", settings, task } satisfies ChildTaskInput);
      // A copy, as through StartExecution's JSON: never the submitter's own object.
      expect(event.input?.task).not.toBe(task);
    }
  });

  it("an input without a task (too large to carry, or an older submitter's): the same loop, `input` without it", async () => {
    const large = taskOf(CARRIED_TASK_MAX_BYTES + 1);
    const { events, entered, ending } = await runLoop(lockLoop(), large);
    expect(ending.status).toBe("SUCCEEDED");
    expect(entered.at(-1)).toBe("AlreadyFinished");
    expect(events).toHaveLength(3);
    for (const event of events) expect(event.input).toEqual({ taskId: large.id, rackId: "r1", settings });
  });

  it("control: a `$.task` path instead fails on that input before the Lambda is called (why the context object)", async () => {
    const large = taskOf(CARRIED_TASK_MAX_BYTES + 1);
    const withPath = lockLoop((acquire) => {
      const { "input.$": _, ...rest } = acquire.Parameters as Record<string, unknown>;
      acquire.Parameters = { ...rest, "task.$": "$.task" };
    });
    const { events, entered, ending } = await runLoop(withPath, large);
    expect(events).toEqual([]);
    expect(ending).toMatchObject({ status: "FAILED", error: "States.Runtime" });
    expect(entered).toEqual(["AcquireLock"]);
  });
});
