/**
 * Firmware policy use cases: the admin service's baselines (set, list, delete), operation rules
 * (create a version, get, list) and component readiness, and what the create paths (runs.ts, the
 * task service's UpgradeFirmware) ask of them: `freezePolicy`, the per-component versions and
 * the rule to freeze with a plan.
 */
import {
  FailedPreconditionError,
  type FieldViolation,
  NotFoundError,
  ValidationError,
} from "../domain/errors.js";
import {
  type BaselineKey,
  describeBaselineKey,
  type FirmwareBaseline,
  type PlannedRow,
  rowVersions,
  uncoveredRule,
} from "../domain/firmware-baselines.js";
import type { ComponentReadiness } from "../domain/inventory.js";
import type { Page } from "../domain/list-queries.js";
import type { FirmwareTemplate, VersionGroup } from "../domain/model.js";
import {
  DEFAULT_RULE,
  DEFAULT_RULE_ID,
  type OperationRule,
  type RuleDefinition,
  typesWithoutStage,
  unknownExternalChecks,
} from "../domain/operation-rules.js";
import type { PolicyApi } from "./api.js";
import { requireImages } from "./firmware-images.js";
import type { Clock, FirmwareImageStore, FirmwarePolicyStore, ReadinessStore } from "./ports.js";

export interface PolicyDeps {
  policy: FirmwarePolicyStore;
  readiness: Pick<ReadinessStore, "setReadiness">;
  /** A baseline names a version every run without target_version will flash: it needs its image. */
  images: Pick<FirmwareImageStore, "getImages">;
  clock: Clock;
  /** A fresh random UUID (new rule ids). */
  newId: () => string;
  /** The external health checks the deployment configures (by name): a rule may name only these. */
  externalChecks?: readonly string[];
  log?: (line: string) => void;
}

export const ruleNotFound = (id: string): NotFoundError => new NotFoundError(`rule ${id} not found`);

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
      await requireImages(
        deps.images,
        baselines.map((b) => ({ componentType: b.componentType, version: b.version, subTargets: [] })),
        "baselines",
      );
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

    /**
     * A new rule (version 1), or, with the id of a stored one, its next version: versions are
     * never changed, so a run that froze version n keeps running exactly n. `expectedVersion`
     * refuses the write unless the rule is at that version now (0: the rule must not exist yet).
     */
    async createRule(
      definition: RuleDefinition,
      options: { id?: string; expectedVersion?: number } = {},
    ): Promise<OperationRule> {
      if (options.id === DEFAULT_RULE_ID) {
        throw new FailedPreconditionError(
          `rule ${DEFAULT_RULE_ID} is the built-in default rule and cannot change`,
        );
      }
      const unknown = unknownExternalChecks(definition, deps.externalChecks ?? []);
      if (unknown.length > 0) throw new ValidationError(unknown);
      const id = options.id ?? deps.newId();
      const current = options.id === undefined ? undefined : await policy.getRule(id);
      const now = current?.version ?? 0;
      if (options.expectedVersion !== undefined && options.expectedVersion !== now) {
        throw new FailedPreconditionError(
          `rule ${id} is at version ${now}, not the expected ${options.expectedVersion}`,
        );
      }
      const rule: OperationRule = { ...definition, id, version: now + 1, createdAt: deps.clock.now() };
      if ((await policy.putRuleVersion(rule)) === "conflict") {
        throw new FailedPreconditionError(
          `rule ${id} got version ${rule.version} from another writer; read it and try again`,
        );
      }
      deps.log?.(`rules: rule ${id} "${rule.name}" is at version ${rule.version}`);
      return rule;
    },

    async getRule(id: string, version?: number): Promise<OperationRule> {
      if (id === DEFAULT_RULE_ID) {
        if (version !== undefined && version !== DEFAULT_RULE.version) {
          throw new NotFoundError(`rule ${id} has no version ${version}`);
        }
        return { ...DEFAULT_RULE };
      }
      const rule = await policy.getRule(id, version);
      if (rule !== undefined) return rule;
      if (version !== undefined && (await policy.getRule(id)) !== undefined) {
        throw new NotFoundError(`rule ${id} has no version ${version}`);
      }
      throw ruleNotFound(id);
    },

    /** The built-in default first, then the stored rules (latest versions) by name. */
    async listRules(page: Page): Promise<{ rules: OperationRule[]; total: number }> {
      const builtIn = page.offset === 0 ? [{ ...DEFAULT_RULE }] : [];
      const stored = await policy.listRules({
        offset: Math.max(0, page.offset - 1),
        limit: page.limit - builtIn.length,
      });
      return { rules: [...builtIn, ...stored.rules], total: stored.total + 1 };
    },
  };
}

/**
 * What a create path freezes with its plan (Target.versions, Run.rule / Task.rule), or every
 * violation at once, thrown as one ValidationError:
 *   - without target_version, each planned component's version from the baselines (one read);
 *     any component no baseline covers: `<prefix>target_version: target_version is not set and
 *     no firmware baseline covers NVSWITCH`;
 *   - with rule_id, the rule's latest version (one read): unknown → `<prefix>rule_id: rule <id>
 *     not found`; a planned type none of its stages names → `<prefix>rule_id: rule <id> (version
 *     2) has no stage for CDU`. Without rule_id, the built-in default (`rule` undefined).
 * `prefix`: `configuration.operation.upgrade_firmware.` in a run, "" for UpgradeFirmware. No
 * store configured reads as no baselines and no stored rules.
 */
export async function freezePolicy(
  policy: Pick<FirmwarePolicyStore, "listBaselines" | "getRule"> | undefined,
  firmware: Pick<FirmwareTemplate, "targetVersion" | "ruleId">,
  rows: readonly PlannedRow[],
  prefix: string,
): Promise<{ versions?: Map<string, VersionGroup[]>; rule?: OperationRule }> {
  const violations: FieldViolation[] = [];
  const [baselines, rule] = await Promise.all([
    firmware.targetVersion === undefined ? (policy?.listBaselines() ?? []) : undefined,
    firmware.ruleId === undefined || firmware.ruleId === DEFAULT_RULE_ID
      ? undefined
      : policy?.getRule(firmware.ruleId),
  ]);
  let versions: Map<string, VersionGroup[]> | undefined;
  if (baselines !== undefined) {
    const resolved = rowVersions(rows, baselines);
    if (resolved.uncovered.length > 0) {
      violations.push({ field: `${prefix}target_version`, rule: uncoveredRule(resolved.uncovered) });
    }
    versions = resolved.versions;
  }
  if (firmware.ruleId !== undefined && firmware.ruleId !== DEFAULT_RULE_ID) {
    if (rule === undefined)
      violations.push({ field: `${prefix}rule_id`, rule: `rule ${firmware.ruleId} not found` });
    else {
      const missing = typesWithoutStage(
        rule,
        rows.flatMap((r) => r.components.map((c) => c.type)),
      );
      if (missing.length > 0) {
        violations.push({
          field: `${prefix}rule_id`,
          rule: `rule ${rule.id} (version ${rule.version}) has no stage for ${missing.join(", ")}`,
        });
      }
    }
  }
  if (violations.length > 0) throw new ValidationError(violations);
  return { ...(versions ? { versions } : {}), ...(rule ? { rule } : {}) };
}
