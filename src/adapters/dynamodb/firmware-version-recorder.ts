/**
 * Records verified firmware versions on inventory components, in place: one read of the rack item
 * (`rack#<id>`, whose `rack` attribute holds the InventoryRack; eventually consistent first) and one UpdateItem that sets
 * `rack.components[i].firmwareVersion` for the components that changed, conditional on each index
 * still holding that component (an inventory import in between moves them: read again). Given
 * where the task's preflight saw every component (`at`), the UpdateItem goes first, with no read,
 * under the same condition; refused, the read and write follow as without.
 *
 * Why not InventoryStore.upsertRacks: it rewrites the rack AND every component pointer item
 * (79 items for a 39-BMC rack) — per wave, that was most of a rollout's write capacity.
 */
import {
  type DynamoDBDocumentClient,
  GetCommand,
  UpdateCommand,
  type UpdateCommandInput,
} from "@aws-sdk/lib-dynamodb";
import type { FirmwareVersionRecorder, InventoryStore } from "../../app/ports.js";
import type { InventoryComponent } from "../../domain/inventory.js";
import { rackPk } from "./items.js";

const isConditionFailed = (error: unknown): boolean =>
  (error as { name?: string } | null)?.name === "ConditionalCheckFailedException";

export class DynamoFirmwareRecorder implements FirmwareVersionRecorder {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly inventoryTable: string,
  ) {}

  async record(
    rackId: string,
    versions: readonly { componentId: string; version: string }[],
    at?: Readonly<Record<string, number>>,
  ): Promise<void> {
    const Key = { pk: rackPk(rackId) };
    // Where the preflight saw every component: written there at once, no read (a refused write,
    // an import having moved them since, falls back to the read below).
    const known = versions.map(({ componentId, version }) => ({
      componentId,
      version,
      i: at?.[componentId],
    }));
    if (known.length > 0 && known.every((k) => k.i !== undefined)) {
      if (await this.write(Key, known as { componentId: string; version: string; i: number }[])) return;
    }
    for (let attempt = 0; attempt < 5; attempt++) {
      // The first read may be stale (half the read units): the write is conditional on what it
      // read, so a stale read costs a retry, which reads strongly; a version read as not yet
      // recorded is written again, harmlessly.
      const out = await this.doc.send(
        new GetCommand({
          TableName: this.inventoryTable,
          Key,
          ConsistentRead: attempt > 0,
          ProjectionExpression: "#r.#c",
          ExpressionAttributeNames: { "#r": "rack", "#c": "components" },
        }),
      );
      const components =
        (out.Item?.rack as { components?: InventoryComponent[] } | undefined)?.components ?? [];
      const changed = versions.flatMap(({ componentId, version }) => {
        const i = components.findIndex((c) => c.id === componentId);
        return i < 0 || components[i]?.firmwareVersion === version ? [] : [{ componentId, version, i }];
      });
      if (changed.length === 0) return;
      if (await this.write(Key, changed)) return;
    }
    throw new Error(`rack ${rackId}: inventory kept changing while recording firmware versions`);
  }

  /** One UpdateItem of these indexes, conditional on each holding its component; false if refused. */
  private async write(
    Key: { pk: string },
    entries: readonly { componentId: string; version: string; i: number }[],
  ): Promise<boolean> {
    try {
      await this.doc.send(new UpdateCommand(versionsUpdate(this.inventoryTable, Key, entries)));
      return true;
    } catch (error) {
      if (!isConditionFailed(error)) throw error;
      return false;
    }
  }
}

/**
 * The write of verified versions at known indexes of a rack's item: SET each index's
 * firmwareVersion, conditional on each index still holding its component (a missing item fails
 * the condition too). The recorder sends it alone; the task store puts it in a run child's ending
 * (DynamoTaskStore.saveTaskWithOutcomeAndVersions).
 *
 *   c1 at 4, c2 at 0 → SET #r.#c[4].firmwareVersion = :v0, #r.#c[0].firmwareVersion = :v1
 *                      IF #r.#c[4].id = :id0 AND #r.#c[0].id = :id1
 */
export function versionsUpdate(
  TableName: string,
  Key: { pk: string },
  entries: readonly { componentId: string; version: string; i: number }[],
): UpdateCommandInput & { UpdateExpression: string } {
  const values: Record<string, unknown> = {};
  entries.forEach(({ componentId, version }, k) => {
    values[`:v${k}`] = version;
    values[`:id${k}`] = componentId;
  });
  return {
    TableName,
    Key,
    UpdateExpression: `SET ${entries.map(({ i }, k) => `#r.#c[${i}].firmwareVersion = :v${k}`).join(", ")}`,
    ConditionExpression: entries.map(({ i }, k) => `#r.#c[${i}].id = :id${k}`).join(" AND "),
    ExpressionAttributeNames: { "#r": "rack", "#c": "components" },
    ExpressionAttributeValues: values,
  };
}

/** The fallback over InventoryStore alone: read the rack, change it, upsert it (every item again). */
export class UpsertFirmwareRecorder implements FirmwareVersionRecorder {
  constructor(private readonly inventory: Pick<InventoryStore, "getRacksByIds" | "upsertRacks">) {}

  async record(rackId: string, versions: readonly { componentId: string; version: string }[]): Promise<void> {
    const [rack] = await this.inventory.getRacksByIds([rackId]);
    if (rack === undefined) return;
    const wanted = new Map(versions.map((v) => [v.componentId, v.version]));
    let changed = false;
    for (const component of rack.components) {
      const version = wanted.get(component.id);
      if (version !== undefined && component.firmwareVersion !== version) {
        component.firmwareVersion = version;
        changed = true;
      }
    }
    if (changed) await this.inventory.upsertRacks([rack]);
  }
}
