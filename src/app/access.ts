/**
 * What authorization needs to read before it can decide a call on a run or a task: the racks the
 * run or the task acts on, where they are (datacenter, row, NVLink domain, name), and why a run is
 * paused (resuming past a safety gate or a conflict timeout needs `override`). The gRPC adapter
 * asks these before the use case runs (src/adapters/grpc/authorize.ts); the rules themselves are
 * pure (src/domain/authorization.ts).
 *
 * A rack no longer in the inventory is placed by its id alone, so only an unscoped binding or a
 * rack-name glob covers it: a scope never covers what it cannot see.
 *
 * A refused call on a run is also recorded in the run's history (`recordRunDenial`): the run is
 * not changed, the event is put beside its writes (RunStore.appendRunEvent).
 */
import type { RackPlace } from "../domain/access-policy.js";
import type { Actor } from "../domain/actor.js";
import type { InventoryRack } from "../domain/inventory.js";
import type { RunReason } from "../domain/model.js";
import { accessDeniedEvent, DENIAL_SEQ_FIRST, DENIAL_SEQ_LAST } from "../domain/run-history.js";
import type { Clock, InventoryStore, RunStore, TaskStore } from "./ports.js";

/** A refused call, as the run history records it. */
export interface RunDenial {
  /** The RPC by name: "ResumeOperationRun". */
  rpc: string;
  code: "UNAUTHENTICATED" | "PERMISSION_DENIED";
  /** The message the caller got. */
  reason: string;
}

export interface AccessLookups {
  /** The run's racks and its reason; undefined for an unknown run (the use case answers NotFound). */
  runRacks(runId: string): Promise<{ reason: RunReason; racks: RackPlace[] } | undefined>;
  /** The task's rack; undefined for an unknown task. */
  taskRacks(taskId: string): Promise<RackPlace[] | undefined>;
  /** Records a refused call on a run in its history; an unknown run records nothing. */
  recordDenial(runId: string, actor: Actor, denial: RunDenial): Promise<void>;
}

/**
 * ACCESS_DENIED in the run's history, at the time of the refusal: positions from
 * DENIAL_SEQ_FIRST, the next one when another refusal in the same millisecond took it. An unknown
 * run records nothing; so do more refusals in one millisecond than there are positions (the log
 * line and the metric still count each).
 */
export async function recordRunDenial(
  runs: Pick<RunStore, "getRun" | "appendRunEvent">,
  clock: Pick<Clock, "now">,
  runId: string,
  actor: Actor,
  denial: RunDenial,
): Promise<void> {
  const run = await runs.getRun(runId);
  if (run === undefined) return;
  const at = clock.now();
  for (let seq = DENIAL_SEQ_FIRST; seq <= DENIAL_SEQ_LAST; seq++) {
    if ((await runs.appendRunEvent(accessDeniedEvent(run, at, seq, actor, denial))) === "appended") return;
  }
}

/** Targets read per listing when a control call needs every rack of a run. */
const TARGETS_PAGE = 1000;

export function rackPlace(rack: Pick<InventoryRack, "name" | "location" | "nvlDomain">): RackPlace {
  return {
    name: rack.name,
    ...(rack.location === undefined ? {} : { datacenter: rack.location.datacenter, row: rack.location.row }),
    ...(rack.nvlDomain === undefined ? {} : { nvlDomain: rack.nvlDomain.name }),
  };
}

export function createAccessLookups(deps: {
  runs: Pick<RunStore, "getRun" | "listTargets" | "appendRunEvent">;
  tasks: Pick<TaskStore, "getTasks">;
  inventory: Pick<InventoryStore, "getRacksByIds">;
  clock: Pick<Clock, "now">;
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
      // Every rack of the run, page by page: a run may hold more targets than one page.
      const rackIds: string[] = [];
      for (let offset = 0; ; offset += TARGETS_PAGE) {
        const page = await deps.runs.listTargets(runId, {
          phaseFrom: 0,
          phaseTo: run.phaseSizes.length - 1,
          page: { offset, limit: TARGETS_PAGE },
          knownCommitted: true,
          phaseSizes: run.phaseSizes,
        });
        rackIds.push(...(page?.targets ?? []).map((t) => t.rackId));
        if (page === undefined || offset + TARGETS_PAGE >= page.total) break;
      }
      return { reason: run.reason, racks: await places(rackIds) };
    },
    async taskRacks(taskId) {
      const [task] = await deps.tasks.getTasks([taskId]);
      return task === undefined ? undefined : places([task.rackId]);
    },
    recordDenial: (runId, actor, denial) => recordRunDenial(deps.runs, deps.clock, runId, actor, denial),
  };
}
