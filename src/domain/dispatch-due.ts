/**
 * When a run next needs a dispatcher pass, given what a pass saw and left: the earliest future
 * instant at which time alone changes what a pass would decide. Everything else that can give a
 * run work is a write of the run (an outcome, a block, a claim, a control), and the store marks
 * the run due at once on each (RunStore.getRunForDispatch); so this only lists the clocks.
 *
 * The clocks, for a PENDING or RUNNING run (any other status needs no pass: undefined):
 * - its schedule: the current window's close (or end_time), the next opening (or start_time), or,
 *   waiting with no opening before end_time, end_time itself;
 * - the current phase's held targets: a BLOCKED target's retryAt (ready again) and its conflict
 *   timeout (firstBlockedAt + retry_timeout), a CLAIMED target's lease end (its pass may have died);
 * - the current phase's soak end (`soakEndsAt`): its boundary is passed then, not before.
 * Instants at or before `now` are left out: what they allow, the pass that computed this has
 * either done or could not do for a reason only a write can change (no free slot, a closed window).
 * Undefined: no clock; only a write gives the run work.
 *
 * Examples (now = 1_000, retry timeout 3_600_000, no schedule):
 * - BLOCKED retryAt 31_000, firstBlockedAt 900 → 31_000;
 * - CLAIMED lease 30_000 and BLOCKED retryAt 61_000 → 30_000;
 * - only SUBMITTED targets in flight (none held) → undefined;
 * - end_time 5_000_000, open → 5_000_000; before start_time 2_000 → 2_000;
 * - RUNNING, its phase soaking until 91_000 → 91_000;
 * - PAUSED → undefined.
 */
import { scheduleOf, windowState } from "./maintenance-window.js";
import type { Run, Target } from "./model.js";

export function nextDispatchAt(run: Run, held: readonly Target[], now: number): number | undefined {
  if (run.status !== "PENDING" && run.status !== "RUNNING") return undefined;
  const clocks: (number | undefined)[] = [];
  const window = windowState(scheduleOf(run.config), now);
  if (window.kind === "open") clocks.push(window.closesAt);
  else if (window.kind === "before" || window.kind === "outside") {
    clocks.push(window.opensAt ?? run.config.operation.firmware.endTime);
  }
  clocks.push(run.soakEndsAt);
  const timeout = run.config.conflictRetry.retryTimeoutMs;
  for (const target of held) {
    if (target.phaseIndex !== run.currentPhaseIndex) continue;
    if (target.status === "BLOCKED") {
      clocks.push(target.retryAt);
      clocks.push(target.firstBlockedAt === undefined ? undefined : target.firstBlockedAt + timeout);
    } else if (target.status === "CLAIMED") clocks.push(target.leaseExpiresAt);
  }
  let next: number | undefined;
  for (const at of clocks) {
    if (at !== undefined && at > now && (next === undefined || at < next)) next = at;
  }
  return next;
}
