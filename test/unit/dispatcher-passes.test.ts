/**
 * The dispatcher's passes: concurrent writers, coalesced passes of one run, the tick over every
 * active run, and the metrics a pass emits.
 */
import { describe, expect, it } from "vitest";
import { createDispatcher } from "../../src/app/dispatcher.js";
import type { Run } from "../../src/domain/model.js";
import { clockOf } from "../support/clock.js";
import { FAIL_ONE, passResult, RUN, world } from "../support/dispatcher-world.js";
import { uuid } from "../support/dynamodb-fixtures.js";
import { MemoryRunStore } from "../support/memory-stores.js";
import { type RunState, runInState, T0 } from "../support/run-states.js";
import { ScriptedSubmitter, taskIdFor } from "../support/scripted-submitter.js";

describe("dispatcher: concurrent writers and coalesced passes", () => {
  it("an operator pause between the pass's read and its write: 'stale', read again, and the pass ends 'inactive'", async () => {
    const w = await world({ phases: [["PENDING"]], status: "PENDING" });
    w.runs.interleave("saveRun", () => w.controls.pause(RUN));
    expect(await w.pass()).toEqual(passResult("inactive", { status: "PAUSED" }));
    expect(w.submitter.submits).toEqual([]);
  });

  it.each([
    [
      "5 stale writes in a row: the sixth try saves and the pass claims",
      5,
      passResult("claimed", { status: "RUNNING", submitted: 1 }),
    ],
    ["6 stale writes in a row: the pass gives up 'contended' and logs it", 6, passResult("contended")],
  ])("%s", async (_, stale, result) => {
    const w = await world({ phases: [["PENDING"]], status: "PENDING" });
    const rival = async () => {
      const run = (await w.runs.getRun(RUN)) as Run;
      await w.runs.saveRun({ ...run, statusMessage: "rival", updatedAt: run.updatedAt + 1 }, run.updatedAt);
    };
    for (let i = 0; i < stale; i++) w.runs.interleave("saveRun", rival);
    expect(await w.pass()).toEqual(result);
    const giveUp = `warn dispatch pass gave up after repeated concurrent writes runId=${RUN}`;
    if (result.decision === "contended") {
      // Six tries of its own (each beaten by a rival's), then it stops.
      expect(w.runs.calls.of("saveRun")).toBe(12);
      expect(w.logs).toContain(giveUp);
      expect(w.submitter.submits).toEqual([]);
    } else {
      expect(w.logs).not.toContain(giveUp);
    }
  });

  it("calls made while a pass runs share ONE queued pass: three calls, two passes", async () => {
    const w = await world({ phases: [["PENDING", "PENDING", "PENDING"]], maxConcurrent: 1 });
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered = () => {};
    const inside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    w.runs.interleave("getRunForDispatch", async () => {
      entered();
      await gate;
    });
    const first = w.pass();
    await inside;
    const second = w.pass();
    const third = w.pass();
    expect(third).toBe(second);
    expect(second).not.toBe(first);
    release();
    await Promise.all([first, second, third]);
    expect(w.runs.calls.of("getRunForDispatch")).toBe(2);
  });
});

describe("dispatcher: tick", () => {
  class FailingRunStore extends MemoryRunStore {
    constructor(private readonly broken: string) {
      super();
    }
    override async getRunForDispatch(runId: string) {
      if (runId === this.broken) throw new Error("connection reset");
      return super.getRunForDispatch(runId);
    }
  }

  it("passes every PENDING and RUNNING run, skips paused and finished ones, and counts a failing pass without stopping the others", async () => {
    const ids = [1, 2, 3, 4, 5].map((n) => uuid(n, "71c00000"));
    const store = new FailingRunStore(ids[2]!);
    const states: RunState[] = [
      { phases: [["PENDING", "PENDING"]], status: "PENDING" },
      { phases: [["SUBMITTED", "PENDING"]] },
      { phases: [["PENDING"]] },
      { phases: [["PENDING"]], status: "PAUSED", reason: "OPERATOR_PAUSED" },
      { phases: [["COMPLETED"]], status: "COMPLETED" },
    ];
    for (const [i, state] of states.entries()) {
      const { run, targets } = runInState(ids[i]!, state);
      await store.createRun(run, targets);
    }
    const logs: string[] = [];
    const submitter = new ScriptedSubmitter();
    const dispatcher = createDispatcher({
      runs: store,
      submitter,
      clock: clockOf(() => T0),
      log: (l) => void logs.push(l),
    });
    expect(await dispatcher.tick()).toEqual({ runs: 3, failed: 1, submitted: 3 });
    expect(new Set(submitter.submits.map((r) => r.runId))).toEqual(new Set([ids[0], ids[1]]));
    expect(logs).toContain(`error dispatch pass failed runId=${ids[2]} error=Error: connection reset`);
  });
});

describe("dispatcher: metrics", () => {
  it("each pass flushes once: TargetsDispatched, RackConflicts and DispatchLatencyMs; GateTrips when a gate pauses the run", async () => {
    const w = await world({ phases: [["PENDING", "PENDING", "PENDING"]] });
    w.submitter.answer = (r) =>
      r.targetId === w.targets[2]!.id
        ? { kind: "conflict", message: "busy" }
        : { kind: "submitted", taskId: taskIdFor(r.targetId) };
    await w.pass();
    expect(w.metrics.added).toEqual([
      ["TargetsDispatched", 2],
      ["RackConflicts", 1],
      ["DispatchLatencyMs", 0],
    ]);
    expect(w.metrics.flushes()).toBe(1);

    const gated = await world({ phases: [["FAILED", "PENDING"]], config: { safetyGates: [FAIL_ONE] } });
    await gated.pass();
    expect(gated.metrics.added).toEqual([
      ["GateTrips", 1],
      ["DispatchLatencyMs", 0],
    ]);
    expect(gated.logs).toContain(
      `info operation run state changed runId=${RUN} status=PAUSED reason=SAFETY_GATE statusMessage=failure_count safety gate tripped for current_phase: 1/2 targets failed (threshold 1)`,
    );
  });
});
