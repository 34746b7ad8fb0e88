/**
 * Retry and rollback runs: the candidate racks a run made from a finished run draws from, before
 * the planner's select, order and phases (planCandidates). Pure.
 *
 * Retry: the finished run's targets in one of the retried statuses (FAILED; TERMINATED and
 * SKIPPED when asked), in their sequence order, each with the components frozen for it then that
 * its rack still has (a component gone from inventory is left out; a rack gone, or left with
 * nothing, drops out).
 *
 *   run R: rack A FAILED [c1 c2], rack B COMPLETED, rack C TERMINATED [c5], rack D SKIPPED [c7]
 *   retry R                              → A [c1 c2]
 *   retry R --include-terminated         → A [c1 c2], C [c5]
 *
 * Rollback: every component of the run's targets whose flash was commanded and ended (its task
 * report says COMPLETED, FAILED or TERMINATED), each back to the version its target recorded
 * before the flash (Target.priorVersions). Left alone, with the reason: a component never
 * flashed, one already at its prior version (the inventory's recorded version), one with no
 * prior version recorded. A rack with nothing to roll back drops out.
 *
 *   rack A: c1 1.0 → 2.0 COMPLETED, c2 1.0 → 2.0 NOT_ATTEMPTED    → A [c1 back to 1.0]; c2 never flashed
 *   rack B: c3 1.1 → 2.0 FAILED (inventory still says 1.1)        → c3 already at 1.1: B drops out
 */

import type { Actor } from "./actor.js";
import { plural, type RunHistoryEvent, stampEvents } from "./history-event.js";
import type { InventoryComponent, InventoryRack } from "./inventory.js";
import type {
  ComponentSkip,
  FollowUp,
  RetryRequest,
  Run,
  RunOrigin,
  Target,
  TargetStatus,
  VersionGroup,
} from "./model.js";
import type { ScopeRow } from "./planner.js";
import type { ComponentProgress, TaskReport } from "./task-report.js";

/** The statuses a retry takes: FAILED always; TERMINATED and SKIPPED when asked. */
export function retriedStatuses(
  request: Pick<RetryRequest, "includeTerminated" | "includeSkipped">,
): TargetStatus[] {
  return [
    "FAILED",
    ...(request.includeTerminated ? (["TERMINATED"] as const) : []),
    ...(request.includeSkipped ? (["SKIPPED"] as const) : []),
  ];
}

/** "no failed targets", "no failed or terminated targets", "no failed, terminated or skipped targets". */
export function nothingToRetry(request: Pick<RetryRequest, "includeTerminated" | "includeSkipped">): string {
  const names = retriedStatuses(request).map((s) => s.toLowerCase());
  const listed = names.length === 1 ? names[0] : `${names.slice(0, -1).join(", ")} or ${names.at(-1)}`;
  return `no ${listed} targets`;
}

/** The retry's candidate rows, in the retried run's sequence order (see the module comment). */
export function retryRows(
  targets: readonly Target[],
  request: Pick<RetryRequest, "includeTerminated" | "includeSkipped">,
  racks: readonly InventoryRack[],
): ScopeRow[] {
  const statuses = new Set(retriedStatuses(request));
  const byId = new Map(racks.map((r) => [r.id, r]));
  return [...targets]
    .filter((t) => statuses.has(t.status))
    .sort((a, b) => a.sequenceIndex - b.sequenceIndex)
    .flatMap((t) => {
      const rack = byId.get(t.rackId);
      if (rack === undefined) return [];
      const frozen = new Set(t.componentsByType.flatMap((g) => g.componentIds));
      const components = rack.components.filter((c) => frozen.has(c.id));
      return components.length === 0 ? [] : [{ rackId: t.rackId, components }];
    });
}

/** A component a rollback leaves alone, and why. */
export type RollbackSkip = ComponentSkip;

