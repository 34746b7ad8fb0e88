/**
 * The run history through the use cases, on the in-memory stores (held to the same history
 * contract as DynamoDB): create records CREATED with its caller and plan; each control records
 * itself with its caller, once, however often it is retried; racing dispatchers record a phase
 * opening once; duplicated and replayed stream batches add nothing; ListOperationRunEvents reads
 * the history back (NotFound for an unknown run).
 */

import { describe, expect, it } from "vitest";
import { createControls } from "../../src/app/controls.js";
import { createDispatcher } from "../../src/app/dispatcher.js";
import { createRunService } from "../../src/app/runs.js";
import { createStreamEvaluator, type StreamChange } from "../../src/app/stream-evaluator.js";
import type { Actor } from "../../src/domain/actor.js";
import type { RunHistoryEvent } from "../../src/domain/history-event.js";
import type { Run } from "../../src/domain/model.js";
import { clockOf } from "../support/clock.js";
import { createRunInput } from "../support/domain-fixtures.js";
import { uuid } from "../support/dynamodb-fixtures.js";
import { everyImage } from "../support/memory-images.js";
import { MemoryInventoryStore, MemoryRunStore } from "../support/memory-stores.js";
import { type RunState, runInState, T0 } from "../support/run-states.js";
import { ScriptedSubmitter } from "../support/scripted-submitter.js";

const RUN = uuid(1, "415e0000");
const ALL = { offset: 0, limit: 100 };
const OPS: Actor = {
  name: "ops",
  source: "CLIENT_CERTIFICATE",
  authenticated: true,
  subjectAltNames: ["DNS:ops.example.com"],
};
const ALICE: Actor = { name: "alice", source: "DECLARED", authenticated: false, subjectAltNames: [] };

async function world(state: RunState) {
  const runs = new MemoryRunStore();
  const { run, targets } = runInState(RUN, state);
  await runs.createRun(run, targets);
  const clock = { now: T0 + 1000 };
  const submitter = new ScriptedSubmitter();
  const deps = { runs, submitter, clock: clockOf(() => clock.now), log: () => undefined };
  const dispatcher = createDispatcher(deps);
  const controls = createControls(deps);
  const history = async () => (await runs.listRunEvents(RUN, ALL))?.events ?? [];
  return { runs, run, targets, clock, submitter, dispatcher, controls, history };
}

const kindsOf = (events: RunHistoryEvent[]) => events.map((e) => e.kind);

describe("history: create", () => {
  it("CREATED with the caller, the plan's size and seeds, in the commit; ListOperationRunEvents reads it back", async () => {
    const runs = new MemoryRunStore();
    const rack = (n: number) => ({
      id: uuid(n, "aaaa0000"),
      name: `rack-${n}`,
      externalId: `EXT-${n}`,
      components: [{ id: uuid(n, "cccc0000"), type: "COMPUTE" as const }],
    });
    const inventory = new MemoryInventoryStore([1, 2, 3, 4].map(rack));
    let ids = 0;
    const service = createRunService({
      images: everyImage,
      runs,
      inventory,
      clock: clockOf(() => T0),
      newId: () => uuid(++ids, "1d000000"),
    });
    const { id } = await service.createRun(
      createRunInput({ name: "canary", maxConcurrentTargets: 2, phaseCount: 2 }),
      {
        actor: ALICE,
      },
    );
    expect(runs.calls.of("createRun")).toBe(1);
    const { events, total } = await service.listRunEvents({ runId: id, page: ALL });
    expect(total).toBe(1);
    expect(events[0]).toMatchObject({
      runId: id,
      at: T0,
      kind: "CREATED",
      status: "PENDING",
      message: "operation run created: 4 targets in 2 phases",
      actor: ALICE,
      detail: { type: "plan", targets: 4, phaseSizes: [2, 2], selectionSeed: "sel", orderingSeed: "ord" },
    });
    await expect(service.listRunEvents({ runId: uuid(9, "dead0000"), page: ALL })).rejects.toMatchObject({
      code: "NOT_FOUND",
      message: `operation run not found: ${uuid(9, "dead0000")}`,
    });
  });
});

