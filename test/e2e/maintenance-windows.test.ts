/**
 * Maintenance windows end to end: the real gRPC client against the local stack in-process
 * (dispatcher on a 150 ms tick, stream wake-ups, the child-task ASL, the simulated fleet), on a
 * clock the stack is started with (local/clock.ts): it runs at the wall clock's rate, and where a
 * test would only wait for an instant (a start time, a window's opening) it jumps there, never
 * while a target is claimed or flashing, so leases and flashes see time as usual.
 *
 * Claim times are observed exactly: a second reader of the targets table's stream records every
 * target's move to CLAIMED, whose `updatedAt` is the time the claim was judged by (the claim's own
 * clock reading, which its condition compared with the window). Nothing sleeps to let time pass:
 * each test waits for a state the run can only reach after the instant it is about, or moves the
 * clock to that instant once the run shows it is waiting for it.
 *
 *   start_time 3 s ahead           → PENDING "waiting for maintenance window: opens at T", no claim
 *                                    before T, COMPLETED after it
 *   end_time while racks flash     → no claim from T on, the two in flight finish, PAUSED /
 *                                    MAINTENANCE_WINDOW, Resume refused, Cancel → SKIPPED
 *   a 4 s window every minute      → every claim inside a window, RUNNING "outside maintenance
 *                                    window: next opens at …" between them, COMPLETED
 * (A cancel with racks in flight and racks pending: test/e2e/api-controls.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ShiftableClock, shiftableClock } from "../../local/clock.js";
import { formatRfc3339 } from "../../src/domain/calendar.js";
import {
  type OperationRun,
  OperationRunStatus,
  OperationRunStatusReason,
  OperationRunTargetStatus,
} from "../../src/gen/flow/v1/flow.js";
import { type Claim, type ClaimRecorder, recordClaims } from "../support/claim-recorder.js";
import { FAST_SUCCESS, rackGroup } from "../support/fixtures-inventory.js";
import {
  createRun,
  eventually,
  failure,
  getRun,
  listTargets,
  runRequest,
  startTestStack,
  stateOf,
  type TestStack,
  targetReport,
  waitForStatus,
  waitForTerminal,
} from "../support/stack.js";

const S = OperationRunStatus;
const R = OperationRunStatusReason;
const T = OperationRunTargetStatus;

const EARLY = rackGroup(120, { name: "early", count: 3, behaviour: FAST_SUCCESS });
/** Flashes that outlast the window's end by seconds. */
const SLOW = rackGroup(121, { name: "slow", count: 5, behaviour: { outcome: "succeed", updateMs: 4_000 } });
/** A flash of 1.6 s: at most two fit in a 4 s window one at a time. */
const NIGHTLY = rackGroup(122, {
  name: "nightly",
  count: 3,
  behaviour: { outcome: "succeed", updateMs: 1_600 },
});

let s: TestStack;
/** The stack's clock: claims, windows and messages are on it. */
const clock: ShiftableClock = shiftableClock();
/** Every claim of a target, with the time it was judged by (test/support/claim-recorder.ts). */
const claims: Claim[] = [];
let recorder: ClaimRecorder | undefined;

beforeAll(async () => {
  s = await startTestStack({ label: "windows", groups: [EARLY, SLOW, NIGHTLY], clock });
  recorder = await recordClaims(s, claims);
});
afterAll(async () => {
  await recorder?.stop();
  await s?.stop();
});

const claimsOf = (runId: string) => claims.filter((c) => c.runId === runId);
/** A whole second `ms` from now on the stack's clock: messages then read without milliseconds. */
const secondsAhead = (ms: number) => Math.ceil((clock.now() + ms) / 1000) * 1000;

/** The instant a run held outside its windows names: "…: opens at T" / "…: next opens at T". */
function opening(message: string): number | undefined {
  const at = /opens at (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)$/.exec(message)?.[1];
  return at === undefined ? undefined : Date.parse(at);
}