export interface RollbackScope {
  /** Racks with something to roll back, in the rolled-back run's sequence order. */
  rows: ScopeRow[];
  /** Per rack: each component's prior version, grouped as a target's frozen versions. */
  versions: Map<string, VersionGroup[]>;
  /** Per rack (every rack of the run that had a task): what is left alone and why. */
  skipped: Map<string, RollbackSkip[]>;
}

/** A component's flash was commanded and has ended, whatever its result. */
const FLASH_ENDED: ReadonlySet<ComponentProgress> = new Set(["COMPLETED", "FAILED", "TERMINATED"]);

/**
 * The rollback's candidates (see the module comment). `reports`: each target's task report by
 * task id (a target without one was never submitted: nothing of it was flashed).
 */
export function rollbackScope(
  targets: readonly Target[],
  reports: ReadonlyMap<string, TaskReport>,
  racks: readonly InventoryRack[],
): RollbackScope {
  const byId = new Map(racks.map((r) => [r.id, r]));
  const scope: RollbackScope = { rows: [], versions: new Map(), skipped: new Map() };
  for (const t of [...targets].sort((a, b) => a.sequenceIndex - b.sequenceIndex)) {
    const report = t.taskId === undefined ? undefined : reports.get(t.taskId);
    if (report === undefined) continue;
    const rack = byId.get(t.rackId);
    const inventory = new Map((rack?.components ?? []).map((c) => [c.id, c]));
    const priors = new Map((t.priorVersions ?? []).map((p) => [p.componentId, p]));
    const components: InventoryComponent[] = [];
    const byVersion = new Map<string, string[]>();
    const skipped: RollbackSkip[] = [];
    for (const c of report.components) {
      const skip = (reason: string) => skipped.push({ componentId: c.id, type: c.type, reason });
      const prior = priors.get(c.id);
      const current = inventory.get(c.id);
      if (!FLASH_ENDED.has(c.status)) skip("never flashed");
      else if (prior === undefined) skip("no prior version recorded");
      else if (current === undefined) skip("no longer in inventory");
      else if (current.firmwareVersion === prior.version)
        skip(`already at its prior version ${prior.version}`);
      else {
        components.push(current);
        byVersion.set(prior.version, [...(byVersion.get(prior.version) ?? []), c.id]);
      }
    }
    scope.skipped.set(t.rackId, skipped);
    if (components.length === 0) continue;
    scope.rows.push({ rackId: t.rackId, components });
    scope.versions.set(
      t.rackId,
      [...byVersion].map(([version, componentIds]) => ({ version, componentIds })),
    );
  }
  return scope;
}

/**
 * A retry or rollback run being created for `source` (a finished run): `source` as it will be
 * written with it (updatedAt = its new version, `followUps` with the new run appended) and the
 * event that records it there, "retried by run <id>: 12 targets" (RETRIED or ROLLED_BACK), with
 * who asked. The create commits both with the new run, or none of them.
 */
export function followUpWrite(
  source: Run,
  followUp: FollowUp,
  targets: number,
  now: number,
  actor?: Actor,
): { run: Run; event: RunHistoryEvent } {
  const run: Run = {
    ...source,
    followUps: [...(source.followUps ?? []), followUp],
    updatedAt: Math.max(now, source.updatedAt + 1),
  };
  const verb = followUp.kind === "retry" ? "retried" : "rolled back";
  const [event] = stampEvents(run, run.updatedAt, [
    {
      kind: followUp.kind === "retry" ? "RETRIED" : "ROLLED_BACK",
      message: `${verb} by run ${followUp.runId}: ${plural(targets, "target")}`,
      ...(actor === undefined ? {} : { actor }),
      detail: { type: "followUp", runId: followUp.runId, targets },
    },
  ]);
  return { run, event: event as RunHistoryEvent };
}

/** What the CREATED event of a retry or rollback run says first: "retry of run <id>". */
export function originText(origin: RunOrigin): string {
  return `${origin.kind === "retry" ? "retry" : "rollback"} of run ${origin.runId}`;
}
