/**
 * The RunStore contract (run-store.ts), claims: claimTarget, claimTargets (a batch in one transaction) and the maintenance window's hard end.
 */
import { describe, expect, it } from "vitest";
import type { Run, Target } from "../../../src/domain/model.js";
import { runWithTargets, uuid } from "../dynamodb-fixtures.js";
import { LEASE, type RunStoreCase, T } from "./run-store-case.js";

export function describeClaimWindow(suite: RunStoreCase): void {
  const { created, run, statuses, save, nextSeq } = suite;

  describe("claims and the maintenance window's hard end (end_time)", () => {
    /** A run whose template ends at `end`: the store keeps it and judges every claim by it. */
    async function windowed(end: number, phaseSizes = [3]): Promise<{ run: Run; targets: Target[] }> {
      const made = runWithTargets(uuid(nextSeq(), "c0ffee00"), { phaseSizes });
      const firmware = { ...made.run.config.operation.firmware, endTime: end };
      const r = {
        ...made.run,
        config: { ...made.run.config, operation: { kind: "upgradeFirmware" as const, firmware } },
      };
      await suite.runs.createRun(r, made.targets);
      return { run: r, targets: made.targets };
    }

    it("a claim 1 ms before end_time commits; one at end_time is 'window-closed' and nothing moves", async () => {
      const { run: r, targets } = await windowed(T + 1000);
      expect(await suite.runs.claimTarget(targets[0]!, LEASE, T + 999)).toBe("claimed");
      expect(await suite.runs.claimTarget(targets[1]!, LEASE, T + 1000)).toBe("window-closed");
      expect((await suite.runs.claimTargets([targets[1]!, targets[2]!], LEASE, T + 1000)).outcome).toBe(
        "window-closed",
      );
      expect(await statuses(targets)).toEqual(["CLAIMED", "PENDING", "PENDING"]);
      expect((await run(r)).inFlight).toBe(1);
    });

    it("`until` (a recurring window's close) refuses a claim at or after it, whatever the run holds", async () => {
      const { run: r, targets } = await created();
      expect(await suite.runs.claimTarget(targets[0]!, LEASE, T, T)).toBe("window-closed");
      expect(await suite.runs.claimTargets(targets.slice(0, 2), LEASE, T, T - 1)).toEqual({
        outcome: "window-closed",
        claimed: [],
      });
      expect(await suite.runs.claimTarget(targets[0]!, LEASE, T, T + 1)).toBe("claimed");
      expect((await run(r)).inFlight).toBe(1);
    });

    it("a paused run past its end_time is 'run-not-active' (the status is judged first)", async () => {
      const { run: r, targets } = await windowed(T);
      expect(await save(r, { status: "PAUSED", reason: "OPERATOR_PAUSED" })).toBe("saved");
      expect(await suite.runs.claimTarget(targets[0]!, LEASE, T + 5)).toBe("run-not-active");
    });
  });
}

