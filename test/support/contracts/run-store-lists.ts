/**
 * The RunStore contract (run-store.ts), the listings: listRuns, listTargets and listQueuedTargets (one phase's claim queue).
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { RunStore } from "../../../src/app/ports.js";
import type { Run, Target } from "../../../src/domain/model.js";
import { runWithTargets, uuid } from "../dynamodb-fixtures.js";
import { ALL, LEASE, type RunStoreCase, T } from "./run-store-case.js";

export function describeListRuns(suite: RunStoreCase): void {
  const { created, save } = suite;

  describe("listRuns", () => {
    const listed = "contract-listed";
    const only = (e: { name: string }) => e.name === listed;
    const order: string[] = [];
    beforeAll(async () => {
      // createdAt: [0] oldest; [1] and [2] tie (then id descending); [3] newest.
      for (const createdAt of [1000, 2000, 2000, 3000]) {
        order.push((await created({ name: listed, createdAt })).run.id);
      }
    });

    it("newest first, ties by id descending, total counting matches before paging", async () => {
      const { runs: listed, total } = await suite.runs.listRuns(only, ALL);
      expect(listed.map((r) => r.id)).toEqual([order[3], order[2], order[1], order[0]]);
      expect(total).toBe(4);
    });

    it("offset 1 limit 2 → the 2nd and 3rd newest; an offset past the end is empty; total stays 4", async () => {
      const middle = await suite.runs.listRuns(only, { offset: 1, limit: 2 });
      expect(middle.runs.map((r) => r.id)).toEqual([order[2], order[1]]);
      expect(middle.total).toBe(4);
      expect(await suite.runs.listRuns(only, { offset: 10, limit: 5 })).toEqual({ runs: [], total: 4 });
    });

    it("the filter sees each run's list entry as it is now (status and reason after a saveRun)", async () => {
      const newest = (await suite.runs.getRun(order[3]!)) as Run;
      expect(await save(newest, { status: "PAUSED", reason: "OPERATOR_PAUSED" })).toBe("saved");
      const seen: unknown[] = [];
      const paused = await suite.runs.listRuns((e) => {
        if (only(e)) seen.push(e);
        return only(e) && e.status === "PAUSED";
      }, ALL);
      expect(paused.runs.map((r) => [r.id, r.status])).toEqual([[order[3], "PAUSED"]]);
      expect(paused.total).toBe(1);
      expect(seen).toContainEqual({
        id: order[0],
        name: listed,
        status: "PENDING",
        reason: "NONE",
        operationKind: "upgradeFirmware",
        createdAt: 1000,
      });
      expect(seen).toContainEqual(expect.objectContaining({ id: order[3], reason: "OPERATOR_PAUSED" }));
    });
  });
}

export function describeListTargets(suite: RunStoreCase): void {
  const { nextSeq } = suite;

  describe("listTargets", () => {
    let made: { run: Run; targets: Target[] };
    beforeAll(async () => {
      made = runWithTargets(uuid(nextSeq(), "c0ffee00"), { phaseSizes: [2, 3, 2] });
      // Given out of order: the listing orders by phase, then sequence, whatever the input order.
      await suite.runs.createRun(made.run, [...made.targets].reverse());
      expect(await suite.runs.recordOutcome(made.run.id, made.targets[3]!.id, "FAILED", "boom", T)).toBe(
        "recorded",
      );
    });
    const list = (options: Partial<Parameters<RunStore["listTargets"]>[1]>) =>
      suite.runs.listTargets(made.run.id, { phaseFrom: 0, phaseTo: 2, page: ALL, ...options });
    const seqs = (page: { targets: Target[] } | undefined) => page?.targets.map((t) => t.sequenceIndex);

    it("phases 0..1 → sequences 0..4 in order; phase 2 alone → 5, 6", async () => {
      expect(seqs(await list({ phaseTo: 1 }))).toEqual([0, 1, 2, 3, 4]);
      expect(seqs(await list({ phaseFrom: 2 }))).toEqual([5, 6]);
    });

    it("a status filter counts only its matches", async () => {
      const failed = await list({ status: "FAILED" });
      expect(failed?.targets.map((t) => [t.sequenceIndex, t.status, t.message])).toEqual([
        [3, "FAILED", "boom"],
      ]);
      expect(failed?.total).toBe(1);
    });

    it("offset 2 limit 2 of seven → sequences 2 and 3, total 7; an empty phase range is empty", async () => {
      const paged = await list({ page: { offset: 2, limit: 2 } });
      expect(seqs(paged)).toEqual([2, 3]);
      expect(paged?.total).toBe(7);
      expect(await list({ phaseFrom: 1, phaseTo: 0 })).toEqual({ targets: [], total: 0 });
    });
  });
}

export function describeQueuedTargets(suite: RunStoreCase): void {
  const { created, target, ids } = suite;

  describe("listQueuedTargets: one phase's claim queue", () => {
    it("every held target (BLOCKED, CLAIMED) and the first N PENDING ones, each in sequence order, read back whole", async () => {
      const { run: r, targets } = await created({ phaseSizes: [6, 2], maxConcurrent: 5 });
      const [t0, t1, t2, t3, t4, t5, t6, t7] = targets as [
        Target,
        Target,
        Target,
        Target,
        Target,
        Target,
        Target,
        Target,
      ];
      expect(await suite.runs.listQueuedTargets(r.id, 0, 2)).toEqual({ held: [], pending: [t0, t1] });
      expect(ids((await suite.runs.listQueuedTargets(r.id, 0, 100)).pending)).toEqual(
        ids(targets.slice(0, 6)),
      );
      expect((await suite.runs.listQueuedTargets(r.id, 0, 0)).pending).toEqual([]);
      expect(ids((await suite.runs.listQueuedTargets(r.id, 1, 5)).pending)).toEqual([t6.id, t7.id]);

      // t0 submitted and t3 completed leave the queue, t4 terminated too; t1 CLAIMED and t2
      // BLOCKED are held.
      expect((await suite.runs.claimTargets([t0, t1, t2, t3], LEASE, T)).outcome).toBe("claimed");
      expect(await suite.runs.recordSubmitted(r.id, t0.id, "task-0", T + 1)).toBe("recorded");
      const blocked = { message: "rack busy", retryAt: T + 5000, conflictAttempts: 1, firstBlockedAt: T };
      expect(await suite.runs.recordBlocked(r.id, t2.id, blocked, T + 1)).toBe("recorded");
      expect(await suite.runs.recordOutcome(r.id, t3.id, "COMPLETED", "done", T + 2)).toBe("recorded");
      expect(await suite.runs.skipTargets(r.id, [t4.id], "cancelled", T + 3)).toBe(1);

      const queue = await suite.runs.listQueuedTargets(r.id, 0, 10);
      expect(queue.held.map((t) => [t.id, t.status])).toEqual([
        [t1.id, "CLAIMED"],
        [t2.id, "BLOCKED"],
      ]);
      expect(ids(queue.pending)).toEqual([t5.id]);
      expect(queue.held).toEqual([await target(t1), await target(t2)]);
    });

    it("more held targets than the last read saw, and fewer: still every held one and exactly the first N PENDING", async () => {
      const { run: r, targets } = await created({ phaseSizes: [9], maxConcurrent: 9 });
      expect(ids((await suite.runs.listQueuedTargets(r.id, 0, 2)).pending)).toEqual(ids(targets.slice(0, 2)));
      expect((await suite.runs.claimTargets(targets.slice(0, 6), LEASE, T)).outcome).toBe("claimed");
      const grown = await suite.runs.listQueuedTargets(r.id, 0, 2);
      expect(ids(grown.held)).toEqual(ids(targets.slice(0, 6)));
      expect(ids(grown.pending)).toEqual(ids(targets.slice(6, 8)));
      for (const t of targets.slice(0, 5))
        expect(await suite.runs.recordSubmitted(r.id, t.id, `task-${t.id}`, T + 1)).toBe("recorded");
      const shrunk = await suite.runs.listQueuedTargets(r.id, 0, 1);
      expect(ids(shrunk.held)).toEqual([targets[5]!.id]);
      expect(ids(shrunk.pending)).toEqual([targets[6]!.id]);
      expect(ids((await suite.runs.listQueuedTargets(r.id, 0, 0)).held)).toEqual([targets[5]!.id]);
      expect(ids((await suite.runs.listQueuedTargets(r.id, 0, 50)).pending)).toEqual(ids(targets.slice(6)));
    });
  });
}