/** No target of the run is claimed or flashing: the clock may jump without cutting a lease short. */
async function nothingInFlight(runId: string): Promise<boolean> {
  const active = new Set([T.OPERATION_RUN_TARGET_STATUS_CLAIMED, T.OPERATION_RUN_TARGET_STATUS_SUBMITTED]);
  return (await listTargets(s.flow, runId)).every((t) => !active.has(t.status));
}

/** Waits until the stream reader has seen a claim for every one of `targetIds`. */
async function claimsSeenFor(runId: string, targetIds: readonly string[]): Promise<void> {
  await eventually(
    async () => new Set(claimsOf(runId).map((c) => c.targetId)),
    (seen) => targetIds.every((id) => seen.has(id)),
    `the claims of run ${runId} to reach the stream reader`,
  );
}

describe("a run with start_time 3 s ahead", () => {
  it("waits PENDING with the opening time, claims nothing before it, and completes after it", async () => {
    const start = secondsAhead(3_000);
    const id = await createRun(
      s.flow,
      runRequest({ rackIds: EARLY.ids, maxConcurrent: 2, firmware: { startTime: new Date(start) } }),
    );
    // A pass queued now runs well before the start (one pass is tens of milliseconds, not 3 s).
    await s.local.dispatcher.dispatchRun(id);
    const waiting = await getRun(s.flow, id);
    expect(stateOf(waiting)).toEqual({
      status: S.OPERATION_RUN_STATUS_PENDING,
      reason: R.OPERATION_RUN_STATUS_REASON_NONE,
      message: `waiting for maintenance window: opens at ${formatRfc3339(start)}`,
    });
    expect(waiting.summary?.startedAt).toBeUndefined();
    expect((await listTargets(s.flow, id)).map((t) => T[t.status])).toEqual(
      Array(EARLY.ids.length).fill("OPERATION_RUN_TARGET_STATUS_PENDING"),
    );

    clock.advanceTo(start);
    const done = await waitForTerminal(s.flow, id);
    expect(stateOf(done), await targetReport(s.flow, id)).toMatchObject({
      status: S.OPERATION_RUN_STATUS_COMPLETED,
      message: "operation run completed",
    });
    expect(done.summary?.startedAt?.getTime()).toBeGreaterThanOrEqual(start);
    const targets = await listTargets(s.flow, id);
    await claimsSeenFor(
      id,
      targets.map((t) => t.id?.id ?? ""),
    );
    expect(claimsOf(id).filter((c) => c.at < start)).toEqual([]);
  });
});

