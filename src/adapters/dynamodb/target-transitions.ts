/**
 * A target's moves on DynamoDB other than its claims (those are target-claims.ts's), for
 * DynamoRunStore's dispatch half: submitted, blocked, outcome and skip, each with the run counter
 * it moves in the same transaction, and the prior versions a child task records on its target
 * (alone, or with its task's save: the task store's saveTaskWithPriorVersions).
 */

import {
  type DynamoDBDocumentClient,
  type TransactWriteCommandInput,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import type { BlockedUpdate, TransitionOutcome } from "../../app/ports.js";
import { isTerminalTarget, type OutcomeStatus, type PriorVersion } from "../../domain/model.js";
import { isConditionFailed, transactWrite } from "./db.js";
import { MARK_VALUES, withMark } from "./due-index.js";
import { counterAttribute, domainCounterAttribute } from "./items.js";
import type { RunItemReader } from "./run-item-reader.js";
import type { TableNames } from "./schema.js";

export class DynamoTargetTransitions {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
    private readonly reader: RunItemReader,
  ) {}

  async recordSubmitted(
    runId: string,
    targetId: string,
    taskId: string,
    now: number,
    message = "submitted",
  ): Promise<TransitionOutcome> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tables.targets,
          Key: { runId, targetId },
          UpdateExpression:
            "SET #s = :submitted, taskId = :task, message = :msg, updatedAt = :now REMOVE leaseExpiresAt, queueKey",
          ConditionExpression: "#s = :claimed",
          ExpressionAttributeNames: { "#s": "status" },
          ExpressionAttributeValues: {
            ":submitted": "SUBMITTED",
            ":claimed": "CLAIMED",
            ":task": taskId,
            ":msg": message,
            ":now": now,
          },
        }),
      );
      return "recorded";
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      const current = await this.reader.getTarget(runId, targetId);
      if (current === undefined) return "not-found";
      return current.status === "SUBMITTED" && current.taskId === taskId ? "already-recorded" : "lost-race";
    }
  }

  async recordBlocked(
    runId: string,
    targetId: string,
    blocked: BlockedUpdate,
    now: number,
  ): Promise<TransitionOutcome> {
    const codes = await transactWrite(this.doc, {
      TransactItems: [
        {
          Update: {
            TableName: this.tables.targets,
            Key: { runId, targetId },
            // CLAIMED and BLOCKED share the held queue class: queueKey stays as the claim set it.
            UpdateExpression:
              "SET #s = :blocked, message = :msg, retryAt = :retry, conflictAttempts = :attempts, firstBlockedAt = :first, updatedAt = :now REMOVE leaseExpiresAt",
            ConditionExpression: "#s = :claimed",
            ExpressionAttributeNames: { "#s": "status" },
            ExpressionAttributeValues: {
              ":blocked": "BLOCKED",
              ":claimed": "CLAIMED",
              ":msg": blocked.message,
              ":retry": blocked.retryAt,
              ":attempts": blocked.conflictAttempts,
              ":first": blocked.firstBlockedAt,
              ":now": now,
            },
          },
        },
        {
          Update: {
            TableName: this.tables.runs,
            Key: { runId },
            ConditionExpression: "attribute_exists(runId)",
            ExpressionAttributeValues: { ":one": 1, ...MARK_VALUES },
            ...(blocked.failureDomain === undefined
              ? { UpdateExpression: withMark("inFlight = inFlight - :one", "") }
              : {
                  UpdateExpression: withMark("inFlight = inFlight - :one, #d = #d - :one", ""),
                  ExpressionAttributeNames: { "#d": domainCounterAttribute(blocked.failureDomain) },
                }),
          },
        },
      ],
    });
    if (codes === undefined) return "recorded";
    return (await this.reader.getTarget(runId, targetId)) === undefined ? "not-found" : "lost-race";
  }

  /**
   *   child task ends: target T SUBMITTED@300 (phase 1), run inFlight 3, c1_completed 4
   *   recordOutcome(T, COMPLETED): [T: SUBMITTED@300 → COMPLETED] + [run: c1_completed 5, inFlight 2]
   *   stream redelivers, task retried: T is COMPLETED → 'already-recorded', nothing written
   *   a concurrent writer moved T first (condition on SUBMITTED@300 fails): re-read, decide again
   *
   * With the target's phase known (a child task's outcome), the first attempt reads nothing: the
   * write is conditioned on T being CLAIMED or SUBMITTED in that phase, both in flight, so the
   * counters move as they would after a read (+1 to the phase's counter, inFlight −1) and
   * exactly once (a terminal T fails the condition). Any other T (absent, terminal, never
   * claimed) fails it too and is read and handled as above.
   */
  async recordOutcome(
    runId: string,
    targetId: string,
    status: OutcomeStatus,
    message: string,
    now: number,
    phaseIndex?: number,
  ): Promise<TransitionOutcome> {
    if (phaseIndex !== undefined) {
      const codes = await this.writeOutcome(runId, targetId, status, message, now, inFlightPrior(phaseIndex));
      if (codes === undefined) return "recorded";
      if (codes[1] === "ConditionalCheckFailed") return "not-found";
    }
    for (let attempt = 0; attempt < 10; attempt++) {
      const current = await this.reader.getTarget(runId, targetId);
      if (current === undefined) return "not-found";
      if (isTerminalTarget(current.status)) return "already-recorded";
      const codes = await this.writeOutcome(runId, targetId, status, message, now, {
        phaseIndex: current.phaseIndex,
        wasInFlight: current.status === "CLAIMED" || current.status === "SUBMITTED",
        condition: "#s = :prior AND updatedAt = :priorUpdated",
        values: { ":prior": current.status, ":priorUpdated": current.updatedAt },
        ...(current.failureDomain === undefined ? {} : { failureDomain: current.failureDomain }),
      });
      if (codes === undefined) return "recorded";
      if (codes[1] === "ConditionalCheckFailed") return "not-found";
    }
    return "lost-race";
  }

  private writeOutcome(
    runId: string,
    targetId: string,
    status: OutcomeStatus,
    message: string,
    now: number,
    prior: OutcomePrior,
  ): ReturnType<typeof transactWrite> {
    return transactWrite(this.doc, {
      TransactItems: outcomeItems(this.tables, { runId, targetId, status, message, now }, prior),
    });
  }

  /**
   * BLOCKED → BLOCKED with firstBlockedAt := now (attempts and retryAt kept), for resuming a run
   * paused with CONFLICT_RETRY_TIMEOUT (controls' `restartConflictClocks`; not on the RunStore port
   * yet, see src/app/controls.ts ConflictClockStore). Not BLOCKED any more → 'lost-race'.
   */
  async restartConflictClock(runId: string, targetId: string, now: number): Promise<TransitionOutcome> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tables.targets,
          Key: { runId, targetId },
          UpdateExpression: "SET firstBlockedAt = :now, updatedAt = :now",
          ConditionExpression: "#s = :blocked",
          ExpressionAttributeNames: { "#s": "status" },
          ExpressionAttributeValues: { ":now": now, ":blocked": "BLOCKED" },
        }),
      );
      return "recorded";
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      return (await this.reader.getTarget(runId, targetId)) === undefined ? "not-found" : "lost-race";
    }
  }

  /** One conditional write: set only where the target exists and has no prior versions yet. */
  async recordPriorVersions(
    runId: string,
    targetId: string,
    priors: PriorVersion[],
  ): Promise<TransitionOutcome> {
    try {
      await this.doc.send(new UpdateCommand(priorVersionsUpdate(this.tables, { runId, targetId, priors })));
      return "recorded";
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      return (await this.reader.getTarget(runId, targetId)) === undefined ? "not-found" : "already-recorded";
    }
  }

  async skipTargets(runId: string, targetIds: string[], message: string, now: number): Promise<number> {
    let moved = 0;
    for (const targetId of targetIds) {
      if ((await this.recordOutcome(runId, targetId, "SKIPPED", message, now)) === "recorded") moved++;
    }
    return moved;
  }
}

