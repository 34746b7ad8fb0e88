/**
 * RunStore on DynamoDB: the run item (control fields, in-flight counter, per-phase outcome counters)
 * in the Runs table, its targets under the run's partition in the Targets table, its history in
 * RunEvents. This file reads runs and saves their control changes; creating a run (the
 * commit-marker protocol) is run-create.ts, a target's claims target-claims.ts and its moves after
 * a claim target-transitions.ts.
 *
 * ## History events ride with the run write they record
 * The run's history (RunEvents table) is written only inside the transaction that changes the run:
 * the create's commit (run-create.ts), or saveRun's [Update run on its version, Put event (key must be new) …]. An
 * event therefore exists exactly when its change does, and never twice.
 */
import {
  type DynamoDBDocumentClient,
  PutCommand,
  QueryCommand,
  type QueryCommandInput,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import type {
  BatchClaimResult,
  BlockedUpdate,
  ClaimOutcome,
  ClientRequestRecord,
  CreateRunOptions,
  CreateRunOutcome,
  DeferOutcome,
  DispatchSchedule,
  DueRun,
  ListTargetsOptions,
  RunListEntry,
  RunStore,
  SaveRunOutcome,
  TransitionOutcome,
} from "../../app/ports.js";
import type { RunHistoryEvent } from "../../domain/history-event.js";
import type { Page } from "../../domain/list-queries.js";
import type { FirmwareAuthentication, OutcomeStatus, PriorVersion, Run, Target } from "../../domain/model.js";
import { batchGetAll, isConditionFailed, queryAll, transactWrite } from "./db.js";
import { MARK_ADD, MARK_SET, MARK_VALUES, withMark } from "./due-index.js";
import {
  counterAttribute,
  type Item,
  isActiveRunStatus,
  itemToRun,
  itemToRunEvent,
  itemToTarget,
} from "./items.js";
import { PagedQuery } from "./paged-query.js";
import { checkEvents, DynamoRunCreation, eventPuts, type RunStoreOptions } from "./run-create.js";
import { RunItemReader } from "./run-item-reader.js";
import { INDEX, LIST_PARTITION, phaseKeyRange, queueKeyRange, type TableNames } from "./schema.js";
import { DynamoTargetClaims } from "./target-claims.js";
import { DynamoTargetTransitions } from "./target-transitions.js";

export type { RunStoreOptions } from "./run-create.js";

export class DynamoRunStore implements RunStore {
  private readonly reader: RunItemReader;
  /** Lists page in the store (paged-query.ts). */
  private readonly paged: PagedQuery;
  private readonly creation: DynamoRunCreation;
  private readonly claims: DynamoTargetClaims;
  private readonly transitions: DynamoTargetTransitions;
  /** Held targets per run and phase as last read: the claim queue's Query asks for that many more. */
  private readonly heldByPhase = new Map<string, number>();

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
    options: RunStoreOptions = {},
  ) {
    this.reader = new RunItemReader(doc, tables);
    this.paged = new PagedQuery(doc);
    this.creation = new DynamoRunCreation(doc, tables, options);
    this.claims = new DynamoTargetClaims(doc, tables, this.reader);
    this.transitions = new DynamoTargetTransitions(doc, tables, this.reader);
  }

  createRun(run: Run, targets: Target[], options?: CreateRunOptions): Promise<CreateRunOutcome> {
    return this.creation.createRun(run, targets, options);
  }

  getClientRequest(id: string, now: number): Promise<ClientRequestRecord | undefined> {
    return this.creation.getClientRequest(id, now);
  }

  seal(runId: string, targetIds: string[]): Promise<void> {
    return this.creation.seal(runId, targetIds);
  }

  getRunSecrets(runId: string): Promise<FirmwareAuthentication | undefined> {
    return this.creation.getRunSecrets(runId);
  }

  getTarget(runId: string, targetId: string): Promise<Target | undefined> {
    return this.reader.getTarget(runId, targetId);
  }

  async getRun(runId: string): Promise<Run | undefined> {
    const item = await this.committedRunItem(runId);
    return item === undefined ? undefined : itemToRun(item);
  }

  /** The run's item, its create's unsealed targets sealed first if a crash left any. */
  private async committedRunItem(runId: string): Promise<Item | undefined> {
    const item = await this.reader.getRunItem(runId);
    if (item === undefined) return undefined;
    if (Array.isArray(item.unsealed))
      await this.creation.seal(runId, item.unsealed as string[]).catch(() => undefined);
    return item;
  }

  async listRuns(
    matches: (run: RunListEntry) => boolean,
    page: Page,
  ): Promise<{ runs: Run[]; total: number }> {
    const entries = await queryAll(this.doc, {
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
    const items = await batchGetAll(
      this.doc,
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
    if (!options.knownCommitted && (await this.reader.getRunItem(runId)) === undefined) return undefined;
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
    const listing = `targets:${JSON.stringify(input)}`;
    const [items, total] = await Promise.all([
      this.paged.page(input, listing, options.page),
      // Without a status filter the range holds exactly the phases' planned targets.
      options.status === undefined && options.phaseSizes !== undefined
        ? options.phaseSizes.slice(options.phaseFrom, options.phaseTo + 1).reduce((a, b) => a + b, 0)
        : this.paged.count(input),
    ]);
    return { targets: items.map(itemToTarget), total };
  }

  async getRunForDispatch(runId: string): Promise<{ run: Run; schedule: DispatchSchedule } | undefined> {
    const item = await this.committedRunItem(runId);
    if (item === undefined) return undefined;
    const schedule: DispatchSchedule = { mark: item.dueMark === undefined ? 0 : Number(item.dueMark) };
    if (item.duePk !== undefined && item.dueAt !== undefined) schedule.dueAt = Number(item.dueAt);
    return { run: itemToRun(item), schedule };
  }

  async listDueRuns(until: number): Promise<DueRun[]> {
    const items = await queryAll(this.doc, {
      TableName: this.tables.runs,
      IndexName: INDEX.runsDue,
      KeyConditionExpression: "duePk = :d AND dueAt <= :until",
      ExpressionAttributeValues: { ":d": LIST_PARTITION.dueRuns, ":until": until },
    });
    return items.map((i) => ({ runId: i.runId as string, dueAt: Number(i.dueAt) }));
  }

  /**
   *   stored dueMark 8 (absent = 0): deferRun(r, 8, 10:05) → SET duePk, dueAt = 10:05 → 'deferred'
   *   deferRun(r, 8, undefined) → REMOVE duePk, dueAt: out of the index
   *   stored dueMark 9 → the condition fails, nothing written → 'moved'
   */
  async deferRun(runId: string, expectedMark: number, dueAt: number | undefined): Promise<DeferOutcome> {
    const markIs = expectedMark === 0 ? "(attribute_not_exists(dueMark) OR dueMark = :m)" : "dueMark = :m";
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tables.runs,
          Key: { runId },
          UpdateExpression: dueAt === undefined ? "REMOVE duePk, dueAt" : "SET duePk = :d, dueAt = :at",
          ConditionExpression: `attribute_exists(runId) AND ${markIs}`,
          ExpressionAttributeValues:
            dueAt === undefined
              ? { ":m": expectedMark }
              : { ":m": expectedMark, ":d": LIST_PARTITION.dueRuns, ":at": dueAt },
        }),
      );
      return "deferred";
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      return "moved";
    }
  }

  async listActiveRunIds(): Promise<string[]> {
    const items = await queryAll(this.doc, {
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
   * A pause at a window's close also pins the in-flight count it was decided on (claims and
   * outcomes move it without touching updatedAt): it pauses only with nothing flashing, and its
   * "N targets not started" counts no claim that committed after the read.
   *   pass reads inFlight 0 (window closed) │ a claim decided before the close commits: inFlight 1
   *   saveRun(PAUSED, expected 100, inFlight 0) → stale → re-read: 1 flashing, the run waits for it
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
    for (const field of ["startedAt", "finishedAt", "soakEndsAt"] as const) {
      const value = run[field];
      if (value === undefined) remove.push(field);
      else {
        set.push(`${field} = :${field}`);
        values[`:${field}`] = value;
      }
    }
    const pinsInFlight = run.status === "PAUSED" && run.reason === "MAINTENANCE_WINDOW";
    if (pinsInFlight) values[":inFlight"] = run.inFlight;
    // A marking write (due-index.ts): an active run is due now, any other leaves the due index.
    if (isActiveRunStatus(run.status)) {
      set.push("activePk = :active", MARK_SET);
      values[":active"] = LIST_PARTITION.activeRuns;
      Object.assign(values, MARK_VALUES);
    } else {
      remove.push("activePk", "duePk", "dueAt");
      values[":dueOne"] = MARK_VALUES[":dueOne"];
    }
    const update = {
      TableName: this.tables.runs,
      Key: { runId: run.id },
      UpdateExpression: `SET ${set.join(", ")} ADD ${MARK_ADD}${remove.length > 0 ? ` REMOVE ${remove.join(", ")}` : ""}`,
      ConditionExpression: `attribute_exists(runId) AND updatedAt = :expected${pinsInFlight ? " AND inFlight = :inFlight" : ""}`,
      ExpressionAttributeNames: { "#status": "status" },
      ExpressionAttributeValues: values,
    };
    if (events.length > 0) {
      //   [Update run: updatedAt = expected] + [Put event (run, at, seq): key absent] …
      //   the run moved since it was read → item 0 fails → 'stale', no event written
      //   an event key already taken → that Put fails → nothing written → 'stale'
      const codes = await transactWrite(this.doc, {
        TransactItems: [{ Update: update }, ...eventPuts(this.tables.runEvents, events)],
      });
      if (codes === undefined) return "saved";
      if (codes[0] !== "ConditionalCheckFailed") return "stale";
      return (await this.reader.getRunItem(run.id)) === undefined ? "not-found" : "stale";
    }
    try {
      await this.doc.send(new UpdateCommand(update));
      return "saved";
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      return (await this.reader.getRunItem(run.id)) === undefined ? "not-found" : "stale";
    }
  }

  /** See the port (RunStore.recordLateFailure): [run Update] + [target Update] + [event Puts]. */
  async recordLateFailure(
    run: Run,
    expectedUpdatedAt: number,
    target: Target,
    expectedTargetUpdatedAt: number,
    events: readonly RunHistoryEvent[],
  ): Promise<SaveRunOutcome> {
    checkEvents(run, events);
    const phase = target.phaseIndex;
    const codes = await transactWrite(this.doc, {
      TransactItems: [
        {
          Update: {
            TableName: this.tables.runs,
            Key: { runId: run.id },
            // Marked due (due-index.ts): the gates count the failure at the next tick.
            UpdateExpression: withMark("updatedAt = :updated", "#completed :minus, #failed :plus"),
            ConditionExpression:
              "attribute_exists(runId) AND updatedAt = :expected AND NOT #status IN (:c, :x, :f, :cf)",
            ExpressionAttributeNames: {
              "#status": "status",
              "#completed": counterAttribute(phase, "COMPLETED"),
              "#failed": counterAttribute(phase, "FAILED"),
            },
            ExpressionAttributeValues: {
              ":updated": run.updatedAt,
              ":expected": expectedUpdatedAt,
              ":minus": -1,
              ":plus": 1,
              ":c": "COMPLETED",
              ":x": "CANCELLED",
              ":f": "FAILED",
              ":cf": "COMPLETED_WITH_FAILURES",
              ...MARK_VALUES,
            },
          },
        },
        {
          Update: {
            TableName: this.tables.targets,
            Key: { runId: run.id, targetId: target.id },
            UpdateExpression:
              "SET #status = :failed, message = :msg, updatedAt = :now, failureReportedAt = :now" +
              (target.failureReportedBy === undefined ? "" : ", failureReportedBy = :by"),
            ConditionExpression: "#status = :completed AND updatedAt = :expected",
            ExpressionAttributeNames: { "#status": "status" },
            ExpressionAttributeValues: {
              ":failed": "FAILED",
              ":completed": "COMPLETED",
              ":msg": target.message,
              ":now": target.updatedAt,
              ":expected": expectedTargetUpdatedAt,
              ...(target.failureReportedBy === undefined ? {} : { ":by": target.failureReportedBy }),
            },
          },
        },
        ...eventPuts(this.tables.runEvents, events),
      ],
    });
    if (codes === undefined) return "saved";
    if (codes[0] === "ConditionalCheckFailed" && (await this.reader.getRunItem(run.id)) === undefined) {
      return "not-found";
    }
    return "stale";
  }

  async appendRunEvent(event: RunHistoryEvent): Promise<"appended" | "taken"> {
    const [put] = eventPuts(this.tables.runEvents, [event]);
    try {
      await this.doc.send(new PutCommand((put as NonNullable<typeof put>).Put));
      return "appended";
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      return "taken";
    }
  }

  async listRunEvents(
    runId: string,
    page: Page,
    options: { knownCommitted?: boolean } = {},
  ): Promise<{ events: RunHistoryEvent[]; total: number } | undefined> {
    if (!options.knownCommitted && (await this.reader.getRunItem(runId)) === undefined) return undefined;
    const input = {
      TableName: this.tables.runEvents,
      KeyConditionExpression: "runId = :r",
      ExpressionAttributeValues: { ":r": runId },
      ConsistentRead: true,
    };
    const [items, total] = await Promise.all([
      this.paged.page(input, `events:${runId}`, page),
      this.paged.count(input),
    ]);
    return { events: items.map(itemToRunEvent), total };
  }

  async listQueuedTargets(
    runId: string,
    phaseIndex: number,
    pendingLimit: number,
  ): Promise<{ held: Target[]; pending: Target[] }> {
    // ONE Query over the phase's queue: held keys sort before PENDING ones, so it returns every
    // held target, then PENDING ones. Its Limit is the PENDING wanted plus the held count this
    // store last saw for the phase; more held than that costs another page, never a wrong answer.
    const [from, heldTo] = queueKeyRange(phaseIndex, "held");
    const [, to] = pendingLimit > 0 ? queueKeyRange(phaseIndex, "pending") : [from, heldTo];
    const input: QueryCommandInput = {
      TableName: this.tables.targets,
      IndexName: INDEX.targetsQueued,
      ConsistentRead: true,
      KeyConditionExpression: "runId = :r AND queueKey BETWEEN :from AND :to",
      ExpressionAttributeValues: { ":r": runId, ":from": from, ":to": to },
    };
    if (pendingLimit <= 0) return { held: (await queryAll(this.doc, input)).map(itemToTarget), pending: [] };
    const phaseKey = `${runId}#${phaseIndex}`;
    const heldGuess = this.heldByPhase.get(phaseKey) ?? 0;
    const held: Item[] = [];
    const pending: Item[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const limit = pendingLimit - pending.length + Math.max(0, heldGuess - held.length);
      const out = await this.doc.send(
        new QueryCommand({ ...input, Limit: Math.max(1, limit), ExclusiveStartKey: startKey }),
      );
      for (const item of out.Items ?? []) (String(item.queueKey) <= heldTo ? held : pending).push(item);
      startKey = out.LastEvaluatedKey;
    } while (startKey !== undefined && pending.length < pendingLimit);
    if (this.heldByPhase.size >= 10_000) this.heldByPhase.clear();
    this.heldByPhase.set(phaseKey, held.length);
    return { held: held.map(itemToTarget), pending: pending.slice(0, pendingLimit).map(itemToTarget) };
  }

  claimTarget(expected: Target, leaseMs: number, now: number, until?: number): Promise<ClaimOutcome> {
    return this.claims.claimTarget(expected, leaseMs, now, until);
  }

  claimTargets(expected: Target[], leaseMs: number, now: number, until?: number): Promise<BatchClaimResult> {
    return this.claims.claimTargets(expected, leaseMs, now, until);
  }

  recordSubmitted(
    runId: string,
    targetId: string,
    taskId: string,
    now: number,
    message?: string,
  ): Promise<TransitionOutcome> {
    return this.transitions.recordSubmitted(runId, targetId, taskId, now, message);
  }

  recordBlocked(
    runId: string,
    targetId: string,
    blocked: BlockedUpdate,
    now: number,
  ): Promise<TransitionOutcome> {
    return this.transitions.recordBlocked(runId, targetId, blocked, now);
  }

  recordOutcome(
    runId: string,
    targetId: string,
    status: OutcomeStatus,
    message: string,
    now: number,
    phaseIndex?: number,
  ): Promise<TransitionOutcome> {
    return this.transitions.recordOutcome(runId, targetId, status, message, now, phaseIndex);
  }

  /** Not on the RunStore port yet: controls' ConflictClockStore (src/app/controls.ts). */
  restartConflictClock(runId: string, targetId: string, now: number): Promise<TransitionOutcome> {
    return this.transitions.restartConflictClock(runId, targetId, now);
  }

  skipTargets(runId: string, targetIds: string[], message: string, now: number): Promise<number> {
    return this.transitions.skipTargets(runId, targetIds, message, now);
  }

  recordPriorVersions(runId: string, targetId: string, priors: PriorVersion[]): Promise<TransitionOutcome> {
    return this.transitions.recordPriorVersions(runId, targetId, priors);
  }
}