export function describeClaimTarget(suite: RunStoreCase): void {
  const { created, target, run, statuses, save } = suite;

  describe("claimTarget", () => {
    it("PENDING → CLAIMED with a lease and updatedAt now, the message kept, taking one slot", async () => {
      const { run: r, targets } = await created();
      expect(await suite.runs.claimTarget(targets[0]!, LEASE, T)).toBe("claimed");
      expect(await target(targets[0]!)).toEqual({
        ...targets[0],
        status: "CLAIMED",
        leaseExpiresAt: T + LEASE,
        updatedAt: T,
      });
      expect((await run(r)).inFlight).toBe(1);
    });

    it("'lost-race' for a target read before it changed, or not ready by its stored state; nothing moves", async () => {
      const { run: r, targets } = await created({ phaseSizes: [4] });
      const [a, b, c, d] = targets as [Target, Target, Target, Target];
      expect(await suite.runs.claimTarget(a, LEASE, T)).toBe("claimed");
      expect(await suite.runs.claimTarget(a, LEASE, T)).toBe("lost-race"); // read as PENDING, now CLAIMED
      const claimedA = await target(a);
      expect(await suite.runs.claimTarget(claimedA, LEASE, T + LEASE - 1)).toBe("lost-race"); // lease still running
      expect(await suite.runs.claimTarget(b, LEASE, T)).toBe("claimed");
      const blocked = { message: "busy", retryAt: T + 2000, conflictAttempts: 1, firstBlockedAt: T };
      expect(await suite.runs.recordBlocked(r.id, b.id, blocked, T)).toBe("recorded");
      expect(await suite.runs.claimTarget(await target(b), LEASE, T + 1999)).toBe("lost-race"); // retry not due
      expect(await suite.runs.claimTarget(c, LEASE, T)).toBe("claimed");
      expect(await suite.runs.recordSubmitted(r.id, c.id, "task-c", T)).toBe("recorded");
      expect(await suite.runs.claimTarget(await target(c), LEASE, T + LEASE)).toBe("lost-race"); // SUBMITTED
      expect(await suite.runs.claimTarget({ ...d, id: uuid(7, "dead0000") }, LEASE, T)).toBe("lost-race");
      expect(await statuses(targets)).toEqual(["CLAIMED", "BLOCKED", "SUBMITTED", "PENDING"]);
      expect((await run(r)).inFlight).toBe(2);
    });

    it("'slots-full' once inFlight reached max_concurrent_targets; nothing moves", async () => {
      const { run: r, targets } = await created({ phaseSizes: [3], maxConcurrent: 2 });
      expect(await suite.runs.claimTarget(targets[0]!, LEASE, T)).toBe("claimed");
      expect(await suite.runs.claimTarget(targets[1]!, LEASE, T)).toBe("claimed");
      expect(await suite.runs.claimTarget(targets[2]!, LEASE, T)).toBe("slots-full");
      expect(await statuses(targets)).toEqual(["CLAIMED", "CLAIMED", "PENDING"]);
      expect((await run(r)).inFlight).toBe(2);
    });

    it.each([
      ["PAUSED", "OPERATOR_PAUSED"],
      ["CANCELLED", "NONE"],
    ] as const)(
      "'run-not-active' for a %s run, re-claims included; nothing moves",
      async (status, reason) => {
        const { run: r, targets } = await created();
        expect(await suite.runs.claimTarget(targets[0]!, 1000, T)).toBe("claimed");
        expect(await save(r, { status, reason })).toBe("saved");
        expect(await suite.runs.claimTarget(targets[1]!, LEASE, T)).toBe("run-not-active");
        expect(await suite.runs.claimTarget(await target(targets[0]!), LEASE, T + 1000)).toBe(
          "run-not-active",
        );
        expect(await statuses(targets)).toEqual(["CLAIMED", "PENDING", "PENDING"]);
        expect((await target(targets[0]!)).leaseExpiresAt).toBe(T + 1000);
        expect((await run(r)).inFlight).toBe(1);
      },
    );

    it("an expired claim is re-claimed in place without a new slot, even with every slot taken", async () => {
      const { run: r, targets } = await created({ phaseSizes: [2], maxConcurrent: 1 });
      expect(await suite.runs.claimTarget(targets[0]!, 1000, T)).toBe("claimed");
      expect(await suite.runs.claimTarget(targets[1]!, LEASE, T + 1000)).toBe("slots-full");
      expect(await suite.runs.claimTarget(await target(targets[0]!), 1000, T + 1000)).toBe("claimed");
      expect(await target(targets[0]!)).toMatchObject({ status: "CLAIMED", leaseExpiresAt: T + 2000 });
      expect((await run(r)).inFlight).toBe(1);
    });

    it("a BLOCKED target whose retry is due takes a slot and keeps its backoff state and message", async () => {
      const { run: r, targets } = await created({ phaseSizes: [1] });
      expect(await suite.runs.claimTarget(targets[0]!, LEASE, T)).toBe("claimed");
      const blocked = {
        message: "rack busy",
        retryAt: T + 2000,
        conflictAttempts: 3,
        firstBlockedAt: T - 500,
      };
      expect(await suite.runs.recordBlocked(r.id, targets[0]!.id, blocked, T)).toBe("recorded");
      expect((await run(r)).inFlight).toBe(0);
      expect(await suite.runs.claimTarget(await target(targets[0]!), LEASE, T + 2000)).toBe("claimed");
      expect(await target(targets[0]!)).toEqual({
        ...targets[0],
        status: "CLAIMED",
        message: "rack busy",
        conflictAttempts: 3,
        firstBlockedAt: T - 500,
        retryAt: T + 2000,
        leaseExpiresAt: T + 2000 + LEASE,
        updatedAt: T + 2000,
      });
      expect((await run(r)).inFlight).toBe(1);
    });
    it("8 concurrent claimers, max 3: exactly 3 claims commit and inFlight is 3", async () => {
      const { run: r, targets } = await created({ phaseSizes: [6], maxConcurrent: 3 });
      const claimer = async () => {
        for (const t of (await suite.runs.listQueuedTargets(r.id, 0, 6)).pending) {
          const outcome = await suite.runs.claimTarget(t, LEASE, T);
          if (outcome === "claimed" || outcome === "slots-full") return outcome;
        }
        return "none";
      };
      const outcomes = await Promise.all(Array.from({ length: 8 }, claimer));
      expect(outcomes.filter((o) => o === "claimed")).toHaveLength(3);
      expect((await statuses(targets)).filter((s) => s === "CLAIMED")).toHaveLength(3);
      expect((await run(r)).inFlight).toBe(3);
    });
  });
}

