/**
 * The TaskExecutor on AWS Step Functions (Standard). The execution NAME is the task id, so a
 * retried StartExecution (a lost response, a crashed dispatcher, a re-submitted task) can never
 * start a second execution and flash a rack twice:
 *   start(T) → StartExecution(name T)            → arn …:execution:<machine>:T
 *   start(T) → StartExecution(name T), same input → the same arn (Step Functions' own idempotency)
 *   start(T) after T finished, or other input     → ExecutionAlreadyExists → the same arn, nothing started
 * The input carries the task as given (childTaskInput): a re-submission that read T at another
 * version is "other input", and answers the same arn as above.
 * Standard executions keep their names for 90 days after they close, longer than any retry.
 */
import { type SFNClient, StartExecutionCommand, StopExecutionCommand } from "@aws-sdk/client-sfn";
import type { ChildTaskInput, ChildTaskSettings } from "../../app/child-task/settings.js";
import { DEFAULT_CHILD_TASK_SETTINGS } from "../../app/child-task/settings.js";
import type { TaskExecutor } from "../../app/ports.js";
import type { Task } from "../../domain/task.js";

/** A TaskExecutor that knows an execution's id before starting it (so it is stored with the task). */
export interface NamedTaskExecutor extends TaskExecutor {
  executionIdFor(taskId: string): string;
}

/**
 * The largest task (its JSON, in bytes) the execution input carries for AcquireLock
 * (ChildTaskInput.task). The input stays in the execution's state, `$`, for every state after
 * AcquireLock (each ResultPath adds to it), and Step Functions rewrites that state on each
 * transition under a limit of 256 KiB shared with the plan, its groups' facts and a wave's
 * answers: the carried task takes a small, bounded part of it. A GB200 rack's task (39 BMCs, the
 * default rule) is ~7.3 KB, ~9.2 KB with a pinned rule the size of the default (~1.9 KB of JSON);
 * a larger one is not carried, and its AcquireLock reads the task, as before.
 */
export const CARRIED_TASK_MAX_BYTES = 16 * 1024;

/**
 * The execution input for `task`: its id and rack, the settings, and the task itself when it is
 * small enough (CARRIED_TASK_MAX_BYTES), so AcquireLock need not read it. A task from any moment
 * will do (a fresh one saves the read; a stale one costs a re-read, lock.ts `carriedTask`).
 *   childTaskInput(T PENDING@500, 7.3 KB) → { taskId, rackId, settings, task: T }
 *   childTaskInput(T, 20 KB)              → { taskId, rackId, settings }
 */
export function childTaskInput(task: Task, settings: ChildTaskSettings): ChildTaskInput {
  const input: ChildTaskInput = { taskId: task.id, rackId: task.rackId, settings };
  if (Buffer.byteLength(JSON.stringify(task)) <= CARRIED_TASK_MAX_BYTES) input.task = task;
  return input;
}

/** `arn:aws:states:r:a:stateMachine:M` + `T` → `arn:aws:states:r:a:execution:M:T`. */
export function executionArnFor(stateMachineArn: string, name: string): string {
  return `${stateMachineArn.replace(":stateMachine:", ":execution:")}:${name}`;
}

const named = (error: unknown, name: string): boolean => (error as { name?: string } | null)?.name === name;

export class StepFunctionsTaskExecutor implements NamedTaskExecutor {
  private readonly settings: ChildTaskSettings;

  constructor(
    private readonly client: SFNClient,
    private readonly stateMachineArn: string,
    settings: Partial<ChildTaskSettings> = {},
  ) {
    this.settings = { ...DEFAULT_CHILD_TASK_SETTINGS, ...settings };
  }

  executionIdFor(taskId: string): string {
    return executionArnFor(this.stateMachineArn, taskId);
  }

  async start(task: Task): Promise<{ executionId: string }> {
    try {
      const out = await this.client.send(
        new StartExecutionCommand({
          stateMachineArn: this.stateMachineArn,
          name: task.id,
          input: JSON.stringify(childTaskInput(task, this.settings)),
        }),
      );
      return { executionId: out.executionArn ?? this.executionIdFor(task.id) };
    } catch (error) {
      if (named(error, "ExecutionAlreadyExists")) return { executionId: this.executionIdFor(task.id) };
      throw error;
    }
  }

  async stop(executionId: string, cause: string): Promise<void> {
    try {
      // `cause` is operator text; it is capped to what StopExecution accepts (32768 characters).
      await this.client.send(
        new StopExecutionCommand({ executionArn: executionId, cause: cause.slice(0, 32_000) }),
      );
    } catch (error) {
      if (named(error, "ExecutionDoesNotExist")) return;
      throw error;
    }
  }
}
