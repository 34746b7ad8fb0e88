/**
 * One phase numbering for people: a run's life as the domain writes it, carried to the wire by the
 * gRPC converters and printed by flowctl (the watch's status, message and event lines, the history
 * table, a refused advance), names its first phase "phase 1" everywhere, while every phase index on
 * the wire stays zero-based. The reference's zero-based advance messages stay word for word on the
 * wire and are shown counted from 1.
 */
import { Metadata, type ServiceError, status } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { describeServiceError } from "../../cli/errors.js";
import { eventLine, historyTable } from "../../cli/history.js";
import { errorDetailsForPeople, statusMessageForPeople } from "../../cli/phase-numbers.js";
import { buildModel, finalLine, renderFrame, renderPlainLine } from "../../cli/watch-view.js";
import { runEventToProto } from "../../src/adapters/grpc/convert/run-events.js";
import { runToProto } from "../../src/adapters/grpc/convert/run-response.js";
import type { Actor } from "../../src/domain/actor.js";
import type { RunHistoryEvent } from "../../src/domain/history-event.js";
import type { Run } from "../../src/domain/model.js";
import { historyEvents } from "../../src/domain/run-history.js";
import { type RunEvent, reduceRun } from "../../src/domain/run-machine.js";
import { runInState, T0 } from "../support/run-states.js";

const ID = "7a2e0000-0000-4000-8000-000000000001";
const OPS: Actor = { name: "ops", source: "CLIENT_CERTIFICATE", authenticated: true, subjectAltNames: [] };

/** The reducer's write for `event`, then its history, as the use cases do it. */
function step(
  before: Run,
  event: RunEvent,
  now: number,
  actor?: Actor,
): { run: Run; events: RunHistoryEvent[] } {
  const result = reduceRun(before, event, now);
  if (!result.ok) throw result.error;
  if (!result.write) throw new Error("the reducer wrote nothing");
  const run = { ...result.run, updatedAt: Math.max(now, before.updatedAt + 1) };
  return { run, events: historyEvents(before, run, event, now, actor) };
}

/** Every target of phase index `phase` completed, as the store's transitions would leave it. */
function completePhase(run: Run, phase: number): Run {
  const counters = run.counters.map((c, i) =>
    i === phase ? { ...c, completed: run.phaseSizes[i] ?? 0 } : c,
  );
  return { ...run, counters };
}

/** A three-phase run [1, 2, 1] from its first claim through an operator's advance. */
function lifeOfARun(): { run: Run; events: RunHistoryEvent[] } {
  const created = runInState(ID, {
    phases: [["PENDING"], ["PENDING", "PENDING"], ["PENDING"]],
    status: "PENDING",
    config: { autoAdvance: false },
  });
  const started = step(created.run, { type: "evaluate" }, T0 + 1_000);
  const gate = step(completePhase(started.run, 0), { type: "evaluate" }, T0 + 2_000);
  const advanced = step(gate.run, { type: "advance", expectedPhaseIndex: 1 }, T0 + 3_000, OPS);
  return { run: advanced.run, events: [...started.events, ...gate.events, ...advanced.events] };
}

/** The numbers a text names phases by ("phase 2", "phase 2/3"). */
const phaseNumbers = (text: string): number[] =>
  [...text.matchAll(/\bphase (\d+)/g)].map((m) => Number(m[1]));

