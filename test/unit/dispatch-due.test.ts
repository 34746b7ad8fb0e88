/** nextDispatchAt (src/domain/dispatch-due.ts): when a run next needs a pass, as a table. */
import { describe, expect, it } from "vitest";
import { nextDispatchAt } from "../../src/domain/dispatch-due.js";
import type { MaintenanceWindow, Run, Target } from "../../src/domain/model.js";
import { runInState, T0 } from "../support/run-states.js";

const NOW = T0 + 1_000;
const TIMEOUT = 3_600_000;
const HOUR = 3_600_000;

function runWith(
  changes: {
    status?: Run["status"];
    startTime?: number;
    endTime?: number;
    windows?: MaintenanceWindow[];
  } = {},
): { run: Run; targets: Target[] } {
  const { run, targets } = runInState("r", { phases: [["PENDING", "PENDING", "PENDING"], ["PENDING"]] });
  run.status = changes.status ?? "RUNNING";
  const firmware = { ...run.config.operation.firmware };
  if (changes.startTime !== undefined) firmware.startTime = changes.startTime;
  if (changes.endTime !== undefined) firmware.endTime = changes.endTime;
  run.config = {
    ...run.config,
    operation: { ...run.config.operation, firmware },
    maintenanceWindows: changes.windows ?? [],
  };
  return { run, targets };
}

const blocked = (t: Target, retryAt: number | undefined, firstBlockedAt: number | undefined): Target => ({
  ...t,
  status: "BLOCKED",
  ...(retryAt === undefined ? {} : { retryAt }),
  ...(firstBlockedAt === undefined ? {} : { firstBlockedAt }),
});
const claimed = (t: Target, leaseExpiresAt: number | undefined): Target => ({
  ...t,
  status: "CLAIMED",
  ...(leaseExpiresAt === undefined ? {} : { leaseExpiresAt }),
});

describe("nextDispatchAt", () => {
  const { run, targets } = runWith();
  const [a, b, c, later] = targets as [Target, Target, Target, Target];

  const rows: [string, Run, Target[], number | undefined][] = [
    ["nothing held, no schedule: only a write gives it work", run, [], undefined],
    ["a BLOCKED target's retry", run, [blocked(a, NOW + 30_000, NOW)], NOW + 30_000],
    [
      "its conflict timeout when that comes first",
      run,
      [blocked(a, NOW + 2 * HOUR, NOW - TIMEOUT + 5)],
      NOW + 5,
    ],
    [
      "a retry already due is left out (no free slot: an outcome will mark it)",
      run,
      [blocked(a, NOW, NOW)],
      NOW + TIMEOUT,
    ],
    [
      "a BLOCKED target without its clocks (corrupted) gives none",
      run,
      [blocked(a, undefined, undefined)],
      undefined,
    ],
    ["a CLAIMED target's lease end", run, [claimed(a, NOW + 30_000)], NOW + 30_000],
    ["an expired lease is left out", run, [claimed(a, NOW)], undefined],
    ["a CLAIMED target without a lease gives none", run, [claimed(a, undefined)], undefined],
    [
      "the earliest of several",
      run,
      [claimed(a, NOW + 30_000), blocked(b, NOW + 10_000, NOW), claimed(c, NOW + 20_000)],
      NOW + 10_000,
    ],
    ["another phase's held targets are ignored", run, [claimed(later, NOW + 5)], undefined],
    ["other statuses in the list are ignored", run, [{ ...a, status: "SUBMITTED" }], undefined],
    ["the current phase's soak end", { ...run, soakEndsAt: NOW + 30_000 }, [], NOW + 30_000],
    [
      "a lease ending before the soak comes first",
      { ...run, soakEndsAt: NOW + 30_000 },
      [claimed(a, NOW + 10_000)],
      NOW + 10_000,
    ],
    ["a soak already over is left out", { ...run, soakEndsAt: NOW }, [], undefined],
    ["a paused run needs none", { ...run, status: "PAUSED" }, [claimed(a, NOW + 5)], undefined],
    ["a finished run needs none", { ...run, status: "COMPLETED" }, [], undefined],
  ];
  for (const [name, r, held, expected] of rows) {
    it(name, () => expect(nextDispatchAt(r, held, NOW)).toBe(expected));
  }

  it("the schedule: end_time while open, start_time before it, end_time when no opening comes first", () => {
    expect(nextDispatchAt(runWith({ endTime: NOW + HOUR }).run, [], NOW)).toBe(NOW + HOUR);
    expect(nextDispatchAt(runWith({ endTime: NOW + HOUR }).run, [claimed(a, NOW + 5)], NOW)).toBe(NOW + 5);
    expect(nextDispatchAt(runWith({ status: "PENDING", startTime: NOW + 60_000 }).run, [], NOW)).toBe(
      NOW + 60_000,
    );
    // Closed for good: only the flashes still running can change anything, and their outcomes mark it.
    expect(nextDispatchAt(runWith({ endTime: NOW }).run, [], NOW)).toBeUndefined();
  });

  it("recurring windows: the current window's close, the next opening, or end_time when none opens before it", () => {
    // A window at minute 30 of every hour (UTC) for 10 minutes.
    const windows: MaintenanceWindow[] = [{ cron: "30 * * * *", durationMs: 600_000 }];
    const hourStart = Math.floor(NOW / HOUR) * HOUR;
    const inside = hourStart + 32 * 60_000;
    expect(nextDispatchAt(runWith({ windows }).run, [], inside)).toBe(hourStart + 40 * 60_000);
    const outside = hourStart + 45 * 60_000;
    expect(nextDispatchAt(runWith({ windows }).run, [], outside)).toBe(hourStart + HOUR + 30 * 60_000);
    const endTime = hourStart + 50 * 60_000;
    expect(nextDispatchAt(runWith({ windows, endTime }).run, [], outside)).toBe(endTime);
  });
});
