/**
 * InventoryStore on DynamoDB. A rack item (pk "rack#<id>") holds the whole rack with its
 * components; pointer items map a component id ("component#<id>") or a component's (type,
 * external id) ("componentExt#<TYPE>#<externalId>") to its rack. Pointers are checked against the
 * rack on read, so a pointer left behind by a re-import that moved a component is harmless.
 */

import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { BatchWriteCommand, QueryCommand, ScanCommand } from "@aws-sdk/lib-dynamodb";
import type { InventoryStore } from "../../app/ports.js";
import type { ComponentType, InventoryRack } from "../../domain/model.js";
import { chunk } from "./db.js";
import { componentExternalPk, componentPk, type Item, itemToRack, rackPk, rackToItem } from "./items.js";
import { batchGetAll } from "./run-store.js";
import { INDEX, type TableNames } from "./schema.js";

export class DynamoInventoryStore implements InventoryStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: TableNames,
  ) {}

  async upsertRacks(racks: InventoryRack[]): Promise<void> {
    const items: Item[] = [];
    for (const rack of racks) {
      items.push(rackToItem(rack));
      for (const c of rack.components) {
        items.push({ pk: componentPk(c.id), kind: "component", rackId: rack.id });
        if (c.externalId !== undefined) {
          items.push({
            pk: componentExternalPk(c.type, c.externalId),
            kind: "component",
            rackId: rack.id,
            componentId: c.id,
          });
        }
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
    const result = new Map<string, InventoryRack>();
    for (const rack of racks) {
      for (const c of rack.components) if (componentIds.includes(c.id)) result.set(c.id, rack);
    }
    return result;
  }

  async getRackByComponentExternalId(
    type: ComponentType,
    externalId: string,
  ): Promise<InventoryRack | undefined> {
    const pointers = await batchGetAll(this.doc, this.tables.inventory, [
      { pk: componentExternalPk(type, externalId) },
    ]);
    const pointer = pointers[0];
    if (pointer === undefined) return undefined;
    const [rack] = await this.getRacksByIds([pointer.rackId as string]);
    return rack?.components.some((c) => c.type === type && c.externalId === externalId) ? rack : undefined;
  }

  /** One Query per value (in parallel); results in the order of `values`, each value's racks by id. */
  private async queryEach(index: string, attribute: string, values: string[]): Promise<InventoryRack[]> {
    const results = await Promise.all(
      [...new Set(values)].map(async (value) => {
        const racks: InventoryRack[] = [];
        let startKey: Record<string, unknown> | undefined;
        do {
          const out = await this.doc.send(
            new QueryCommand({
              TableName: this.tables.inventory,
              IndexName: index,
              KeyConditionExpression: "#a = :v",
              ExpressionAttributeNames: { "#a": attribute },
              ExpressionAttributeValues: { ":v": value },
              ExclusiveStartKey: startKey,
            }),
          );
          racks.push(...(out.Items ?? []).map(itemToRack));
          startKey = out.LastEvaluatedKey;
        } while (startKey !== undefined);
        return racks.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      }),
    );
    return results.flat();
  }
}