describe("history: the controls record themselves and their caller, once", () => {
  it("pause, resume, cancel: one event each with the caller; pausing a paused run records nothing more", async () => {
    const w = await world({ phases: [["SUBMITTED", "PENDING"]], status: "RUNNING" });
    await w.controls.pause(RUN, OPS);
    w.clock.now += 10;
    await w.controls.pause(RUN, ALICE); // already paused: no write, no event
    w.clock.now += 10;
    await w.controls.resume(RUN, ALICE);
    w.clock.now += 10;
    await w.controls.cancel(RUN, " wrong image ", OPS);
    expect((await w.history()).map((e) => [e.kind, e.actor?.name, e.message])).toEqual([
      ["PAUSED", "ops", "operation run paused by operator"],
      ["RESUMED", "alice", "operation run resumed"],
      ["CANCELLED", "ops", "operation run cancelled: wrong image"],
    ]);
    // A retried cancel (the answer was lost) finds the run cancelled: nothing more.
    await w.controls.cancel(RUN, " wrong image ", OPS);
    expect(kindsOf(await w.history())).toEqual(["PAUSED", "RESUMED", "CANCELLED"]);
  });

  it("advance at a phase gate: ADVANCED with the caller and the expected phase, then PHASE_OPENED", async () => {
    const w = await world({
      phases: [["COMPLETED"], ["PENDING"]],
      status: "PAUSED",
      reason: "PHASE_GATE",
      statusMessage: "waiting for phase advance",
    });
    await w.controls.advance(RUN, 1, OPS);
    const events = await w.history();
    expect(events.map((e) => [e.kind, e.phaseIndex, e.actor?.name])).toEqual([
      ["ADVANCED", 1, "ops"],
      ["PHASE_OPENED", 1, undefined],
    ]);
    expect(events[0]?.detail).toEqual({
      type: "advance",
      fromPhaseIndex: 0,
      toPhaseIndex: 1,
      expectedPhaseIndex: 1,
    });
  });

  it("a control whose first write loses to a dispatcher's decides again and records only what it committed", async () => {
    const w = await world({ phases: [["COMPLETED", "PENDING"]], status: "RUNNING" });
    // A pass that trips nothing but moves the run's version slips in before the pause's write.
    w.runs.interleave("saveRun", async () => {
      const run = (await w.runs.getRun(RUN)) as Run;
      await w.runs.saveRun(
        { ...run, statusMessage: "submitted 1 operation run target", updatedAt: run.updatedAt + 1 },
        run.updatedAt,
      );
    });
    await w.controls.pause(RUN, OPS);
    expect((await w.history()).map((e) => [e.kind, e.actor?.name])).toEqual([["PAUSED", "ops"]]);
    expect(w.runs.calls.of("saveRun")).toBe(3); // the pause's lost write, the rival's, the pause's again
  });
});

describe("history: dispatchers racing on one decision record it once", () => {
  it("4 dispatchers at the same phase boundary: all decide to open phase index 1, one write commits, one PHASE_OPENED", async () => {
    const w = await world({
      phases: [
        ["COMPLETED", "COMPLETED"],
        ["PENDING", "PENDING"],
      ],
      status: "RUNNING",
      config: { autoAdvance: true },
    });
    const stale: number[] = [];
    const counting = new Proxy(w.runs, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (prop !== "saveRun") return typeof value === "function" ? value.bind(target) : value;
        return async (run: Run, expected: number, events: RunHistoryEvent[] = []) => {
          const outcome = await target.saveRun(run, expected, events);
          if (outcome === "stale" && events.length > 0) stale.push(events.length);
          return outcome;
        };
      },
    });
    const dispatchers = Array.from({ length: 4 }, () =>
      createDispatcher({
        runs: counting,
        submitter: w.submitter,
        clock: clockOf(() => w.clock.now),
        log: () => undefined,
      }),
    );
    // Separate dispatchers (separate processes, as Lambdas are): nothing coalesces their passes.
    await Promise.all(dispatchers.map((d) => d.dispatchRun(RUN)));
    expect(stale.length).toBe(3);
    const events = await w.history();
    expect(events.map((e) => [e.kind, e.phaseIndex])).toEqual([["PHASE_OPENED", 1]]);
    expect((await w.runs.getRun(RUN))?.currentPhaseIndex).toBe(1);
  });

  it("a whole run, 4 dispatchers racing every pass: started, each phase opened once, finished", async () => {
    const w = await world({
      phases: [
        ["PENDING", "PENDING"],
        ["PENDING", "PENDING"],
        ["PENDING", "PENDING"],
      ],
      status: "PENDING",
      config: { autoAdvance: true },
    });
    const dispatchers = Array.from({ length: 4 }, () =>
      createDispatcher({
        runs: w.runs,
        submitter: w.submitter,
        clock: clockOf(() => w.clock.now),
        log: () => undefined,
      }),
    );
    for (let round = 0; round < 20; round++) {
      const results = await Promise.all(dispatchers.map((d) => d.dispatchRun(RUN)));
      if (results.some((r) => r.decision === "finished" || r.decision === "inactive")) break;
      w.clock.now += 1000;
      // Every submitted child task completes before the next round of passes.
      for (const t of (await w.runs.listTargets(RUN, { phaseFrom: 0, phaseTo: 2, page: ALL }))?.targets ??
        []) {
        if (t.status === "SUBMITTED") await w.runs.recordOutcome(RUN, t.id, "COMPLETED", "done", w.clock.now);
      }
    }
    expect((await w.history()).map((e) => [e.kind, e.phaseIndex])).toEqual([
      ["STARTED", 0],
      ["PHASE_OPENED", 0],
      ["PHASE_OPENED", 1],
      ["PHASE_OPENED", 2],
      ["FINISHED", 2],
    ]);
    expect((await w.runs.getRun(RUN))?.status).toBe("COMPLETED");
  });

  it("duplicated and replayed stream batches wake passes that find nothing to change: the history stays as it was", async () => {
    const w = await world({
      phases: [["COMPLETED", "FAILED"], ["PENDING"]],
      status: "RUNNING",
      config: { autoAdvance: false, safetyGates: [] },
    });
    const evaluator = createStreamEvaluator({ dispatcher: w.dispatcher, log: () => undefined });
    const ended: StreamChange = {
      kind: "target",
      runId: RUN,
      eventName: "MODIFY",
      oldStatus: "SUBMITTED",
      newStatus: "FAILED",
      sequenceNumber: "100",
    };
    await evaluator.handle([ended]);
    const once = await w.history();
    expect(kindsOf(once)).toEqual(["PHASE_GATE_REACHED"]);
    // The same record twice in one batch, the batch again, and again later.
    await evaluator.handle([ended, ended]);
    await evaluator.handle([ended, ended]);
    w.clock.now += 60_000;
    await evaluator.handle([ended]);
    expect(await w.history()).toEqual(once);
  });
});
