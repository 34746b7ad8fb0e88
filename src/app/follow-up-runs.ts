/**
 * Creating a retry or rollback run (CreateOperationRun / PlanOperationRun with `retry` or
 * `rollback`): the run it follows read and checked, the request completed with what it inherits,
 * and the candidate racks, for runs.ts to validate, plan and freeze like any run.
 *
 *   1. the request: not both; a well-formed run id (InvalidArgument naming `retry.operation_run_id`
 *      or `rollback.operation_run_id`); the scope is the followed run's, so `target_spec` and
 *      `target_scope` must be unset, and a rollback takes the rolled-back run's template
 *      (`upgrade_firmware` unset);
 *   2. the run: unknown → NotFound; not finished → FailedPrecondition naming its status;
 *   3. the template: the request's, else the followed run's without its target_spec and its
 *      start/end times (that run's window is over), credentials included, and the operation rule at
 *      the version that run froze (runs.ts; not a later one); a rollback's without
 *      target_version (each component gets its prior version) and without override_version_check
 *      (a component found at its prior version is not flashed again);
 *   4. the candidates (src/domain/follow-up-runs.ts): nothing to retry → InvalidArgument "no
 *      failed targets"; nothing to roll back → InvalidArgument listing why, rack by rack.
 */

import type { CreateRunInput } from "../domain/create-run-input.js";
import {
  FailedPreconditionError,
  type FieldViolation,
  NotFoundError,
  ValidationError,
} from "../domain/errors.js";
import { nothingToRetry, type RollbackSkip, retryRows, rollbackScope } from "../domain/follow-up-runs.js";
import type { FirmwareTemplate, Run, RunOrigin, Target, VersionGroup } from "../domain/model.js";
import { isTerminalRun } from "../domain/model.js";
import type { ScopeRow } from "../domain/planner.js";
import { parseReport, type TaskReport } from "../domain/task-report.js";
import { isNilUuid, isUuid } from "../domain/uuid.js";
import type { PlanInventory } from "./plan-inventory.js";
import type { RunStore, TaskStore } from "./ports.js";

export interface FollowUpDeps {
  runs: Pick<RunStore, "getRun" | "getRunSecrets" | "listTargets">;
  inventory: Pick<PlanInventory, "getRacksByIds">;
  /** The rolled-back run's child tasks (their reports say which flashes ended). */
  tasks?: Pick<TaskStore, "getTasks">;
}

/** What a retry or rollback run is made of, besides the request's own options. */
export interface FollowUpScope {
  origin: RunOrigin;
  /** The followed run as read: the create writes its follow-up on this version. */
  source: Run;
  /** The request with the inherited template in place of a missing one. */
  input: CreateRunInput;
  /** The template is the followed run's: so is the operation rule, at the version it froze. */
  inherited: boolean;
  rows: ScopeRow[];
  /** Rollback: each rack's components grouped by the prior version they go back to. */
  versions?: Map<string, VersionGroup[]>;
  /** Rollback: per planned rack, the components left alone and why. */
  skipped?: Map<string, RollbackSkip[]>;
}

/** A run has at most 100 targets: one page holds them all. */
const ALL_TARGETS = { offset: 0, limit: 1000 };
const FIRMWARE = "configuration.operation.upgrade_firmware";

/** The request's origin, checked in form only (step 1); undefined for an ordinary create. */
export function requestedOrigin(input: CreateRunInput): RunOrigin | undefined {
  const violations: FieldViolation[] = [];
  const add = (field: string, rule: string) => violations.push({ field, rule });
  if (input.retry !== undefined && input.rollback !== undefined) {
    add("rollback", "a run retries or rolls back another, not both: set retry or rollback");
  }
  const field = input.retry !== undefined ? "retry" : "rollback";
  const raw = input.retry?.runId ?? input.rollback?.runId;
  if (raw === undefined) return undefined;
  if (!isUuid(raw) || isNilUuid(raw)) add(`${field}.operation_run_id`, "must be the id of an operation run");
  const operation = input.configuration?.operation;
  if (operation?.upgradeFirmware?.targetSpec !== undefined) {
    add(
      `${FIRMWARE}.target_spec`,
      `must be unset in a ${field} run: its racks are the ${field === "retry" ? "retried" : "rolled-back"} run's`,
    );
  }
  if (operation?.targetScope !== undefined) {
    add(
      "configuration.operation.target_scope",
      `must be unset in a ${field} run: its racks are the ${field === "retry" ? "retried" : "rolled-back"} run's`,
    );
  }
  if (input.rollback !== undefined && operation?.upgradeFirmware !== undefined) {
    add(
      FIRMWARE,
      "must be unset in a rollback run: each component goes back to its recorded prior version with the rolled-back run's template",
    );
  }
  if (violations.length > 0) throw new ValidationError(violations);
  const runId = raw.toLowerCase();
  return input.retry !== undefined
    ? {
        kind: "retry",
        runId,
        includeTerminated: input.retry.includeTerminated,
        includeSkipped: input.retry.includeSkipped,
      }
    : { kind: "rollback", runId };
}

