/**
 * Records verified firmware versions on inventory components. InventoryStore has no per-component
 * update, so this rewrites the rack item (read, change, upsert). Safe here because only one task
 * holds a rack's lock, and FinishGroup (the only caller) runs once per group, serially.
 */
import type { InventoryStore } from "../../app/ports.js";
import type { FirmwareVersionRecorder } from "../../app/task-steps.js";

export class InventoryFirmwareRecorder implements FirmwareVersionRecorder {
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
