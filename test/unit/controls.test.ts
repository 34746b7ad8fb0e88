/**
 * The manual controls (pause, resume, advance, cancel) as tables on the in-memory RunStore: every
 * state each control meets, with the exact FailedPrecondition texts; 'stale' writes re-read and
 * decided again; the effects after the commit (cancel stops the current phase's child tasks and
 * ends the targets that never got one, within its budget; resume after CONFLICT_RETRY_TIMEOUT
 * restarts the conflict clocks; resume and advance trigger a dispatch). The budget runs on vitest's
 * fake timers, so no case waits for real time.
 */

import { afterEach, describe, expect, it, vi } from "vitest";
import { createControls } from "../../src/app/controls.js";
import type { Run, RunStatus, Target } from "../../src/domain/model.js";
import { clockOf } from "../support/clock.js";
import { uuid } from "../support/dynamodb-fixtures.js";
import { MemoryRunStore } from "../support/memory-stores.js";
import { type RunState, runInState, T0 } from "../support/run-states.js";
import { ScriptedSubmitter, taskIdFor } from "../support/scripted-submitter.js";

const RUN = uuid(1, "c0a70000");
const INVALID = "operation run is not in a valid state for the requested operation";

async function world(
  state: RunState,
  options: {
    store?: MemoryRunStore;
    cancelBudgetMs?: number;
    dispatch?: (runId: string) => Promise<unknown>;
  } = {},
) {
  const runs = options.store ?? new MemoryRunStore();
  const { run, targets } = runInState(RUN, state);
  await runs.createRun(run, targets);
  runs.calls.reset();
  const clock = { now: T0 + 5000 };
  const submitter = new ScriptedSubmitter();
  const logs: string[] = [];
  const dispatched: string[] = [];
  const controls = createControls({
    runs,
    submitter,
    clock: clockOf(() => clock.now),
    log: (line) => void logs.push(line),
    dispatch:
      options.dispatch ??
      (async (runId) => {
        dispatched.push(runId);
      }),
    ...(options.cancelBudgetMs === undefined ? {} : { cancelBudgetMs: options.cancelBudgetMs }),
  });
  return {
    runs,
    run,
    targets,
    clock,
    submitter,
    logs,
    dispatched,
    controls,
    stored: async () => (await runs.getRun(RUN)) as Run,
    target: async (i: number) => (await runs.getTarget(RUN, targets[i]!.id)) as Target,
  };
}

const refused = (detail: string) => ({ code: "FAILED_PRECONDITION", message: `${INVALID}: ${detail}` });
const TERMINAL: RunStatus[] = ["COMPLETED", "CANCELLED", "FAILED", "COMPLETED_WITH_FAILURES"];

describe("controls: pause", () => {
  it.each([
    ["PENDING", "NONE"],
    ["RUNNING", "NONE"],
  ] as const)(
    "%s → PAUSED OPERATOR_PAUSED 'operation run paused by operator', returned as committed",
    async (status, reason) => {
      const w = await world({
        phases: [["PENDING"]],
        status,
        reason,
        statusMessage: "submitted 1 operation run target",
      });
      const paused = await w.controls.pause(RUN);
      expect(paused).toMatchObject({
        status: "PAUSED",
        reason: "OPERATOR_PAUSED",
        statusMessage: "operation run paused by operator",
        updatedAt: w.clock.now,
      });
      expect(await w.stored()).toEqual(paused);
      expect(w.dispatched).toEqual([]);
    },
  );

  it.each(["SAFETY_GATE", "PHASE_GATE", "CONFLICT_RETRY_TIMEOUT", "OPERATOR_PAUSED"] as const)(
    "already PAUSED (%s): unchanged, nothing written, the reason kept",
    async (reason) => {
      const w = await world({ phases: [["PENDING"]], status: "PAUSED", reason, statusMessage: "why" });
      expect(await w.controls.pause(RUN)).toEqual(w.run);
      expect(w.runs.writes()).toBe(0);
    },
  );

  it.each(TERMINAL)(
    "%s → FailedPrecondition '…: <id> is in terminal state <status in lower case>'",
    async (status) => {
      const w = await world({ phases: [["COMPLETED"]], status });
      await expect(w.controls.pause(RUN)).rejects.toMatchObject(
        refused(`${RUN} is in terminal state ${status.toLowerCase()}`),
      );
      expect(w.runs.writes()).toBe(0);
    },
  );

  it("an unknown run → NotFound 'operation run not found: <id>' (every control)", async () => {
    const w = await world({ phases: [["PENDING"]] });
    const missing = uuid(9, "c0a70000");
    const notFound = { code: "NOT_FOUND", message: `operation run not found: ${missing}` };
    await expect(w.controls.pause(missing)).rejects.toMatchObject(notFound);
    await expect(w.controls.resume(missing)).rejects.toMatchObject(notFound);
    await expect(w.controls.advance(missing, 1)).rejects.toMatchObject(notFound);
    await expect(w.controls.cancel(missing, "x")).rejects.toMatchObject(notFound);
  });
});

