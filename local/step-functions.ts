/**
 * The TaskExecutor of the local stack and the tests: aws-local-stepfunctions running the SAME ASL
 * the CDK app deploys (state-machines/child-task.asl.json), every Task state bound by name to the
 * same step handlers the task-steps Lambda serves.
 *
 * Like Step Functions, an execution is named by its task id and a name runs at most once per
 * executor: start(T) again returns the same execution, running or finished. Executions live in this
 * process only: a local stack restarted on the same store re-drives their tasks (local/child-tasks.ts
 * `resume`, src/app/child-task/redrive.ts).
 *
 * Endings: when an execution ends, `onEnded` gets what the AWS execution-status rule would
 * deliver (SUCCEEDED / FAILED / TIMED_OUT / ABORTED), which the wiring points at
 * reconcileExecutionEnd: a stopped execution's task ends TERMINATED and its rack lock is released
 * by the very function the last state uses.
 *
 * Callbacks: aws-local-stepfunctions has no `.waitForTaskToken`, so a Task state of that pattern
 * (AwaitWave, AwaitPreflight, AwaitExternalCheck) is bound to a handler that mints the task token itself
 * (`local-token:<task>:<n>`), calls the step with it in the Payload, as Lambda gets it (a step
 * that throws, such as AwaitWave's send of its step, fails the state, whose Retry mints a new
 * token each try and whose Catch applies, as in Step Functions), and then
 * waits until `wake(token)` (this executor is the local WaveWaker) or its timeout:
 * `awaitTimeoutOverrideMs`, else the Wait override, else the wave's (or the preflight's)
 * `awaitSeconds`; a timeout is the States.Timeout error the state's Catch expects. A state with a
 * HeartbeatSecondsPath (AwaitWave) whose wave carries `awaitTimeoutSeconds` serves heartbeats as
 * Step Functions does: that override (else `awaitSeconds`) is its heartbeat interval, which
 * `heartbeat(token)` starts again, ending in States.HeartbeatTimeout, and `awaitTimeoutSeconds`
 * its timeout whatever the overrides; a wave without it waits as it did. Tests inject
 * `callbackClock` to run those timers on a clock of their own. An external
 * health check's wait (AwaitExternalCheck) always keeps its own timeout (the cursor's), whatever
 * the overrides, and ends with `sendTaskSuccess` / `sendTaskFailure` (the local check runner
 * calls them). The handler
 * keeps that timeout itself because aws-local-stepfunctions reads TimeoutSecondsPath from the
 * state's input after Parameters, where Step Functions reads it from the state's input: the local
 * copy of such a state gets a day's TimeoutSeconds instead.
 */
import { ExecutionAbortedError, ExecutionTimeoutError, StateMachine } from "aws-local-stepfunctions";
import {
  type AslMachine,
  allStates,
  callbackStateNames,
  isCallbackState,
  loadChildTaskDefinition,
  taskStateNames,
  waitStateNames,
} from "../src/adapters/stepfunctions/asl.js";
import {
  childTaskInput,
  executionArnFor,
  type NamedTaskExecutor,
} from "../src/adapters/stepfunctions/sfn-executor.js";
import { systemClock } from "../src/adapters/system-clock.js";
import type { ExecutionEnding } from "../src/app/child-task/outcome.js";
import type { ChildTaskSettings, StepEvent } from "../src/app/child-task/settings.js";
import { DEFAULT_CHILD_TASK_SETTINGS } from "../src/app/child-task/settings.js";
import type { TaskSteps } from "../src/app/child-task/steps.js";
import type { Clock, WaveWaker } from "../src/app/ports.js";
import type { WakeOutput } from "../src/domain/command-sets.js";
import type { Task } from "../src/domain/task.js";
import { validatedDefinitions } from "./asl-validated.js";
import { retryWhileUnavailable } from "./retry-unavailable.js";

/**
 * Definitions (as JSON text, after the executor's own changes) the library has validated, in this
 * process or an earlier one (local/asl-validated.ts).
 */
const VALIDATED_DEFINITIONS = validatedDefinitions();

export const LOCAL_CHILD_TASK_STATE_MACHINE_ARN =
  "arn:aws:states:us-east-1:000000000000:stateMachine:flow-child-task";