/**
 * A target's prior versions, set once, whatever its state, and only where the target exists.
 * "refuse" (recordPriorVersions): a target that has some fails the condition, nothing written.
 * "keep" (the task store's save of the preflight, in a transaction a failed condition would
 * cancel whole): a target that has some keeps them, and the write goes through unchanged.
 */
export function priorVersionsUpdate(
  tables: Pick<TableNames, "targets">,
  prior: { runId: string; targetId: string; priors: PriorVersion[] },
  had: "refuse" | "keep" = "refuse",
) {
  const { runId, targetId, priors } = prior;
  return {
    TableName: tables.targets,
    Key: { runId, targetId },
    ...(had === "refuse"
      ? {
          UpdateExpression: "SET priorVersions = :priors",
          ConditionExpression: "attribute_exists(targetId) AND attribute_not_exists(priorVersions)",
        }
      : {
          UpdateExpression: "SET priorVersions = if_not_exists(priorVersions, :priors)",
          ConditionExpression: "attribute_exists(targetId)",
        }),
    ExpressionAttributeValues: { ":priors": priors },
  };
}

/** What an outcome's write is conditioned on: the target as read, or "in flight in this phase". */
export interface OutcomePrior {
  phaseIndex: number;
  wasInFlight: boolean;
  /** (ours) The target's failure domain as read: its counter is released with inFlight. */
  failureDomain?: string;
  condition: string;
  values: Record<string, unknown>;
}