describe("controls: resume", () => {
  it.each([
    ["PENDING", "NONE", "is not paused"],
    ["RUNNING", "NONE", "is not paused"],
    ["COMPLETED", "NONE", "is not paused"],
    ["PAUSED", "PHASE_GATE", "is paused at a phase gate; use AdvanceOperationRunPhase"],
  ] as const)("%s (%s) → FailedPrecondition '…: <id> %s'", async (status, reason, detail) => {
    const w = await world({ phases: [["PENDING"]], status, reason });
    await expect(w.controls.resume(RUN)).rejects.toMatchObject(refused(`${RUN} ${detail}`));
    expect(w.runs.writes()).toBe(0);
    expect(w.dispatched).toEqual([]);
  });

  it.each(["OPERATOR_PAUSED", "SAFETY_GATE"] as const)(
    "PAUSED (%s) → RUNNING NONE 'operation run resumed', then one dispatch; no conflict clock touched",
    async (reason) => {
      const w = await world({ phases: [["BLOCKED", "PENDING"]], status: "PAUSED", reason });
      const resumed = await w.controls.resume(RUN);
      expect(resumed).toMatchObject({
        status: "RUNNING",
        reason: "NONE",
        statusMessage: "operation run resumed",
      });
      expect(await w.stored()).toEqual(resumed);
      expect(w.dispatched).toEqual([RUN]);
      expect(w.runs.calls.of("restartConflictClock")).toBe(0);
    },
  );

  it("PAUSED (CONFLICT_RETRY_TIMEOUT) → RUNNING; the current phase's BLOCKED targets restart their clocks before the dispatch", async () => {
    const seenAtDispatch: (number | undefined)[] = [];
    const store = new MemoryRunStore();
    const w = await world(
      {
        // Phase 1's BLOCKED target cannot happen in a real run; it shows only phase 0 is touched.
        phases: [["BLOCKED", "SUBMITTED", "BLOCKED"], ["BLOCKED"]],
        status: "PAUSED",
        reason: "CONFLICT_RETRY_TIMEOUT",
        target: (i) => (i === 2 ? { conflictAttempts: 5, retryAt: T0 + 99 } : {}),
      },
      {
        store,
        dispatch: async (runId) => {
          seenAtDispatch.push((await store.getTarget(runId, w.targets[0]!.id))?.firstBlockedAt);
        },
      },
    );
    w.clock.now = T0 + 4 * 3_600_000;
    await w.controls.resume(RUN);
    expect(await w.target(0)).toMatchObject({
      status: "BLOCKED",
      firstBlockedAt: w.clock.now,
      conflictAttempts: 1,
    });
    expect(await w.target(2)).toMatchObject({
      status: "BLOCKED",
      firstBlockedAt: w.clock.now,
      conflictAttempts: 5,
      retryAt: T0 + 99,
    });
    expect(await w.target(1)).toEqual(w.targets[1]);
    expect(await w.target(3)).toEqual(w.targets[3]);
    expect(w.runs.calls.of("restartConflictClock")).toBe(2);
    expect(seenAtDispatch).toEqual([w.clock.now]);
  });

  it("a paused run whose every target got its outcome meanwhile → straight to its final status, no dispatch", async () => {
    const w = await world({ phases: [["COMPLETED", "FAILED"]], status: "PAUSED", reason: "SAFETY_GATE" });
    const resumed = await w.controls.resume(RUN);
    expect(resumed).toMatchObject({
      status: "COMPLETED_WITH_FAILURES",
      reason: "NONE",
      statusMessage: "operation run completed with failed targets",
      finishedAt: w.clock.now,
    });
    expect(w.dispatched).toEqual([]);
  });

  it("a failing dispatch after resume is logged; the resume stands", async () => {
    const w = await world(
      { phases: [["PENDING"]], status: "PAUSED", reason: "OPERATOR_PAUSED" },
      {
        dispatch: async () => {
          throw new Error("lambda throttled");
        },
      },
    );
    expect((await w.controls.resume(RUN)).status).toBe("RUNNING");
    expect(w.logs).toEqual([
      `warn dispatch after a manual control failed; the next tick retries runId=${RUN} error=Error: lambda throttled`,
    ]);
  });

  it("without a dispatch function the dispatcher's dispatchRun is called; with neither, none", async () => {
    const calls: string[] = [];
    const runs = new MemoryRunStore();
    for (const [i, id] of [uuid(2, "c0a70000"), uuid(3, "c0a70000")].entries()) {
      const { run, targets } = runInState(id, {
        phases: [["PENDING"]],
        status: "PAUSED",
        reason: "OPERATOR_PAUSED",
      });
      await runs.createRun(run, targets);
      const controls = createControls({
        runs,
        submitter: new ScriptedSubmitter(),
        clock: clockOf(() => T0 + 1),
        ...(i === 0
          ? {
              dispatcher: {
                dispatchRun: async (runId: string) => {
                  calls.push(runId);
                  return { runId, decision: "claimed" as const, submitted: 0, blocked: 0, failed: 0 };
                },
              },
            }
          : {}),
      });
      expect((await controls.resume(id)).status).toBe("RUNNING");
    }
    expect(calls).toEqual([uuid(2, "c0a70000")]);
  });
});

