/**
 * TaskStore on DynamoDB. A task item (pk = task id) and, for tasks with an idempotency key, a key
 * item (pk = "idem:" + key, taskId) written in the SAME transaction, both conditional on absence:
 *
 *   dispatcher A: [Put idem:K → T1, Put T1] committed → created T1
 *   dispatcher B (retry, same K): [Put idem:K → T2, Put T2] cancelled (idem:K exists)
 *                 → read idem:K → T1 → returns T1, created: false
 */

import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import {
  GetCommand,
  PutCommand,
  type PutCommandInput,
  type QueryCommandInput,
  type TransactWriteCommandInput,
} from "@aws-sdk/lib-dynamodb";
import type {
  CreateTaskOutcome,
  ListTasksOptions,
  RunChildOutcome,
  RunChildPriors,
  SaveTaskOutcome,
  TaskStore,
  VersionAt,
} from "../../app/ports.js";
import { FlowError } from "../../domain/errors.js";
import type { Page } from "../../domain/list-queries.js";
import type { Task } from "../../domain/task.js";
import { batchGetAll, type CancellationCode, isConditionFailed, queryAll, transactWrite } from "./db.js";
import { versionsUpdate } from "./firmware-version-recorder.js";
import { itemToTask, rackPk, taskToItem, unpackUuids, uuidBytes } from "./items.js";
import { lockPut } from "./lock-store.js";
import { PagedQuery } from "./paged-query.js";
import { INDEX, LIST_PARTITION, type TableNames } from "./schema.js";
import { inFlightPrior, outcomeItems, priorVersionsUpdate } from "./target-transitions.js";

/** The items of a transaction beside a task's save. */
type TransactItems = NonNullable<TransactWriteCommandInput["TransactItems"]>;

const idemPk = (key: string): string => `idem:${key}`;

export class DynamoTaskStore implements TaskStore {
  /** ListTasks pages in the store (paged-query.ts). */
  private readonly paged: PagedQuery;

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {
    this.paged = new PagedQuery(doc);
  }

  async createTask(task: Task): Promise<CreateTaskOutcome> {
    return (await this.create(task)) as CreateTaskOutcome;
  }

  /**
   *   submission of T1 for rack R: [Put lock R → T1, Put idem:K → T1, Put T1]  committed → created T1
   *   R held by T9 (live):         lock's condition fails, nothing written         → 'held'
   *   K already names T1:          idem's condition fails → read idem:K → T1        → created: false
   */
  createTaskWithLock(task: Task, lockTtlMs: number, now: number): Promise<CreateTaskOutcome | "held"> {
    return this.create(task, { Put: lockPut(this.tables, task.rackId, task.id, lockTtlMs, now) });
  }

  /** The task (and its key item) under absence conditions, after `first` (the lock) if given. */
  private async create(task: Task, first?: { Put: PutCommandInput }): Promise<CreateTaskOutcome | "held"> {
    const lead = first === undefined ? [] : [first];
    const put = {
      Put: {
        TableName: this.tables.tasks,
        Item: taskToItem(task),
        ConditionExpression: "attribute_not_exists(id)",
      },
    };
    if (task.idempotencyKey === undefined) {
      const codes = await transactWrite(this.doc, { TransactItems: [...lead, put] });
      if (codes === undefined) return { created: true, task };
      if (codes[lead.length] !== "ConditionalCheckFailed" && first !== undefined) return "held";
      throw new FlowError("ALREADY_EXISTS", `task ${task.id} already exists`);
    }
    const key = task.idempotencyKey;
    const codes = await transactWrite(this.doc, {
      TransactItems: [
        ...lead,
        {
          Put: {
            TableName: this.tables.tasks,
            Item: { id: idemPk(key), taskId: task.id, createdAt: task.createdAt },
            ConditionExpression: "attribute_not_exists(id)",
          },
        },
        put,
      ],
    });
    if (codes === undefined) return { created: true, task };
    // A task under the key answers first, whoever holds the lock (it was not taken).
    const taken = codes.slice(lead.length).includes("ConditionalCheckFailed");
    if (!taken && first !== undefined) return "held";
    const existing = await this.getTaskByIdempotencyKey(key);
    if (existing === undefined) throw new FlowError("ALREADY_EXISTS", `task ${task.id} already exists`);
    return { created: false, task: existing };
  }