export interface LocalExecutorOptions {
  steps: TaskSteps;
  /** Called once per execution when it ends (errors are logged, not thrown). */
  onEnded: (ending: ExecutionEnding) => Promise<unknown>;
  settings?: Partial<ChildTaskSettings>;
  /** Every Wait state pauses this many ms instead of its seconds (tests, demos). */
  waitOverrideMs?: number;
  /**
   * A callback state (AwaitWave, AwaitPreflight) not woken within this many ms times out into its
   * check; for AwaitWave with its heartbeat, this many ms with no heartbeat (its timeout stays the
   * wave's deadline). Default: `waitOverrideMs` (a test's waits stay as short as its polls); unset
   * too: the state's own timeout (heartbeat).
   */
  awaitTimeoutOverrideMs?: number;
  /** Every Retry pauses this many ms instead of its interval (tests). */
  retryIntervalOverrideMs?: number;
  /** Top-level TimeoutSeconds for the local run (the CDK app sets 6 h on the deployed machine). */
  executionTimeoutSeconds?: number;
  definition?: AslMachine;
  /**
   * false: the library does not validate `definition` (tests whose machine is made of states of
   * the validated definition, around the behaviour they drive). Validating a text not validated
   * before compiles the ASL schema: 0.2-0.5 s of CPU that blocks the event loop in this
   * constructor, many seconds of wall time on a loaded machine. Default true; a text run
   * unvalidated is not recorded as validated.
   */
  validate?: boolean;
  log?: (line: string) => void;
  /**
   * Wraps every step handler call (benchmarks: a scope that files the step's DynamoDB calls under
   * it). Must call `run` once and return what it returns.
   */
  aroundStep?: (event: StepEvent, run: () => Promise<unknown>) => Promise<unknown>;
  /** Told of every state an execution enters, with the state's input (benchmarks' per-step counts). */
  onStateEntered?: (taskId: string, state: { name: string; input: unknown }) => void;
  /**
   * The clock callback states' timeouts and heartbeat intervals run on (tests: one they move
   * themselves). Default: the system clock, whose timers do not hold the process open (an aborted
   * execution's wait must not keep it alive until it times out).
   */
  callbackClock?: Pick<Clock, "after">;
}

/** What the benchmark and tests read: the figures AWS would bill. */
export interface LocalExecutorStats {
  started: number;
  /** StateEntered events, Map iterations' inner states included: Step Functions' billed transitions. */
  stateTransitions: number;
  /** Task state invocations (what would be Lambda invocations), retries included. */
  taskInvocations: number;
  byStep: Record<string, number>;
  /**
   * Callback states (AwaitWave, AwaitPreflight, …) ended by a wake-up (SendTaskSuccess), by their
   * timeout (or heartbeat's), and by SendTaskFailure (a judging wait's own end, a check's fail).
   */
  callbacks: { woken: number; timedOut: number; failed: number };
  /** Heartbeats a waiting callback state received (`heartbeat(token)`; unknown tokens not counted). */
  heartbeats: number;
  /** Executions not yet ended. */
  running: number;
  /**
   * Step handlers still running. An abort ends the execution at once, but a handler already called
   * runs to its end (as a Lambda would): until this is 0, a stopped task's step may still act.
   */
  stepsRunning: number;
}

interface LocalExecution {
  abort: () => void;
  stopCause?: string;
  done: Promise<void>;
  ended: boolean;
}

const freshCounters = () => ({
  started: 0,
  stateTransitions: 0,
  taskInvocations: 0,
  byStep: {} as Record<string, number>,
  callbacks: { woken: 0, timedOut: 0, failed: 0 },
  heartbeats: 0,
});

type Awaiting = { awaitSeconds?: number; awaitTimeoutSeconds?: number };

/** The state machine's Catch matches errors by name, as Step Functions' own States.Timeout. */
class LocalStatesTimeout extends Error {
  override name = "States.Timeout";
}

/** A callback state with a heartbeat that heard nothing for its interval, as Step Functions'. */
class LocalHeartbeatTimeout extends Error {
  override name = "States.HeartbeatTimeout";
}