/** Steps 2 to 4 for a request whose origin is `origin`. */
export async function followUpScope(
  deps: FollowUpDeps,
  input: CreateRunInput,
  origin: RunOrigin,
): Promise<FollowUpScope> {
  const verb = origin.kind === "retry" ? "retry" : "roll back";
  const source = await deps.runs.getRun(origin.runId);
  if (source === undefined) throw new NotFoundError(`operation run to ${verb} not found: ${origin.runId}`);
  if (!isTerminalRun(source.status)) {
    throw new FailedPreconditionError(
      `operation run ${source.id} is ${source.status}; only a finished run (COMPLETED, COMPLETED_WITH_FAILURES, FAILED or CANCELLED) can be ${origin.kind === "retry" ? "retried" : "rolled back"}`,
    );
  }
  const listed = await deps.runs.listTargets(source.id, {
    phaseFrom: 0,
    phaseTo: source.phaseSizes.length - 1,
    page: ALL_TARGETS,
    knownCommitted: true,
  });
  const targets = listed?.targets ?? [];
  const racks = await deps.inventory.getRacksByIds([...new Set(targets.map((t) => t.rackId))]);
  const template = await inheritedTemplate(deps, source, origin);
  const inherited = input.configuration?.operation?.upgradeFirmware === undefined;
  const withTemplate: CreateRunInput = !inherited
    ? input
    : {
        ...input,
        configuration: {
          ...input.configuration,
          operation: { ...input.configuration?.operation, upgradeFirmware: template },
        },
      };

  if (origin.kind === "retry") {
    const rows = retryRows(targets, origin, racks);
    if (rows.length === 0)
      throw new ValidationError([{ field: "retry.operation_run_id", rule: nothingToRetry(origin) }]);
    return { origin, source, input: withTemplate, inherited, rows };
  }
  const scope = rollbackScope(targets, await reportsOf(deps, targets), racks);
  if (scope.rows.length === 0) {
    throw new ValidationError([
      { field: "rollback.operation_run_id", rule: nothingToRollBack(targets, scope.skipped) },
    ]);
  }
  return {
    origin,
    source,
    input: withTemplate,
    inherited,
    rows: scope.rows,
    versions: scope.versions,
    skipped: scope.skipped,
  };
}

/** The followed run's template as a request would send it (step 3). */
async function inheritedTemplate(
  deps: FollowUpDeps,
  source: Run,
  origin: RunOrigin,
): Promise<FirmwareTemplate> {
  const {
    targetSpec: _scope,
    startTime: _start,
    endTime: _end,
    targetVersion,
    overrideVersionCheck,
    ...rest
  } = source.config.operation.firmware;
  const authentication = await deps.runs.getRunSecrets(source.id);
  return {
    ...rest,
    ...(origin.kind === "retry" && targetVersion !== undefined ? { targetVersion } : {}),
    overrideVersionCheck: origin.kind === "retry" ? overrideVersionCheck : false,
    ...(authentication === undefined ? {} : { authentication }),
  };
}

async function reportsOf(deps: FollowUpDeps, targets: readonly Target[]): Promise<Map<string, TaskReport>> {
  const ids = targets.flatMap((t) => (t.taskId === undefined ? [] : [t.taskId]));
  if (ids.length === 0) return new Map();
  if (deps.tasks === undefined)
    throw new FailedPreconditionError("rollback needs the task store; none is configured");
  const reports = new Map<string, TaskReport>();
  for (const task of await deps.tasks.getTasks(ids)) {
    try {
      reports.set(task.id, parseReport(task.report));
    } catch {
      // A task without a readable report tells nothing of what was flashed: nothing to roll back.
    }
  }
  return reports;
}

/** "nothing to roll back: rack r1: c1 (COMPUTE) never flashed; …" (at most 5 racks named). */
function nothingToRollBack(targets: readonly Target[], skipped: ReadonlyMap<string, RollbackSkip[]>): string {
  const lines = [...skipped]
    .filter(([, skips]) => skips.length > 0)
    .slice(0, 5)
    .map(([rackId, skips]) => {
      const shown = skips.slice(0, 3).map((s) => `${s.componentId} (${s.type}) ${s.reason}`);
      const more = skips.length > 3 ? ` and ${skips.length - 3} more` : "";
      return `rack ${rackId}: ${shown.join(", ")}${more}`;
    });
  const unsubmitted = targets.filter((t) => t.taskId === undefined).length;
  const never =
    unsubmitted > 0 ? [`${unsubmitted} target${unsubmitted === 1 ? "" : "s"} never submitted`] : [];
  const why = [...lines, ...never];
  return `nothing to roll back${why.length > 0 ? `: ${why.join("; ")}` : ": the run flashed nothing"}`;
}
