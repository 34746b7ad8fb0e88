/**
 * The RunStore's soak and late-failure writes (saveRun's `soakEndsAt`, recordLateFailure;
 * src/app/ports/runs.ts) as one suite, run against the in-memory fake (test/unit/memory-stores.test.ts)
 * and DynamoDB on moto (test/integration/store-contracts.test.ts).
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { RunStore } from "../../../src/app/ports.js";
import type { Actor } from "../../../src/domain/actor.js";
import { lateFailureEvent, reportLateFailure } from "../../../src/domain/late-failure.js";
import type { Run, Target } from "../../../src/domain/model.js";
import { runWithTargets, uuid } from "../dynamodb-fixtures.js";
import type { RunStoreSubject } from "./run-store.js";

const T = 1_700_000_200_000;
const ALL = { offset: 0, limit: 100 };
const NOC: Actor = { name: "noc-bot", source: "DECLARED", authenticated: false, subjectAltNames: [] };

export function describeLateFailureContract(name: string, setup: () => Promise<RunStoreSubject>): void {
  describe(`RunStore soak and late-failure contract: ${name}`, () => {
    let runs: RunStore;
    let seq = 0;
    beforeAll(async () => {
      ({ runs } = await setup());
    });

    /** A committed RUNNING run [2, 2] whose first target COMPLETED. */
    async function withCompleted(): Promise<{ run: Run; done: Target; other: Target }> {
      const made = runWithTargets(uuid(++seq, "1a7efa00"), { phaseSizes: [2, 2] });
      await runs.createRun(made.run, made.targets);
      const [done, other] = made.targets as [Target, Target];
      expect(await runs.recordOutcome(made.run.id, done.id, "COMPLETED", "completed", T)).toBe("recorded");
      return {
        run: (await runs.getRun(made.run.id)) as Run,
        done: (await runs.getTarget(made.run.id, done.id)) as Target,
        other,
      };
    }

    /** The report's write, as the use case makes it. */
    async function report(run: Run, target: Target, reason = "XID 79 on GPU 3") {
      const decision = reportLateFailure(run, target, reason, NOC, T + 1_000);
      if (decision.kind !== "report") throw new Error(`expected a report, got ${decision.kind}`);
      const event = lateFailureEvent(decision.run, decision.target, NOC);
      const outcome = await runs.recordLateFailure(
        decision.run,
        run.updatedAt,
        decision.target,
        target.updatedAt,
        [event],
      );
      return { outcome, decision, event };
    }

    it("saveRun writes soakEndsAt, reads it back, and removes it when a save leaves it out", async () => {
      const { run } = await withCompleted();
      const soaking = { ...run, soakEndsAt: T + 30_000, updatedAt: run.updatedAt + 1 };
      expect(await runs.saveRun(soaking, run.updatedAt)).toBe("saved");
      expect((await runs.getRun(run.id))?.soakEndsAt).toBe(T + 30_000);
      const { soakEndsAt: _gone, ...without } = soaking;
      expect(await runs.saveRun({ ...without, updatedAt: soaking.updatedAt + 1 }, soaking.updatedAt)).toBe(
        "saved",
      );
      expect((await runs.getRun(run.id))?.soakEndsAt).toBeUndefined();
    });

    it("recordLateFailure: the target FAILED with reason and reporter, the phase's counters moved, the event written", async () => {
      const { run, done } = await withCompleted();
      const { outcome, decision, event } = await report(run, done);
      expect(outcome).toBe("saved");
      const after = (await runs.getRun(run.id)) as Run;
      expect(after.updatedAt).toBe(decision.run.updatedAt);
      expect(after.counters[0]).toEqual({ completed: 0, failed: 1, terminated: 0, skipped: 0 });
      expect(after.counters[1]).toEqual({ completed: 0, failed: 0, terminated: 0, skipped: 0 });
      expect(after.status).toBe(run.status);
      const target = (await runs.getTarget(run.id, done.id)) as Target;
      expect(target).toMatchObject({
        status: "FAILED",
        message: "XID 79 on GPU 3",
        failureReportedBy: NOC,
        failureReportedAt: decision.run.updatedAt,
        updatedAt: decision.run.updatedAt,
      });
      expect((await runs.listRunEvents(run.id, ALL))?.events).toEqual([event]);
    });

    it("a repeat on the versions read is 'stale' and moves nothing: counted once", async () => {
      const { run, done } = await withCompleted();
      expect((await report(run, done)).outcome).toBe("saved");
      expect((await report(run, done)).outcome).toBe("stale");
      const after = (await runs.getRun(run.id)) as Run;
      expect(after.counters[0]).toEqual({ completed: 0, failed: 1, terminated: 0, skipped: 0 });
      expect((await runs.listRunEvents(run.id, ALL))?.events).toHaveLength(1);
    });

    it("a target that moved since it was read, or a run that moved, is 'stale'; an unknown run 'not-found'", async () => {
      const { run, done } = await withCompleted();
      const staleTarget = { ...done, updatedAt: done.updatedAt - 1 };
      expect((await report(run, staleTarget)).outcome).toBe("stale");
      const moved = { ...run, updatedAt: run.updatedAt + 1 };
      expect(await runs.saveRun({ ...moved, statusMessage: "moved" }, run.updatedAt)).toBe("saved");
      expect((await report(run, done)).outcome).toBe("stale");
      expect((await runs.getTarget(run.id, done.id))?.status).toBe("COMPLETED");
      const unknown = { ...run, id: uuid(9_999, "1a7efa00") };
      expect((await report(unknown, { ...done, runId: unknown.id })).outcome).toBe("not-found");
    });

    it("a terminal run is 'stale': its outcome is final", async () => {
      const { run, done } = await withCompleted();
      const finished = { ...run, status: "COMPLETED" as const, updatedAt: run.updatedAt + 1 };
      expect(await runs.saveRun(finished, run.updatedAt)).toBe("saved");
      expect((await report({ ...finished, status: "RUNNING" }, done)).outcome).toBe("stale");
      expect((await runs.getRun(run.id))?.counters[0]).toEqual({
        completed: 1,
        failed: 0,
        terminated: 0,
        skipped: 0,
      });
    });
  });
}
