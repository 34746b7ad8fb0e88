/**
 * ReadinessStore on DynamoDB: a component's readiness lives on the component, inside its rack's
 * item (`rack#<id>`, attribute `rack.components[i].readiness`), so the child task's preflight
 * reads a rack's readiness with ONE GetItem and an import carries it like any other field.
 *
 * Set: the component's pointer (`component#<id>`) names the rack; one UpdateItem then sets or
 * removes `rack.components[i].readiness`, conditional on index i still holding that component
 * (DynamoFirmwareRecorder writes firmware versions the same way, so neither overwrites the other:
 * a whole-rack put here would undo a version recorded a moment before).
 */
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import type { ReadinessStore } from "../../app/ports.js";
import type { ComponentReadiness, InventoryComponent } from "../../domain/inventory.js";
import { isConditionFailed } from "./db.js";
import { componentPk, rackPk } from "./items.js";
import type { TableNames } from "./schema.js";

const NAMES = { "#r": "rack", "#c": "components" };

export class DynamoReadinessStore implements ReadinessStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tables: Pick<TableNames, "inventory">,
  ) {}

  async setReadiness(
    componentId: string,
    readiness: ComponentReadiness | undefined,
  ): Promise<{ rackId: string; component: InventoryComponent } | undefined> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const pointer = await this.doc.send(
        new GetCommand({
          TableName: this.tables.inventory,
          Key: { pk: componentPk(componentId) },
          ConsistentRead: true,
        }),
      );
      const rackId = pointer.Item?.rackId as string | undefined;
      if (rackId === undefined) return undefined;
      const components = await this.rackComponents(rackId);
      const i = components.findIndex((c) => c.id === componentId);
      // A stale pointer (the component moved to another rack on re-import) finds nothing here.
      const current = components[i];
      if (current === undefined) return undefined;
      const path = `#r.#c[${i}].readiness`;
      try {
        await this.doc.send(
          new UpdateCommand({
            TableName: this.tables.inventory,
            Key: { pk: rackPk(rackId) },
            UpdateExpression: readiness === undefined ? `REMOVE ${path}` : `SET ${path} = :readiness`,
            ConditionExpression: `#r.#c[${i}].id = :id`,
            ExpressionAttributeNames: NAMES,
            ExpressionAttributeValues: {
              ":id": componentId,
              ...(readiness === undefined ? {} : { ":readiness": readiness }),
            },
          }),
        );
      } catch (error) {
        if (isConditionFailed(error)) continue;
        throw error;
      }
      const { readiness: _old, ...rest } = current;
      return { rackId, component: readiness === undefined ? rest : { ...rest, readiness } };
    }
    throw new Error(`component ${componentId}: inventory kept changing while setting its readiness`);
  }

  async notReady(rackId: string): Promise<Map<string, ComponentReadiness>> {
    const out = new Map<string, ComponentReadiness>();
    for (const c of await this.rackComponents(rackId))
      if (c.readiness !== undefined) out.set(c.id, c.readiness);
    return out;
  }

  async rackComponents(rackId: string): Promise<InventoryComponent[]> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tables.inventory,
        Key: { pk: rackPk(rackId) },
        ConsistentRead: true,
        ProjectionExpression: "#r.#c",
        ExpressionAttributeNames: NAMES,
      }),
    );
    return (out.Item?.rack as { components?: InventoryComponent[] } | undefined)?.components ?? [];
  }
}
