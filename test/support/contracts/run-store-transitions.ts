/**
 * The RunStore contract (run-store.ts), target transitions and the run's counters, and recordPriorVersions.
 */
import { describe, expect, it } from "vitest";
import type { Target } from "../../../src/domain/model.js";
import { uuid } from "../dynamodb-fixtures.js";
import { ALL, LEASE, type RunStoreCase, T, ZERO } from "./run-store-case.js";

export function describeTargetTransitions(suite: RunStoreCase): void {
  const { created, target, run, statuses, save } = suite;

  describe("target transitions and the run's counters", () => {
    it("recordSubmitted: CLAIMED → SUBMITTED with the task id, 'submitted' by default, lease cleared, slot kept", async () => {
      const { run: r, targets } = await created();
      const [a, b, c] = targets as [Target, Target, Target];
      expect(await suite.runs.recordSubmitted(r.id, a.id, "task-a", T)).toBe("lost-race"); // PENDING
      expect((await suite.runs.claimTargets([a, b], LEASE, T)).outcome).toBe("claimed");
      expect(await suite.runs.recordSubmitted(r.id, a.id, "task-a", T + 1)).toBe("recorded");
      expect(await target(a)).toEqual({
        ...a,
        status: "SUBMITTED",
        taskId: "task-a",
        message: "submitted",
        updatedAt: T + 1,
      });
      expect(await suite.runs.recordSubmitted(r.id, a.id, "task-a", T + 2)).toBe("already-recorded");
      expect(await suite.runs.recordSubmitted(r.id, a.id, "task-other", T + 2)).toBe("lost-race");
      expect(await suite.runs.recordSubmitted(r.id, b.id, "task-b", T + 1, "resubmitted")).toBe("recorded");
      expect((await target(b)).message).toBe("resubmitted");
      expect(await suite.runs.recordSubmitted(r.id, uuid(8, "dead0000"), "task-x", T)).toBe("not-found");
      expect((await run(r)).inFlight).toBe(2);
      expect((await target(c)).status).toBe("PENDING");
    });

    it("recordBlocked: CLAIMED → BLOCKED with the backoff state, lease cleared, slot released; otherwise nothing moves", async () => {
      const { run: r, targets } = await created({ phaseSizes: [2] });
      const blocked = {
        message: "rack busy",
        retryAt: T + 2000,
        conflictAttempts: 2,
        firstBlockedAt: T - 10,
      };
      expect(await suite.runs.recordBlocked(r.id, targets[1]!.id, blocked, T)).toBe("lost-race"); // PENDING
      expect(await suite.runs.claimTarget(targets[0]!, LEASE, T)).toBe("claimed");
      expect(await suite.runs.recordBlocked(r.id, targets[0]!.id, blocked, T + 1)).toBe("recorded");
      expect(await target(targets[0]!)).toEqual({
        ...targets[0],
        status: "BLOCKED",
        ...blocked,
        updatedAt: T + 1,
      });
      expect(await suite.runs.recordBlocked(r.id, targets[0]!.id, blocked, T + 2)).toBe("lost-race");
      expect(await suite.runs.recordBlocked(r.id, uuid(9, "dead0000"), blocked, T)).toBe("not-found");
      expect((await run(r)).inFlight).toBe(0);
    });

    it("recordOutcome: the phase's counter +1 and, from CLAIMED or SUBMITTED only, inFlight −1; lease and retry cleared", async () => {
      const { run: r, targets } = await created({ phaseSizes: [1, 3] });
      const [p0, a, b, c] = targets as [Target, Target, Target, Target];
      expect((await suite.runs.claimTargets([a, b], LEASE, T)).outcome).toBe("claimed");
      expect(await suite.runs.recordSubmitted(r.id, b.id, "task-b", T)).toBe("recorded");
      expect((await run(r)).inFlight).toBe(2);
      expect(await suite.runs.recordOutcome(r.id, a.id, "FAILED", "flash failed", T + 1)).toBe("recorded");
      expect(await suite.runs.recordOutcome(r.id, b.id, "COMPLETED", "task completed", T + 2)).toBe(
        "recorded",
      );
      expect(await suite.runs.recordOutcome(r.id, c.id, "TERMINATED", "cancelled", T + 3)).toBe("recorded");
      expect(await suite.runs.recordOutcome(r.id, p0.id, "SKIPPED", "", T + 4)).toBe("recorded");
      expect(await target(a)).toEqual({
        ...a,
        status: "FAILED",
        message: "flash failed",
        updatedAt: T + 1,
      });
      expect(await target(b)).toEqual({
        ...b,
        status: "COMPLETED",
        message: "task completed",
        taskId: "task-b",
        updatedAt: T + 2,
      });
      const after = await run(r);
      expect(after.inFlight).toBe(0);
      expect(after.counters).toEqual([
        { ...ZERO, skipped: 1 },
        { completed: 1, failed: 1, terminated: 1, skipped: 0 },
      ]);
    });

    it("recordOutcome is exactly once: a repeat is 'already-recorded', 10 concurrent repeats count once", async () => {
      const { run: r, targets } = await created({ phaseSizes: [1, 2] });
      const t = targets[2]!;
      expect(await suite.runs.claimTarget(t, LEASE, T)).toBe("claimed");
      expect(await suite.runs.recordSubmitted(r.id, t.id, "task-t", T)).toBe("recorded");
      const outcomes = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          suite.runs.recordOutcome(r.id, t.id, i % 2 === 0 ? "FAILED" : "TERMINATED", "x", T + 1),
        ),
      );
      expect(outcomes.filter((o) => o === "recorded")).toHaveLength(1);
      expect(outcomes.filter((o) => o === "already-recorded")).toHaveLength(9);
      expect(await suite.runs.recordOutcome(r.id, t.id, "COMPLETED", "late", T + 2)).toBe("already-recorded");
      const after = await run(r);
      expect(after.inFlight).toBe(0);
      expect(after.counters[0]).toEqual(ZERO);
      expect(after.counters[1]!.failed + after.counters[1]!.terminated).toBe(1);
      expect(await suite.runs.recordOutcome(r.id, uuid(10, "dead0000"), "FAILED", "", T)).toBe("not-found");
    });

    it("recordOutcome with the target's phase (a child task's outcome): the same effects, exactly once; a target not in flight, or a wrong phase, is handled as without it", async () => {
      const { run: r, targets } = await created({ phaseSizes: [2, 3] });
      const [p0, p1, a, b, c] = targets as [Target, Target, Target, Target, Target];
      expect((await suite.runs.claimTargets([a, b], LEASE, T)).outcome).toBe("claimed");
      expect(await suite.runs.recordSubmitted(r.id, b.id, "task-b", T)).toBe("recorded");
      expect(await suite.runs.recordOutcome(r.id, a.id, "FAILED", "flash failed", T + 1, 1)).toBe("recorded");
      const repeats = await Promise.all(
        Array.from({ length: 10 }, () => suite.runs.recordOutcome(r.id, b.id, "COMPLETED", "done", T + 2, 1)),
      );
      expect(repeats.filter((o) => o === "recorded")).toHaveLength(1);
      expect(repeats.filter((o) => o === "already-recorded")).toHaveLength(9);
      expect(await suite.runs.recordOutcome(r.id, a.id, "COMPLETED", "late", T + 3, 1)).toBe(
        "already-recorded",
      );
      // PENDING (not in flight): its counter moves, inFlight does not.
      expect(await suite.runs.recordOutcome(r.id, c.id, "SKIPPED", "not started", T + 4, 1)).toBe("recorded");
      // In flight, but told the wrong phase: counted in its own.
      expect(await suite.runs.claimTarget(p0, LEASE, T + 5)).toBe("claimed");
      expect(await suite.runs.recordOutcome(r.id, p0.id, "TERMINATED", "stopped", T + 6, 1)).toBe("recorded");
      expect(await suite.runs.recordOutcome(r.id, uuid(11, "dead0000"), "FAILED", "", T, 0)).toBe(
        "not-found",
      );
      expect(await target(b)).toEqual({
        ...b,
        status: "COMPLETED",
        message: "done",
        taskId: "task-b",
        updatedAt: T + 2,
      });
      expect(await target(c)).toEqual({
        ...c,
        status: "SKIPPED",
        message: "not started",
        updatedAt: T + 4,
      });
      expect((await target(p1)).status).toBe("PENDING");
      const after = await run(r);
      expect(after.inFlight).toBe(0);
      expect(after.counters).toEqual([
        { ...ZERO, terminated: 1 },
        { completed: 1, failed: 1, terminated: 0, skipped: 1 },
      ]);
    });

    it("recordOutcome counts on a paused run too (outcomes keep arriving while it is paused)", async () => {
      const { run: r, targets } = await created({ phaseSizes: [2] });
      expect(await suite.runs.claimTarget(targets[0]!, LEASE, T)).toBe("claimed");
      expect(await save(r, { status: "PAUSED", reason: "OPERATOR_PAUSED" })).toBe("saved");
      expect(await suite.runs.recordOutcome(r.id, targets[0]!.id, "COMPLETED", "", T + 1)).toBe("recorded");
      expect(await run(r)).toMatchObject({
        status: "PAUSED",
        inFlight: 0,
        counters: [{ ...ZERO, completed: 1 }],
      });
    });

    it("skipTargets moves each open target once to SKIPPED, returns how many moved, and frees only the slots held", async () => {
      const { run: r, targets } = await created({ phaseSizes: [4] });
      const [a, b, c, d] = targets as [Target, Target, Target, Target];
      expect((await suite.runs.claimTargets([a, b, d], LEASE, T)).outcome).toBe("claimed");
      expect(await suite.runs.recordOutcome(r.id, b.id, "COMPLETED", "", T)).toBe("recorded");
      const blocked = { message: "busy", retryAt: T + 9000, conflictAttempts: 2, firstBlockedAt: T - 1 };
      expect(await suite.runs.recordBlocked(r.id, d.id, blocked, T)).toBe("recorded");
      expect(
        await suite.runs.skipTargets(
          r.id,
          [a.id, b.id, c.id, d.id],
          "not started: operation run cancelled",
          T + 1,
        ),
      ).toBe(3);
      expect(await suite.runs.skipTargets(r.id, [a.id, c.id], "again", T + 2)).toBe(0);
      expect(await statuses(targets)).toEqual(["SKIPPED", "COMPLETED", "SKIPPED", "SKIPPED"]);
      expect((await target(c)).message).toBe("not started: operation run cancelled");
      // An outcome clears the retry time; the conflict history stays.
      expect(await target(d)).toEqual({
        ...d,
        status: "SKIPPED",
        message: "not started: operation run cancelled",
        conflictAttempts: 2,
        firstBlockedAt: T - 1,
        updatedAt: T + 1,
      });
      const after = await run(r);
      expect(after.inFlight).toBe(0);
      expect(after.counters[0]).toEqual({ ...ZERO, completed: 1, skipped: 3 });
    });

    it("restartConflictClock: a BLOCKED target's firstBlockedAt becomes now, attempts and retry kept; otherwise 'lost-race'", async () => {
      const { run: r, targets } = await created({ phaseSizes: [2] });
      expect(await suite.runs.restartConflictClock(r.id, targets[0]!.id, T)).toBe("lost-race");
      expect(await suite.runs.claimTarget(targets[0]!, LEASE, T)).toBe("claimed");
      const blocked = {
        message: "busy",
        retryAt: T + 60_000,
        conflictAttempts: 4,
        firstBlockedAt: T - 9000,
      };
      expect(await suite.runs.recordBlocked(r.id, targets[0]!.id, blocked, T)).toBe("recorded");
      expect(await suite.runs.restartConflictClock(r.id, targets[0]!.id, T + 5)).toBe("recorded");
      expect(await target(targets[0]!)).toEqual({
        ...targets[0],
        status: "BLOCKED",
        ...blocked,
        firstBlockedAt: T + 5,
        updatedAt: T + 5,
      });
      expect(await suite.runs.restartConflictClock(r.id, uuid(11, "dead0000"), T)).toBe("not-found");
    });
  });
}

