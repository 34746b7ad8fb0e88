/**
 * Pause and resume (src/app/controls.ts) as tables on the in-memory RunStore: every state each meets,
 * with the exact FailedPrecondition texts; resume after CONFLICT_RETRY_TIMEOUT restarts the conflict
 * clocks, and resume triggers a dispatch.
 */
import { describe, expect, it } from "vitest";
import { createControls } from "../../src/app/controls.js";
import { clockOf } from "../support/clock.js";
import { RUN, refused, TERMINAL, world } from "../support/controls-world.js";
import { uuid } from "../support/dynamodb-fixtures.js";
import { MemoryRunStore } from "../support/memory-stores.js";
import { runInState, T0 } from "../support/run-states.js";
import { ScriptedSubmitter } from "../support/scripted-submitter.js";

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
