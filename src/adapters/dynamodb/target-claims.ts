/**
 * A target's claims on DynamoDB (DynamoRunStore's dispatch half; the moves after a claim are
 * target-transitions.ts's): singly and in batches, each in one transaction with the run item,
 * against the run's in-flight counter, its failure-domain caps and its maintenance window.
 */

import type { DynamoDBDocumentClient, TransactWriteCommandInput } from "@aws-sdk/lib-dynamodb";
import type { BatchClaimResult, ClaimOutcome } from "../../app/ports.js";
import { domainsTaken } from "../../domain/failure-domains.js";
import type { Run, Target } from "../../domain/model.js";
import { transactWrite } from "./db.js";
import { MARK_VALUES, withMark } from "./due-index.js";
import { domainCounterAttribute, isActiveRunStatus } from "./items.js";
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

export class DynamoTargetClaims {
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
}
