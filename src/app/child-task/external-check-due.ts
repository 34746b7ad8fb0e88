/**
 * When a CHECK_HEALTH step's external check is due (external-check.ts runs it): apart, so the
 * wave loop (waves.ts) asks it without importing the steps that run the check.
 */
import { DEFAULT_EXTERNAL_CHECK_TIMEOUT_SECONDS } from "../../domain/external-check.js";
import type { RuleStep } from "../../domain/model.js";
import type { StepDeps } from "./deps.js";
import type { UpgradeGroup, WaveCursor } from "./settings.js";

/** Where the check is due: the step's check, with its timeout resolved (the rule's, else the configured one). */
export interface ExternalCheckDue {
  name: string;
  timeoutSeconds: number;
}

/**
 * The external check due after this cursor's step, if any: a CHECK_HEALTH step that names one,
 * in its stage's last wave (the check takes the whole rack, once per stage).
 */
export function externalCheckDue(
  deps: Pick<StepDeps, "externalChecks">,
  groups: readonly UpgradeGroup[],
  cursor: WaveCursor,
): ExternalCheckDue | undefined {
  const group = groups[cursor.group];
  const step: RuleStep | undefined = group?.steps[cursor.step];
  const check = step?.externalCheck;
  if (group === undefined || check === undefined || step?.action !== "CHECK_HEALTH") return undefined;
  const size = Math.max(1, Math.floor(group.maxParallel));
  if ((cursor.wave + 1) * size < group.componentIds.length) return undefined;
  const configured = deps.externalChecks?.checks.find((c) => c.name === check.name);
  const timeoutSeconds =
    check.timeoutSeconds > 0
      ? check.timeoutSeconds
      : (configured?.timeoutSeconds ?? DEFAULT_EXTERNAL_CHECK_TIMEOUT_SECONDS);
  return { name: check.name, timeoutSeconds };
}
