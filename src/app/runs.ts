/**
 * Create and read use cases for operation runs: validate with the pure core, plan against a
 * snapshot of inventory, freeze the run and its targets atomically, and answer queries with the
 * spec's ordering, scoping and status codes, the run's history included. Manual controls live in
 * controls.ts (they meet the dispatcher); this file never changes a run after it is created.
 */

import type { Actor } from "../domain/actor.js";
import { FailedPreconditionError, NotFoundError, ValidationError } from "../domain/errors.js";
import { matchesName, matchesStates, phaseRange, runOperationKind } from "../domain/list-queries.js";
import { nextOpenings, scheduleOf } from "../domain/maintenance-window.js";
import type {
  CreateRunInput,
  InventoryRack,
  ListRunsQuery,
  ListTargetsQuery,
  Page,
  Plan,
  Run,
  RunConfig,
  RunStats,
  Target,
} from "../domain/model.js";
import { type ExcludedTarget, planRun } from "../domain/planner.js";
import { validateCreateRun } from "../domain/run-config.js";
import { createdEvent, type RunHistoryEvent } from "../domain/run-history.js";
import { computeStats } from "../domain/stats.js";
import type { TargetView } from "./api.js";
import type { InventoryStore, RunListEntry, RunStore } from "./ports.js";

export interface RunsDeps {
  runs: RunStore;
  inventory: InventoryStore;
  clock: () => number;
  /** A fresh random UUID (run ids, target ids and generated seeds, as the reference does). */
  newId: () => string;
}

/** The reference's text for an unknown run on detail and lifecycle calls (NotFound). */
export const runNotFound = (id: string): NotFoundError => new NotFoundError(`operation run not found: ${id}`);

/** How many upcoming window openings PlanOperationRun shows. */
const NEXT_OPENINGS = 5;

/** Every excluded run's targets, all phases; an excluded run that does not exist is NotFound. */
const EXCLUDED_TARGETS_PAGE = { offset: 0, limit: 1000 };

