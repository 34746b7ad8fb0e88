/**
 * (ours) The phase soak: after a phase's last target ends, the run holds at the phase's boundary
 * for the phase's minimum soak before it passes it (opens the next phase, pauses at its phase gate,
 * or finishes after the last phase). Late failures surface during that time (reported through
 * ReportTargetFailure), and the safety gates, evaluated through the soak, can pause the run before
 * the next phase opens.
 *
 * A phase's soak is its entry in `phaseMinSoakMs` when it has one, else the uniform `minSoakMs`,
 * else none:
 *
 *   minSoakMs 30 s, phaseMinSoakMs [0, 1 h]   → phase 1: none, phase 2: 1 h, phase 3 and later: 30 s
 *
 * The soak is a durable deadline, not a timer: the first dispatch pass that finds the current phase
 * complete stores `soakEndsAt = now + soak` on the run (in the run's own conditional write, with a
 * SOAK_STARTED history event), and every later pass compares its clock with it. A pass runs on every
 * tick for a RUNNING run and after every target outcome, so the boundary is passed within one tick
 * of the deadline, by whichever process is running then: nothing waits in memory, and a restart
 * changes nothing. The deadline belongs to the run's current phase and is cleared when the run
 * leaves it (the next phase, or the run's end). A late failure (late-failure.ts) keeps the phase
 * complete, so it does not restart the soak: the gates decide what it means.
 *
 * The status message while soaking names the deadline, not the time left, so a waiting pass
 * writes nothing: "phase 1 soaking until 2026-12-05T00:30:00Z". Clients count down from
 * `soak_ends_at` themselves (`flowctl run watch`).
 */

import { formatRfc3339 } from "./calendar.js";
import { formatGoDuration } from "./duration.js";
import type { Run } from "./model.js";
import { phaseName } from "./phases.js";
import type { SoakConfig } from "./soak-config.js";

/** The longest soak a phase may have: 30 days. */
export const MAX_SOAK_MS = 720 * 3_600_000;

/** The soak of the phase at zero-based `phaseIndex`, in ms (0: none). */
export function phaseSoakMs(config: SoakConfig, phaseIndex: number): number {
  return config.phaseMinSoakMs?.[phaseIndex] ?? config.minSoakMs ?? 0;
}

/**
 * Where the current phase's soak stands at `now`, for a run whose current phase is complete:
 * - `none`: the phase has no soak, or its soak has elapsed: the boundary may be passed;
 * - `start`: the phase has a soak and none has started: it ends at `endsAt` (`now + soak`);
 * - `soaking`: started and not over: `leftMs` more to go, until `endsAt`.
 */
export type SoakState =
  | { kind: "none" }
  | { kind: "start"; endsAt: number; soakMs: number }
  | { kind: "soaking"; endsAt: number; leftMs: number };

export function soakState(run: Run, now: number): SoakState {
  const soakMs = phaseSoakMs(run.config, run.currentPhaseIndex);
  if (soakMs <= 0) return { kind: "none" };
  if (run.soakEndsAt === undefined) return { kind: "start", endsAt: now + soakMs, soakMs };
  if (now >= run.soakEndsAt) return { kind: "none" };
  return { kind: "soaking", endsAt: run.soakEndsAt, leftMs: run.soakEndsAt - now };
}

/** The run's status message while its current phase soaks: "phase 1 soaking until T". */
export function soakingMessage(phaseIndex: number, endsAt: number): string {
  return `${phaseName(phaseIndex)} soaking until ${formatRfc3339(endsAt)}`;
}

/**
 * The refusal of an advance during a soak, naming the time left:
 * "phase 1 is soaking: 25s left, until 2026-12-05T00:30:00Z". Whole seconds, rounded up, so it
 * never says "0s left" while the soak still holds.
 */
export function soakingRefusal(phaseIndex: number, leftMs: number, endsAt: number): string {
  const left = Math.ceil(leftMs / 1000) * 1000;
  return `${phaseName(phaseIndex)} is soaking: ${formatGoDuration(left)} left, until ${formatRfc3339(endsAt)}`;
}
