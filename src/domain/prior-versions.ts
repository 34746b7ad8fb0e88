/**
 * Prior versions: what each component of a rack ran before a run flashed it. The child task's
 * preflight reads every component's version from its BMC; `priorVersionsOf` turns its report into
 * what the run's target keeps (RunStore.recordPriorVersions), before the first flash.
 *
 *   report: c1 COMPUTE versionBefore 1.0 → target 2.0 (sub-targets bmc, bios); p1 no answer
 *   → [{ componentId: c1, type: COMPUTE, version: "1.0", targetVersion: "2.0", subTargets: [bmc, bios] }]
 */
import type { PriorVersion } from "./model.js";
import { type TaskReport, targetOf } from "./task-report.js";

/** Every component whose BMC answered, in the report's (upgrade) order. */
export function priorVersionsOf(report: TaskReport): PriorVersion[] {
  return report.components.flatMap((c) => {
    if (c.versionBefore === undefined) return [];
    const prior: PriorVersion = {
      componentId: c.id,
      type: c.type,
      version: c.versionBefore,
      targetVersion: targetOf(report, c),
    };
    if (c.subTargets !== undefined && c.subTargets.length > 0) prior.subTargets = [...c.subTargets];
    return [prior];
  });
}