export function createRunService(deps: RunsDeps) {
  const { runs, inventory, clock, newId } = deps;

  async function validateAndPlan(input: CreateRunInput): Promise<{
    name: string;
    description: string;
    config: RunConfig;
    plan: Plan;
    racks: InventoryRack[];
  }> {
    const validated = validateCreateRun(input, newId, clock());
    if (!validated.ok) throw new ValidationError(validated.violations);
    const { config } = validated;
    const [racks, excludedTargets] = await Promise.all([
      inventory.loadAll(),
      loadExcludedTargets(config.targetScope.excludeOperationRunIds),
    ]);
    const plan = planRun({ config, inventory: racks, excludedTargets });
    return { name: validated.name, description: validated.description, config, plan, racks };
  }

  async function loadExcludedTargets(runIds: string[]): Promise<ExcludedTarget[]> {
    const pages = await Promise.all(
      runIds.map(async (runId) => {
        const run = await runs.getRun(runId);
        if (!run) throw new NotFoundError(`excluded operation run not found: ${runId}`);
        const page = await runs.listTargets(runId, {
          phaseFrom: 0,
          phaseTo: run.phaseSizes.length - 1,
          page: EXCLUDED_TARGETS_PAGE,
          knownCommitted: true,
        });
        return page?.targets ?? [];
      }),
    );
    return pages.flat();
  }

  async function requireRun(id: string): Promise<Run> {
    const run = await runs.getRun(id);
    if (!run) throw runNotFound(id);
    return run;
  }

  return {
    async createRun(input: CreateRunInput, actor?: Actor): Promise<{ id: string }> {
      const { name, description, config, plan, racks } = await validateAndPlan(input);
      const externalIds = new Map(racks.map((r) => [r.id, r.externalId]));
      const now = clock();
      const run: Run = {
        id: newId(),
        name,
        description,
        config,
        status: "PENDING",
        reason: "NONE",
        statusMessage: "",
        phaseSizes: plan.phaseSizes,
        currentPhaseIndex: 0,
        counters: plan.phaseSizes.map(() => ({ completed: 0, failed: 0, terminated: 0, skipped: 0 })),
        inFlight: 0,
        createdAt: now,
        updatedAt: now,
      };
      const targets: Target[] = plan.targets.map((t) => ({
        id: newId(),
        runId: run.id,
        rackId: t.rackId,
        sequenceIndex: t.sequenceIndex,
        phaseIndex: t.phaseIndex,
        status: "PENDING",
        message: "",
        componentsByType: t.componentsByType,
        ...(externalIds.get(t.rackId) ? { rackExternalId: externalIds.get(t.rackId) } : {}),
        createdAt: now,
        updatedAt: now,
        conflictAttempts: 0,
      }));
      await runs.createRun(run, targets, [createdEvent(run, actor)]);
      return { id: run.id };
    },

    async planRun(input: CreateRunInput) {
      const { config, plan, racks } = await validateAndPlan(input);
      const planned = new Set(plan.targets.map((t) => t.rackId));
      const rackExternalIds = new Map<string, string>();
      for (const rack of racks) {
        if (planned.has(rack.id)) rackExternalIds.set(rack.id, rack.externalId ?? "");
      }
      // The effective configuration is what a create would store; credentials never leave.
      const { authentication: _secret, ...firmware } = config.operation.firmware;
      const nextWindowOpenings = nextOpenings(scheduleOf(config), clock(), NEXT_OPENINGS);
      return {
        config: { ...config, operation: { ...config.operation, firmware } },
        plan,
        rackExternalIds,
        nextWindowOpenings,
      };
    },

    async getRun(id: string, includeStats: boolean): Promise<{ run: Run; stats?: RunStats }> {
      const run = await requireRun(id);
      return includeStats ? { run, stats: computeStats(run) } : { run };
    },

    async listRuns(query: ListRunsQuery): Promise<{ runs: Run[]; total: number }> {
      return runs.listRuns((entry) => matchesEntry(entry, query), query.page);
    },

    async listTargets(query: ListTargetsQuery): Promise<{ targets: TargetView[]; total: number }> {
      const run = await requireRun(query.runId);
      const range = phaseRange(query.phaseScope, run.currentPhaseIndex);
      if (range === "empty") return { targets: [], total: 0 };
      const page = await runs.listTargets(run.id, {
        phaseFrom: range.from,
        phaseTo: range.to,
        ...(query.status ? { status: query.status } : {}),
        page: query.page,
        knownCommitted: true,
      });
      if (!page) throw runNotFound(run.id);
      // Frozen at create; inventory is asked only about racks that had no external id then.
      const missing = [...new Set(page.targets.filter((t) => !t.rackExternalId).map((t) => t.rackId))];
      const racks = new Map(
        missing.length === 0 ? [] : (await inventory.getRacksByIds(missing)).map((r) => [r.id, r]),
      );
      const targets = page.targets.map((t) => {
        const externalId = t.rackExternalId ?? racks.get(t.rackId)?.externalId;
        // The reference requires every returned rack to have an external ID.
        if (!externalId) throw new FailedPreconditionError(`rack "${t.rackId}" has no external ID`);
        return { ...t, rackExternalId: externalId };
      });
      return { targets, total: page.total };
    },

    async listRunEvents(query: {
      runId: string;
      page: Page;
    }): Promise<{ events: RunHistoryEvent[]; total: number }> {
      const run = await requireRun(query.runId);
      const page = await runs.listRunEvents(run.id, query.page, { knownCommitted: true });
      if (!page) throw runNotFound(run.id);
      return page;
    },

    requireRun,
  };
}

export type RunService = ReturnType<typeof createRunService>;

/** ListOperationRuns' filters, applied to the narrow list-index entry (no configuration needed). */
function matchesEntry(entry: RunListEntry, query: ListRunsQuery): boolean {
  if (query.name && !matchesName(entry.name, query.name)) return false;
  if (!matchesStates(entry, query.states)) return false;
  if (query.kinds.length === 0) return true;
  const kind = runOperationKind({ operation: { kind: entry.operationKind } } as RunConfig);
  return query.kinds.some((k) => k.type === kind.type && (k.code === undefined || k.code === kind.code));
}