/**
 * A target still in flight in `phaseIndex`, unread (a child task's outcome). Not one with a failure
 * domain: its domain counter must move too, and only a read says which; such a target fails the
 * condition and its outcome is written after a read.
 */
export function inFlightPrior(phaseIndex: number): OutcomePrior {
  return {
    phaseIndex,
    wasInFlight: true,
    condition: "#s IN (:claimed, :submitted) AND phaseIndex = :phase AND attribute_not_exists(failureDomain)",
    values: { ":claimed": "CLAIMED", ":submitted": "SUBMITTED", ":phase": phaseIndex },
  };
}

/**
 * [target → status under `prior.condition`] + [run: the phase's counter +1, inFlight −1 if it was
 * in flight]: the two items of every outcome's transaction (also the task store's ending of a run
 * child, which puts the task before them).
 */
export function outcomeItems(
  tables: Pick<TableNames, "targets" | "runs">,
  outcome: { runId: string; targetId: string; status: OutcomeStatus; message: string; now: number },
  prior: OutcomePrior,
): NonNullable<TransactWriteCommandInput["TransactItems"]> {
  const { runId, targetId, status, message, now } = outcome;
  const { wasInFlight } = prior;
  const domain = wasInFlight ? prior.failureDomain : undefined;
  return [
    {
      Update: {
        TableName: tables.targets,
        Key: { runId, targetId },
        UpdateExpression:
          "SET #s = :status, message = :msg, updatedAt = :now REMOVE leaseExpiresAt, retryAt, queueKey",
        ConditionExpression: prior.condition,
        ExpressionAttributeNames: { "#s": "status" },
        ExpressionAttributeValues: { ":status": status, ":msg": message, ":now": now, ...prior.values },
      },
    },
    {
      Update: {
        TableName: tables.runs,
        Key: { runId },
        UpdateExpression: withMark(
          "",
          wasInFlight ? `#c :one, inFlight :minus${domain === undefined ? "" : ", #d :minus"}` : "#c :one",
        ),
        ConditionExpression: "attribute_exists(runId)",
        ExpressionAttributeNames: {
          "#c": counterAttribute(prior.phaseIndex, status),
          ...(domain === undefined ? {} : { "#d": domainCounterAttribute(domain) }),
        },
        ExpressionAttributeValues: {
          ...(wasInFlight ? { ":one": 1, ":minus": -1 } : { ":one": 1 }),
          ...MARK_VALUES,
        },
      },
    },
  ];
}
