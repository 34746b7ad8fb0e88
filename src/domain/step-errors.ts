/**
 * The child task's step errors. Their `name`s are part of the state machine's contract
 * (state-machines/child-task.asl.json matches Retry and Catch on them; `instanceof` does not survive
 * Lambda → Step Functions), and RecordFailure turns them into the task's message.
 */
import type { ComponentType } from "./model.js";

export const STEP_ERROR_NAMES = [
  "RackLockHeld",
  "QueueTimeout",
  "BmcUnreachable",
  "BmcTimeout",
  "BmcUpdateFailed",
  "VersionMismatch",
  "ComponentsFailed",
  /** The preflight: a component to flash stayed not ready until the readiness timeout. */
  "ComponentNotReady",
  "TaskNotFound",
  /** The task ended (was cancelled) while the execution was still running. */
  "TaskEnded",
  "TaskMisconfigured",
  /** A plain task not started by its request's end_time. */
  "MaintenanceWindowClosed",
  /** A flashed version that is not active after the stage's activation (or with none): staged only. */
  "NotActivated",
  /** A BMC answered an activation (reset, power cycle, AC cycle) that it could not perform. */
  "ActivationFailed",
  /** A whole-rack AC cycle (AC_CYCLE, scope RACK) on a rack whose inventory has no power shelf. */
  "NoPowerShelf",
  /** A BMC reports its component unhealthy (Warning or Critical) at a CHECK_HEALTH step. */
  "HealthCheckFailed",
  /** An external health check could not be handed the rack (not configured, unreachable): inconclusive. */
  "ExternalCheckUnavailable",
] as const;
export type StepErrorName = (typeof STEP_ERROR_NAMES)[number];

/**
 * How a judging wait ends when its invocation sends no next step (wave-judge.ts): not failures.
 * The invocation ends its own wait with one (SendTaskFailure) and the state's Catch routes it
 * (never retried, never recorded): the task's last step judged and its outcome recorded, or the
 * judged step handed to CheckWave (a retry, an external check, a sleep next, answers not all in).
 */
export const JUDGE_EXITS = { outcomeRecorded: "OutcomeRecorded", stepHandedOver: "StepHandedOver" } as const;

export class StepError extends Error {
  constructor(
    readonly stepErrorName: StepErrorName,
    message: string,
  ) {
    super(message);
    this.name = stepErrorName;
  }
}

/** The reference's text for a busy rack (dispatcher conflicts, REJECT, the state's own re-check). */
export function rackConflictMessage(rackId: string): string {
  return `failed to create task for required rack ${rackId}: rack ${rackId} already has a conflicting task: rack conflict`;
}

export const componentLabel = (id: string, type: ComponentType): string => `component ${id} (${type})`;

/** A caught error as Step Functions hands it to the next state (a Catch's ResultPath). */
export type CaughtError = { Error?: string; Cause?: unknown };

/**
 * The text of a caught error as Step Functions hands it to the next state: `{Error, Cause}`, where
 * Cause is, in AWS, the Lambda's JSON error document (`{"errorType","errorMessage","trace"}`) and,
 * in aws-local-stepfunctions, the message itself. `States.*` errors carry a plain Cause.
 */
export function causeText(error: CaughtError | undefined): string {
  if (error === undefined) return "unknown error";
  const cause = error.Cause;
  let text = "";
  if (typeof cause === "string") {
    text = cause;
    if (cause.startsWith("{")) {
      try {
        const doc = JSON.parse(cause) as { errorMessage?: unknown };
        if (typeof doc.errorMessage === "string") text = doc.errorMessage;
      } catch {
        // not JSON after all: keep the raw text
      }
    }
  } else if (cause !== undefined && cause !== null) {
    text = JSON.stringify(cause);
  }
  const name = error.Error ?? "Error";
  if (text === "") return name;
  // Our own errors already say what happened; others get their name in front.
  return (STEP_ERROR_NAMES as readonly string[]).includes(name) ? text : `${name}: ${text}`;
}
