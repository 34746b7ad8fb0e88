import { describe, expect, it } from "vitest";
import {
  conflictRetryDelayMs,
  conflictTimedOut,
  conflictTimeoutMessage,
  findConflictTimeout,
} from "../../src/domain/backoff.js";
import type { ConflictRetryPolicy, Run, RunConfig, Target } from "../../src/domain/model.js";
import { reduceTarget } from "../../src/domain/target-machine.js";

const policy: ConflictRetryPolicy = {
  retryTimeoutMs: 3_600_000,
  initialRetryDelayMs: 30_000,
  maxRetryDelayMs: 300_000,
};

function target(over: Partial<Target> = {}): Target {
  return {
    id: "aaaaaaaa-0000-4000-8000-000000000001",
    runId: "11111111-1111-4111-8111-111111111111",
    rackId: "bbbbbbbb-0000-4000-8000-000000000001",
    sequenceIndex: 0,
    phaseIndex: 0,
    status: "PENDING",
    message: "",
    componentsByType: [],
    createdAt: 0,
    updatedAt: 0,
    conflictAttempts: 0,
    ...over,
  };
}

describe("backoff: delay grows by doubling and is capped", () => {
  it.each([
    [1, 30_000],
    [2, 60_000],
    [3, 120_000],
    [4, 240_000],
    [5, 300_000], // 480 s capped at 5 min
    [6, 300_000],
    [1_000, 300_000],
    [1_100, 300_000], // 2^1099 overflows to Infinity; the cap still applies
    [Number.MAX_SAFE_INTEGER, 300_000],
  ])("attempt %d → %d ms", (attempts, delay) => {
    expect(conflictRetryDelayMs(policy, attempts)).toBe(delay);
  });

  it("attempts below 1 are treated as the first block", () => {
    expect(conflictRetryDelayMs(policy, 0)).toBe(30_000);
  });

  it("max equal to initial never grows", () => {
    const flat = { ...policy, maxRetryDelayMs: 30_000 };
    expect([1, 2, 3].map((n) => conflictRetryDelayMs(flat, n))).toEqual([30_000, 30_000, 30_000]);
  });
});

describe("backoff: conflictTimedOut measures from the first block", () => {
  const blocked = target({ status: "BLOCKED", firstBlockedAt: 1_000, conflictAttempts: 1, retryAt: 31_000 });

  it.each([
    [1_000 + 3_599_999, false],
    [1_000 + 3_600_000, true], // >=, as the reference compares
    [1_000 + 7_200_000, true],
  ])("blocked at 1000, now %d → %s", (now, expected) => {
    expect(conflictTimedOut(blocked, policy, now)).toBe(expected);
  });

  it("only BLOCKED targets time out (a re-claimed target is being retried now)", () => {
    expect(conflictTimedOut({ ...blocked, status: "CLAIMED" }, policy, 10_000_000)).toBe(false);
  });

  it("a BLOCKED target without a first-block time never times out", () => {
    expect(conflictTimedOut(target({ status: "BLOCKED" }), policy, 10_000_000)).toBe(false);
  });

  it("the clock and the attempt count survive re-claims: block, re-claim, block again, time out 1 h after the FIRST block", () => {
    const t0 = 1_000_000;
    let t = target({ status: "CLAIMED", leaseExpiresAt: t0 + 30_000 });
    const step = (event: Parameters<typeof reduceTarget>[1], now: number) => {
      const r = reduceTarget(t, event, now, policy);
      if (!r.ok) throw r.error;
      t = r.target;
    };
    step({ type: "conflict" }, t0);
    expect(t).toMatchObject({
      status: "BLOCKED",
      conflictAttempts: 1,
      firstBlockedAt: t0,
      retryAt: t0 + 30_000,
    });
    step({ type: "claim", leaseMs: 30_000 }, t0 + 30_000);
    expect(t).toMatchObject({ status: "CLAIMED", conflictAttempts: 1, firstBlockedAt: t0 });
    step({ type: "conflict" }, t0 + 31_000);
    expect(t).toMatchObject({
      status: "BLOCKED",
      conflictAttempts: 2,
      firstBlockedAt: t0,
      retryAt: t0 + 91_000,
    });
    step({ type: "claim", leaseMs: 30_000 }, t0 + 91_000);
    step({ type: "conflict" }, t0 + 92_000);
    expect(t).toMatchObject({ conflictAttempts: 3, retryAt: t0 + 92_000 + 120_000 });

    expect(conflictTimedOut(t, policy, t0 + 3_599_999)).toBe(false);
    expect(conflictTimedOut(t, policy, t0 + 3_600_000)).toBe(true);
  });
});

describe("backoff: findConflictTimeout over a run's targets", () => {
  const run = {
    id: "11111111-1111-4111-8111-111111111111",
    currentPhaseIndex: 1,
    config: { conflictRetry: policy } as RunConfig,
  } as Run;
  const now = 10_000_000;

  it("returns the first timed-out BLOCKED target of the current phase with how long it has been blocked", () => {
    const targets = [
      target({ id: "t-other-phase", phaseIndex: 0, status: "BLOCKED", firstBlockedAt: 0 }),
      target({ id: "t-fresh", phaseIndex: 1, status: "BLOCKED", firstBlockedAt: now - 1_000 }),
      target({ id: "t-old", phaseIndex: 1, status: "BLOCKED", firstBlockedAt: now - 3_700_000 }),
      target({ id: "t-older", phaseIndex: 1, status: "BLOCKED", firstBlockedAt: now - 9_000_000 }),
    ];
    expect(findConflictTimeout(run, targets, now)).toEqual({ targetId: "t-old", blockedForMs: 3_700_000 });
  });

  it("returns undefined when nothing in the current phase timed out", () => {
    const targets = [
      target({ phaseIndex: 0, status: "BLOCKED", firstBlockedAt: 0 }),
      target({ phaseIndex: 1, status: "SUBMITTED", firstBlockedAt: 0 }),
    ];
    expect(findConflictTimeout(run, targets, now)).toBeUndefined();
  });
});

describe("backoff: conflictTimeoutMessage", () => {
  it("prints the configured timeout as a Go duration, like the reference", () => {
    expect(conflictTimeoutMessage("t-1", policy)).toBe("target t-1 blocked by rack conflict for 1h0m0s");
    expect(conflictTimeoutMessage("t-2", { ...policy, retryTimeoutMs: 90_000 })).toBe(
      "target t-2 blocked by rack conflict for 1m30s",
    );
  });
});