  async getTaskByIdempotencyKey(key: string): Promise<Task | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.tables.tasks, Key: { id: idemPk(key) }, ConsistentRead: true }),
    );
    const taskId = out.Item?.taskId as string | undefined;
    if (taskId === undefined) return undefined;
    const task = await this.doc.send(
      new GetCommand({ TableName: this.tables.tasks, Key: { id: taskId }, ConsistentRead: true }),
    );
    return task.Item === undefined ? undefined : itemToTask(task.Item);
  }

  async getTasks(ids: string[]): Promise<Task[]> {
    const unique = [...new Set(ids)];
    const items = await batchGetAll(
      this.doc,
      this.tables.tasks,
      unique.map((id) => ({ id })),
    );
    const byId = new Map(items.map((i) => [i.id as string, itemToTask(i)]));
    return ids.flatMap((id) => {
      const task = byId.get(id);
      return task === undefined ? [] : [task];
    });
  }

  /**
   * rackId + activeOnly → activeByRack; rackId → byRack; neither → byCreated (activeOnly as a
   * filter: an admin listing). A page at a time in the store (paged-query.ts). With a component,
   * see `listByComponent`.
   */
  async listTasks(options: ListTasksOptions): Promise<{ tasks: Task[]; total: number }> {
    const input = this.listQuery(options);
    if (options.componentId !== undefined)
      return this.listByComponent(input, options.componentId, options.page);
    const [items, total] = await Promise.all([
      this.paged.page(input, `tasks:${JSON.stringify(input)}`, options.page),
      this.paged.count(input),
    ]);
    return { tasks: items.map(itemToTask), total };
  }

  private listQuery(options: ListTasksOptions): QueryCommandInput {
    if (options.rackId !== undefined) {
      return {
        TableName: this.tables.tasks,
        IndexName: options.activeOnly ? INDEX.tasksActiveByRack : INDEX.tasksByRack,
        KeyConditionExpression: `${options.activeOnly ? "activeRackId" : "rackId"} = :pk`,
        ExpressionAttributeValues: { ":pk": options.rackId },
        ScanIndexForward: false,
      };
    }
    return {
      TableName: this.tables.tasks,
      IndexName: INDEX.tasksByCreated,
      KeyConditionExpression: "listPk = :pk",
      ExpressionAttributeValues: { ":pk": LIST_PARTITION.tasks },
      ScanIndexForward: false,
      ...(options.activeOnly ? { FilterExpression: "attribute_exists(activeRackId)" } : {}),
    };
  }

  /**
   * The tasks of the listing that hold `componentId` (the caller narrows it to the component's
   * rack): the filter runs in the store, `contains` on the binary set of ids (or the list of
   * items written before the set), and only the matches' keys leave it; items written with the
   * ids packed in one binary (`componentIdsB`, which `contains` cannot test as a set) come out
   * with that attribute and are matched here. Then the page's tasks by key.
   *
   *   rack R: 40 tasks, 3 hold C → Query byRack R (40 items evaluated, 3 keys returned)
   *                               → BatchGet the page's ≤ 3 tasks; total 3
   */
  private async listByComponent(
    input: QueryCommandInput,
    componentId: string,
    page: Page,
  ): Promise<{ tasks: Task[]; total: number }> {
    const bytes = uuidBytes(componentId);
    const held = [
      ...(bytes === undefined ? [] : ["contains(componentIdSet, :cb)"]),
      "contains(componentIds, :cs)",
      "attribute_exists(componentIdsB)",
    ].join(" OR ");
    const matches = await queryAll(this.doc, {
      ...input,
      FilterExpression:
        input.FilterExpression === undefined ? held : `${input.FilterExpression} AND (${held})`,
      ExpressionAttributeValues: {
        ...input.ExpressionAttributeValues,
        ":cs": componentId,
        ...(bytes === undefined ? {} : { ":cb": bytes }),
      },
      ProjectionExpression: "id, componentIdsB",
    });
    const ids = matches
      .filter(
        (m) => !(m.componentIdsB instanceof Uint8Array) || unpackUuids(m.componentIdsB).includes(componentId),
      )
      .map((m) => m.id as string);
    const wanted = ids.slice(page.offset, page.offset + page.limit);
    return { tasks: await this.getTasks(wanted), total: ids.length };
  }

  async saveTask(task: Task, expectedUpdatedAt: number): Promise<SaveTaskOutcome> {
    try {
      await this.doc.send(new PutCommand(this.taskSave(task, expectedUpdatedAt)));
      return "saved";
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      return this.whySaveFailed(task.id);
    }
  }

  /**
   *   task T PENDING@500 starts: [Put T RUNNING if updatedAt = 500] + [Put lock R → T if free, expired or T's]
   *   committed                               → 'saved' (T RUNNING, R T's until now + lockTtlMs)
   *   T moved since 500 (a cancel, a retry)   → 'stale' (or 'not-found'): nothing written
   *   R another task's, live                  → 'held': nothing written
   */
  async saveTaskWithLock(
    task: Task,
    expectedUpdatedAt: number,
    lockTtlMs: number,
    now: number,
  ): Promise<SaveTaskOutcome | "held"> {
    return this.saveTaskWith(
      task,
      expectedUpdatedAt,
      [{ Put: lockPut(this.tables, task.rackId, task.id, lockTtlMs, now) }],
      ([lock]) => {
        if (lock === "ConditionalCheckFailed") return "held";
        throw new Error(`starting task ${task.id} failed: ${lock}`);
      },
    );
  }

  /**
   *   task T RUNNING@500 ends COMPLETED; its target SUBMITTED in phase 1; T holds rack R's lock
   *   [Put T COMPLETED if updatedAt = 500] + [target → COMPLETED if in flight in phase 1]
   *     + [run: c1_completed +1, inFlight −1] + [Delete lock R unless another task holds it]
   *   T moved since 500 (a progress report, a cancel): cancelled → 'stale' (the caller re-reads T)
   *   the target is not in flight (already ended, never claimed), or R is another task's now:
   *     cancelled → 'separately'
   */
  async saveTaskWithOutcome(
    task: Task,
    expectedUpdatedAt: number,
    outcome: RunChildOutcome,
  ): Promise<SaveTaskOutcome | "separately"> {
    return this.saveTaskWith(task, expectedUpdatedAt, this.endingItems(task, outcome), () => "separately");
  }

  /**
   *   preflight of T RUNNING@500, a run child of target X, its BMCs' versions [c1 1.0, p1 0.9]:
   *   [Put T (its report with them) if updatedAt = 500]
   *     + [X: priorVersions := if_not_exists(priorVersions, [c1 1.0, p1 0.9]) if X exists]
   *   committed                                → 'saved' (X has these, or keeps the ones it had)
   *   T moved since 500 (a cancel, a retry)    → 'stale' (or 'not-found'): nothing written
   *   X gone (its run deleted)                 → 'target-gone': nothing written
   * recordPriorVersions, alone, makes a target that has versions fail its condition; in the
   * transaction that would cancel the task's save too, so here if_not_exists keeps them and the
   * task is saved either way: a retried or re-driven preflight costs one request still.
   */
  async saveTaskWithPriorVersions(
    task: Task,
    expectedUpdatedAt: number,
    prior: RunChildPriors,
  ): Promise<SaveTaskOutcome | "target-gone"> {
    return this.saveTaskWith(
      task,
      expectedUpdatedAt,
      [{ Update: priorVersionsUpdate(this.tables, prior, "keep") }],
      ([target]) => {
        if (target === "ConditionalCheckFailed") return "target-gone";
        throw new Error(`saving task ${task.id} with its prior versions failed: ${target}`);
      },
    );
  }

  /**
   * saveTaskWithOutcome's four items and, last, the verified versions on the rack's inventory
   * item (versionsUpdate: each at the index the preflight saw, conditional on it still being
   * there). The cancellation reasons say which items failed, all of them: the task's first, then
   * the outcome's and the lock's, and the inventory's only when it alone failed.
   *
   *   T ends COMPLETED, c1 verified 2.0.0, seen at index 4 of rack R's item
   *   [Put T] + [target] + [run] + [Delete lock R] + [R: components[4].firmwareVersion = 2.0.0 if components[4].id = c1]
   *   committed                                        → 'saved': the ending and its versions
   *   [CCF, …]          T moved                        → 'stale' (or 'not-found')
   *   [None, CCF, …]    target not in flight, lock …   → 'separately'
   *   [None, None, None, None, CCF]  an import moved c1, R's item gone → 'inventory-moved'
   */
  async saveTaskWithOutcomeAndVersions(
    task: Task,
    expectedUpdatedAt: number,
    outcome: RunChildOutcome,
    versions: readonly VersionAt[],
  ): Promise<SaveTaskOutcome | "separately" | "inventory-moved"> {
    const ending = this.endingItems(task, outcome);
    const entries = versions.map(({ componentId, version, at }) => ({ componentId, version, i: at }));
    const inventory = { Update: versionsUpdate(this.tables.inventory, { pk: rackPk(task.rackId) }, entries) };
    return this.saveTaskWith(task, expectedUpdatedAt, [...ending, inventory], (codes) => {
      if (codes.slice(0, ending.length).some((code) => code !== "None")) return "separately";
      if (codes[ending.length] === "ConditionalCheckFailed") return "inventory-moved";
      throw new Error(`ending task ${task.id} failed: ${codes.join(", ")}`);
    });
  }

  /**
   * The task's save (a Put pinned on `expectedUpdatedAt`) and `others` in ONE transaction, both or
   * neither. Committed → 'saved'; the task moved → read again first, 'stale' or 'not-found' (it
   * may have ended: the others are not the question yet); else `refused` with the others'
   * cancellation codes, in their order, says what they mean.
   */
  private async saveTaskWith<R>(
    task: Task,
    expectedUpdatedAt: number,
    others: TransactItems,
    refused: (codes: CancellationCode[]) => R,
  ): Promise<SaveTaskOutcome | R> {
    const codes = await transactWrite(this.doc, {
      TransactItems: [{ Put: this.taskSave(task, expectedUpdatedAt) }, ...others],
    });
    if (codes === undefined) return "saved";
    if (codes[0] === "ConditionalCheckFailed") return this.whySaveFailed(task.id);
    return refused(codes.slice(1));
  }

  /** A run child's ending beside its task's save: the outcome's two updates + [Delete the lock unless another's]. */
  private endingItems(task: Task, outcome: RunChildOutcome): TransactItems {
    return [
      ...outcomeItems(this.tables, outcome, inFlightPrior(outcome.phaseIndex)),
      {
        Delete: {
          TableName: this.tables.rackLocks,
          Key: { rackId: task.rackId },
          ConditionExpression: "attribute_not_exists(rackId) OR #o = :owner",
          ExpressionAttributeNames: { "#o": "owner" },
          ExpressionAttributeValues: { ":owner": task.id },
        },
      },
    ];
  }

  private taskSave(task: Task, expectedUpdatedAt: number): PutCommandInput {
    return {
      TableName: this.tables.tasks,
      Item: taskToItem(task),
      ConditionExpression: "attribute_exists(id) AND updatedAt = :expected",
      ExpressionAttributeValues: { ":expected": expectedUpdatedAt },
    };
  }

  private async whySaveFailed(taskId: string): Promise<"stale" | "not-found"> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.tables.tasks, Key: { id: taskId }, ConsistentRead: true }),
    );
    return out.Item === undefined ? "not-found" : "stale";
  }
}
