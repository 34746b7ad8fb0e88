/**
 * Planning a create or a dry run (PlanOperationRun): validate the request with the pure core, read
 * the racks the plan can draw from (by key, plan-inventory.ts), plan, place each target in its
 * failure domain, freeze the firmware policy and check the image every planned flash needs. A
 * retry or rollback run plans from the run it follows (follow-up-runs.ts). Nothing here writes:
 * runs.ts commits the result.
 */

import type { CreateRunInput } from "../domain/create-run-input.js";
import { NotFoundError, ValidationError } from "../domain/errors.js";
import type { FailureDomainSpread } from "../domain/failure-domain-spread.js";
import { assignFailureDomains } from "../domain/failure-domains.js";
import { plannedRows } from "../domain/firmware-baselines.js";
import { flashNeeds } from "../domain/firmware-images.js";
import type { InventoryRack } from "../domain/inventory.js";
import type { Plan, RunOrigin } from "../domain/model.js";
import { type ExcludedTarget, narrowRows, planCandidates, planRun } from "../domain/planner.js";
import { validateCreateRun } from "../domain/run-config.js";
import { flashedBy } from "../domain/sub-targets.js";
import { requireImages } from "./firmware-images.js";
import { freezePolicy } from "./firmware-policy.js";
import { followUpScope, requestedOrigin } from "./follow-up-runs.js";
import { type PlanInventory, racksForPlan } from "./plan-inventory.js";
import type {
  Clock,
  FirmwareImageStore,
  FirmwarePolicyStore,
  RunStore,
  ScopeRack,
  TaskStore,
} from "./ports.js";

export interface RunPlanningDeps {
  runs: RunStore;
  inventory: PlanInventory;
  /** Firmware baselines (runs without target_version) and rules (rule_id); absent reads as none. */
  policy?: Pick<FirmwarePolicyStore, "listBaselines" | "getRule">;
  /** The firmware image catalog: every planned flash needs its image (requireImages). */
  images: Pick<FirmwareImageStore, "getImages">;
  /** Child tasks: a rollback reads their reports (which flashes ended). Absent: rollback refused. */
  tasks?: Pick<TaskStore, "getTasks">;
  clock: Clock;
  /** A fresh random UUID (run ids, target ids and generated seeds, as the reference does). */
  newId: () => string;
}

export function createRunPlanning(deps: RunPlanningDeps) {
  const { runs, inventory, clock, newId } = deps;

  async function validateAndPlan(input: CreateRunInput) {
    const origin = requestedOrigin(input);
    if (origin !== undefined) return validateAndPlanFollowUp(input, origin);
    const validated = validateCreateRun(input, newId, clock.now());
    if (!validated.ok) throw new ValidationError(validated.violations);
    const { config } = validated;
    const [racks, excludedTargets] = await Promise.all([
      racksForPlan(inventory, config),
      loadExcludedTargets(config.targetScope.excludeOperationRunIds),
    ]);
    const planned = planRun({ config, inventory: racks, excludedTargets });
    // Baselines match on model and vendor, and a failure-domain spread on location or NVLink
    // domain, which the default scope's narrow index does not carry: then the planned racks (at
    // most 100) are read whole, and only then.
    const spread = config.failureDomainSpread;
    const needsWhole =
      (config.operation.firmware.targetVersion === undefined || spread !== undefined) &&
      config.operation.firmware.targetSpec === undefined;
    const whole = needsWhole
      ? await inventory.getRacksByIds([...new Set(planned.targets.map((t) => t.rackId))])
      : racks;
    const plan = spread === undefined ? planned : withFailureDomains(planned, whole, spread);
    const rows = plannedRows(plan.targets, whole);
    const policy = await freezePolicy(deps.policy, config.operation.firmware, rows, `${FIRMWARE}.`);
    const needs = flashNeeds(rows, config.operation.firmware, policy.versions);
    await requireImages(deps.images, needs, `${FIRMWARE}.target_version`);
    return { name: validated.name, description: validated.description, config, plan, racks, ...policy };
  }

  /**
   * A retry or rollback run (follow-up-runs.ts): the followed run's candidates, planned with the
   * request's options; a rollback freezes each component's prior version (no baselines), a retry
   * resolves versions as any run does.
   */
  async function validateAndPlanFollowUp(input: CreateRunInput, origin: RunOrigin) {
    const follow = await followUpScope(
      { runs, inventory, ...(deps.tasks ? { tasks: deps.tasks } : {}) },
      input,
      origin,
    );
    const validated = validateCreateRun(follow.input, newId, clock.now());
    if (!validated.ok) throw new ValidationError(validated.violations);
    const { config } = validated;
    const plan = planCandidates(
      config,
      narrowRows(follow.rows, flashedBy(config.operation.firmware.subTargets)),
    );
    const racks = await inventory.getRacksByIds(plan.targets.map((t) => t.rackId));
    const rows = plannedRows(plan.targets, racks);
    const rollback = follow.versions;
    const firmware = config.operation.firmware;
    // A rollback's versions are the recorded prior ones: no baseline is read ("" stands for "set").
    // An inherited template runs the rule version the followed run froze: no later one is read.
    const policy = await freezePolicy(
      deps.policy,
      {
        ...(follow.inherited || firmware.ruleId === undefined ? {} : { ruleId: firmware.ruleId }),
        ...(rollback === undefined
          ? firmware.targetVersion === undefined
            ? {}
            : { targetVersion: firmware.targetVersion }
          : { targetVersion: "" }),
      },
      rows,
      `${FIRMWARE}.`,
    );
    const rule = follow.inherited ? follow.source.rule : policy.rule;
    const versions = rollback ?? policy.versions;
    const needs = flashNeeds(rows, firmware, versions);
    await requireImages(
      deps.images,
      needs,
      rollback === undefined ? `${FIRMWARE}.target_version` : "rollback",
    );
    return {
      name: validated.name,
      description: validated.description,
      config,
      plan,
      racks,
      ...(versions ? { versions } : {}),
      ...(rule ? { rule } : {}),
      follow,
    };
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

  return { validateAndPlan };
}

/** The plan with each target's failure domain (ValidationError naming racks the inventory places in none). */
function withFailureDomains(
  plan: Plan,
  racks: readonly (InventoryRack | ScopeRack)[],
  spread: FailureDomainSpread,
): Plan {
  const byId = new Map(racks.map((r) => [r.id, r as Partial<InventoryRack> & { name: string }]));
  const domains = assignFailureDomains(
    plan.targets.map((t) => t.rackId),
    byId,
    spread,
  );
  return {
    ...plan,
    targets: plan.targets.map((t) => ({ ...t, failureDomain: domains.get(t.rackId) as string })),
  };
}

/** Every excluded run's targets, all phases; an excluded run that does not exist is NotFound. */
const EXCLUDED_TARGETS_PAGE = { offset: 0, limit: 1000 };

const FIRMWARE = "configuration.operation.upgrade_firmware";