export function describePriorVersions(suite: RunStoreCase): void {
  const { created, target } = suite;

  describe("recordPriorVersions", () => {
    const priors = [
      {
        componentId: "c-1",
        type: "COMPUTE" as const,
        version: "1.0",
        targetVersion: "2.0",
        subTargets: ["bios"],
      },
      { componentId: "p-1", type: "POWERSHELF" as const, version: "0.9", targetVersion: "2.0" },
    ];

    it("kept once, in any state, touching nothing else; the first stays; an unknown target is 'not-found'", async () => {
      const { run: r, targets } = await created({ phaseSizes: [2] });
      expect(await suite.runs.claimTarget(targets[0]!, LEASE, T)).toBe("claimed");
      expect(await suite.runs.recordSubmitted(r.id, targets[0]!.id, "task-1", T + 1)).toBe("recorded");
      const before = await target(targets[0]!);
      expect(await suite.runs.recordPriorVersions(r.id, targets[0]!.id, priors)).toBe("recorded");
      expect(await target(targets[0]!)).toEqual({ ...before, priorVersions: priors });
      const again = [{ ...priors[0]!, version: "2.0" }];
      expect(await suite.runs.recordPriorVersions(r.id, targets[0]!.id, again)).toBe("already-recorded");
      expect((await target(targets[0]!)).priorVersions).toEqual(priors);
      // Listed with the target, and an outcome leaves them.
      expect(await suite.runs.recordOutcome(r.id, targets[0]!.id, "FAILED", "boom", T + 2)).toBe("recorded");
      const listed = await suite.runs.listTargets(r.id, { phaseFrom: 0, phaseTo: 0, page: ALL });
      expect(listed?.targets.find((t) => t.id === targets[0]!.id)?.priorVersions).toEqual(priors);
      expect(listed?.targets.find((t) => t.id === targets[1]!.id)?.priorVersions).toBeUndefined();
      expect(await suite.runs.recordPriorVersions(r.id, uuid(12, "dead0000"), priors)).toBe("not-found");
    });
  });
}
