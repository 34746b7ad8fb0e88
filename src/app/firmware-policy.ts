/**
 * Firmware policy use cases: the admin service's baselines (set, list, delete) and component
 * readiness, and what the
 * create paths (runs.ts, the task service's UpgradeFirmware) ask of them: the per-component
 * versions to freeze with a plan when the request names no target_version.
 */
import { NotFoundError, ValidationError } from "../domain/errors.js";
import {
  type BaselineKey,
  describeBaselineKey,
  type FirmwareBaseline,
  planVersions,
  uncoveredRule,
} from "../domain/firmware-baselines.js";
import type {
  ComponentReadiness,
  FirmwareTemplate,
  InventoryRack,
  PlannedTarget,
  VersionGroup,
} from "../domain/model.js";
import type { PolicyApi } from "./api.js";
import type { FirmwarePolicyStore, ReadinessStore } from "./ports.js";

export interface PolicyDeps {
  policy: FirmwarePolicyStore;
  readiness: Pick<ReadinessStore, "setReadiness">;
  log?: (line: string) => void;
}

export function createPolicyService(deps: PolicyDeps): PolicyApi {
  const { policy } = deps;
  return {
    async setReadiness(componentId: string, readiness: ComponentReadiness | undefined) {
      const set = await deps.readiness.setReadiness(componentId, readiness);
      if (set === undefined) throw new NotFoundError(`component ${componentId} not found`);
      const state = readiness === undefined ? "READY" : `${readiness.state} (${readiness.reason})`;
      deps.log?.(`readiness: component ${componentId} of rack ${set.rackId} is ${state}`);
      return set.component;
    },
    async setBaselines(baselines: FirmwareBaseline[]): Promise<FirmwareBaseline[]> {
      await policy.putBaselines(baselines);
      return policy.listBaselines();
    },
    listBaselines: () => policy.listBaselines(),
    async deleteBaseline(key: BaselineKey): Promise<FirmwareBaseline> {
      const removed = await policy.deleteBaseline(key);
      if (removed === undefined)
        throw new NotFoundError(`no firmware baseline for ${describeBaselineKey(key)}`);
      return removed;
    },
  };
}

/**
 * The versions to freeze on each planned target (rack id → groups), or undefined when the template
 * names one target_version for everything. Reads the baselines only when it must (one read). Any
 * planned component no baseline covers refuses the request, naming the types at `field`:
 *   configuration.operation.upgrade_firmware.target_version: target_version is not set and no
 *   firmware baseline covers NVSWITCH
 * No store configured reads as no baselines.
 */
export async function freezeVersions(
  policy: Pick<FirmwarePolicyStore, "listBaselines"> | undefined,
  firmware: Pick<FirmwareTemplate, "targetVersion">,
  targets: readonly Pick<PlannedTarget, "rackId" | "componentsByType">[],
  racks: readonly InventoryRack[],
  field: string,
): Promise<Map<string, VersionGroup[]> | undefined> {
  if (firmware.targetVersion !== undefined) return undefined;
  const baselines = (await policy?.listBaselines()) ?? [];
  const { versions, uncovered } = planVersions(targets, racks, baselines);
  if (uncovered.length > 0) throw new ValidationError([{ field, rule: uncoveredRule(uncovered) }]);
  return versions;
}
