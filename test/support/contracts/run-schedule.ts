/**
 * The RunStore's dispatch schedule (src/app/ports/runs.ts, DispatchSchedule) as one suite, run
 * against the in-memory fake (test/unit/memory-stores.test.ts) and DynamoDB on moto
 * (test/integration/store-contracts.test.ts): which writes mark a run due, what a deferral
 * writes, and when the due index lists a run. Listings are narrowed to the case's own runs.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { RunStore } from "../../../src/app/ports.js";
import type { Run, Target } from "../../../src/domain/model.js";
import { runWithTargets, uuid } from "../dynamodb-fixtures.js";

export interface RunScheduleSubject {
  runs: RunStore;
}

const T = 1_700_000_100_000;
const LEASE = 30_000;
const LATER = T + 3_600_000;

export function describeRunScheduleContract(name: string, setup: () => Promise<RunScheduleSubject>): void {
  describe(`RunStore dispatch schedule: ${name}`, () => {
    let runs: RunStore;
    let seq = 0;
    beforeAll(async () => {
      ({ runs } = await setup());
    });

    async function created(phaseSizes = [4], maxConcurrent = 3): Promise<{ run: Run; targets: Target[] }> {
      const made = runWithTargets(uuid(++seq, "5c4ed000"), { phaseSizes, maxConcurrent });
      await runs.createRun(made.run, made.targets);
      return made;
    }
    const schedule = async (r: Run) => (await runs.getRunForDispatch(r.id))?.schedule;
    const due = async (r: Run, at: number) => (await runs.listDueRuns(at)).some((d) => d.runId === r.id);
    /** Defers the run far ahead under its current mark; returns that mark. */
    const deferFar = async (r: Run): Promise<number> => {
      const mark = (await schedule(r))?.mark as number;
      expect(await runs.deferRun(r.id, mark, LATER)).toBe("deferred");
      return mark;
    };
    /** The run is due now again, its mark one more than `before`. */
    const markedOnce = async (r: Run, before: number) => {
      expect(await schedule(r)).toEqual({ mark: before + 1, dueAt: 0 });
      expect(await due(r, T)).toBe(true);
    };

    it("a created run is due at once with mark 0, and getRunForDispatch reads it as getRun does", async () => {
      const { run } = await created();
      expect(await runs.getRunForDispatch(run.id)).toEqual({ run, schedule: { mark: 0, dueAt: 0 } });
      expect(await due(run, 0)).toBe(true);
      expect(await runs.getRunForDispatch(uuid(++seq, "dead0000"))).toBeUndefined();
    });

    it("deferRun under the mark read: listed from its time on, not before; undefined takes it out", async () => {
      const { run } = await created();
      expect(await runs.deferRun(run.id, 0, T + 5_000)).toBe("deferred");
      expect(await schedule(run)).toEqual({ mark: 0, dueAt: T + 5_000 });
      expect(await due(run, T + 4_999)).toBe(false);
      expect(await due(run, T + 5_000)).toBe(true);
      expect(await runs.deferRun(run.id, 0, undefined)).toBe("deferred");
      expect(await schedule(run)).toEqual({ mark: 0 });
      expect(await due(run, Number.MAX_SAFE_INTEGER)).toBe(false);
      // The run is otherwise untouched.
      expect(await runs.getRun(run.id)).toEqual(run);
    });

    it("listDueRuns gives each run's dueAt, the earliest first, up to the time asked for", async () => {
      const [a, b, c] = [(await created()).run, (await created()).run, (await created()).run];
      expect(await runs.deferRun(a.id, 0, T + 9_000)).toBe("deferred");
      expect(await runs.deferRun(b.id, 0, T + 2_000)).toBe("deferred");
      expect(await runs.deferRun(c.id, 0, T + 20_000)).toBe("deferred");
      const mine = async (until: number) =>
        (await runs.listDueRuns(until)).filter((d) => [a.id, b.id, c.id].includes(d.runId));
      expect(await mine(T + 10_000)).toEqual([
        { runId: b.id, dueAt: T + 2_000 },
        { runId: a.id, dueAt: T + 9_000 },
      ]);
      expect(await mine(T + 1_999)).toEqual([]);
    });

    it("deferRun under another mark is 'moved' and writes nothing; a missing run is 'moved' and stays missing", async () => {
      const { run } = await created();
      expect(await runs.deferRun(run.id, 1, LATER)).toBe("moved");
      expect(await schedule(run)).toEqual({ mark: 0, dueAt: 0 });
      const missing = uuid(++seq, "dead0000");
      expect(await runs.deferRun(missing, 0, LATER)).toBe("moved");
      expect(await runs.getRun(missing)).toBeUndefined();
    });

    it("claims mark the run due (a new claim and a re-claim, single and batched); recordSubmitted does not", async () => {
      const { run, targets } = await created();
      const [a, b, c] = targets as [Target, Target, Target];
      let mark = await deferFar(run);
      expect(await runs.claimTarget(a, LEASE, T)).toBe("claimed");
      await markedOnce(run, mark);
      mark = await deferFar(run);
      expect((await runs.claimTargets([b], LEASE, T)).outcome).toBe("claimed");
      await markedOnce(run, mark);
      mark = await deferFar(run);
      expect(await runs.recordSubmitted(run.id, b.id, "task-b", T + 1)).toBe("recorded");
      expect(await schedule(run)).toEqual({ mark, dueAt: LATER });
      // a's lease is over: a re-claim takes no slot and still marks.
      const claimedA = (await runs.getTarget(run.id, a.id)) as Target;
      expect(await runs.claimTarget(claimedA, LEASE, T + LEASE)).toBe("claimed");
      await markedOnce(run, mark);
      mark = await deferFar(run);
      const again = (await runs.getTarget(run.id, a.id)) as Target;
      expect((await runs.claimTargets([again], LEASE, T + 2 * LEASE)).outcome).toBe("claimed");
      await markedOnce(run, mark);
      // A refused claim writes nothing.
      mark = await deferFar(run);
      expect(await runs.claimTarget(c, LEASE, T, T)).toBe("window-closed");
      expect(await runs.claimTarget({ ...c, updatedAt: c.updatedAt + 1 }, LEASE, T)).toBe("lost-race");
      expect(await schedule(run)).toEqual({ mark, dueAt: LATER });
    });

    it("a block, an outcome and each skipped target mark the run due", async () => {
      const { run, targets } = await created();
      const [a, b, c, d] = targets as [Target, Target, Target, Target];
      expect((await runs.claimTargets([a, b], LEASE, T)).outcome).toBe("claimed");
      let mark = await deferFar(run);
      const blocked = { message: "rack busy", retryAt: T + 5_000, conflictAttempts: 1, firstBlockedAt: T };
      expect(await runs.recordBlocked(run.id, a.id, blocked, T)).toBe("recorded");
      await markedOnce(run, mark);
      mark = await deferFar(run);
      expect(await runs.recordOutcome(run.id, b.id, "COMPLETED", "done", T)).toBe("recorded");
      await markedOnce(run, mark);
      mark = await deferFar(run);
      expect(await runs.skipTargets(run.id, [c.id, d.id], "cancelled", T)).toBe(2);
      expect(await schedule(run)).toEqual({ mark: mark + 2, dueAt: 0 });
      // A repeated outcome writes nothing.
      mark = await deferFar(run);
      expect(await runs.recordOutcome(run.id, b.id, "COMPLETED", "done", T)).toBe("already-recorded");
      expect(await schedule(run)).toEqual({ mark, dueAt: LATER });
    });

    it("saveRun marks an active run due and takes any other out of the index; a stale save writes nothing", async () => {
      const { run } = await created();
      let mark = await deferFar(run);
      const running = { ...run, status: "RUNNING" as const, updatedAt: run.updatedAt + 1 };
      expect(await runs.saveRun(running, run.updatedAt)).toBe("saved");
      await markedOnce(run, mark);
      mark = await deferFar(run);
      expect(await runs.saveRun({ ...running, updatedAt: running.updatedAt + 5 }, run.updatedAt)).toBe(
        "stale",
      );
      expect(await schedule(run)).toEqual({ mark, dueAt: LATER });
      const paused = {
        ...running,
        status: "PAUSED" as const,
        reason: "OPERATOR_PAUSED" as const,
        updatedAt: running.updatedAt + 1,
      };
      expect(await runs.saveRun(paused, running.updatedAt)).toBe("saved");
      expect(await schedule(run)).toEqual({ mark: mark + 1 });
      expect(await due(run, Number.MAX_SAFE_INTEGER)).toBe(false);
    });
  });
}
