/**
 * Component readiness: whether a component may be flashed now. Two sources, both must agree:
 *   - the inventory: READY (the default, stored as nothing), NOT_READY or MAINTENANCE with the
 *     operator's reason, set through the admin service or the inventory file;
 *   - the BMC: its answer to the preflight query may say `ready: false` with a reason (its host
 *     is not ready, a status block is raised).
 * The child task's preflight requires every component it is about to flash to be ready, waits up
 * to the readiness timeout for the rest, then fails the target with
 *   `component 7a00…0102 (COMPUTE) not ready: in maintenance: swapping a PSU`
 * With override_readiness_check it skips the wait and records a warning naming them instead.
 */
import type { FieldViolation } from "./errors.js";
import type { ComponentReadiness, ReadinessState } from "./inventory.js";
import type { ComponentType } from "./model.js";
import { componentLabel } from "./step-errors.js";

/** Characters of a readiness reason: a sentence, not a document. */
export const MAX_READINESS_REASON = 512;

/** The inventory's state (absent = READY) as given: READY clears it, the others need a reason. */
export function checkReadiness(
  state: ReadinessState,
  reason: string,
  field: string,
): { ok: true; readiness: ComponentReadiness | undefined } | { ok: false; violations: FieldViolation[] } {
  const violations: FieldViolation[] = [];
  if (state !== "READY" && reason.trim() === "")
    violations.push({ field: `${field}.reason`, rule: `a ${state} component needs a reason` });
  if (reason.length > MAX_READINESS_REASON)
    violations.push({
      field: `${field}.reason`,
      rule: `must be at most ${MAX_READINESS_REASON} characters (got ${reason.length})`,
    });
  if (violations.length > 0) return { ok: false, violations };
  return { ok: true, readiness: state === "READY" ? undefined : { state, reason: reason.trim() } };
}

/** What the BMC said about itself in its preflight answer (absent fields: ready). */
export interface BmcReadiness {
  ready?: boolean;
  reason?: string;
}

/**
 * Why a component is not ready, or undefined when it is: the inventory's state first (an
 * operator's MAINTENANCE says more than a BMC's status), then the BMC's own answer.
 *   MAINTENANCE "swapping a PSU"  → `in maintenance: swapping a PSU`
 *   NOT_READY "burn-in"           → `burn-in`
 *   BMC ready: false, "host down" → `BMC reports not ready: host down`
 */
export function notReadyReason(
  inventory: ComponentReadiness | undefined,
  bmc: BmcReadiness | undefined,
): string | undefined {
  if (inventory?.state === "MAINTENANCE") return `in maintenance: ${inventory.reason}`;
  if (inventory?.state === "NOT_READY") return inventory.reason;
  if (bmc?.ready === false) return `BMC reports not ready${bmc.reason ? `: ${bmc.reason}` : ""}`;
  return undefined;
}

export interface NotReady {
  id: string;
  type: ComponentType;
  reason: string;
}

/** `component a (COMPUTE) not ready: r`, and `; 2 more component(s) not ready` when there are more. */
export function notReadyMessage(components: readonly NotReady[]): string {
  const [first] = components;
  if (first === undefined) return "";
  const more = components.length > 1 ? `; ${components.length - 1} more component(s) not ready` : "";
  return `${componentLabel(first.id, first.type)} not ready: ${first.reason}${more}`;
}

/** The warning an overridden check leaves in the log and the task report, naming every component. */
export function readinessOverrideWarning(components: readonly NotReady[]): string {
  return `override_readiness_check: flashing components that are not ready: ${components
    .map((c) => `${componentLabel(c.id, c.type)}: ${c.reason}`)
    .join("; ")}`;
}