export class LocalStepFunctionsExecutor implements NamedTaskExecutor, WaveWaker {
  private readonly machine: StateMachine;
  private readonly definition: AslMachine;
  private readonly settings: ChildTaskSettings;
  private readonly executions = new Map<string, LocalExecution>();
  private readonly handlers: Record<string, (input: unknown) => Promise<never>>;
  private readonly log: (line: string) => void;
  private counters = freshCounters();
  private shuttingDown = false;
  private stepsRunning = 0;
  /** Callback states waiting for their token, by token: how to end their wait. */
  private readonly waiting = new Map<
    string,
    { resolve: (output: unknown) => void; reject: (e: Error) => void; beat?: () => void }
  >();
  private tokens = 0;
  private readonly handlersRunning = new Set<Promise<unknown>>();

  constructor(private readonly options: LocalExecutorOptions) {
    this.definition = structuredClone(options.definition ?? loadChildTaskDefinition());
    if (options.executionTimeoutSeconds !== undefined)
      this.definition.TimeoutSeconds = options.executionTimeoutSeconds;
    // Callback states with a heartbeat: served here, as their timeout is.
    const heartbeating = new Set<string>();
    for (const [name, state] of allStates(this.definition)) {
      if (!isCallbackState(state)) continue;
      if (state.HeartbeatSecondsPath !== undefined) heartbeating.add(name);
      delete state.TimeoutSecondsPath;
      delete state.HeartbeatSecondsPath;
      state.TimeoutSeconds = 86_400;
    }
    const clock = options.callbackClock ?? systemClock;
    const timer = (ms: number, fire: () => void) => clock.after(ms, fire);
    // The library validates a definition on every construction with a JSON schema compiled
    // afresh (~0.2-0.5 s of CPU): a definition validated once, by this process or an earlier one,
    // is not validated again. An invalid one is never added, so it fails every time; one run
    // unvalidated (`validate: false`) is not added either.
    const text = JSON.stringify(this.definition);
    const validate = options.validate !== false && !VALIDATED_DEFINITIONS.has(text);
    this.machine = new StateMachine(
      this.definition as never,
      validate ? undefined : { validationOptions: { noValidate: true } },
    );
    if (validate) VALIDATED_DEFINITIONS.add(text);
    this.settings = { ...DEFAULT_CHILD_TASK_SETTINGS, ...options.settings };
    this.log = options.log ?? (() => {});
    const handle = async (input: unknown): Promise<never> => {
      const step = (input as StepEvent).step;
      this.counters.taskInvocations += 1;
      this.counters.byStep[step] = (this.counters.byStep[step] ?? 0) + 1;
      this.stepsRunning += 1;
      const call = () => options.steps.handle(input as StepEvent);
      const running = options.aroundStep ? options.aroundStep(input as StepEvent, call) : call();
      this.handlersRunning.add(running);
      try {
        // A handler's return value must be plain JSON, as a Lambda's would be after serialization.
        const out = await running;
        return (out === undefined ? null : JSON.parse(JSON.stringify(out))) as never;
      } finally {
        this.stepsRunning -= 1;
        this.handlersRunning.delete(running);
      }
    };
    // A callback state: the step gets the token in its Payload; the state ends with wake(token).
    const callback =
      (heartbeats: boolean) =>
      async (input: unknown): Promise<never> => {
        const payload = (input as { Payload: StepEvent & { taskId: string } }).Payload;
        this.tokens += 1;
        const token = `local-token:${payload.taskId}:${this.tokens}`;
        const waiting: { resolve: (output: unknown) => void; reject: (e: Error) => void; beat?: () => void } =
          {
            resolve: () => {},
            reject: () => {},
          };
        const woken = new Promise<unknown>((resolve, reject) => {
          waiting.resolve = resolve;
          waiting.reject = reject;
        });
        // The step may end its own wait (a judge's SendTaskFailure) before the race below awaits
        // it: handled here, so that rejection is never reported as unhandled meanwhile.
        woken.catch(() => {});
        this.waiting.set(token, waiting);
        const cancels: (() => void)[] = [];
        try {
          await handle({ ...payload, token });
          // The state's TimeoutSecondsPath: the wave's awaitSeconds (AwaitWave), or the preflight's;
          // with a heartbeat, the wave's awaitTimeoutSeconds, its awaitSeconds the heartbeat's.
          const { wave, preflight, cursor } = payload as {
            wave?: Awaiting;
            preflight?: Awaiting;
            cursor?: { external?: { timeoutSeconds: number } };
          };
          const seconds = (wave ?? preflight)?.awaitSeconds ?? 60;
          const external = cursor?.external?.timeoutSeconds;
          const override = options.awaitTimeoutOverrideMs ?? options.waitOverrideMs;
          const beating = heartbeats && external === undefined && wave?.awaitTimeoutSeconds !== undefined;
          const timeoutMs =
            external !== undefined
              ? external * 1000
              : beating
                ? (wave?.awaitTimeoutSeconds as number) * 1000
                : (override ?? seconds * 1000);
          const output = await Promise.race([
            woken,
            new Promise<never>((_, reject) => {
              const timedOut = (error: Error) => () => {
                this.counters.callbacks.timedOut += 1;
                reject(error);
              };
              cancels.push(timer(timeoutMs, timedOut(new LocalStatesTimeout("States.Timeout"))));
              if (!beating) return;
              const heartbeatMs = override ?? seconds * 1000;
              let cancelBeat = timer(
                heartbeatMs,
                timedOut(new LocalHeartbeatTimeout("States.HeartbeatTimeout")),
              );
              cancels.push(() => cancelBeat());
              waiting.beat = () => {
                cancelBeat();
                cancelBeat = timer(
                  heartbeatMs,
                  timedOut(new LocalHeartbeatTimeout("States.HeartbeatTimeout")),
                );
              };
            }),
          ]);
          this.counters.callbacks.woken += 1;
          // The wake-up's output is the state's result, as SendTaskSuccess's is.
          return output as never;
        } finally {
          for (const cancel of cancels) cancel();
          this.waiting.delete(token);
        }
      };
    const callbacks = new Set(callbackStateNames(this.definition));
    this.handlers = Object.fromEntries(
      taskStateNames(this.definition).map((name) => [
        name,
        callbacks.has(name) ? callback(heartbeating.has(name)) : handle,
      ]),
    );
  }

