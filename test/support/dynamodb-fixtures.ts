/** Builders of runs and targets for the storage tests (plain values, deterministic ids). */

import type { RunStore } from "../../src/app/ports.js";
import type { Target } from "../../src/domain/model.js";
import { readyInOrder } from "../../src/domain/target-machine.js";

export { config, runWithTargets, uuid } from "../../bench/lib/run-builders.js";

/**
 * The first `limit` ready targets of a phase in order, as a dispatch pass sees them: its claim
 * queue (held targets, the first `limit` PENDING) through `readyInOrder`.
 */
export async function readyTargets(
  runs: Pick<RunStore, "listQueuedTargets">,
  runId: string,
  phaseIndex: number,
  now: number,
  limit: number,
): Promise<Target[]> {
  return readyInOrder(await runs.listQueuedTargets(runId, phaseIndex, limit), now).slice(0, limit);
}
