/**
 * Production timing for the rollout benchmark's cost model: one wave whose components all flash
 * for FLASH_SECONDS (10 minutes), reporting as the simulated BMCs do (ack at once, progress at
 * 25/50/75 % of the flash, then the result), each report reaching the wave's record
 * REPORT_LATENCY_SECONDS later. The product's own poll schedule (src/domain/component-verdict.ts)
 * is run against that timeline, so the model counts the checks the deployed code would make.
 */
import { nextWaitSeconds } from "../../src/domain/component-verdict.js";

export const FLASH_SECONDS = 600;
export const REPORT_LATENCY_SECONDS = 2;

export interface ProductionWave {
  /** Checks until the one that finds every result. */
  checksPerWave: number;
  /** Each check is a Wait, the check's Task state and the Choice after it. */
  transitionsPerCheck: number;
}

export function modelProductionWave(settings: {
  pollSeconds: number;
  maxPollSeconds: number;
  updateTimeoutSeconds: number;
}): ProductionWave {
  const deadline = settings.updateTimeoutSeconds * 1000;
  const done = (FLASH_SECONDS + REPORT_LATENCY_SECONDS) * 1000;
  let now = 0;
  let checks = 0;
  for (let polls = 0; now < done && now < deadline; polls++) {
    now += nextWaitSeconds(settings, polls, deadline, now) * 1000;
    checks += 1;
  }
  return { checksPerWave: checks, transitionsPerCheck: 3 };
}
