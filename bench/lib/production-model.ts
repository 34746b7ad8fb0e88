/**
 * Production timing for the rollout benchmark's cost model: one wave whose components all flash
 * for FLASH_SECONDS (10 minutes), reporting as the simulated BMCs do (ack at once, progress at
 * 25/50/75 % of the flash, then the result), each report reaching the wave's record
 * REPORT_LATENCY_SECONDS later. The product's own check schedule (src/domain/component-verdict.ts
 * `nextCheckWaitSeconds`: the backoff, or later when the stored progress says the wave cannot be
 * done before) is run against that timeline, so the model counts the checks the deployed code
 * would make; the backoff alone (`nextWaitSeconds`, what round 1 did) is counted beside it.
 */
import {
  nextCheckWaitSeconds,
  nextWaitSeconds,
  type PendingCommand,
} from "../../src/domain/component-verdict.js";

export const FLASH_SECONDS = 600;
export const REPORT_LATENCY_SECONDS = 2;
export const PROGRESS_PERCENTS = [25, 50, 75] as const;

export interface ProductionWave {
  /** Checks until the one that finds every result, as the product schedules them. */
  checksPerWave: number;
  /** The same with the backoff alone (no progress estimate). */
  backoffChecksPerWave: number;
  /** Each check is a Wait, the check's Task state and the Choice after it. */
  transitionsPerCheck: number;
}

/** What a check at `now` finds stored of a command sent at 0: the last progress that reached it. */
function storedAt(now: number): PendingCommand {
  let stored: PendingCommand = { sentAt: 0 };
  for (const percent of PROGRESS_PERCENTS) {
    const at = ((FLASH_SECONDS * percent) / 100 + REPORT_LATENCY_SECONDS) * 1000;
    if (at <= now) stored = { sentAt: 0, progress: percent, progressAt: at };
  }
  return stored;
}

export function modelProductionWave(settings: {
  pollSeconds: number;
  maxPollSeconds: number;
  updateTimeoutSeconds: number;
}): ProductionWave {
  const deadline = settings.updateTimeoutSeconds * 1000;
  const done = (FLASH_SECONDS + REPORT_LATENCY_SECONDS) * 1000;
  const count = (byProgress: boolean): number => {
    // SendWave's Wait is the backoff's first; each later one is the check's.
    let now = nextWaitSeconds(settings, 0, deadline, 0) * 1000;
    let checks = 1;
    for (let polls = 1; now < done && now < deadline; polls++) {
      const wait = byProgress
        ? nextCheckWaitSeconds(settings, polls, deadline, now, [storedAt(now)])
        : nextWaitSeconds(settings, polls, deadline, now);
      now += wait * 1000;
      checks += 1;
    }
    return checks;
  };
  return { checksPerWave: count(true), backoffChecksPerWave: count(false), transitionsPerCheck: 3 };
}
