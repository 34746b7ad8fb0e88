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
 *
 * Operation rules: each version is its own item, `rule#<id>#v000003`, written once and never
 * again; `rule#<id>` is the rule's head (its latest version, read by the create path with one
 * GetItem); `policy#rules` is the list index (id → name and latest version), so ListOperationRules
 * reads one item and then the page's heads. A new version is one transaction:
 *
 *   Put   rule#R#v000003   condition attribute_not_exists(pk)   (a version is written once)
 *   Put   rule#R           condition version = 2                 (no one else wrote 3 meanwhile)
 *   Update policy#rules    SET rules.R = {name, version: 3}
 *
 * Two writers of version 3: one commits, the other's transaction is cancelled whole ('conflict').
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
import type { Page } from "../../domain/list-queries.js";
import type { OperationRule } from "../../domain/operation-rules.js";
import { batchGetAll, ensureIndexItem, isConditionFailed, transactWrite } from "./db.js";
import type { TableNames } from "./schema.js";

export const BASELINES_PK = "policy#baselines";
export const RULES_INDEX_PK = "policy#rules";
export const ruleHeadPk = (id: string): string => `rule#${id}`;
export const ruleVersionPk = (id: string, version: number): string =>
  `rule#${id}#v${String(version).padStart(6, "0")}`;

interface RuleSummary {
  name: string;
  version: number;
}

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

  async getRule(id: string, version?: number): Promise<OperationRule | undefined> {
    const pk = version === undefined ? ruleHeadPk(id) : ruleVersionPk(id, version);
    const out = await this.doc.send(
      new GetCommand({ TableName: this.tables.inventory, Key: { pk }, ConsistentRead: true }),
    );
    return out.Item?.rule as OperationRule | undefined;
  }

  async putRuleVersion(rule: OperationRule): Promise<"written" | "conflict"> {
    // The index's map must exist before a transaction can set one of its keys.
    await ensureIndexItem(this.doc, this.tables.inventory, { pk: RULES_INDEX_PK, kind: "policy", rules: {} });
    const table = this.tables.inventory;
    const summary: RuleSummary = { name: rule.name, version: rule.version };
    const codes = await transactWrite(this.doc, {
      TransactItems: [
        {
          Put: {
            TableName: table,
            Item: { pk: ruleVersionPk(rule.id, rule.version), kind: "policy", rule },
            ConditionExpression: "attribute_not_exists(pk)",
          },
        },
        {
          Put: {
            TableName: table,
            Item: { pk: ruleHeadPk(rule.id), kind: "policy", rule, version: rule.version },
            ...(rule.version === 1
              ? { ConditionExpression: "attribute_not_exists(pk)" }
              : {
                  ConditionExpression: "version = :previous",
                  ExpressionAttributeValues: { ":previous": rule.version - 1 },
                }),
          },
        },
        {
          Update: {
            TableName: table,
            Key: { pk: RULES_INDEX_PK },
            UpdateExpression: "SET #rules.#id = :summary",
            ExpressionAttributeNames: { "#rules": "rules", "#id": rule.id },
            ExpressionAttributeValues: { ":summary": summary },
          },
        },
      ],
    });
    return codes === undefined ? "written" : "conflict";
  }

  async listRules(page: Page): Promise<{ rules: OperationRule[]; total: number }> {
    const out = await this.doc.send(
      new GetCommand({ TableName: this.tables.inventory, Key: { pk: RULES_INDEX_PK }, ConsistentRead: true }),
    );
    const index = Object.entries((out.Item?.rules as Record<string, RuleSummary> | undefined) ?? {}).sort(
      ([a, x], [b, y]) => (x.name < y.name ? -1 : x.name > y.name ? 1 : a < b ? -1 : a > b ? 1 : 0),
    );
    const ids = index.slice(page.offset, page.offset + page.limit).map(([id]) => id);
    const heads = await batchGetAll(
      this.doc,
      this.tables.inventory,
      ids.map((id) => ({ pk: ruleHeadPk(id) })),
    );
    const byId = new Map(heads.map((h) => [(h.rule as OperationRule).id, h.rule as OperationRule]));
    return { rules: ids.flatMap((id) => byId.get(id) ?? []), total: index.length };
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
