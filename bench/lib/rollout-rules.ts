/**
 * The operation rules the rollout benchmark can pin on its run besides the built-in default (which
 * it runs when it pins none): the default with a health check closing every stage
 * (`--health-check`: what the health check costs beside the flash), and the default with its
 * update step alone (`--update-only`: the workload of the per-rack figures measured before
 * activation joined the default rule, six wave steps a rack, so today's code can be held to the
 * aims set against those figures on the same work).
 */
import type { OperationRule } from "../../src/domain/model.js";
import { DEFAULT_RULE } from "../../src/domain/operation-rules.js";

export const HEALTH_RULE: OperationRule = {
  ...DEFAULT_RULE,
  id: "00000000-0000-4000-8000-0000000000b1",
  name: "default with health checks",
  description:
    "The built-in default, each stage closed by CHECK_HEALTH (the rollout benchmark's --health-check).",
  stages: DEFAULT_RULE.stages.map((stage) => ({
    ...stage,
    steps: [...stage.steps, { action: "CHECK_HEALTH" as const, timeoutSeconds: 0, sleepSeconds: 0 }],
  })),
};

export const UPDATE_ONLY_RULE: OperationRule = {
  ...DEFAULT_RULE,
  id: "00000000-0000-4000-8000-0000000000b2",
  name: "update only",
  description:
    "The built-in default's order and waves, each stage the update step alone, no activation or bring-up (the rollout benchmark's --update-only).",
  stages: DEFAULT_RULE.stages.map((stage) => ({
    ...stage,
    steps: stage.steps.filter((step) => step.action === "UPDATE_FIRMWARE"),
  })),
};

/** The rule the flags pick; undefined: the built-in default (the run pins no rule). */
export function benchRule(flags: { healthCheck: boolean; updateOnly: boolean }): OperationRule | undefined {
  if (flags.healthCheck && flags.updateOnly)
    throw new Error("--health-check and --update-only exclude each other");
  return flags.healthCheck ? HEALTH_RULE : flags.updateOnly ? UPDATE_ONLY_RULE : undefined;
}