export function describeClaimTargets(suite: RunStoreCase): void {
  const { created, target, run, statuses, ids, save, nextSeq } = suite;

  describe("claimTargets: a batch in one transaction", () => {
    it("the port's example: max 5, inFlight 2, [PENDING, BLOCKED due, CLAIMED expired] → k = 2, inFlight 4, all three as stored; then k = 2 more → 'slots-full'", async () => {
      const { run: r, targets } = await created({ phaseSizes: [6], maxConcurrent: 5 });
      const [a, b, c, d, e, f] = targets as [Target, Target, Target, Target, Target, Target];
      expect((await suite.runs.claimTargets([b, c, d], 1000, T)).outcome).toBe("claimed");
      const blocked = { message: "busy", retryAt: T + 1000, conflictAttempts: 1, firstBlockedAt: T };
      expect(await suite.runs.recordBlocked(r.id, b.id, blocked, T)).toBe("recorded");
      expect((await run(r)).inFlight).toBe(2); // c and d, both with leases over at T + 1000
      const batch = [a, await target(b), await target(c)];
      const result = await suite.runs.claimTargets(batch, LEASE, T + 1000);
      expect(result.outcome).toBe("claimed");
      expect(ids(result.claimed)).toEqual(ids(batch));
      for (const t of result.claimed) {
        expect(t).toMatchObject({
          status: "CLAIMED",
          leaseExpiresAt: T + 1000 + LEASE,
          updatedAt: T + 1000,
        });
        expect(await target(t)).toEqual(t);
      }
      expect((await run(r)).inFlight).toBe(4);
      expect(await suite.runs.claimTargets([e, f], LEASE, T + 1000)).toEqual({
        outcome: "slots-full",
        claimed: [],
      });
      expect(await statuses([e, f])).toEqual(["PENDING", "PENDING"]);
      expect((await run(r)).inFlight).toBe(4);
    });

    it("a batch needing more slots than are free is 'slots-full' and claims nothing; exactly the free slots fit", async () => {
      const { run: r, targets } = await created({ phaseSizes: [5], maxConcurrent: 3 });
      expect((await suite.runs.claimTargets(targets.slice(0, 2), LEASE, T)).outcome).toBe("claimed");
      expect(await suite.runs.claimTargets(targets.slice(2, 4), LEASE, T)).toEqual({
        outcome: "slots-full",
        claimed: [],
      });
      expect(await suite.runs.claimTargets(targets.slice(2, 5), LEASE, T)).toEqual({
        outcome: "slots-full",
        claimed: [],
      });
      expect(await statuses(targets)).toEqual(["CLAIMED", "CLAIMED", "PENDING", "PENDING", "PENDING"]);
      expect((await run(r)).inFlight).toBe(2);
      expect((await suite.runs.claimTargets(targets.slice(2, 3), LEASE, T)).outcome).toBe("claimed");
      expect((await run(r)).inFlight).toBe(3);
    });

    it("expired claims in a batch take no new slot: two re-claims fit a full run, one more new target does not", async () => {
      const { run: r, targets } = await created({ phaseSizes: [3], maxConcurrent: 2 });
      expect((await suite.runs.claimTargets(targets.slice(0, 2), 1000, T)).outcome).toBe("claimed");
      const expired = [await target(targets[0]!), await target(targets[1]!)];
      expect((await suite.runs.claimTargets([...expired, targets[2]!], 1000, T + 1000)).outcome).toBe(
        "slots-full",
      );
      const again = await suite.runs.claimTargets(expired, 1000, T + 1000);
      expect(again.outcome).toBe("claimed");
      expect(again.claimed.map((t) => t.leaseExpiresAt)).toEqual([T + 2000, T + 2000]);
      expect((await run(r)).inFlight).toBe(2);
    });

    it("one target moved since it was read → 'lost-race', and none of the others is claimed", async () => {
      const { run: r, targets } = await created();
      expect(await suite.runs.claimTarget(targets[1]!, LEASE, T)).toBe("claimed");
      expect(await suite.runs.claimTargets(targets, LEASE, T)).toEqual({ outcome: "lost-race", claimed: [] });
      expect(await statuses(targets)).toEqual(["PENDING", "CLAIMED", "PENDING"]);
      expect((await run(r)).inFlight).toBe(1);
    });

    it("a paused run is 'run-not-active' and nothing moves, re-claims only included", async () => {
      const { run: r, targets } = await created();
      expect((await suite.runs.claimTargets(targets.slice(0, 1), 1000, T)).outcome).toBe("claimed");
      expect(await save(r, { status: "PAUSED", reason: "OPERATOR_PAUSED" })).toBe("saved");
      expect(await suite.runs.claimTargets(targets.slice(1), LEASE, T)).toEqual({
        outcome: "run-not-active",
        claimed: [],
      });
      expect((await suite.runs.claimTargets([await target(targets[0]!)], 1000, T + 1000)).outcome).toBe(
        "run-not-active",
      );
      expect(await statuses(targets)).toEqual(["CLAIMED", "PENDING", "PENDING"]);
      expect((await run(r)).inFlight).toBe(1);
    });

    it("an empty batch is 'claimed' with nothing; two runs, a repeated target or more than 98 targets throw", async () => {
      const a = runWithTargets(uuid(nextSeq(), "c0ffee00"), { phaseSizes: [2] });
      const b = runWithTargets(uuid(nextSeq(), "c0ffee00"), { phaseSizes: [1] });
      expect(await suite.runs.claimTargets([], LEASE, T)).toEqual({ outcome: "claimed", claimed: [] });
      await expect(suite.runs.claimTargets([a.targets[0]!, b.targets[0]!], LEASE, T)).rejects.toThrow(
        "claimTargets: targets of one run only",
      );
      await expect(suite.runs.claimTargets([a.targets[0]!, a.targets[0]!], LEASE, T)).rejects.toThrow(
        "claimTargets: a target appears twice",
      );
      const many = runWithTargets(uuid(nextSeq(), "c0ffee00"), { phaseSizes: [99] });
      await expect(suite.runs.claimTargets(many.targets, LEASE, T)).rejects.toThrow(
        "claimTargets takes at most 98 targets, got 99",
      );
    });
  });
}