describe("controls: advance", () => {
  const atGate: RunState = {
    phases: [["COMPLETED", "FAILED"], ["PENDING"], ["PENDING"]],
    status: "PAUSED",
    reason: "PHASE_GATE",
    statusMessage: "waiting for phase advance",
  };

  it.each([
    ["RUNNING", "NONE"],
    ["PAUSED", "OPERATOR_PAUSED"],
    ["PAUSED", "SAFETY_GATE"],
    ["COMPLETED", "NONE"],
  ] as const)(
    "%s (%s) → FailedPrecondition '…: <id> is not paused at a phase gate'",
    async (status, reason) => {
      const w = await world({ ...atGate, status, reason });
      await expect(w.controls.advance(RUN, 1)).rejects.toMatchObject(
        refused(`${RUN} is not paused at a phase gate`),
      );
      expect(w.runs.writes()).toBe(0);
    },
  );

  it("at a phase gate with the phase not complete → '…: phase 0 is not complete'", async () => {
    const w = await world({ ...atGate, phases: [["COMPLETED", "SUBMITTED"], ["PENDING"]] });
    await expect(w.controls.advance(RUN)).rejects.toMatchObject(refused("phase 0 is not complete"));
  });

  it("at a phase gate in the final phase (an earlier one still open) → '…: phase 1 is the final phase'", async () => {
    const w = await world({ ...atGate, phases: [["SUBMITTED"], ["COMPLETED"]], currentPhaseIndex: 1 });
    await expect(w.controls.advance(RUN)).rejects.toMatchObject(refused("phase 1 is the final phase"));
  });

  it("a wrong expected phase → '…: expected phase 2, next phase is 1'", async () => {
    const w = await world(atGate);
    await expect(w.controls.advance(RUN, 2)).rejects.toMatchObject(
      refused("expected phase 2, next phase is 1"),
    );
    expect(w.runs.writes()).toBe(0);
  });

  it.each([
    ["the next phase, 1", 1],
    ["0 (skips the check)", 0],
    ["nothing (skips the check)", undefined],
  ])("expected %s → RUNNING 'advanced to phase 1' in phase 1, then one dispatch", async (_, expected) => {
    const w = await world(atGate);
    const advanced = await w.controls.advance(RUN, expected);
    expect(advanced).toMatchObject({
      status: "RUNNING",
      reason: "NONE",
      statusMessage: "advanced to phase 1",
      currentPhaseIndex: 1,
    });
    expect(await w.stored()).toEqual(advanced);
    expect(w.dispatched).toEqual([RUN]);
  });

  it("at a phase gate with every target already ended → the final status, no dispatch", async () => {
    const w = await world({ ...atGate, phases: [["COMPLETED"], ["COMPLETED"]] });
    expect(await w.controls.advance(RUN, 1)).toMatchObject({
      status: "COMPLETED",
      statusMessage: "operation run completed",
      currentPhaseIndex: 0,
    });
    expect(w.dispatched).toEqual([]);
  });
});

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

