/**
 * TaskStore on DynamoDB. A task item (pk = task id) and, for tasks with an idempotency key, a key
 * item (pk = "idem:" + key, taskId) written in the SAME transaction, both conditional on absence:
 *
 *   dispatcher A: [Put idem:K → T1, Put T1] committed → created T1
 *   dispatcher B (retry, same K): [Put idem:K → T2, Put T2] cancelled (idem:K exists)
 *                 → read idem:K → T1 → returns T1, created: false
 */

import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { GetCommand, PutCommand, type QueryCommandInput } from "@aws-sdk/lib-dynamodb";
import type { CreateTaskOutcome, ListTasksOptions, SaveTaskOutcome, TaskStore } from "../../app/ports.js";
import { FlowError } from "../../domain/errors.js";
import type { Task } from "../../domain/model.js";
import { batchGetAll, isConditionFailed, queryAll, transactWrite } from "./db.js";
import { itemToTask, taskToItem } from "./items.js";
import { INDEX, LIST_PARTITION, type TableNames } from "./schema.js";

const idemPk = (key: string): string => `idem:${key}`;

export class DynamoTaskStore implements TaskStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  async createTask(task: Task): Promise<CreateTaskOutcome> {
    const put = {
      Put: {
        TableName: this.tables.tasks,
        Item: taskToItem(task),
        ConditionExpression: "attribute_not_exists(id)",
      },
    };
    if (task.idempotencyKey === undefined) {
      const codes = await transactWrite(this.doc, { TransactItems: [put] });
      if (codes !== undefined) throw new FlowError("ALREADY_EXISTS", `task ${task.id} already exists`);
      return { created: true, task };
    }
    const key = task.idempotencyKey;
    const codes = await transactWrite(this.doc, {
      TransactItems: [
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
   * filter: an admin listing). componentId is a filter on top (`contains(componentIds, :c)`).
   */
  async listTasks(options: ListTasksOptions): Promise<{ tasks: Task[]; total: number }> {
    const filters: string[] = [];
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = {};
    let input: QueryCommandInput;
    if (options.rackId !== undefined) {
      const index = options.activeOnly ? INDEX.tasksActiveByRack : INDEX.tasksByRack;
      const attr = options.activeOnly ? "activeRackId" : "rackId";
      input = {
        TableName: this.tables.tasks,
        IndexName: index,
        KeyConditionExpression: `${attr} = :pk`,
        ScanIndexForward: false,
      };
      values[":pk"] = options.rackId;
    } else {
      input = {
        TableName: this.tables.tasks,
        IndexName: INDEX.tasksByCreated,
        KeyConditionExpression: "listPk = :pk",
        ScanIndexForward: false,
      };
      values[":pk"] = LIST_PARTITION.tasks;
      if (options.activeOnly) filters.push("attribute_exists(activeRackId)");
    }
    if (options.componentId !== undefined) {
      filters.push("contains(componentIds, :component)");
      values[":component"] = options.componentId;
    }
    if (filters.length > 0) input.FilterExpression = filters.join(" AND ");
    if (Object.keys(names).length > 0) input.ExpressionAttributeNames = names;
    input.ExpressionAttributeValues = values;
    const tasks = (await queryAll(this.doc, input)).map(itemToTask);
    return {
      tasks: tasks.slice(options.page.offset, options.page.offset + options.page.limit),
      total: tasks.length,
    };
  }

  async saveTask(task: Task, expectedUpdatedAt: number): Promise<SaveTaskOutcome> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tables.tasks,
          Item: taskToItem(task),
          ConditionExpression: "attribute_exists(id) AND updatedAt = :expected",
          ExpressionAttributeValues: { ":expected": expectedUpdatedAt },
        }),
      );
      return "saved";
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      const out = await this.doc.send(
        new GetCommand({ TableName: this.tables.tasks, Key: { id: task.id }, ConsistentRead: true }),
      );
      return out.Item === undefined ? "not-found" : "stale";
    }
  }
}
