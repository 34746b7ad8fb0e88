/**
 * Creating a run on DynamoDB (DynamoRunStore's create half): the run item, its targets, its
 * client request id, its CREATED event and its sealed credentials.
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
 */
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import type {
  Cipher,
  ClientRequest,
  ClientRequestRecord,
  CreateRunOptions,
  CreateRunOutcome,
} from "../../app/ports.js";
import { FlowError } from "../../domain/errors.js";
import type { RunHistoryEvent } from "../../domain/history-event.js";
import type { FirmwareAuthentication, Run, Target } from "../../domain/model.js";
import { chunk, isConditionFailed, transactWrite } from "./db.js";
import { runEventToItem, runToItem, targetToItem } from "./items.js";
import type { TableNames } from "./schema.js";

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

export class DynamoRunCreation {
  private readonly maxItems: number;
  private readonly pendingTtlSeconds: number;

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
    const origin = options.origin;
    if (origin !== undefined) checkEvents(origin.run, [origin.event]);
    const inCommit = Math.max(
      0,
      Math.min(
        targets.length,
        this.maxItems - (request === undefined ? 1 : 2) - events.length - (origin === undefined ? 0 : 2),
      ),
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
        ...(origin === undefined ? [] : [this.originUpdate(origin)]),
        ...eventPuts(this.tables.runEvents, origin === undefined ? events : [...events, origin.event]),
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
      const originAt = request === undefined ? 1 : 2;
      if (
        origin !== undefined &&
        codes[0] !== "ConditionalCheckFailed" &&
        codes[originAt] === "ConditionalCheckFailed"
      ) {
        return { outcome: "origin-changed" };
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

  /** The followed run's part of the commit: its version and follow-ups, on the version read. */
  private originUpdate(origin: NonNullable<CreateRunOptions["origin"]>) {
    return {
      Update: {
        TableName: this.tables.runs,
        Key: { runId: origin.run.id },
        UpdateExpression: "SET updatedAt = :now, followUps = :followUps",
        ConditionExpression: "updatedAt = :expected",
        ExpressionAttributeValues: {
          ":now": origin.run.updatedAt,
          ":followUps": origin.run.followUps ?? [],
          ":expected": origin.expectedUpdatedAt,
        },
      },
    };
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
          ...(request.credentialsMac === undefined ? {} : { credentialsMac: request.credentialsMac }),
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
      ...(typeof item.credentialsMac === "string" ? { credentialsMac: item.credentialsMac } : {}),
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
}

/** The Puts of a run write's history events, each only under a key nobody has written. */
export function eventPuts(table: string, events: readonly RunHistoryEvent[]) {
  return events.map((event) => ({
    Put: {
      TableName: table,
      Item: runEventToItem(event),
      ConditionExpression: "attribute_not_exists(eventKey)",
    },
  }));
}

/** A run write's events belong to that run and that version: the version is what keys them. */
export function checkEvents(run: Run, events: readonly RunHistoryEvent[]): void {
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