describe("controls: 'stale' writes are read again and decided again", () => {
  /** A rival that writes the run first (as a dispatcher or another control would), changing `fields`. */
  const rivalWrite = (runs: MemoryRunStore, fields: Partial<Run>) => async () => {
    const run = (await runs.getRun(RUN)) as Run;
    expect(await runs.saveRun({ ...run, ...fields, updatedAt: run.updatedAt + 1 }, run.updatedAt)).toBe(
      "saved",
    );
  };

  it("a dispatcher auto-advanced first: pause pauses the run as it is now, in phase 1", async () => {
    const w = await world({ phases: [["COMPLETED"], ["PENDING"]] });
    w.runs.interleave(
      "saveRun",
      rivalWrite(w.runs, { currentPhaseIndex: 1, statusMessage: "advanced to next phase" }),
    );
    expect(await w.controls.pause(RUN)).toMatchObject({
      status: "PAUSED",
      reason: "OPERATOR_PAUSED",
      currentPhaseIndex: 1,
    });
    expect(w.runs.calls.of("saveRun")).toBe(3);
  });

  it("another operator cancelled first: pause is refused as on a cancelled run", async () => {
    const w = await world({ phases: [["PENDING"]] });
    w.runs.interleave("saveRun", rivalWrite(w.runs, { status: "CANCELLED", finishedAt: T0 }));
    await expect(w.controls.pause(RUN)).rejects.toMatchObject(
      refused(`${RUN} is in terminal state cancelled`),
    );
  });

  it("a gate paused the run first: advance is refused, it is no longer at a phase gate", async () => {
    const w = await world({ phases: [["COMPLETED"], ["PENDING"]], status: "PAUSED", reason: "PHASE_GATE" });
    w.runs.interleave("saveRun", rivalWrite(w.runs, { reason: "SAFETY_GATE" }));
    await expect(w.controls.advance(RUN, 1)).rejects.toMatchObject(
      refused(`${RUN} is not paused at a phase gate`),
    );
    expect(w.dispatched).toEqual([]);
  });

  it("cancel after a stale write acts once, after its own commit", async () => {
    const w = await world({ phases: [["SUBMITTED", "PENDING"]] });
    w.runs.interleave("saveRun", rivalWrite(w.runs, { statusMessage: "submitted 1 operation run target" }));
    await w.controls.cancel(RUN, "");
    expect(w.submitter.cancels).toHaveLength(1);
    expect(w.runs.calls.of("skipTargets")).toBe(1);
  });

  it.each([
    [10, "saves on the 11th try"],
    [11, "gives up: 'operation run <id> kept changing; gave up after 11 attempts'"],
  ])("%i stale writes in a row: pause %s", async (stale) => {
    const w = await world({ phases: [["PENDING"]] });
    for (let i = 0; i < stale; i++)
      w.runs.interleave("saveRun", rivalWrite(w.runs, { statusMessage: `rival ${i}` }));
    const pausing = w.controls.pause(RUN);
    if (stale === 10) expect((await pausing).status).toBe("PAUSED");
    else
      await expect(pausing).rejects.toThrow(`operation run ${RUN} kept changing; gave up after 11 attempts`);
  });

  it("the run is gone when the write lands ('not-found') → NotFound", async () => {
    class VanishingRunStore extends MemoryRunStore {
      override async saveRun(): Promise<"not-found"> {
        return "not-found";
      }
    }
    const w = await world({ phases: [["PENDING"]] }, { store: new VanishingRunStore() });
    await expect(w.controls.cancel(RUN, "")).rejects.toMatchObject({
      code: "NOT_FOUND",
      message: `operation run not found: ${RUN}`,
    });
    expect(w.submitter.cancels).toEqual([]);
  });
});
