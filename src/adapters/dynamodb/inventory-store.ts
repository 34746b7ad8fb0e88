/**
 * InventoryStore on DynamoDB. A rack item (pk "rack#<id>") holds the whole rack with its
 * components, plus what the indexes need: name, external id, NVLink domain, and the component ids
 * by type for the narrow default-scope index. A pointer item per component ("component#<id>")
 * names its rack and, for a component with an external id, carries its (type, external id) for the
 * index that finds components by reference. Pointers are checked against the rack on read, so a
 * pointer left behind by a re-import that moved a component is harmless.
 */

import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { BatchWriteCommand, QueryCommand, ScanCommand } from "@aws-sdk/lib-dynamodb";
import { mapConcurrently } from "../../app/concurrency.js";
import type { InventoryStore, ScopeRack } from "../../app/ports.js";
import type { InventoryRack } from "../../domain/inventory.js";
import type { Page } from "../../domain/list-queries.js";
import type { ComponentType } from "../../domain/model.js";
import { batchGetAll, chunk, queryAll } from "./db.js";
import {
  componentExternalRef,
  componentPk,
  type Item,
  itemToRack,
  itemToScopeRack,
  rackPk,
  rackToItem,
} from "./items.js";
import { PagedQuery } from "./paged-query.js";
import { INDEX, LIST_PARTITION, type TableNames } from "./schema.js";

/**
 * Queries one lookup runs at once: a spec may name up to 1,000 racks by name, and one call must not
 * take the whole socket pool from the calls beside it.
 */
const QUERY_CONCURRENCY = 8;

export class DynamoInventoryStore implements InventoryStore {
  /** ListRacks pages in the store (paged-query.ts). */
  private readonly paged: PagedQuery;

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {
    this.paged = new PagedQuery(doc);
  }

  async upsertRacks(racks: InventoryRack[]): Promise<void> {
    const items: Item[] = [];
    for (const rack of racks) {
      items.push(rackToItem(rack));
      for (const c of rack.components) {
        items.push({
          pk: componentPk(c.id),
          kind: "component",
          rackId: rack.id,
          componentExtRef:
            c.externalId === undefined ? undefined : componentExternalRef(c.type, c.externalId),
        });
      }
    }
    // BatchWriteItem: 25 items a call (DynamoDB's limit; moto accepts more, AWS does not).
    for (const part of chunk(items, 25)) {
      let pending: Record<string, unknown>[] | undefined = part.map((Item) => ({ PutRequest: { Item } }));
      for (let round = 0; pending !== undefined && pending.length > 0; round++) {
        if (round > 0) await new Promise((r) => setTimeout(r, Math.min(1000, 25 * 2 ** round)));
        const out = await this.doc.send(
          new BatchWriteCommand({ RequestItems: { [this.tables.inventory]: pending as never } }),
        );
        pending = out.UnprocessedItems?.[this.tables.inventory] as Record<string, unknown>[] | undefined;
      }
    }
  }

