/**
 * The child task's own items in the Tasks table, beside the task items and the `idem:` keys (none
 * of them carries an index attribute, so no task listing ever sees them):
 *
 *   bmc#<componentId>#<requestId>   one BMC command and what the BMC reported on it
 *                                    { taskId, reqKind: update|query, sentAt, deadline, publishedAt?,
 *                                      ackedAt?, progress?, result?, answer?, ttl }
 *   secret#<taskId>                  a plain UpgradeFirmware task's credentials, AES-GCM/KMS sealed,
 *                                    bound to "task:<taskId>"
 *
 * Why the Tasks table: these items live and die with one task, and the table already has the
 * grants every child-task function needs. Reports are keyed by component AND request id: the IoT
 * rule takes the component id from the topic, and a BMC may publish on its own topic only, so a
 * report for another component's request lands on a record nobody reads.
 *
 * Idempotence (a duplicate or late BMC message changes nothing): every report is a conditional
 * update of an EXISTING record (SendUpdate/SendQueries create it before publishing, so unknown
 * request ids are refused); progress only moves up; the first result (or query answer) is final.
 * `reopen` (a re-driven task, src/app/child-task/redrive.ts) forgets only that a record without
 * its answer was published, so its command goes out again under the same request id.
 */
import {
  BatchGetCommand,
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import type { Cipher } from "../../app/ports.js";
import { type BmcRequestStore, requestKey, type TaskSecretStore } from "../../app/ports.js";
import type { BmcEvent } from "../../domain/bmc-protocol.js";
import type { BmcRequestRecord, NewBmcRequest } from "../../domain/component-verdict.js";
import type { FirmwareAuthentication } from "../../domain/model.js";

type Item = Record<string, unknown>;

const requestPk = (componentId: string, requestId: string): string => `bmc#${componentId}#${requestId}`;
const secretPk = (taskId: string): string => `secret#${taskId}`;

/** Request records outlive their task's execution by a week, for post-mortems (TTL, epoch s). */
const REQUEST_RETENTION_SECONDS = 7 * 24 * 3600;

function isConditionFailed(error: unknown): boolean {
  return (error as { name?: string } | null)?.name === "ConditionalCheckFailedException";
}

function itemToRecord(item: Item): BmcRequestRecord {
  const record: BmcRequestRecord = {
    componentId: item.componentId as string,
    requestId: item.requestId as string,
    taskId: item.taskId as string,
    kind: item.reqKind as "update" | "query",
    sentAt: Number(item.sentAt),
    deadline: Number(item.deadline),
  };
  if (item.publishedAt !== undefined) record.publishedAt = Number(item.publishedAt);
  if (item.ackedAt !== undefined) record.ackedAt = Number(item.ackedAt);
  if (item.progress !== undefined) record.progress = Number(item.progress);
  if (item.result !== undefined) record.result = item.result as BmcRequestRecord["result"];
  if (item.answer !== undefined) record.status = item.answer as BmcRequestRecord["status"];
  return record;
}

export class DynamoBmcRequestStore implements BmcRequestStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tasksTable: string,
  ) {}

  async open(request: NewBmcRequest): Promise<BmcRequestRecord> {
    const id = requestPk(request.componentId, request.requestId);
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tasksTable,
          Item: {
            id,
            componentId: request.componentId,
            requestId: request.requestId,
            taskId: request.taskId,
            reqKind: request.kind,
            sentAt: request.sentAt,
            deadline: request.deadline,
            ttl: Math.ceil(request.deadline / 1000) + REQUEST_RETENTION_SECONDS,
          },
          ConditionExpression: "attribute_not_exists(id)",
        }),
      );
      return { ...request };
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
    }
    const out = await this.doc.send(
      new GetCommand({ TableName: this.tasksTable, Key: { id }, ConsistentRead: true }),
    );
    if (out.Item === undefined) throw new Error(`request record ${id} vanished`);
    return itemToRecord(out.Item);
  }

  async markPublished(componentId: string, requestId: string, now: number): Promise<void> {
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tasksTable,
        Key: { id: requestPk(componentId, requestId) },
        UpdateExpression: "SET publishedAt = if_not_exists(publishedAt, :now)",
        ConditionExpression: "attribute_exists(id)",
        ExpressionAttributeValues: { ":now": now },
      }),
    );
  }

  async recordEvent(componentId: string, event: BmcEvent, now: number): Promise<"recorded" | "ignored"> {
    const Key = { id: requestPk(componentId, event.requestId) };
    let update: {
      UpdateExpression: string;
      ConditionExpression: string;
      names: Record<string, string>;
      values: Item;
    };
    switch (event.type) {
      case "ack":
        update = {
          UpdateExpression: "SET #acked = if_not_exists(#acked, :now)",
          ConditionExpression: "attribute_exists(id) AND attribute_not_exists(#acked)",
          names: { "#acked": "ackedAt" },
          values: { ":now": now },
        };
        break;
      case "progress":
        update = {
          UpdateExpression: "SET #p = :p, #acked = if_not_exists(#acked, :now)",
          ConditionExpression:
            "attribute_exists(id) AND attribute_not_exists(#r) AND (attribute_not_exists(#p) OR #p < :p)",
          names: { "#p": "progress", "#r": "result", "#acked": "ackedAt" },
          values: { ":p": event.percent, ":now": now },
        };
        break;
      case "result":
        update = {
          UpdateExpression: "SET #r = :r, resultAt = :now, #acked = if_not_exists(#acked, :now)",
          ConditionExpression: "attribute_exists(id) AND attribute_not_exists(#r) AND #k = :update",
          names: { "#r": "result", "#acked": "ackedAt", "#k": "reqKind" },
          values: {
            ":r": {
              ...(event.ok
                ? { ok: true, version: event.version }
                : {
                    ok: false,
                    version: event.version,
                    error: { code: event.error.code, message: event.error.message },
                  }),
              // Protocol v2: the parts the BMC says it flashed (the verdict compares them).
              ...(event.subTargets === undefined ? {} : { subTargets: event.subTargets }),
            },
            ":now": now,
            ":update": "update",
          },
        };
        break;
      case "status":
        update = {
          UpdateExpression: "SET #a = :a, answeredAt = :now",
          ConditionExpression: "attribute_exists(id) AND attribute_not_exists(#a) AND #k = :query",
          names: { "#a": "answer", "#k": "reqKind" },
          values: {
            ":a": {
              version: event.version,
              ...(event.ready === undefined ? {} : { ready: event.ready }),
              ...(event.reason === undefined ? {} : { reason: event.reason }),
            },
            ":now": now,
            ":query": "query",
          },
        };
        break;
    }
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tasksTable,
          Key,
          UpdateExpression: update.UpdateExpression,
          ConditionExpression: update.ConditionExpression,
          ExpressionAttributeNames: update.names,
          ExpressionAttributeValues: update.values,
        }),
      );
      return "recorded";
    } catch (error) {
      if (isConditionFailed(error)) return "ignored";
      throw error;
    }
  }

  async reopen(
    componentId: string,
    requestId: string,
    window: { sentAt: number; deadline: number },
  ): Promise<"reopened" | "answered"> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tasksTable,
          Key: { id: requestPk(componentId, requestId) },
          UpdateExpression: "REMOVE publishedAt SET sentAt = :sent, deadline = :deadline, #ttl = :ttl",
          ConditionExpression:
            "attribute_exists(id) AND attribute_not_exists(#r) AND attribute_not_exists(#a)",
          ExpressionAttributeNames: { "#r": "result", "#a": "answer", "#ttl": "ttl" },
          ExpressionAttributeValues: {
            ":sent": window.sentAt,
            ":deadline": window.deadline,
            ":ttl": Math.ceil(window.deadline / 1000) + REQUEST_RETENTION_SECONDS,
          },
        }),
      );
      return "reopened";
    } catch (error) {
      if (isConditionFailed(error)) return "answered";
      throw error;
    }
  }

  async get(
    keys: readonly { componentId: string; requestId: string }[],
  ): Promise<Map<string, BmcRequestRecord>> {
    const found = new Map<string, BmcRequestRecord>();
    const ids = [...new Set(keys.map((k) => requestPk(k.componentId, k.requestId)))];
    if (ids.length === 1) {
      const out = await this.doc.send(
        new GetCommand({ TableName: this.tasksTable, Key: { id: ids[0] }, ConsistentRead: true }),
      );
      if (out.Item !== undefined) {
        const r = itemToRecord(out.Item);
        found.set(requestKey(r.componentId, r.requestId), r);
      }
      return found;
    }
    for (let i = 0; i < ids.length; i += 100) {
      let pending: Item[] | undefined = ids.slice(i, i + 100).map((id) => ({ id }));
      for (let round = 0; pending !== undefined && pending.length > 0; round++) {
        if (round > 0) await new Promise((r) => setTimeout(r, Math.min(1000, 25 * 2 ** round)));
        const out = await this.doc.send(
          new BatchGetCommand({
            RequestItems: { [this.tasksTable]: { Keys: pending, ConsistentRead: true } },
          }),
        );
        for (const item of out.Responses?.[this.tasksTable] ?? []) {
          const r = itemToRecord(item);
          found.set(requestKey(r.componentId, r.requestId), r);
        }
        pending = out.UnprocessedKeys?.[this.tasksTable]?.Keys as Item[] | undefined;
      }
    }
    return found;
  }
}

export class DynamoTaskSecretStore implements TaskSecretStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tasksTable: string,
    private readonly cipher: Cipher | undefined,
  ) {}

  async put(taskId: string, authentication: FirmwareAuthentication): Promise<void> {
    if (this.cipher === undefined) throw new Error("firmware credentials need a cipher; none is configured");
    const blob = await this.cipher.encrypt(
      Buffer.from(JSON.stringify(authentication), "utf8"),
      `task:${taskId}`,
    );
    await this.doc.send(
      new PutCommand({ TableName: this.tasksTable, Item: { id: secretPk(taskId), secret: blob } }),
    );
  }

  async get(taskId: string): Promise<FirmwareAuthentication | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.tasksTable, Key: { id: secretPk(taskId) }, ConsistentRead: true }),
    );
    const blob = out.Item?.secret as Uint8Array | undefined;
    if (blob === undefined) return undefined;
    if (this.cipher === undefined) throw new Error("firmware credentials need a cipher; none is configured");
    const plain = await this.cipher.decrypt(blob, `task:${taskId}`);
    return JSON.parse(Buffer.from(plain).toString("utf8")) as FirmwareAuthentication;
  }
}