describe("a run whose end_time passes while racks are being flashed", () => {
  let id = "";
  let end = 0;

  it("stops claiming at end_time, lets the flashes in flight finish, and pauses with MAINTENANCE_WINDOW", async () => {
    end = secondsAhead(2_000);
    id = await createRun(
      s.flow,
      runRequest({ rackIds: SLOW.ids, maxConcurrent: 2, firmware: { endTime: new Date(end) } }),
    );
    const paused = await waitForStatus(s.flow, id, [S.OPERATION_RUN_STATUS_PAUSED], 60_000);
    const targets = await listTargets(s.flow, id);
    const completed = targets.filter((t) => t.status === T.OPERATION_RUN_TARGET_STATUS_COMPLETED);
    const pending = targets.filter((t) => t.status === T.OPERATION_RUN_TARGET_STATUS_PENDING);
    expect(stateOf(paused), await targetReport(s.flow, id)).toEqual({
      status: S.OPERATION_RUN_STATUS_PAUSED,
      reason: R.OPERATION_RUN_STATUS_REASON_MAINTENANCE_WINDOW,
      message: `maintenance window closed at ${formatRfc3339(end)}: ${pending.length} targets not started`,
    });
    // Two slots: the two racks claimed before the end finished after it; the other three never started.
    expect(completed.length + pending.length).toBe(5);
    expect(completed.length).toBe(2);
    for (const t of completed) expect(t.updatedAt?.getTime()).toBeGreaterThan(end);
    await claimsSeenFor(
      id,
      completed.map((t) => t.id?.id ?? ""),
    );
    expect(claimsOf(id).filter((c) => c.at >= end)).toEqual([]);
    expect(new Set(claimsOf(id).map((c) => c.targetId))).toEqual(new Set(completed.map((t) => t.id?.id)));
  });

  it("refuses Resume with FailedPrecondition: maintenance window closed", async () => {
    expect(await failure(s.flow.resumeOperationRun({ id: { id } }))).toEqual({
      code: "FAILED_PRECONDITION",
      details: `operation run is not in a valid state for the requested operation: ${id} cannot resume: maintenance window closed at ${formatRfc3339(end)}; cancel it or create a new run`,
    });
  });

  it("Cancel leaves the racks never started SKIPPED 'not started: maintenance window closed', stats to match", async () => {
    const cancelled = await s.flow.cancelOperationRun({ id: { id }, reason: "" });
    expect(stateOf(cancelled).status).toBe(S.OPERATION_RUN_STATUS_CANCELLED);
    const targets = await listTargets(s.flow, id);
    expect(targets.map((t) => [T[t.status], t.message]).sort()).toEqual(
      [
        ...Array(2).fill(["OPERATION_RUN_TARGET_STATUS_COMPLETED", expect.any(String)]),
        ...Array(3).fill(["OPERATION_RUN_TARGET_STATUS_SKIPPED", "not started: maintenance window closed"]),
      ].sort(),
    );
    const run = await getRun(s.flow, id, true);
    expect(run.stats?.cumulativePhaseStats?.outcomeCounts).toEqual({
      completed: 2,
      failed: 0,
      terminated: 0,
      skipped: 3,
    });
  });
});

describe("a recurring window of a few seconds every minute", () => {
  it("claims only inside its windows, waits RUNNING between them, and continues by itself", async () => {
    const WINDOW_MS = 4_000;
    const id = await createRun(
      s.flow,
      runRequest({
        rackIds: NIGHTLY.ids,
        maxConcurrent: 1,
        maintenanceWindows: [{ cron: "* * * * *", duration: { seconds: WINDOW_MS / 1000, nanos: 0 } }],
      }),
    );
    const seen = new Set<string>();
    const finished = (run: OperationRun) =>
      stateOf(run).status !== S.OPERATION_RUN_STATUS_RUNNING &&
      stateOf(run).status !== S.OPERATION_RUN_STATUS_PENDING;
    /** The opening the run waits for, if it is still ahead (a message read just after a jump may be older). */
    const heldUntil = (run: OperationRun) => {
      const at = opening(stateOf(run).message);
      return at !== undefined && at > clock.now() ? at : undefined;
    };
    // Each round: the run finishes, or it waits for its next window with nothing in flight, and
    // the clock jumps to that window's opening (the wall clock would take the rest of the minute).
    const finish = async (): Promise<OperationRun> => {
      for (let jumps = 0; ; jumps++) {
        const { run, opensAt } = await eventually(
          async () => {
            const run = await getRun(s.flow, id, true);
            const state = stateOf(run);
            seen.add(
              `${S[state.status]}: ${state.message.replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/, "<T>")}`,
            );
            const at = heldUntil(run);
            return { run, opensAt: at !== undefined && (await nothingInFlight(id)) ? at : undefined };
          },
          ({ run, opensAt }) => finished(run) || opensAt !== undefined,
          `run ${id} to finish, or to wait for its next window with nothing in flight`,
          30_000,
          200,
        );
        if (finished(run) || opensAt === undefined) return run;
        expect(jumps, "more windows than three one-at-a-time flashes need").toBeLessThan(5);
        clock.advanceTo(opensAt);
      }
    };
    const done = await finish();
    expect(stateOf(done), await targetReport(s.flow, id)).toMatchObject({
      status: S.OPERATION_RUN_STATUS_COMPLETED,
    });
    const targets = await listTargets(s.flow, id);
    await claimsSeenFor(
      id,
      targets.map((t) => t.id?.id ?? ""),
    );
    const mine = claimsOf(id);
    // Every claim fell in the first 4 s of a minute (a window), and they spread over two windows
    // or more: three 1.6 s flashes one at a time do not fit in one.
    expect(mine.filter((c) => c.at % 60_000 >= WINDOW_MS)).toEqual([]);
    expect(new Set(mine.map((c) => Math.floor(c.at / 60_000))).size).toBeGreaterThanOrEqual(2);
    expect([...seen]).toContain(
      "OPERATION_RUN_STATUS_RUNNING: outside maintenance window: next opens at <T>",
    );
  });
});