  /** The local SendTaskSuccess: the callback state waiting on `token` goes on; an unknown one is no error. */
  async wake(token: string, output: WakeOutput): Promise<void> {
    await this.sendTaskSuccess(token, output);
  }

  /**
   * The local SendTaskHeartbeat: the state waiting on `token` starts its heartbeat interval again
   * (a state without a heartbeat just counts it); an unknown token is no error.
   */
  async heartbeat(token: string): Promise<void> {
    const waiting = this.waiting.get(token);
    if (waiting === undefined) return;
    this.counters.heartbeats += 1;
    waiting.beat?.();
  }

  /** The local SendTaskSuccess: the state waiting on `token` ends with `output`; an unknown token is no error. */
  async sendTaskSuccess(token: string, output: unknown): Promise<void> {
    const waiting = this.waiting.get(token);
    this.waiting.delete(token);
    // Through JSON, as SendTaskSuccess's output is: the state gets a copy, not the waker's object.
    waiting?.resolve(JSON.parse(JSON.stringify(output)));
  }

  /** The local SendTaskFailure, as the WaveWaker's `fail`. */
  async fail(token: string, error: string, cause: string): Promise<void> {
    await this.sendTaskFailure(token, error, cause);
  }

  /** The local SendTaskFailure: the state waiting on `token` fails with `error` (its name) and `cause`. */
  async sendTaskFailure(token: string, error: string, cause: string): Promise<void> {
    const waiting = this.waiting.get(token);
    this.waiting.delete(token);
    if (waiting !== undefined) this.counters.callbacks.failed += 1;
    const failure = new Error(cause);
    failure.name = error;
    waiting?.reject(failure);
  }

  executionIdFor(taskId: string): string {
    return executionArnFor(LOCAL_CHILD_TASK_STATE_MACHINE_ARN, taskId);
  }

