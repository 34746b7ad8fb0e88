/**
 * The RunStore's history half (createRun's and saveRun's `events`, listRunEvents; src/app/ports.ts)
 * as one suite, run against the in-memory fake (test/unit/memory-stores.test.ts) and DynamoDB on
 * moto (test/integration/store-contracts.test.ts): an event is written in the same atomic step as
 * the run change it records, or not at all, and reads back field for field, oldest first.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { RunStore } from "../../../src/app/ports.js";
import type { Actor } from "../../../src/domain/actor.js";
import type { RunEventKind, RunHistoryEvent } from "../../../src/domain/history-event.js";
import type { Run } from "../../../src/domain/model.js";
import { computeStats } from "../../../src/domain/stats.js";
import { runWithTargets, uuid } from "../dynamodb-fixtures.js";
import type { RunStoreSubject } from "./run-store.js";

const ALL = { offset: 0, limit: 100 };
const OPS: Actor = {
  name: "ops",
  source: "CLIENT_CERTIFICATE",
  authenticated: true,
  subjectAltNames: ["DNS:ops.example.com", "URI:spiffe://flow/ops"],
  declaredName: "alice",
};

/** An event of `run` as the run is (its version, state and stats), with what `extra` adds. */
function eventOf(
  run: Run,
  kind: RunEventKind,
  seq = 0,
  extra: Partial<RunHistoryEvent> = {},
): RunHistoryEvent {
  return {
    runId: run.id,
    at: run.updatedAt,
    seq,
    kind,
    runName: run.name,
    status: run.status,
    reason: run.reason,
    message: `${kind.toLowerCase()} message`,
    phaseIndex: run.currentPhaseIndex,
    totalPhases: run.phaseSizes.length,
    stats: computeStats(run),
    ...extra,
  };
}

