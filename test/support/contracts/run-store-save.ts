/**
 * The RunStore contract (run-store.ts), saveRun's conditional write and the index of active runs.
 */
import { describe, expect, it } from "vitest";
import type { Run } from "../../../src/domain/model.js";
import { uuid } from "../dynamodb-fixtures.js";
import { LEASE, type RunStoreCase, T, ZERO } from "./run-store-case.js";

export function describeSaveAndActiveRuns(suite: RunStoreCase): void {
  const { created, run, save, nextSeq } = suite;

  describe("saveRun and the active runs", () => {
    it("saves on the version read; an older version is 'stale' and writes nothing; an unknown run is 'not-found'", async () => {
      const { run: r } = await created();
      const first: Run = {
        ...r,
        status: "RUNNING",
        startedAt: r.createdAt + 1,
        updatedAt: r.updatedAt + 1,
      };
      expect(await suite.runs.saveRun(first, r.updatedAt)).toBe("saved");
      const late: Run = { ...r, status: "CANCELLED", updatedAt: r.updatedAt + 2 };
      expect(await suite.runs.saveRun(late, r.updatedAt)).toBe("stale");
      expect(await run(r)).toEqual(first);
      expect(await suite.runs.saveRun({ ...r, id: uuid(nextSeq(), "dead0000") }, r.updatedAt - 1)).toBe(
        "not-found",
      );
    });

    it("writes the control fields only: name, configuration, plan, counters and inFlight stay as stored", async () => {
      const { run: r, targets } = await created({ phaseSizes: [2] });
      expect(await suite.runs.claimTarget(targets[0]!, LEASE, T)).toBe("claimed");
      expect(await suite.runs.recordOutcome(r.id, targets[1]!.id, "COMPLETED", "", T)).toBe("recorded");
      // A writer holding the run as read BEFORE the claim and the outcome.
      const written: Run = {
        ...r,
        name: "renamed",
        config: { ...r.config, maxConcurrentTargets: 99 },
        phaseSizes: [5],
        counters: [ZERO],
        inFlight: 0,
        status: "RUNNING",
        reason: "NONE",
        statusMessage: "submitted 1 operation run target",
        currentPhaseIndex: 0,
        startedAt: T,
        updatedAt: r.updatedAt + 1,
      };
      expect(await suite.runs.saveRun(written, r.updatedAt)).toBe("saved");
      expect(await run(r)).toEqual({
        ...r,
        status: "RUNNING",
        statusMessage: "submitted 1 operation run target",
        startedAt: T,
        updatedAt: r.updatedAt + 1,
        counters: [{ ...ZERO, completed: 1 }],
        inFlight: 1,
      });
    });

    it("a pause at a window's close is 'stale' once a claim moved inFlight since its read; another save is not", async () => {
      const { run: r, targets } = await created({ phaseSizes: [2] });
      // A pass read the run with nothing flashing and decides to pause; a claim decided before
      // the close commits in between.
      expect(await suite.runs.claimTarget(targets[0]!, LEASE, T)).toBe("claimed");
      const pause: Run = {
        ...r,
        status: "PAUSED",
        reason: "MAINTENANCE_WINDOW",
        statusMessage: "maintenance window closed at 2023-11-14T22:15:00Z: 2 targets not started",
        updatedAt: r.updatedAt + 1,
      };
      expect(await suite.runs.saveRun(pause, r.updatedAt)).toBe("stale");
      expect((await run(r))?.status).toBe(r.status);
      // Decided again on what is there now (1 flashing), the pause is written.
      expect(
        await suite.runs.saveRun({ ...pause, inFlight: 1, statusMessage: "…1 not started" }, r.updatedAt),
      ).toBe("saved");
      // Other writes never pin inFlight (a gate's pause, a message): counters stay theirs.
      const { run: g, targets: gt } = await created({ phaseSizes: [2] });
      expect(await suite.runs.claimTarget(gt[0]!, LEASE, T)).toBe("claimed");
      const gate: Run = { ...g, status: "PAUSED", reason: "SAFETY_GATE", updatedAt: g.updatedAt + 1 };
      expect(await suite.runs.saveRun(gate, g.updatedAt)).toBe("saved");
    });

    it("startedAt and finishedAt left out of a save are removed", async () => {
      const { run: r } = await created();
      expect(await save(r, { status: "COMPLETED", startedAt: T, finishedAt: T + 1 })).toBe("saved");
      const done = await run(r);
      const { startedAt: _s, finishedAt: _f, ...without } = done;
      expect(await suite.runs.saveRun({ ...without, updatedAt: done.updatedAt + 1 }, done.updatedAt)).toBe(
        "saved",
      );
      const read = await run(r);
      expect(read.startedAt).toBeUndefined();
      expect(read.finishedAt).toBeUndefined();
    });

    it("PENDING and RUNNING runs are active; PAUSED and terminal ones are not", async () => {
      const { run: r } = await created();
      const active = async () => (await suite.runs.listActiveRunIds()).includes(r.id);
      expect(await active()).toBe(true);
      const steps: [Run["status"], boolean][] = [
        ["RUNNING", true],
        ["PAUSED", false],
        ["RUNNING", true],
        ["COMPLETED", false],
      ];
      for (const [status, expected] of steps) {
        expect(await save(r, { status })).toBe("saved");
        expect(await active()).toBe(expected);
      }
    });
  });
}