describe("create-time rules over gRPC: InvalidArgument naming the field, nothing written", () => {
  const H = 3_600_000;

  it.each([
    [
      "an end_time already past",
      { firmware: { endTime: new Date(clock.now() - H) } },
      "configuration.operation.upgrade_firmware.end_time: maintenance window already closed",
    ],
    [
      "an end_time not after start_time",
      { firmware: { startTime: new Date(clock.now() + 2 * H), endTime: new Date(clock.now() + H) } },
      "configuration.operation.upgrade_firmware.end_time: end_time must be after start_time",
    ],
    [
      "a cron out of range and a window without a duration",
      { maintenanceWindows: [{ cron: "0 24 * * *", duration: undefined }] },
      "configuration.options.maintenance_windows[0].cron: hour: 24 is out of range 0-23; configuration.options.maintenance_windows[0].duration: duration is required",
    ],
    [
      "a window longer than a week",
      { maintenanceWindows: [{ cron: "0 2 * * *", duration: { seconds: 8 * 24 * 3600, nanos: 0 } }] },
      "configuration.options.maintenance_windows[0].duration: duration must be at most 168h0m0s (got 192h0m0s)",
    ],
  ] as const)("CreateOperationRun with %s", async (_what, spec, details) => {
    const before = await s.countItems();
    const request = runRequest({ rackIds: EARLY.ids, ...spec } as Parameters<typeof runRequest>[0]);
    expect(await failure(s.flow.createOperationRun(request))).toEqual({ code: "INVALID_ARGUMENT", details });
    expect(await failure(s.flow.planOperationRun(request))).toEqual({ code: "INVALID_ARGUMENT", details });
    expect(await s.countItems()).toEqual(before);
  });

  it("UpgradeFirmware: the same rules, paths relative to the request", async () => {
    const request = runRequest({
      rackIds: [EARLY.ids[0]!],
      firmware: { endTime: new Date(clock.now() - 1000) },
    });
    const firmware = request.configuration?.operation?.operation?.value;
    expect(await failure(s.flow.upgradeFirmware(firmware!))).toEqual({
      code: "INVALID_ARGUMENT",
      details: "end_time: maintenance window already closed",
    });
  });

  it("PlanOperationRun shows the next window openings, and the effective configuration keeps the windows", async () => {
    const plan = await s.flow.planOperationRun(
      runRequest({
        rackIds: EARLY.ids,
        maintenanceWindows: [{ cron: "0 2 * * *", duration: { seconds: 7200, nanos: 0 } }],
      }),
    );
    expect(plan.nextWindowOpenings).toHaveLength(5);
    for (const t of plan.nextWindowOpenings) expect(t.toISOString()).toMatch(/T02:00:00\.000Z$/);
    const days = plan.nextWindowOpenings.map((t) => t.getTime());
    expect(days.slice(1).map((d, i) => d - days[i]!)).toEqual([
      86_400_000, 86_400_000, 86_400_000, 86_400_000,
    ]);
    expect(plan.configuration?.options?.maintenanceWindows).toEqual([
      { cron: "0 2 * * *", duration: { seconds: 7200, nanos: 0 } },
    ]);
  });
});