export function describeRunHistoryContract(name: string, setup: () => Promise<RunStoreSubject>): void {
  describe(`RunStore history contract: ${name}`, () => {
    let runs: RunStore;
    let seq = 0;
    beforeAll(async () => {
      ({ runs } = await setup());
    });

    /** A committed run with its CREATED event, as the API creates one. */
    async function created(phaseSizes = [2, 2]): Promise<{ run: Run; createdEvent: RunHistoryEvent }> {
      const { run, targets } = runWithTargets(uuid(++seq, "4157e000"), { phaseSizes });
      const createdEvent = eventOf(run, "CREATED", 0, {
        actor: OPS,
        detail: { type: "plan", targets: 4, phaseSizes, selectionSeed: "sel", orderingSeed: "ord" },
      });
      await runs.createRun(run, targets, { events: [createdEvent] });
      return { run, createdEvent };
    }
    const history = async (run: Run) => (await runs.listRunEvents(run.id, ALL))?.events;
    /** The run at its next version with `changes`, as the use cases write it. */
    const next = (run: Run, changes: Partial<Run> = {}): Run => ({
      ...run,
      ...changes,
      updatedAt: run.updatedAt + 1,
    });

    it("createRun writes its events with the run: they read back field for field", async () => {
      const { run, createdEvent } = await created();
      expect(await runs.listRunEvents(run.id, ALL)).toEqual({ events: [createdEvent], total: 1 });
    });

    it("saveRun with events: the run and every event, oldest first by version, then position", async () => {
      const { run, createdEvent } = await created();
      const started = next(run, { status: "RUNNING", startedAt: run.updatedAt + 1 });
      const startEvents = [eventOf(started, "STARTED", 0), eventOf(started, "PHASE_OPENED", 1)];
      expect(await runs.saveRun(started, run.updatedAt, startEvents)).toBe("saved");
      const tripped = next(started, { status: "PAUSED", reason: "SAFETY_GATE", statusMessage: "tripped" });
      const gate = eventOf(tripped, "GATE_TRIPPED", 0, {
        detail: {
          type: "gate",
          gateIndex: 1,
          gate: { kind: "failureRate", scope: "CUMULATIVE_RUN", thresholdPercent: 25 },
          failed: 1,
          selected: 4,
        },
      });
      expect(await runs.saveRun(tripped, started.updatedAt, [gate])).toBe("saved");
      expect(await runs.getRun(run.id)).toMatchObject({ status: "PAUSED", updatedAt: tripped.updatedAt });
      expect(await history(run)).toEqual([createdEvent, ...startEvents, gate]);
    });

    it("every detail and actor shape round-trips", async () => {
      const { run } = await created();
      const later = next(run, { status: "CANCELLED", finishedAt: run.updatedAt + 1 });
      const details: RunHistoryEvent[] = [
        eventOf(later, "ADVANCED", 0, {
          actor: { name: "alice", source: "DECLARED", authenticated: false, subjectAltNames: [] },
          detail: { type: "advance", fromPhaseIndex: 0, toPhaseIndex: 1, expectedPhaseIndex: 1 },
        }),
        eventOf(later, "CONFLICT_TIMEOUT", 1, {
          detail: { type: "conflict", targetId: uuid(3), blockedForMs: 3_600_000 },
        }),
        eventOf(later, "WINDOW_OPENED", 2, { detail: { type: "window", closesAt: 1_800_000_000_000 } }),
        eventOf(later, "WINDOW_CLOSED", 3, { detail: { type: "window", opensAt: 1_800_000_100_000 } }),
        eventOf(later, "WINDOW_PAUSED", 4, { detail: { type: "window", closedAt: 1_800_000_200_000 } }),
        eventOf(later, "CANCELLED", 5, {
          actor: { name: "", source: "ANONYMOUS", authenticated: false, subjectAltNames: [] },
          detail: { type: "cancel", reason: "" },
          message: "",
        }),
      ];
      expect(await runs.saveRun(later, run.updatedAt, details)).toBe("saved");
      expect((await history(run))?.slice(1)).toEqual(details);
    });

    it("a stale saveRun writes neither the run nor its events; an unknown run writes nothing", async () => {
      const { run, createdEvent } = await created();
      expect(await runs.saveRun(next(run, { statusMessage: "moved" }), run.updatedAt)).toBe("saved");
      const late = next(run, { status: "PAUSED", reason: "OPERATOR_PAUSED", updatedAt: run.updatedAt + 2 });
      expect(await runs.saveRun(late, run.updatedAt, [eventOf(late, "PAUSED")])).toBe("stale");
      expect(await runs.getRun(run.id)).toMatchObject({ status: "PENDING", statusMessage: "moved" });
      expect(await history(run)).toEqual([createdEvent]);

      const ghost = { ...next(run), id: uuid(++seq, "dead0000") };
      expect(await runs.saveRun(ghost, run.updatedAt, [eventOf(ghost, "PAUSED")])).toBe("not-found");
      expect(await runs.listRunEvents(ghost.id, ALL)).toBeUndefined();
    });

    it("two writers on one version, both with events: one commits with its events, the other writes nothing", async () => {
      const { run, createdEvent } = await created();
      const a = next(run, { status: "RUNNING", statusMessage: "a" });
      const b = { ...next(run, { status: "RUNNING", statusMessage: "b" }), updatedAt: run.updatedAt + 2 };
      const outcomes = await Promise.all([
        runs.saveRun(a, run.updatedAt, [eventOf(a, "PHASE_OPENED")]),
        runs.saveRun(b, run.updatedAt, [eventOf(b, "PHASE_OPENED")]),
      ]);
      expect([...outcomes].sort()).toEqual(["saved", "stale"]);
      const winner = outcomes[0] === "saved" ? a : b;
      expect((await runs.getRun(run.id))?.statusMessage).toBe(winner.statusMessage);
      expect(await history(run)).toEqual([createdEvent, eventOf(winner, "PHASE_OPENED")]);
    });

    it("an event key already taken (a version written again, e.g. a clock gone back) writes nothing: 'stale'", async () => {
      const { run, createdEvent } = await created();
      const v2 = next(run, { statusMessage: "v2" });
      expect(await runs.saveRun(v2, run.updatedAt, [eventOf(v2, "STARTED")])).toBe("saved");
      const v3 = next(v2, { statusMessage: "v3" });
      expect(await runs.saveRun(v3, v2.updatedAt)).toBe("saved");
      // On version v3, a write that goes back to v2's number: the run would pass, the event key not.
      const back = { ...v3, statusMessage: "back", updatedAt: v2.updatedAt };
      expect(await runs.saveRun(back, v3.updatedAt, [eventOf(back, "PAUSED")])).toBe("stale");
      expect(await runs.getRun(run.id)).toMatchObject({ statusMessage: "v3", updatedAt: v3.updatedAt });
      expect(await history(run)).toEqual([createdEvent, eventOf(v2, "STARTED")]);
    });

    it("events of another run or another version are refused (RangeError) and nothing is written", async () => {
      const { run, createdEvent } = await created();
      const v2 = next(run, { statusMessage: "v2" });
      await expect(runs.saveRun(v2, run.updatedAt, [eventOf(run, "PAUSED")])).rejects.toThrow(RangeError);
      await expect(
        runs.saveRun(v2, run.updatedAt, [{ ...eventOf(v2, "PAUSED"), runId: uuid(++seq, "dead0000") }]),
      ).rejects.toThrow(RangeError);
      expect(await runs.getRun(run.id)).toMatchObject({ updatedAt: run.updatedAt });
      expect(await history(run)).toEqual([createdEvent]);

      const other = runWithTargets(uuid(++seq, "4157e000"), { phaseSizes: [1] });
      await expect(
        runs.createRun(other.run, other.targets, { events: [{ ...eventOf(other.run, "CREATED"), at: 1 }] }),
      ).rejects.toThrow(RangeError);
      expect(await runs.getRun(other.run.id)).toBeUndefined();
    });

    it("listRunEvents pages with a total; an unknown run is undefined; what it returns is a copy", async () => {
      const { run, createdEvent } = await created();
      let current = run;
      const written = [createdEvent];
      for (let i = 0; i < 4; i++) {
        const later = next(current, { statusMessage: `step ${i}` });
        const event = eventOf(later, "PAUSED", 0);
        expect(await runs.saveRun(later, current.updatedAt, [event])).toBe("saved");
        written.push(event);
        current = later;
      }
      expect(await runs.listRunEvents(run.id, { offset: 1, limit: 2 })).toEqual({
        events: written.slice(1, 3),
        total: 5,
      });
      expect(await runs.listRunEvents(run.id, { offset: 9, limit: 2 })).toEqual({ events: [], total: 5 });
      expect(await runs.listRunEvents(uuid(++seq, "dead0000"), ALL)).toBeUndefined();

      const read = (await history(run)) as RunHistoryEvent[];
      read[0]!.stats.current.outcomes.failed = 9;
      (read[0]!.actor as Actor).subjectAltNames.push("DNS:evil");
      expect(await history(run)).toEqual(written);
    });

    it("appendRunEvent: an event beside the run's writes, once per key ('taken' after), in order, the run untouched; a later run write at the same version still commits", async () => {
      const { run, createdEvent } = await created();
      const denial = eventOf(run, "ACCESS_DENIED", 50, {
        at: run.updatedAt + 1,
        actor: OPS,
        detail: { type: "denial", rpc: "PauseOperationRun", code: "PERMISSION_DENIED", reason: "no" },
      });
      expect(await runs.appendRunEvent(denial)).toBe("appended");
      expect(await runs.appendRunEvent({ ...denial, message: "again" })).toBe("taken");
      expect(await runs.appendRunEvent({ ...denial, seq: 51 })).toBe("appended");
      expect(await runs.getRun(run.id)).toEqual(run);
      // The run's own write at that same millisecond takes position 0: no clash with the denials.
      const later = next(run, { status: "PAUSED", reason: "OPERATOR_PAUSED" });
      const paused = eventOf(later, "PAUSED", 0);
      expect(await runs.saveRun(later, run.updatedAt, [paused])).toBe("saved");
      expect(await history(run)).toEqual([createdEvent, paused, denial, { ...denial, seq: 51 }]);
    });

    it("a run created without events has an empty history", async () => {
      const { run, targets } = runWithTargets(uuid(++seq, "4157e000"), { phaseSizes: [1] });
      await runs.createRun(run, targets);
      expect(await runs.listRunEvents(run.id, ALL)).toEqual({ events: [], total: 0 });
    });
  });
}
