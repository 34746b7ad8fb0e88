/**
 * Ports between the dispatcher and the child-task machinery. The dispatcher claims a target and
 * hands it to a `ChildTaskSubmitter`; the task service (src/app/tasks.ts) implements it by taking
 * the rack lock, creating the task under its idempotency key and starting a `TaskExecutor`
 * execution (Step Functions in AWS and locally via aws-local-stepfunctions).
 *
 * When a child task ends, the task path records the outcome on the task AND on the run's target
 * (RunStore.recordOutcome: counters move exactly once), releases the rack lock, and the DynamoDB
 * stream of that target transition wakes the dispatcher for the run, which refills the slot.
 */
import type { ComponentsForType, FirmwareTemplate, Task } from "../domain/model.js";

/** `operation-run-target:<targetId>`: a retried submission finds the task instead of making a second. */
export const targetIdempotencyKey = (targetId: string): string => `operation-run-target:${targetId}`;

export interface ChildTaskRequest {
  idempotencyKey: string;
  runId: string;
  targetId: string;
  rackId: string;
  componentsByType: ComponentsForType[];
  /** The run's frozen upgrade template; its targetSpec is ignored (the target is the rack). */
  template: FirmwareTemplate;
}

export type SubmitOutcome =
  /** The task exists (now or from an earlier attempt) and its execution was started. */
  | { kind: "submitted"; taskId: string }
  /** The rack is busy with another task (conflict strategy REJECT): block and back off. */
  | { kind: "conflict"; message: string }
  /** Any other submission error: the target fails with this text. */
  | { kind: "rejected"; message: string };

export interface ChildTaskSubmitter {
  /**
   * Idempotent per `idempotencyKey`: a retry (after a crash, a lost response or a lease expiry)
   * returns the same task id and never starts a second execution, so a rack is never flashed twice.
   */
  submit(request: ChildTaskRequest, now: number): Promise<SubmitOutcome>;
  /**
   * Best effort: stops the task's execution. When it stops, the task path records TERMINATED on the
   * task and its target. Stopping an already finished task is a no-op.
   */
  cancel(taskId: string, reason: string): Promise<void>;
}

/** Runs one child task. Implementations: Step Functions (AWS), aws-local-stepfunctions (local). */
export interface TaskExecutor {
  /** Idempotent: the execution name is the task id, so a repeat start returns the same execution. */
  start(task: Task): Promise<{ executionId: string }>;
  /** Idempotent: stopping a stopped or finished execution is a no-op. */
  stop(executionId: string, cause: string): Promise<void>;
}

/**
 * Wakes the dispatcher for one run (a slot freed, a phase may be complete, a gate may trip), called
 * by whoever just recorded a target's outcome. Best effort and never throws: the targets stream
 * wakes the run too, a little later, and the tick after that. Resolves once the wake-up is handed
 * on (an asynchronous Lambda invocation accepted; locally, a pass queued), not when the pass ends.
 */
export interface RunWaker {
  wake(runId: string): Promise<void>;
}