  async start(task: Task): Promise<{ executionId: string }> {
    const executionId = this.executionIdFor(task.id);
    if (this.executions.has(task.id) || this.shuttingDown) return { executionId };
    const waits =
      this.options.waitOverrideMs === undefined
        ? undefined
        : Object.fromEntries(
            waitStateNames(this.definition).map((n) => [n, this.options.waitOverrideMs as number]),
          );
    const retries =
      this.options.retryIntervalOverrideMs === undefined
        ? undefined
        : Object.fromEntries(
            Object.keys(this.handlers).map((n) => [n, this.options.retryIntervalOverrideMs as number]),
          );
    // Through JSON, as StartExecution's input is: the steps (AcquireLock's `$$.Execution.Input`,
    // the task it may carry) get a copy, never the submitter's own objects.
    const input = JSON.parse(JSON.stringify(childTaskInput(task, this.settings)));
    const run = this.machine.run(input, {
      overrides: {
        taskResourceLocalHandlers: this.handlers as never,
        ...(waits ? { waitTimeOverrides: waits } : {}),
        ...(retries ? { retryIntervalOverrides: retries } : {}),
      },
      // Task.Token: what `$$.Task.Token` reads; the callback handler mints the real one.
      context: { Execution: { Id: executionId, Name: task.id }, Task: { Token: "local-token" } },
    });
    this.counters.started += 1;
    const execution: LocalExecution = { abort: run.abort, done: Promise.resolve(), ended: false };
    this.executions.set(task.id, execution);
    void (async () => {
      for await (const event of run.eventLogs) {
        if (event.type !== "StateEntered") continue;
        this.counters.stateTransitions += 1;
        this.options.onStateEntered?.(task.id, { name: event.state.name, input: event.state.input });
      }
    })().catch(() => {});
    execution.done = run.result.then(
      () => this.ended(task.id, execution, { taskId: task.id, status: "SUCCEEDED" }),
      (error: unknown) => this.ended(task.id, execution, this.endingOf(task.id, execution, error)),
    );
    return { executionId };
  }

  private endingOf(taskId: string, execution: LocalExecution, error: unknown): ExecutionEnding {
    if (error instanceof ExecutionAbortedError) {
      return execution.stopCause === undefined
        ? { taskId, status: "ABORTED" }
        : { taskId, status: "ABORTED", cause: execution.stopCause };
    }
    if (error instanceof ExecutionTimeoutError) return { taskId, status: "TIMED_OUT" };
    const inner = (error as { cause?: { name?: string; message?: string } }).cause;
    return {
      taskId,
      status: "FAILED",
      error: inner?.name ?? (error as Error).name,
      cause: inner?.message ?? (error as Error).message,
    };
  }

  private async ended(taskId: string, execution: LocalExecution, ending: ExecutionEnding): Promise<void> {
    execution.ended = true;
    if (this.shuttingDown) return;
    try {
      // Like the execution-status rule's Lambda, retried while the store is down.
      await retryWhileUnavailable(() => this.options.onEnded(ending));
    } catch (error) {
      this.log(
        `local-executor: recording the end of ${taskId} (${ending.status}) failed: ${(error as Error).message}`,
      );
    }
  }

  async stop(executionId: string, cause: string): Promise<void> {
    const taskId = executionId.slice(executionId.lastIndexOf(":") + 1);
    const execution = this.executions.get(taskId);
    if (execution === undefined || execution.ended) return;
    execution.stopCause ??= cause;
    execution.abort();
    await execution.done;
  }

  /** Resolves when every execution started so far has ended and its ending was recorded. */
  async idle(): Promise<void> {
    for (;;) {
      const pending = [...this.executions.values()].filter((e) => !e.ended);
      if (pending.length === 0) return;
      await Promise.all(pending.map((e) => e.done));
    }
  }

  stats(): LocalExecutorStats {
    const running = [...this.executions.values()].filter((e) => !e.ended).length;
    return { ...structuredClone(this.counters), running, stepsRunning: this.stepsRunning };
  }

  resetStats(): void {
    this.counters = freshCounters();
  }

  /**
   * Process shutdown: aborts what is running WITHOUT recording anything (a stopping laptop is not
   * an operator's cancel; the tasks stay RUNNING, and a restart on the same store re-drives them,
   * see local/child-tasks.ts `resume`). Use stop() to cancel. Step handlers already called run to
   * their end first (as a Lambda invocation would), up to `graceMs`, so a stop does not cut one
   * between its writes while the store is still there.
   */
  async shutdown(graceMs = 10_000): Promise<void> {
    this.shuttingDown = true;
    const pending = [...this.executions.values()].filter((e) => !e.ended);
    for (const e of pending) e.abort();
    await Promise.allSettled(pending.map((e) => e.done));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.handlersRunning]),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, graceMs);
      }),
    ]);
    clearTimeout(timer);
  }
}
