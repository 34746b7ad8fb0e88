/**
 * Production timing for the rollout benchmark's cost model: one wave whose components all flash
 * for FLASH_SECONDS (10 minutes), reporting as the simulated BMCs do (ack at once, progress at
 * 25/50/75 % of the flash, then the result), each report reaching the wave's record
 * REPORT_LATENCY_SECONDS later. The product's own schedule (src/domain/component-verdict.ts) is
 * run against that timeline, so the model counts the checks the deployed code would make: each
 * wait is an AwaitWave that the wave's last result wakes (REPORT_LATENCY_SECONDS after the flash,
 * plus the reports queue's batching window) or that times out into a check; the check's wait is
 * `nextCheckWaitSeconds` (the backoff, or later when the stored progress says the wave cannot be
 * done before). The definition as it is gives AwaitWave a heartbeat of `awaitSeconds` (the
 * check's wait, at least five of the longest polls) that every stored report restarts, and its
 * timeout at the deadline: it times out only when no report reaches the record for that long.
 * The definition before heartbeats timed out after `awaitSeconds` whatever was reported. Counted
 * beside them: the same schedule in Wait states with no wake-up, and the backoff alone
 * (`nextWaitSeconds`, no progress estimate).
 */

import type { BmcEvent } from "../../src/domain/bmc-protocol.js";
import { entryWrite, foldReports, type KnownEntry, knownAfter } from "../../src/domain/command-sets.js";
import {
  awaitSeconds,
  nextCheckWaitSeconds,
  nextWaitSeconds,
  type PendingCommand,
} from "../../src/domain/component-verdict.js";

export const FLASH_SECONDS = 600;
export const REPORT_LATENCY_SECONDS = 2;
/** The reports queue's batching window (infra/stacks/flow-stack.ts): the wake-up waits for it. */
export const BATCHING_WINDOW_SECONDS = 1;
export const PROGRESS_PERCENTS = [25, 50, 75] as const;

export interface ProductionWave {
  /**
   * Checks until the one that finds every result, as the product schedules them: each after an
   * AwaitWave (woken by the last result, or timed out: its heartbeat ran out, or its deadline),
   * so as many AwaitWave invocations.
   */
  checksPerWave: number;
  /** The same with AwaitWave's timeout alone, `awaitSeconds` (the definition before heartbeats). */
  noHeartbeatChecksPerWave: number;
  /** The same poll schedule with Wait states and no wake-up. */
  pollChecksPerWave: number;
  /** The same with the backoff alone (no progress estimate). */
  backoffChecksPerWave: number;
  /** Each check is an AwaitWave (or a Wait), the check's Task state and the Choice after it. */
  transitionsPerCheck: number;
  /**
   * The writes of a flash step's command set its reports make, each report moment (the wave's
   * BMCs reporting together) in a batch of its own, by the receiver's rules (`entryWrite`): the
   * acknowledgement, each progress report, the result.
   */
  reportWritesPerFlash: number;
}

/**
 * The writes one command's reports make by the receiver's rules (src/domain/command-sets.ts
 * `entryWrite`), each report in a batch of its own, for a flash of `flashMs` reporting as the
 * simulated BMCs do (ack at once, progress at 25/50/75 %, the result at the end). With every
 * command of a wave reporting at the same moments, it is the writes of the wave's set.
 *   600,000 ms → 5 (ack, 25 %, 50 %, 75 %, result); 300 ms → 2 (the progress within the first
 *   second after the ack is not written on its own).
 */
export function reportWritesOfFlash(flashMs: number): number {
  const sent = "upd-r";
  const reports: { event: BmcEvent; at: number }[] = [
    { event: { v: 1, type: "ack", requestId: sent }, at: 0 },
    ...PROGRESS_PERCENTS.map((percent) => ({
      event: { v: 1 as const, type: "progress" as const, requestId: sent, percent },
      at: (flashMs * percent) / 100,
    })),
    { event: { v: 1, type: "result", requestId: sent, ok: true, version: "2" }, at: flashMs },
  ];
  let known: KnownEntry | undefined;
  let writes = 0;
  for (const report of reports) {
    const write = entryWrite("u", foldReports([report]), known);
    if (write === undefined) continue;
    known = knownAfter(known, write);
    writes += 1;
  }
  return writes;
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
  // With the wake-up: each wait ends at its timeout or when the last result is stored, if sooner.
  const woken = (FLASH_SECONDS + REPORT_LATENCY_SECONDS + BATCHING_WINDOW_SECONDS) * 1000;
  // The reports the receiver stores before the result (the ack, each progress), each of which
  // sends a waiting AwaitWave a heartbeat when its batch is written.
  const heard = [0, ...PROGRESS_PERCENTS.map((percent) => (FLASH_SECONDS * percent) / 100)].map(
    (at) => (at + REPORT_LATENCY_SECONDS + BATCHING_WINDOW_SECONDS) * 1000,
  );
  /** When a wait that starts at `now` ends unwoken: its heartbeat run out, or its timeout. */
  const waitEnd = (now: number, heartbeatMs: number, heartbeats: boolean): number => {
    if (!heartbeats) return now + heartbeatMs;
    let last = now;
    for (const at of heard) {
      if (at <= now) continue;
      if (at - last > heartbeatMs) break;
      last = at;
    }
    return Math.min(last + heartbeatMs, deadline);
  };
  const awaited = (heartbeats: boolean): number => {
    let now = 0;
    let wait = nextWaitSeconds(settings, 0, deadline, 0);
    for (let checks = 1; ; checks++) {
      const end = waitEnd(now, awaitSeconds(settings, wait, deadline, now) * 1000, heartbeats);
      if (end >= woken || end >= deadline) return checks;
      now = end;
      wait = nextCheckWaitSeconds(settings, checks, deadline, now, [storedAt(now)]);
    }
  };
  return {
    checksPerWave: awaited(true),
    noHeartbeatChecksPerWave: awaited(false),
    pollChecksPerWave: count(true),
    backoffChecksPerWave: count(false),
    transitionsPerCheck: 3,
    reportWritesPerFlash: reportWritesOfFlash(FLASH_SECONDS * 1000),
  };
}
