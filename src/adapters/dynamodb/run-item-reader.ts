/**
 * The run and target reads every part of DynamoRunStore needs: the run item (remembering each run's
 * frozen max_concurrent_targets for the batch claim's condition) and a target as readers may see it.
 */
import { type DynamoDBDocumentClient, GetCommand } from "@aws-sdk/lib-dynamodb";
import type { Target } from "../../domain/model.js";
import { type Item, itemToTarget } from "./items.js";
import type { TableNames } from "./schema.js";

export class RunItemReader {
  /** run id → its frozen max_concurrent_targets, as last read (claimTargets' condition needs it). */
  private readonly maxConcurrentByRun = new Map<string, number>();
  /** run id → its frozen failure-domain spread cap (absent: no spread), as last read. */
  private readonly spreadMaxByRun = new Map<string, number>();

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  async getRunItem(runId: string): Promise<Item | undefined> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.tables.runs, Key: { runId }, ConsistentRead: true }),
    );
    const max = out.Item?.maxConcurrent;
    if (typeof max === "number") {
      if (this.maxConcurrentByRun.size >= 10_000) this.maxConcurrentByRun.clear();
      this.maxConcurrentByRun.set(runId, max);
    }
    const spreadMax = out.Item?.spreadMax;
    if (typeof spreadMax === "number") {
      if (this.spreadMaxByRun.size >= 10_000) this.spreadMaxByRun.clear();
      this.spreadMaxByRun.set(runId, spreadMax);
    }
    return out.Item;
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

  /** max_concurrent_targets never changes after create, so one read per run and process will do. */
  async maxConcurrentOf(runId: string): Promise<number | undefined> {
    const known = this.maxConcurrentByRun.get(runId);
    if (known !== undefined) return known;
    await this.getRunItem(runId);
    return this.maxConcurrentByRun.get(runId);
  }

  /** The spread's cap never changes after create either; undefined for a run without a spread. */
  async spreadMaxOf(runId: string): Promise<number | undefined> {
    const known = this.spreadMaxByRun.get(runId);
    if (known !== undefined) return known;
    await this.getRunItem(runId);
    return this.spreadMaxByRun.get(runId);
  }
}
