/**
 * FirmwarePolicyStore on DynamoDB, in the Inventory table (docs/data-model.md): new item kinds,
 * no new table. Racks are read by key or by `kind = rack` scans, so these items never show up as
 * racks.
 *
 * Baselines are ONE item, `policy#baselines` (`baselines`: the list, `revision`: a counter),
 * because the create path needs all of them at once and there are few (a type × a model or two):
 * one GetItem instead of a scan or a query per type. Every edit is a read-modify-write pinned on
 * the revision it read:
 *
 *   admin A reads revision 4, admin B reads revision 4
 *   A: Put baselines + A's edit, revision 5, condition revision = 4   → written
 *   B: Put baselines + B's edit, revision 5, condition revision = 4   → ConditionalCheckFailed
 *   B: reads revision 5 (A's edit in it), applies B's edit, writes revision 6 → both edits kept
 */
import { type DynamoDBDocumentClient, GetCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import type { FirmwarePolicyStore } from "../../app/ports.js";
import {
  type BaselineKey,
  type FirmwareBaseline,
  removeBaseline,
  sameBaselineKey,
  sortBaselines,
  upsertBaselines,
} from "../../domain/firmware-baselines.js";
import { isConditionFailed } from "./db.js";
import type { TableNames } from "./schema.js";

export const BASELINES_PK = "policy#baselines";

/** Rounds of read-modify-write before an edit gives up (only concurrent edits make one lose). */
const EDIT_ATTEMPTS = 8;

export class DynamoFirmwarePolicyStore implements FirmwarePolicyStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: Pick<TableNames, "inventory">,
  ) {}

  async listBaselines(): Promise<FirmwareBaseline[]> {
    return (await this.readBaselines()).baselines;
  }

  async putBaselines(baselines: readonly FirmwareBaseline[]): Promise<void> {
    if (baselines.length === 0) return;
    await this.edit((current) => ({ next: upsertBaselines(current, baselines), changed: true }));
  }

  async deleteBaseline(key: BaselineKey): Promise<FirmwareBaseline | undefined> {
    let removed: FirmwareBaseline | undefined;
    await this.edit((current) => {
      removed = current.find((b) => sameBaselineKey(b, key));
      return { next: removeBaseline(current, key).baselines, changed: removed !== undefined };
    });
    return removed;
  }

  private async readBaselines(): Promise<{ baselines: FirmwareBaseline[]; revision: number | undefined }> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.tables.inventory, Key: { pk: BASELINES_PK }, ConsistentRead: true }),
    );
    if (out.Item === undefined) return { baselines: [], revision: undefined };
    return {
      baselines: sortBaselines((out.Item.baselines as FirmwareBaseline[] | undefined) ?? []),
      revision: Number(out.Item.revision),
    };
  }

  /** Applies `change` to the stored list under the revision condition; returns whether it changed. */
  private async edit(
    change: (current: FirmwareBaseline[]) => { next: FirmwareBaseline[]; changed: boolean },
  ): Promise<boolean> {
    for (let attempt = 0; attempt < EDIT_ATTEMPTS; attempt++) {
      const { baselines, revision } = await this.readBaselines();
      const { next, changed } = change(baselines);
      if (!changed) return false;
      try {
        await this.doc.send(
          new PutCommand({
            TableName: this.tables.inventory,
            Item: { pk: BASELINES_PK, kind: "policy", baselines: next, revision: (revision ?? 0) + 1 },
            ...(revision === undefined
              ? { ConditionExpression: "attribute_not_exists(pk)" }
              : {
                  ConditionExpression: "revision = :revision",
                  ExpressionAttributeValues: { ":revision": revision },
                }),
          }),
        );
        return true;
      } catch (error) {
        if (!isConditionFailed(error)) throw error;
      }
    }
    throw new Error(`${BASELINES_PK}: too many concurrent edits`);
  }
}