describe("phase numbering: a run's life as flowctl shows it", () => {
  const { run, events } = lifeOfARun();
  const wire = events.map(runEventToProto);

  it("the watch's event lines name phase index 0 'phase 1' in the label and in the message alike", () => {
    expect(wire.map((e) => eventLine(e).slice(9))).toEqual([
      "started (phase 1): operation run started",
      "phase opened (phase 1): phase 1 opened: 1 target",
      "phase gate (phase 1): phase 1 complete: waiting for phase advance",
      "advanced (phase 2) by ops (certificate): advanced from phase 1 to phase 2",
      "phase opened (phase 2): phase 2 opened: 2 targets",
    ]);
  });

  it("the wire keeps zero-based indexes: the events' phase_index and the advance's detail", () => {
    expect(wire.map((e) => e.phaseIndex)).toEqual([0, 0, 0, 1, 1]);
    expect(events[3]?.detail).toEqual({
      type: "advance",
      fromPhaseIndex: 0,
      toPhaseIndex: 1,
      expectedPhaseIndex: 1,
    });
  });

  it("no history message or line names a phase 0 or one past the last", () => {
    const texts = [
      ...events.map((e) => e.message),
      ...wire.map(eventLine),
      ...historyTable(wire).split("\n"),
    ];
    for (const text of texts) {
      for (const n of phaseNumbers(text)) {
        expect(n, text).toBeGreaterThanOrEqual(1);
        expect(n, text).toBeLessThanOrEqual(3);
      }
    }
  });

  it("the run keeps the reference's status message on the wire; the watch shows it counted from 1", () => {
    const proto = runToProto(run);
    expect(proto.summary?.statusMessage).toBe("advanced to phase 1");
    const model = buildModel({
      run: proto,
      targets: [],
      plannedSizes: [1, 2, 1],
      now: new Date(T0 + 4_000),
      events: wire,
    });
    const frame = renderFrame(model, { color: false, columns: 200, barWidth: 10 });
    expect(frame[1]).toMatch(/^status {3}RUNNING {2}· {2}phase 2\/3 /);
    expect(frame[2]).toBe("message  advanced to phase 2");
    expect(frame.filter((l) => l.endsWith("phase opened (phase 2): phase 2 opened: 2 targets"))).toHaveLength(
      1,
    );
    expect(renderPlainLine(model, new Date(T0 + 4_000))).toMatch(/ RUNNING phase 2\/3 \| p1 /);
    expect(finalLine(model)).toMatch(/ — advanced to phase 2$/);
  });
});

/** What the reducer refuses an advance of `run` with, as a gRPC FAILED_PRECONDITION. */
function refusedAdvance(run: Run, expectedPhaseIndex?: number): ServiceError {
  const result = reduceRun(run, { type: "advance", expectedPhaseIndex }, T0 + 5_000);
  if (result.ok) throw new Error("the advance was accepted");
  const details = result.error.message;
  return Object.assign(new Error(`9 FAILED_PRECONDITION: ${details}`), {
    code: status.FAILED_PRECONDITION,
    details,
    metadata: new Metadata(),
  });
}

describe("phase numbering: a refused advance as flowctl prints it", () => {
  const atGate = (phases: Parameters<typeof runInState>[1]["phases"], currentPhaseIndex: number) =>
    runInState(ID, { phases, status: "PAUSED", reason: "PHASE_GATE", currentPhaseIndex }).run;
  const PREFIX = "operation run is not in a valid state for the requested operation: ";

  it.each([
    {
      when: "--expect 3 at the gate after phase 1",
      run: atGate([["COMPLETED"], ["PENDING"], ["PENDING"]], 0),
      expected: 2,
      onWire: "expected phase 2, next phase is 1",
      shown: "expected phase 3, next phase is 2",
    },
    {
      when: "the first phase not complete",
      run: atGate([["COMPLETED", "SUBMITTED"], ["PENDING"]], 0),
      expected: undefined,
      onWire: "phase 0 is not complete",
      shown: "phase 1 is not complete",
    },
    {
      when: "the last phase complete, an earlier one not",
      run: atGate([["SUBMITTED"], ["COMPLETED"]], 1),
      expected: undefined,
      onWire: "phase 1 is the final phase",
      shown: "phase 2 is the final phase",
    },
  ])(
    "$when: the service says '$onWire' (the reference's text), flowctl '$shown'",
    ({ run, expected, onWire, shown }) => {
      const err = refusedAdvance(run, expected);
      expect(err.details).toBe(`${PREFIX}${onWire}`);
      expect(describeServiceError(err, { endpoint: "127.0.0.1:50051" })[0]).toBe(
        `error: ${PREFIX}${shown} (FAILED_PRECONDITION)`,
      );
    },
  );

  it("only the exact texts are rewritten: a cancel reason or another error that contains one is not", () => {
    expect(statusMessageForPeople("operation run cancelled: advanced to phase 1")).toBe(
      "operation run cancelled: advanced to phase 1",
    );
    expect(statusMessageForPeople("advanced to phase 10")).toBe("advanced to phase 11");
    expect(errorDetailsForPeople("phase 0 is not complete")).toBe("phase 0 is not complete");
    expect(errorDetailsForPeople(`${PREFIX}run abc is not paused at a phase gate`)).toBe(
      `${PREFIX}run abc is not paused at a phase gate`,
    );
  });
});
