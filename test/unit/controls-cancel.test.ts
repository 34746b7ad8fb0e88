/**
 * Cancel (src/app/controls.ts) on the in-memory RunStore: after the commit it stops the current
 * phase's child tasks and ends the targets that never got one, within its budget. The budget runs
 * on vitest's fake timers, so no case waits for real time.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Run } from "../../src/domain/model.js";
import { RUN, TERMINAL, world } from "../support/controls-world.js";
import { taskIdFor } from "../support/scripted-submitter.js";

describe("controls: cancel", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it.each([
    ["PENDING", "NONE", "  window closed  ", "operation run cancelled: window closed"],
    ["RUNNING", "NONE", "window closed", "operation run cancelled: window closed"],
    ["PAUSED", "SAFETY_GATE", "", "operation run cancelled"],
    ["PAUSED", "PHASE_GATE", " \t ", "operation run cancelled"],
  ] as const)(
    "%s (%s) with reason %j → CANCELLED NONE %j, finishedAt now",
    async (status, reason, given, message) => {
      const w = await world({ phases: [["PENDING"]], status, reason });
      const cancelled = await w.controls.cancel(RUN, given);
      const committed = {
        status: "CANCELLED",
        reason: "NONE",
        statusMessage: message,
        finishedAt: w.clock.now,
      };
      expect(cancelled).toMatchObject(committed);
      expect(await w.stored()).toMatchObject({ ...committed, updatedAt: cancelled.updatedAt });
      expect(w.dispatched).toEqual([]);
    },
  );

  it.each(TERMINAL)("%s → returned unchanged: nothing written, no task stopped", async (status) => {
    const w = await world({ phases: [["SUBMITTED"]], status });
    expect(await w.controls.cancel(RUN, "again")).toEqual(w.run);
    expect(w.runs.writes()).toBe(0);
    expect(w.submitter.cancels).toEqual([]);
  });

  it("after the commit: stops the current phase's child tasks and ends SKIPPED the targets that never got one; other phases untouched", async () => {
    const w = await world({
      phases: [["SUBMITTED", "CLAIMED", "PENDING", "BLOCKED", "COMPLETED", "SUBMITTED"], ["PENDING"]],
    });
    await w.controls.cancel(RUN, "window closed");
    const reason = "operation run cancelled: window closed";
    expect(w.submitter.cancels).toEqual([
      { taskId: taskIdFor(w.targets[0]!.id), reason },
      { taskId: taskIdFor(w.targets[5]!.id), reason },
    ]);
    for (const i of [1, 2, 3]) {
      expect(await w.target(i)).toMatchObject({
        status: "SKIPPED",
        message: "not started: operation run cancelled",
        updatedAt: w.clock.now,
      });
    }
    // Tasks that were asked to stop end their targets themselves, through the task path.
    expect((await w.target(0)).status).toBe("SUBMITTED");
    expect((await w.target(4)).status).toBe("COMPLETED");
    expect((await w.target(6)).status).toBe("PENDING");
    const run = await w.stored();
    expect(run.counters).toEqual([
      { completed: 1, failed: 0, terminated: 0, skipped: 3 },
      { completed: 0, failed: 0, terminated: 0, skipped: 0 },
    ]);
    expect(run.inFlight).toBe(2);
    expect(w.runs.calls.of("skipTargets")).toBe(1);
  });

  it("a stop that never confirms: cancel returns when the 5 s budget runs out, and logs it", async () => {
    vi.useFakeTimers();
    const w = await world({ phases: [["SUBMITTED", "SUBMITTED"]] });
    w.submitter.onCancel = () => new Promise<void>(() => {});
    let returned: Run | undefined;
    const cancelling = w.controls.cancel(RUN, "").then((run) => {
      returned = run;
    });
    await vi.advanceTimersByTimeAsync(4_999);
    expect(returned).toBeUndefined();
    expect(w.submitter.cancels).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    await cancelling;
    expect(returned).toMatchObject({ status: "CANCELLED", statusMessage: "operation run cancelled" });
    expect(w.logs).toEqual([
      `warn cancel budget ran out before every child task confirmed it stopped runId=${RUN} tasks=2`,
    ]);
  });

  it("stops that confirm within the budget: cancel returns as soon as the last one does, nothing logged, no timer left", async () => {
    vi.useFakeTimers();
    const w = await world({ phases: [["SUBMITTED", "SUBMITTED"]] }, { cancelBudgetMs: 200 });
    let stopped = 0;
    const stopsAfterMs = [50, 150];
    w.submitter.onCancel = () =>
      new Promise<void>((resolve) =>
        setTimeout(() => {
          stopped++;
          resolve();
        }, stopsAfterMs.shift()),
      );
    let returned = false;
    const cancelling = w.controls.cancel(RUN, "").then(() => {
      returned = true;
    });
    await vi.advanceTimersByTimeAsync(149);
    expect({ stopped, returned }).toEqual({ stopped: 1, returned: false });
    await vi.advanceTimersByTimeAsync(1);
    await cancelling;
    expect({ stopped, returned }).toEqual({ stopped: 2, returned: true });
    expect(vi.getTimerCount()).toBe(0);
    expect(w.logs).toEqual([]);
  });

  it("cancelBudgetMs sets the budget: 200 ms", async () => {
    vi.useFakeTimers();
    const w = await world({ phases: [["SUBMITTED"]] }, { cancelBudgetMs: 200 });
    w.submitter.onCancel = () => new Promise<void>(() => {});
    let returned = false;
    const cancelling = w.controls.cancel(RUN, "").then(() => {
      returned = true;
    });
    await vi.advanceTimersByTimeAsync(199);
    expect(returned).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await cancelling;
    expect(returned).toBe(true);
  });

  it("a stop that fails and a skip that fails are logged; the cancel stands", async () => {
    const w = await world({ phases: [["SUBMITTED", "PENDING"]] });
    w.submitter.onCancel = async (taskId) => {
      throw new Error(`cannot stop ${taskId}`);
    };
    w.runs.interleave("skipTargets", () => {
      throw new Error("throttled");
    });
    const taskId = taskIdFor(w.targets[0]!.id);
    expect((await w.controls.cancel(RUN, "")).status).toBe("CANCELLED");
    expect(w.logs.sort()).toEqual([
      `error could not mark unsubmitted targets of a cancelled run SKIPPED runId=${RUN} error=Error: throttled`,
      `warn could not stop a child task of a cancelled run runId=${RUN} targetId=${w.targets[0]!.id} taskId=${taskId} error=Error: cannot stop ${taskId}`,
    ]);
    expect((await w.stored()).status).toBe("CANCELLED");
  });
});
