/**
 * What authorization needs to read before it can decide a call on a run or a task: the racks the
 * run or the task acts on, where they are (datacenter, row, NVLink domain, name), and why a run is
 * paused (resuming past a safety gate or a conflict timeout needs `override`). The gRPC adapter
 * asks these before the use case runs (src/adapters/grpc/authorize.ts); the rules themselves are
 * pure (src/domain/authorization.ts).
 *
 * A rack no longer in the inventory is placed by its id alone, so only an unscoped binding or a
 * rack-name glob covers it: a scope never covers what it cannot see.
 */
import type { RackPlace } from "../domain/access-policy.js";
import type { InventoryRack, RunReason } from "../domain/model.js";
import type { InventoryStore, RunStore, TaskStore } from "./ports.js";

export interface AccessLookups {
  /** The run's racks and its reason; undefined for an unknown run (the use case answers NotFound). */
  runRacks(runId: string): Promise<{ reason: RunReason; racks: RackPlace[] } | undefined>;
  /** The task's rack; undefined for an unknown task. */
  taskRacks(taskId: string): Promise<RackPlace[] | undefined>;
}

/** A run holds at most 100 targets: one page reads them all. */
const ALL_TARGETS = { offset: 0, limit: 1000 };

export function rackPlace(rack: Pick<InventoryRack, "name" | "location" | "nvlDomain">): RackPlace {
  return {
    name: rack.name,
    ...(rack.location === undefined ? {} : { datacenter: rack.location.datacenter, row: rack.location.row }),
    ...(rack.nvlDomain === undefined ? {} : { nvlDomain: rack.nvlDomain.name }),
  };
}

export function createAccessLookups(deps: {
  runs: Pick<RunStore, "getRun" | "listTargets">;
  tasks: Pick<TaskStore, "getTasks">;
  inventory: Pick<InventoryStore, "getRacksByIds">;
}): AccessLookups {
  async function places(rackIds: string[]): Promise<RackPlace[]> {
    const unique = [...new Set(rackIds)];
    const found = new Map((await deps.inventory.getRacksByIds(unique)).map((r) => [r.id, rackPlace(r)]));
    return unique.map((id) => found.get(id) ?? { name: id });
  }
  return {
    async runRacks(runId) {
      const run = await deps.runs.getRun(runId);
      if (run === undefined) return undefined;
      const page = await deps.runs.listTargets(runId, {
        phaseFrom: 0,
        phaseTo: run.phaseSizes.length - 1,
        page: ALL_TARGETS,
        knownCommitted: true,
      });
      return { reason: run.reason, racks: await places((page?.targets ?? []).map((t) => t.rackId)) };
    },
    async taskRacks(taskId) {
      const [task] = await deps.tasks.getTasks([taskId]);
      return task === undefined ? undefined : places([task.rackId]);
    },
  };
}
