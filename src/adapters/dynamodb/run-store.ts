/**
 * RunStore on DynamoDB: the run item (control fields, in-flight counter, per-phase outcome counters)
 * in the Runs table, its targets under the run's partition in the Targets table.
 *
 * ## Atomic create: the commit-marker protocol
 * TransactWriteItems takes at most 100 items, a run has up to 100 targets + 1 run item. So:
 *
 *   t0  pre-commit chunks: [ConditionCheck run absent, Put target …] — each target carries
 *       `expiresAt` (TTL, epoch s) = the orphan deadline. Only the FIRST targets go here: as many as
 *       do not fit the final transaction (for 100 targets and 100-item transactions: just 1).
 *   t1  COMMIT: one transaction [Put run (condition: absent), Put the client request id if the
 *       caller sent one (condition: absent or expired), Put the remaining targets (no TTL)]. The run
 *       item lists the pre-commit target ids in `unsealed`. Right before it, `mayCommit` (the
 *       caller's deadline) may still abandon the create: only t0's invisible orphans remain.
 *   t2  seal: REMOVE expiresAt from each pre-commit target, then REMOVE `unsealed` from the run.
 *
 * Readers reach targets only through a committed run (listTargets reads the run first; getTarget
 * checks the run for a target that still carries a TTL), so before t1 nothing is visible, and a
 * crash before t1 leaves only invisible orphans that TTL deletes (or local/orphan-sweep.ts, locally:
 * moto does not expire items). A crash between t1 and t2 leaves a complete, visible run whose seal
 * is finished by the next getRun (read-repair), long before the TTL (24 h by default).
 * Runs of up to 99 targets commit in ONE transaction and never carry a TTL at all (98 when the
 * commit also holds the run's CREATED event, as every run the API creates does).
 *
 * ## History events ride with the run write they record
 * The run's history (RunEvents table) is written only inside the transaction that changes the run:
 * the commit above, or saveRun's [Update run on its version, Put event (key must be new) …]. An
 * event therefore exists exactly when its change does, and never twice.
 */