  async loadAll(): Promise<InventoryRack[]> {
    const racks: InventoryRack[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const out = await this.doc.send(
        new ScanCommand({
          TableName: this.tables.inventory,
          FilterExpression: "kind = :rack",
          ExpressionAttributeValues: { ":rack": "rack" },
          ExclusiveStartKey: startKey,
        }),
      );
      racks.push(...(out.Items ?? []).map(itemToRack));
      startKey = out.LastEvaluatedKey;
    } while (startKey !== undefined);
    return racks.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  async listRacks(page: Page): Promise<{ racks: InventoryRack[]; total: number }> {
    // The default scope's index: every rack item, by id, a few attributes each; the page's racks
    // are then read by key. Never a Scan of the table (its ~40 pointer items a rack included).
    const input = {
      TableName: this.tables.inventory,
      IndexName: INDEX.racksInScope,
      KeyConditionExpression: "scopePk = :racks",
      ExpressionAttributeValues: { ":racks": LIST_PARTITION.racks },
    };
    const [entries, total] = await Promise.all([
      this.paged.page(input, "racks", page),
      this.paged.count(input),
    ]);
    const ids = entries.map((e) => itemToScopeRack(e).id);
    return { racks: await this.getRacksByIds(ids), total };
  }

  async getRacksByIds(ids: string[]): Promise<InventoryRack[]> {
    const items = await batchGetAll(
      this.doc,
      this.tables.inventory,
      [...new Set(ids)].map((id) => ({ pk: rackPk(id) })),
    );
    const byId = new Map(items.map((i) => [itemToRack(i).id, itemToRack(i)]));
    return ids.flatMap((id) => {
      const rack = byId.get(id);
      return rack === undefined ? [] : [rack];
    });
  }

  getRacksByNames(names: string[]): Promise<InventoryRack[]> {
    return this.queryEach(INDEX.racksByName, "rackName", names);
  }

  getRacksByExternalIds(externalIds: string[]): Promise<InventoryRack[]> {
    return this.queryEach(INDEX.racksByExternalId, "rackExternalId", externalIds);
  }

  getRacksByNvlDomain(
    ref: { by: "id"; id: string } | { by: "name"; name: string },
  ): Promise<InventoryRack[]> {
    return ref.by === "id"
      ? this.queryEach(INDEX.racksByNvlDomainId, "nvlDomainId", [ref.id])
      : this.queryEach(INDEX.racksByNvlDomainName, "nvlDomainName", [ref.name]);
  }

  async getRacksByComponentIds(componentIds: string[]): Promise<Map<string, InventoryRack>> {
    const pointers = await batchGetAll(
      this.doc,
      this.tables.inventory,
      [...new Set(componentIds)].map((id) => ({ pk: componentPk(id) })),
    );
    const racks = await this.getRacksByIds([...new Set(pointers.map((p) => p.rackId as string))]);
    const wanted = new Set(componentIds);
    const result = new Map<string, InventoryRack>();
    for (const rack of racks) {
      for (const c of rack.components) if (wanted.has(c.id)) result.set(c.id, rack);
    }
    return result;
  }

  async getRacksByComponentExternalId(type: ComponentType, externalId: string): Promise<InventoryRack[]> {
    const pointers = await queryAll(this.doc, {
      TableName: this.tables.inventory,
      IndexName: INDEX.componentsByExternalRef,
      KeyConditionExpression: "componentExtRef = :ref",
      ExpressionAttributeValues: { ":ref": componentExternalRef(type, externalId) },
    });
    const racks = await this.getRacksByIds([...new Set(pointers.map((p) => p.rackId as string))].sort());
    return racks.filter((rack) =>
      rack.components.some((c) => c.type === type && c.externalId === externalId),
    );
  }

  async listScopeRacks(qualifies: (rack: ScopeRack) => boolean, limit: number): Promise<ScopeRack[]> {
    const racks: ScopeRack[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      // Pages of `limit`: with every rack qualifying (no component filter) one page is the answer.
      const out = await this.doc.send(
        new QueryCommand({
          TableName: this.tables.inventory,
          IndexName: INDEX.racksInScope,
          KeyConditionExpression: "scopePk = :racks",
          ExpressionAttributeValues: { ":racks": LIST_PARTITION.racks },
          Limit: limit,
          ExclusiveStartKey: startKey,
        }),
      );
      for (const item of out.Items ?? []) {
        const rack = itemToScopeRack(item);
        if (qualifies(rack)) racks.push(rack);
        if (racks.length === limit) return racks;
      }
      startKey = out.LastEvaluatedKey;
    } while (startKey !== undefined);
    return racks;
  }

  /** One Query per value (up to QUERY_CONCURRENCY at once); results in the order of `values`, each value's racks by id. */
  private async queryEach(index: string, attribute: string, values: string[]): Promise<InventoryRack[]> {
    const results = await mapConcurrently([...new Set(values)], QUERY_CONCURRENCY, async (value) => {
      const items = await queryAll(this.doc, {
        TableName: this.tables.inventory,
        IndexName: index,
        KeyConditionExpression: "#a = :v",
        ExpressionAttributeNames: { "#a": attribute },
        ExpressionAttributeValues: { ":v": value },
      });
      return items.map(itemToRack).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    });
    return results.flat();
  }
}
