/**
 * A target's moves on DynamoDB (DynamoRunStore's dispatch half): claims, singly and in batches,
 * against the run's in-flight counter and maintenance window, then submitted, blocked, outcome
 * and skip, each with the run counter it moves in the same transaction.
 */

import {
  type DynamoDBDocumentClient,
  type TransactWriteCommandInput,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import type { BatchClaimResult, BlockedUpdate, ClaimOutcome, TransitionOutcome } from "../../app/ports.js";
import { domainsTaken } from "../../domain/failure-domains.js";
import {
  isTerminalTarget,
  type OutcomeStatus,
  type PriorVersion,
  type Run,
  type Target,
} from "../../domain/model.js";
import { isConditionFailed, transactWrite } from "./db.js";
import { MARK_VALUES, withMark } from "./due-index.js";
import { counterAttribute, domainCounterAttribute, isActiveRunStatus } from "./items.js";
import type { RunItemReader } from "./run-item-reader.js";
import { queueKey, type TableNames } from "./schema.js";

/** claimTargets: one transaction holds the batch's targets plus the run item (100 items at most). */
const MAX_BATCH_CLAIM = 98;
/**
 * The run half of every claim: the run is active and its maintenance window has not closed. The
 * hard end (end_time, frozen at create) is on the run item as `windowEndsAt`; runs without one (and
 * runs stored before windows existed) have no such attribute and no bound.
 *
 *   run R, windowEndsAt 12:00:00.000
 *   pass A reads R at 11:59:59.990 (open), claims with :now = 11:59:59.995   → committed
 *   pass B reads R at 11:59:59.990 (open), claims with :now = 12:00:00.002   → condition fails,
 *        nothing written, 'window-closed': the time judged is the claim's, not the read's
 */
const RUN_CLAIMABLE =
  "#s IN (:pending, :running) AND (attribute_not_exists(windowEndsAt) OR windowEndsAt > :now)";
const claimableValues = (now: number) => ({ ":pending": "PENDING", ":running": "RUNNING", ":now": now });

/**
 * The target half of a claim: still in the state the caller read (status and updatedAt) and still
 * ready (a BLOCKED target's retry is due, a CLAIMED target's lease is over) → CLAIMED with a fresh
 * lease. undefined for a status that is never ready (the caller's 'lost-race').
 */
function claimUpdate(table: string, expected: Target, leaseMs: number, now: number) {
  const readiness: Record<string, string | undefined> = {
    PENDING: "",
    BLOCKED: " AND retryAt <= :now",
    CLAIMED: " AND leaseExpiresAt <= :now",
  };
  const extra = readiness[expected.status];
  if (extra === undefined) return undefined;
  return {
    Update: {
      TableName: table,
      Key: { runId: expected.runId, targetId: expected.id },
      UpdateExpression: "SET #s = :claimed, leaseExpiresAt = :lease, updatedAt = :now, queueKey = :queue",
      ConditionExpression: `#s = :expected AND updatedAt = :expectedUpdated${extra}`,
      ExpressionAttributeNames: { "#s": "status" },
      ExpressionAttributeValues: {
        ":claimed": "CLAIMED",
        ":lease": now + leaseMs,
        ":now": now,
        ":expected": expected.status,
        ":expectedUpdated": expected.updatedAt,
        ":queue": queueKey(expected.phaseIndex, expected.sequenceIndex, "held"),
      },
    },
  };
}

export class DynamoTargetTransitions {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
    private readonly reader: RunItemReader,
  ) {}

  /**
   *   dispatcher A reads target T (PENDING, updatedAt 100); dispatcher B reads T too
   *   A: [T: PENDING@100 → CLAIMED] + [run: inFlight 2 < 3 → 3]   committed → 'claimed'
   *   B: [T: PENDING@100 → CLAIMED] fails (T is CLAIMED now)        cancelled → 'lost-race'
   *   C (other target U): [U → CLAIMED] + [run: inFlight 3 < 3] fails   cancelled → 'slots-full'
   */
  async claimTarget(expected: Target, leaseMs: number, now: number, until?: number): Promise<ClaimOutcome> {
    if (until !== undefined && now >= until) return "window-closed";
    const targetItem = claimUpdate(this.tables.targets, expected, leaseMs, now);
    if (targetItem === undefined) return "lost-race";
    const reclaim = expected.status === "CLAIMED";
    // Both forms mark the run due (due-index.ts): a pass that read it before this claim must not
    // defer it past this claim's lease. With a failure domain, the domain's counter moves with
    // inFlight under the spread's cap:
    //   [T: PENDING → CLAIMED] + [run: inFlight < max AND dif:dc1/A < spreadMax → both +1]
    const domain = expected.failureDomain;
    const runItem: NonNullable<TransactWriteCommandInput["TransactItems"]>[number] = reclaim
      ? {
          Update: {
            TableName: this.tables.runs,
            Key: { runId: expected.runId },
            UpdateExpression: withMark("", ""),
            ConditionExpression: RUN_CLAIMABLE,
            ExpressionAttributeNames: { "#s": "status" },
            ExpressionAttributeValues: { ...claimableValues(now), ...MARK_VALUES },
          },
        }
      : {
          Update:
            domain === undefined
              ? {
                  TableName: this.tables.runs,
                  Key: { runId: expected.runId },
                  UpdateExpression: withMark("inFlight = inFlight + :one", ""),
                  ConditionExpression: `${RUN_CLAIMABLE} AND inFlight < maxConcurrent`,
                  ExpressionAttributeNames: { "#s": "status" } as Record<string, string>,
                  ExpressionAttributeValues: { ...claimableValues(now), ":one": 1, ...MARK_VALUES },
                }
              : {
                  TableName: this.tables.runs,
                  Key: { runId: expected.runId },
                  UpdateExpression: withMark(
                    "inFlight = inFlight + :one, #d = if_not_exists(#d, :zero) + :one",
                    "",
                  ),
                  ConditionExpression: `${RUN_CLAIMABLE} AND inFlight < maxConcurrent AND (attribute_not_exists(#d) OR #d < spreadMax)`,
                  ExpressionAttributeNames: { "#s": "status", "#d": domainCounterAttribute(domain) },
                  ExpressionAttributeValues: {
                    ...claimableValues(now),
                    ":one": 1,
                    ":zero": 0,
                    ...MARK_VALUES,
                  },
                },
        };
    const codes = await transactWrite(this.doc, { TransactItems: [targetItem, runItem] });
    if (codes === undefined) return "claimed";
    if (codes[0] === "ConditionalCheckFailed") return "lost-race";
    return this.whyRunRefused(expected.runId, now, reclaim ? 0 : 1);
  }

  /**
   * Several claims, one transaction: [Update T1, …, Update Tn, Update run]. DynamoDB conditions
   * cannot add, so `inFlight + k <= max` is written `maxConcurrent = :max AND inFlight <= :max−k`
   * with the run's limit (frozen at create, cached from the run's reads; pinned in the condition).
   *
   *   max 5, inFlight 2: [A PENDING@100, B PENDING@100, C CLAIMED@90 lease over] → k = 2,
   *   run condition inFlight <= 3 holds → all three CLAIMED, inFlight 4          → 'claimed'
   *   a pass that read B before A's batch committed: B's condition fails        → 'lost-race'
   *   max 5, inFlight 4, k = 2: the run's condition fails, run RUNNING          → 'slots-full'
   */
  async claimTargets(
    expected: Target[],
    leaseMs: number,
    now: number,
    until?: number,
  ): Promise<BatchClaimResult> {
    const first = expected[0];
    if (first === undefined) return { outcome: "claimed", claimed: [] };
    const runId = first.runId;
    if (expected.length > MAX_BATCH_CLAIM) {
      throw new RangeError(`claimTargets takes at most ${MAX_BATCH_CLAIM} targets, got ${expected.length}`);
    }
    if (expected.some((t) => t.runId !== runId))
      throw new RangeError("claimTargets: targets of one run only");
    if (new Set(expected.map((t) => t.id)).size !== expected.length) {
      throw new RangeError("claimTargets: a target appears twice");
    }
    const nothing = (outcome: ClaimOutcome): BatchClaimResult => ({ outcome, claimed: [] });
    if (until !== undefined && now >= until) return nothing("window-closed");
    const targetItems = expected.map((t) => claimUpdate(this.tables.targets, t, leaseMs, now));
    if (targetItems.some((item) => item === undefined)) return nothing("lost-race");
    const k = expected.filter((t) => t.status !== "CLAIMED").length;
    let runItem: NonNullable<TransactWriteCommandInput["TransactItems"]>[number];
    if (k === 0) {
      runItem = {
        Update: {
          TableName: this.tables.runs,
          Key: { runId },
          UpdateExpression: withMark("", ""),
          ConditionExpression: RUN_CLAIMABLE,
          ExpressionAttributeNames: { "#s": "status" },
          ExpressionAttributeValues: { ...claimableValues(now), ...MARK_VALUES },
        },
      };
    } else {
      const max = await this.reader.maxConcurrentOf(runId);
      if (max === undefined) return nothing("run-not-active");
      if (k > max) return nothing(await this.whyRunRefused(runId, now, k));
      const domains = domainsTaken(expected);
      const spreadMax = domains.size === 0 ? undefined : await this.reader.spreadMaxOf(runId);
      if (domains.size > 0 && spreadMax === undefined) return nothing("run-not-active");
      // Per domain d taking k_d: `dif:d + k_d <= spreadMax`, written like the run's own limit.
      const set = ["inFlight = inFlight + :k"];
      const conditions = [`${RUN_CLAIMABLE} AND maxConcurrent = :max AND inFlight <= :limit`];
      const names: Record<string, string> = { "#s": "status" };
      const values: Record<string, unknown> = {
        ...claimableValues(now),
        ":k": k,
        ":max": max,
        ":limit": max - k,
      };
      if (spreadMax !== undefined) {
        conditions.push("spreadMax = :smax");
        values[":smax"] = spreadMax;
        values[":zero"] = 0;
        let i = 0;
        for (const [domain, taken] of domains) {
          if (taken > spreadMax) return nothing("domain-full");
          names[`#d${i}`] = domainCounterAttribute(domain);
          values[`:k${i}`] = taken;
          values[`:l${i}`] = spreadMax - taken;
          set.push(`#d${i} = if_not_exists(#d${i}, :zero) + :k${i}`);
          conditions.push(`(attribute_not_exists(#d${i}) OR #d${i} <= :l${i})`);
          i++;
        }
      }
      runItem = {
        Update: {
          TableName: this.tables.runs,
          Key: { runId },
          UpdateExpression: withMark(set.join(", "), ""),
          ConditionExpression: conditions.join(" AND "),
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: { ...values, ...MARK_VALUES },
        },
      };
    }
    const items = targetItems.filter((item) => item !== undefined);
    const codes = await transactWrite(this.doc, { TransactItems: [...items, runItem] });
    if (codes === undefined) {
      return {
        outcome: "claimed",
        claimed: expected.map((t) => ({
          ...t,
          status: "CLAIMED",
          leaseExpiresAt: now + leaseMs,
          updatedAt: now,
        })),
      };
    }
    if (codes.slice(0, expected.length).includes("ConditionalCheckFailed")) return nothing("lost-race");
    return nothing(await this.whyRunRefused(runId, now, k));
  }

  /**
   * After the run's claim condition failed: not active, past its end_time, out of slots, or else
   * (the `slots` wanted were free) a failure domain at its cap.
   */
  private async whyRunRefused(
    runId: string,
    now: number,
    slots: number,
  ): Promise<"slots-full" | "domain-full" | "run-not-active" | "window-closed"> {
    const run = await this.reader.getRunItem(runId);
    if (run === undefined || !isActiveRunStatus(run.status as Run["status"])) return "run-not-active";
    if (typeof run.windowEndsAt === "number" && run.windowEndsAt <= now) return "window-closed";
    const free = Number(run.maxConcurrent) - Number(run.inFlight);
    return slots > 0 && free >= slots && run.spreadMax !== undefined ? "domain-full" : "slots-full";
  }

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
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tables.targets,
          Key: { runId, targetId },
          UpdateExpression: "SET priorVersions = :priors",
          ConditionExpression: "attribute_exists(targetId) AND attribute_not_exists(priorVersions)",
          ExpressionAttributeValues: { ":priors": priors },
        }),
      );
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