import {
  BatchGetCommand,
  type BatchGetCommandOutput,
  type DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  type QueryCommandInput,
  type TransactWriteCommandInput,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import type {
  BatchClaimResult,
  BlockedUpdate,
  Cipher,
  ClaimOutcome,
  ClientRequest,
  ClientRequestRecord,
  CreateRunOptions,
  CreateRunOutcome,
  ListTargetsOptions,
  RunListEntry,
  RunStore,
  SaveRunOutcome,
  TransitionOutcome,
} from "../../app/ports.js";
import { FlowError } from "../../domain/errors.js";
import {
  type FirmwareAuthentication,
  isTerminalTarget,
  type OutcomeStatus,
  type Page,
  type Run,
  type Target,
} from "../../domain/model.js";
import type { RunHistoryEvent } from "../../domain/run-history.js";
import { chunk, isConditionFailed, transactWrite } from "./db.js";
import {
  counterAttribute,
  type Item,
  isActiveRunStatus,
  itemToRun,
  itemToRunEvent,
  itemToTarget,
  runEventToItem,
  runToItem,
  targetToItem,
} from "./items.js";
import {
  INDEX,
  LIST_PARTITION,
  phaseKeyRange,
  type QueueClass,
  queueKey,
  queueKeyRange,
  type TableNames,
} from "./schema.js";

export interface RunStoreOptions {
  /** Items per TransactWriteItems (DynamoDB's limit is 100; tests use less to exercise chunks). */
  maxTransactionItems?: number;
  /** How long a pre-commit target lives if its run never commits. */
  pendingTtlSeconds?: number;
  /** Encrypts firmware credentials; without one, a run with credentials is refused. */
  cipher?: Cipher;
}

const SECRETS_VERSION = 1;
/** The Tasks-table key of a client request id (beside the `idem:` items of task idempotency). */
const clientRequestKey = (id: string): string => `runRequest:${id}`;
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

export class DynamoRunStore implements RunStore {
  private readonly maxItems: number;
  private readonly pendingTtlSeconds: number;
  /** run id → its frozen max_concurrent_targets, as last read (claimTargets' condition needs it). */
  private readonly maxConcurrentByRun = new Map<string, number>();

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
    private readonly options: RunStoreOptions = {},
  ) {
    this.maxItems = options.maxTransactionItems ?? 100;
    this.pendingTtlSeconds = options.pendingTtlSeconds ?? 24 * 3600;
    if (this.maxItems < 2 || this.maxItems > 100) throw new RangeError("maxTransactionItems must be 2..100");
  }

  async createRun(run: Run, targets: Target[], options: CreateRunOptions = {}): Promise<CreateRunOutcome> {
    const events = options.events ?? [];
    checkEvents(run, events);
    const runItem = runToItem(run);
    const auth = run.config.operation.firmware.authentication;
    if (auth !== undefined) runItem.secrets = await this.encryptSecrets(run.id, auth);
    const request = options.clientRequest;

    // The commit transaction holds the run, the client request if any, the run's events and as many
    // targets as fit; the rest go first.
    const inCommit = Math.max(
      0,
      Math.min(targets.length, this.maxItems - (request === undefined ? 1 : 2) - events.length),
    );
    const early = targets.slice(0, targets.length - inCommit);
    const late = targets.slice(targets.length - inCommit);
    const expiresAt = Math.floor(run.createdAt / 1000) + this.pendingTtlSeconds;
    const runAbsent = {
      ConditionCheck: {
        TableName: this.tables.runs,
        Key: { runId: run.id },
        ConditionExpression: "attribute_not_exists(runId)",
      },
    };

    for (const part of chunk(early, this.maxItems - 1)) {
      const codes = await transactWrite(this.doc, {
        TransactItems: [
          runAbsent,
          ...part.map((t) => ({
            Put: {
              TableName: this.tables.targets,
              Item: { ...targetToItem(t), expiresAt },
              ConditionExpression: "attribute_not_exists(targetId)",
            },
          })),
        ],
      });
      if (codes !== undefined) throw alreadyExists(run.id, codes);
    }

    // The last moment to give up: past it the run exists whether or not anyone hears of it.
    if (options.mayCommit?.() === false) return { outcome: "abandoned" };
    if (early.length > 0) runItem.unsealed = early.map((t) => t.id);
    const codes = await transactWrite(this.doc, {
      TransactItems: [
        {
          Put: {
            TableName: this.tables.runs,
            Item: runItem,
            ConditionExpression: "attribute_not_exists(runId)",
          },
        },
        // The client request stays item 1: its failed condition is what 'request-id-taken' reads.
        ...(request === undefined ? [] : [this.clientRequestPut(request, run.id, run.createdAt)]),
        ...this.eventPuts(events),
        ...late.map((t) => ({
          Put: {
            TableName: this.tables.targets,
            Item: targetToItem(t),
            ConditionExpression: "attribute_not_exists(targetId)",
          },
        })),
      ],
    });
    if (codes !== undefined) {
      if (
        request !== undefined &&
        codes[0] !== "ConditionalCheckFailed" &&
        codes[1] === "ConditionalCheckFailed"
      ) {
        return { outcome: "request-id-taken" };
      }
      throw alreadyExists(run.id, codes);
    }

    if (early.length > 0) {
      // Committed: from here the run is complete to readers. A failed seal is finished later by
      // read-repair, so it must not turn a successful create into an error (the caller would retry
      // with a new id and create a duplicate run).
      await this.seal(
        run.id,
        early.map((t) => t.id),
      ).catch(() => undefined);
    }
    return { outcome: "created" };
  }

  /**
   * The client request item, in the Tasks table beside the task idempotency items: it has the TTL
   * attribute, and no stream consumer (an item in Runs or Targets would wake the dispatcher for a
   * run id that is none). Taken if absent or expired: DynamoDB's TTL deletes late, so the
   * condition, not the deletion, decides when an id is forgotten.
   */
  private clientRequestPut(request: ClientRequest, runId: string, now: number) {
    return {
      Put: {
        TableName: this.tables.tasks,
        Item: {
          id: clientRequestKey(request.id),
          runId,
          fingerprint: request.fingerprint,
          createdAt: now,
          expiresAt: request.expiresAt,
          ttl: Math.ceil(request.expiresAt / 1000),
        },
        ConditionExpression: "attribute_not_exists(id) OR expiresAt <= :now",
        ExpressionAttributeValues: { ":now": now },
      },
    };
  }

  async getClientRequest(id: string, now: number): Promise<ClientRequestRecord | undefined> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tables.tasks,
        Key: { id: clientRequestKey(id) },
        ConsistentRead: true,
      }),
    );
    const item = out.Item;
    if (item === undefined || Number(item.expiresAt) <= now) return undefined;
    return {
      runId: item.runId as string,
      fingerprint: item.fingerprint as string,
      expiresAt: Number(item.expiresAt),
    };
  }

  /** Removes the orphan TTL from pre-commit targets of a committed run. Idempotent. */
  async seal(runId: string, targetIds: string[]): Promise<void> {
    for (const targetId of targetIds) {
      try {
        await this.doc.send(
          new UpdateCommand({
            TableName: this.tables.targets,
            Key: { runId, targetId },
            UpdateExpression: "REMOVE expiresAt",
            ConditionExpression: "attribute_exists(targetId)",
          }),
        );
      } catch (error) {
        if (!isConditionFailed(error)) throw error;
      }
    }
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tables.runs,
        Key: { runId },
        UpdateExpression: "REMOVE unsealed",
        ConditionExpression: "attribute_exists(runId)",
      }),
    );
  }

  async getRun(runId: string): Promise<Run | undefined> {
    const item = await this.getRunItem(runId);
    if (item === undefined) return undefined;
    if (Array.isArray(item.unsealed))
      await this.seal(runId, item.unsealed as string[]).catch(() => undefined);
    return itemToRun(item);
  }

  private async getRunItem(runId: string): Promise<Item | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.tables.runs, Key: { runId }, ConsistentRead: true }),
    );
    const max = out.Item?.maxConcurrent;
    if (typeof max === "number") {
      if (this.maxConcurrentByRun.size >= 10_000) this.maxConcurrentByRun.clear();
      this.maxConcurrentByRun.set(runId, max);
    }
    return out.Item;
  }

  async getRunSecrets(runId: string): Promise<FirmwareAuthentication | undefined> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tables.runs,
        Key: { runId },
        ProjectionExpression: "secrets",
        ConsistentRead: true,
      }),
    );
    const blob = out.Item?.secrets as Uint8Array | undefined;
    if (blob === undefined) return undefined;
    const cipher = this.requireCipher();
    const plain = await cipher.decrypt(blob, `run:${runId}`);
    const doc = JSON.parse(Buffer.from(plain).toString("utf8")) as {
      v: number;
      authentication: FirmwareAuthentication;
    };
    return doc.authentication;
  }

  private async encryptSecrets(runId: string, authentication: FirmwareAuthentication): Promise<Uint8Array> {
    const plain = Buffer.from(JSON.stringify({ v: SECRETS_VERSION, authentication }), "utf8");
    return this.requireCipher().encrypt(plain, `run:${runId}`);
  }

  private requireCipher(): Cipher {
    if (this.options.cipher === undefined) {
      throw new FlowError("INTERNAL", "firmware credentials need a cipher; none is configured");
    }
    return this.options.cipher;
  }

  async listRuns(
    matches: (run: RunListEntry) => boolean,
    page: Page,
  ): Promise<{ runs: Run[]; total: number }> {
    const entries = await this.queryAll({
      TableName: this.tables.runs,
      IndexName: INDEX.runsByCreated,
      KeyConditionExpression: "listPk = :pk",
      ExpressionAttributeValues: { ":pk": LIST_PARTITION.runs },
      ScanIndexForward: false,
    });
    const matching = entries
      .map(
        (item): RunListEntry => ({
          id: item.runId as string,
          name: item.name as string,
          status: item.status as Run["status"],
          reason: item.reason as Run["reason"],
          operationKind: item.operationKind as RunListEntry["operationKind"],
          createdAt: Number(item.createdAt),
        }),
      )
      .filter(matches);
    const ids = matching.slice(page.offset, page.offset + page.limit).map((e) => e.id);
    const items = await this.batchGet(
      this.tables.runs,
      ids.map((runId) => ({ runId })),
    );
    const byId = new Map(items.map((i) => [i.runId as string, i]));
    const runs = ids.flatMap((id) => {
      const item = byId.get(id);
      return item === undefined ? [] : [itemToRun(item)];
    });
    return { runs, total: matching.length };
  }

  async listTargets(
    runId: string,
    options: ListTargetsOptions,
  ): Promise<{ targets: Target[]; total: number } | undefined> {
    if (!options.knownCommitted && (await this.getRunItem(runId)) === undefined) return undefined;
    if (options.phaseTo < options.phaseFrom) return { targets: [], total: 0 };
    const [from, to] = phaseKeyRange(options.phaseFrom, options.phaseTo);
    const input: QueryCommandInput = {
      TableName: this.tables.targets,
      IndexName: INDEX.targetsByOrder,
      KeyConditionExpression: "runId = :r AND orderKey BETWEEN :from AND :to",
      ExpressionAttributeValues: { ":r": runId, ":from": from, ":to": to },
    };
    if (options.status !== undefined) {
      input.FilterExpression = "#s = :s";
      input.ExpressionAttributeNames = { "#s": "status" };
      input.ExpressionAttributeValues = { ...input.ExpressionAttributeValues, ":s": options.status };
    }
    const all = (await this.queryAll(input)).map(itemToTarget);
    return {
      targets: all.slice(options.page.offset, options.page.offset + options.page.limit),
      total: all.length,
    };
  }

  async getTarget(runId: string, targetId: string): Promise<Target | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.tables.targets, Key: { runId, targetId }, ConsistentRead: true }),
    );
    if (out.Item === undefined) return undefined;
    // A target that still carries its orphan TTL is visible only once its run has committed.
    if (out.Item.expiresAt !== undefined && (await this.getRunItem(runId)) === undefined) return undefined;
    return itemToTarget(out.Item);
  }

  async listActiveRunIds(): Promise<string[]> {
    const items = await this.queryAll({
      TableName: this.tables.runs,
      IndexName: INDEX.runsActive,
      KeyConditionExpression: "activePk = :a",
      ExpressionAttributeValues: { ":a": LIST_PARTITION.activeRuns },
    });
    return items.map((i) => i.runId as string);
  }

  /**
   *   reader A: getRun → updatedAt 100        reader B: getRun → updatedAt 100
   *   A: saveRun(…, updatedAt 105, expected 100) → saved
   *   B: saveRun(…, updatedAt 106, expected 100) → stale (nothing written; B re-reads and decides again)
   */
  async saveRun(
    run: Run,
    expectedUpdatedAt: number,
    events: readonly RunHistoryEvent[] = [],
  ): Promise<SaveRunOutcome> {
    checkEvents(run, events);
    const set = [
      "#status = :status",
      "reason = :reason",
      "statusMessage = :msg",
      "currentPhaseIndex = :phase",
      "updatedAt = :updated",
    ];
    const remove: string[] = [];
    const values: Record<string, unknown> = {
      ":status": run.status,
      ":reason": run.reason,
      ":msg": run.statusMessage,
      ":phase": run.currentPhaseIndex,
      ":updated": run.updatedAt,
      ":expected": expectedUpdatedAt,
    };
    for (const field of ["startedAt", "finishedAt"] as const) {
      const value = run[field];
      if (value === undefined) remove.push(field);
      else {
        set.push(`${field} = :${field}`);
        values[`:${field}`] = value;
      }
    }
    if (isActiveRunStatus(run.status)) {
      set.push("activePk = :active");
      values[":active"] = LIST_PARTITION.activeRuns;
    } else remove.push("activePk");
    const update = {
      TableName: this.tables.runs,
      Key: { runId: run.id },
      UpdateExpression: `SET ${set.join(", ")}${remove.length > 0 ? ` REMOVE ${remove.join(", ")}` : ""}`,
      ConditionExpression: "attribute_exists(runId) AND updatedAt = :expected",
      ExpressionAttributeNames: { "#status": "status" },
      ExpressionAttributeValues: values,
    };
    if (events.length > 0) {
      //   [Update run: updatedAt = expected] + [Put event (run, at, seq): key absent] …
      //   the run moved since it was read → item 0 fails → 'stale', no event written
      //   an event key already taken → that Put fails → nothing written → 'stale'
      const codes = await transactWrite(this.doc, {
        TransactItems: [{ Update: update }, ...this.eventPuts(events)],
      });
      if (codes === undefined) return "saved";
      if (codes[0] !== "ConditionalCheckFailed") return "stale";
      return (await this.getRunItem(run.id)) === undefined ? "not-found" : "stale";
    }
    try {
      await this.doc.send(new UpdateCommand(update));
      return "saved";
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      return (await this.getRunItem(run.id)) === undefined ? "not-found" : "stale";
    }
  }

  async listRunEvents(
    runId: string,
    page: Page,
    options: { knownCommitted?: boolean } = {},
  ): Promise<{ events: RunHistoryEvent[]; total: number } | undefined> {
    if (!options.knownCommitted && (await this.getRunItem(runId)) === undefined) return undefined;
    const all = await this.queryAll({
      TableName: this.tables.runEvents,
      KeyConditionExpression: "runId = :r",
      ExpressionAttributeValues: { ":r": runId },
      ConsistentRead: true,
    });
    return {
      events: all.slice(page.offset, page.offset + page.limit).map(itemToRunEvent),
      total: all.length,
    };
  }

  /** The Puts of a run write's history events, each only under a key nobody has written. */
  private eventPuts(events: readonly RunHistoryEvent[]) {
    return events.map((event) => ({
      Put: {
        TableName: this.tables.runEvents,
        Item: runEventToItem(event),
        ConditionExpression: "attribute_not_exists(eventKey)",
      },
    }));
  }

  async listQueuedTargets(
    runId: string,
    phaseIndex: number,
    pendingLimit: number,
  ): Promise<{ held: Target[]; pending: Target[] }> {
    const query = (cls: QueueClass, limit?: number): Promise<Item[]> => {
      const [from, to] = queueKeyRange(phaseIndex, cls);
      const input: QueryCommandInput = {
        TableName: this.tables.targets,
        IndexName: INDEX.targetsQueued,
        ConsistentRead: true,
        KeyConditionExpression: "runId = :r AND queueKey BETWEEN :from AND :to",
        ExpressionAttributeValues: { ":r": runId, ":from": from, ":to": to },
      };
      return this.queryAll(input, limit);
    };
    const [held, pending] = await Promise.all([
      query("held"),
      pendingLimit > 0 ? query("pending", pendingLimit) : Promise.resolve([]),
    ]);
    return { held: held.map(itemToTarget), pending: pending.map(itemToTarget) };
  }

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
    const runItem = reclaim
      ? {
          ConditionCheck: {
            TableName: this.tables.runs,
            Key: { runId: expected.runId },
            ConditionExpression: RUN_CLAIMABLE,
            ExpressionAttributeNames: { "#s": "status" },
            ExpressionAttributeValues: claimableValues(now),
          },
        }
      : {
          Update: {
            TableName: this.tables.runs,
            Key: { runId: expected.runId },
            UpdateExpression: "SET inFlight = inFlight + :one",
            ConditionExpression: `${RUN_CLAIMABLE} AND inFlight < maxConcurrent`,
            ExpressionAttributeNames: { "#s": "status" },
            ExpressionAttributeValues: { ...claimableValues(now), ":one": 1 },
          },
        };
    const codes = await transactWrite(this.doc, { TransactItems: [targetItem, runItem] });
    if (codes === undefined) return "claimed";
    if (codes[0] === "ConditionalCheckFailed") return "lost-race";
    return this.whyRunRefused(expected.runId, now);
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
        ConditionCheck: {
          TableName: this.tables.runs,
          Key: { runId },
          ConditionExpression: RUN_CLAIMABLE,
          ExpressionAttributeNames: { "#s": "status" },
          ExpressionAttributeValues: claimableValues(now),
        },
      };
    } else {
      const max = await this.maxConcurrentOf(runId);
      if (max === undefined) return nothing("run-not-active");
      if (k > max) return nothing(await this.whyRunRefused(runId, now));
      runItem = {
        Update: {
          TableName: this.tables.runs,
          Key: { runId },
          UpdateExpression: "SET inFlight = inFlight + :k",
          ConditionExpression: `${RUN_CLAIMABLE} AND maxConcurrent = :max AND inFlight <= :limit`,
          ExpressionAttributeNames: { "#s": "status" },
          ExpressionAttributeValues: { ...claimableValues(now), ":k": k, ":max": max, ":limit": max - k },
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
    return nothing(await this.whyRunRefused(runId, now));
  }

  /** After the run's claim condition failed: not active, past its end_time, or else out of slots. */
  private async whyRunRefused(
    runId: string,
    now: number,
  ): Promise<"slots-full" | "run-not-active" | "window-closed"> {
    const run = await this.getRunItem(runId);
    if (run === undefined || !isActiveRunStatus(run.status as Run["status"])) return "run-not-active";
    return typeof run.windowEndsAt === "number" && run.windowEndsAt <= now ? "window-closed" : "slots-full";
  }

  /** max_concurrent_targets never changes after create, so one read per run and process will do. */
  private async maxConcurrentOf(runId: string): Promise<number | undefined> {
    const known = this.maxConcurrentByRun.get(runId);
    if (known !== undefined) return known;
    await this.getRunItem(runId);
    return this.maxConcurrentByRun.get(runId);
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
      const current = await this.getTarget(runId, targetId);
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
            UpdateExpression: "SET inFlight = inFlight - :one",
            ConditionExpression: "attribute_exists(runId)",
            ExpressionAttributeValues: { ":one": 1 },
          },
        },
      ],
    });
    if (codes === undefined) return "recorded";
    return (await this.getTarget(runId, targetId)) === undefined ? "not-found" : "lost-race";
  }

  /**
   *   child task ends: target T SUBMITTED@300 (phase 1), run inFlight 3, c1_completed 4
   *   recordOutcome(T, COMPLETED): [T: SUBMITTED@300 → COMPLETED] + [run: c1_completed 5, inFlight 2]
   *   stream redelivers, task retried: T is COMPLETED → 'already-recorded', nothing written
   *   a concurrent writer moved T first (condition on SUBMITTED@300 fails): re-read, decide again
   */
  async recordOutcome(
    runId: string,
    targetId: string,
    status: OutcomeStatus,
    message: string,
    now: number,
  ): Promise<TransitionOutcome> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const current = await this.getTarget(runId, targetId);
      if (current === undefined) return "not-found";
      if (isTerminalTarget(current.status)) return "already-recorded";
      const wasInFlight = current.status === "CLAIMED" || current.status === "SUBMITTED";
      const codes = await transactWrite(this.doc, {
        TransactItems: [
          {
            Update: {
              TableName: this.tables.targets,
              Key: { runId, targetId },
              UpdateExpression:
                "SET #s = :status, message = :msg, updatedAt = :now REMOVE leaseExpiresAt, retryAt, queueKey",
              ConditionExpression: "#s = :prior AND updatedAt = :priorUpdated",
              ExpressionAttributeNames: { "#s": "status" },
              ExpressionAttributeValues: {
                ":status": status,
                ":msg": message,
                ":now": now,
                ":prior": current.status,
                ":priorUpdated": current.updatedAt,
              },
            },
          },
          {
            Update: {
              TableName: this.tables.runs,
              Key: { runId },
              UpdateExpression: wasInFlight ? "ADD #c :one, inFlight :minus" : "ADD #c :one",
              ConditionExpression: "attribute_exists(runId)",
              ExpressionAttributeNames: { "#c": counterAttribute(current.phaseIndex, status) },
              ExpressionAttributeValues: wasInFlight ? { ":one": 1, ":minus": -1 } : { ":one": 1 },
            },
          },
        ],
      });
      if (codes === undefined) return "recorded";
      if (codes[1] === "ConditionalCheckFailed") return "not-found";
    }
    return "lost-race";
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
      return (await this.getTarget(runId, targetId)) === undefined ? "not-found" : "lost-race";
    }
  }

  async skipTargets(runId: string, targetIds: string[], message: string, now: number): Promise<number> {
    let moved = 0;
    for (const targetId of targetIds) {
      if ((await this.recordOutcome(runId, targetId, "SKIPPED", message, now)) === "recorded") moved++;
    }
    return moved;
  }

  /** Every page of `input`, or only the first `limit` items (asked for with Limit, no more read). */
  private async queryAll(input: QueryCommandInput, limit?: number): Promise<Item[]> {
    const items: Item[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const left = limit === undefined ? undefined : limit - items.length;
      const out = await this.doc.send(
        new QueryCommand({
          ...input,
          ExclusiveStartKey: startKey,
          ...(left === undefined ? {} : { Limit: left }),
        }),
      );
      items.push(...(out.Items ?? []));
      startKey = out.LastEvaluatedKey;
    } while (startKey !== undefined && (limit === undefined || items.length < limit));
    return items;
  }

  private async batchGet(table: string, keys: Record<string, unknown>[]): Promise<Item[]> {
    return batchGetAll(this.doc, table, keys);
  }
}

