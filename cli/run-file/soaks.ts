/**
 * The run file's phase soaks, both ways, beside the plan in `options.phases`:
 *
 *   phases: { equal: 3, minSoak: 30s }                      # every phase soaks 30 s
 *   phases: { equal: 3, minSoak: 1h, minSoakPerPhase: [10m, 0s] }   # phase 1: 10 min, phase 2:
 *                                                           # none, phase 3: 1 h
 *   phases: { minSoak: 30s }                                # the default single phase, soaked
 *
 * A soak is a duration with a unit; 0s is allowed (no soak). The upper bound (720h) and how many
 * per-phase entries the plan has room for are the service's rules, reported by field.
 */
import type * as pb from "../../src/gen/flow/v1/flow.js";
import { formatDuration, nsToDuration, parseDurationNs } from "../durations.js";
import { describe, join, type Obj, type Reader } from "./reader.js";

export const SOAK_KEYS = ["minSoak", "minSoakPerPhase"] as const;

type Soaks = Pick<pb.OperationRunPhasePolicy, "minSoak" | "phaseMinSoaks">;

/** The soaks set in `phases` (already read as an object); {} when none. */
export function readSoaks(r: Reader, phases: Obj, path: string): Soaks {
  const soaks: Soaks = {};
  if (phases.minSoak !== undefined) {
    const ns = soak(r, phases.minSoak, join(path, "minSoak"));
    if (ns !== undefined) soaks.minSoak = nsToDuration(ns);
  }
  if (phases.minSoakPerPhase !== undefined) {
    const at = join(path, "minSoakPerPhase");
    const list = r.list(phases.minSoakPerPhase, at, { nonEmpty: true }) ?? [];
    const each = list.map((v, i) => soak(r, v, `${at}[${i}]`));
    if (list.length > 0 && each.every((ns) => ns !== undefined)) {
      soaks.phaseMinSoaks = { minSoaks: (each as bigint[]).map(nsToDuration) };
    }
  }
  return soaks;
}

function soak(r: Reader, value: unknown, path: string): bigint | undefined {
  const ns = typeof value === "string" ? parseDurationNs(value) : undefined;
  if (ns === undefined)
    r.add(path, `must be a duration with a unit, e.g. 30s, 10m, 2h (got ${describe(value)})`);
  return ns;
}

/** The soaks of a configuration, as the keys they take in the file's `phases`. */
export function soaksToFile(policy: pb.OperationRunPhasePolicy | undefined): Record<string, unknown> {
  const keys: Record<string, unknown> = {};
  if (policy?.minSoak !== undefined) keys.minSoak = formatDuration(policy.minSoak);
  if (policy?.phaseMinSoaks !== undefined && policy.phaseMinSoaks.minSoaks.length > 0) {
    keys.minSoakPerPhase = policy.phaseMinSoaks.minSoaks.map((d) => formatDuration(d));
  }
  return keys;
}