/** BatchGetItem in chunks of 100, following UnprocessedKeys until none are left. */
export async function batchGetAll(
  doc: DynamoDBDocumentClient,
  table: string,
  keys: Record<string, unknown>[],
): Promise<Item[]> {
  const items: Item[] = [];
  for (const part of chunk(keys, 100)) {
    let pending: Record<string, unknown>[] | undefined = part;
    for (let round = 0; pending !== undefined && pending.length > 0; round++) {
      if (round > 0) await new Promise((r) => setTimeout(r, Math.min(1000, 25 * 2 ** round)));
      const out: BatchGetCommandOutput = await doc.send(
        new BatchGetCommand({ RequestItems: { [table]: { Keys: pending } } }),
      );
      items.push(...(out.Responses?.[table] ?? []));
      pending = out.UnprocessedKeys?.[table]?.Keys;
    }
  }
  return items;
}

/** A run write's events belong to that run and that version: the version is what keys them. */
function checkEvents(run: Run, events: readonly RunHistoryEvent[]): void {
  for (const event of events) {
    if (event.runId !== run.id || event.at !== run.updatedAt) {
      throw new RangeError(
        `history event ${event.kind} of run ${event.runId} at ${event.at} does not belong to the write of run ${run.id} at ${run.updatedAt}`,
      );
    }
  }
}

function alreadyExists(runId: string, codes: string[]): FlowError {
  return new FlowError("ALREADY_EXISTS", `operation run ${runId} already exists (${codes.join(", ")})`);
}
