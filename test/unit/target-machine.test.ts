import { describe, expect, it } from "vitest";
import { FailedPreconditionError } from "../../src/domain/errors.js";
import type { ConflictRetryPolicy, Target, TargetStatus } from "../../src/domain/model.js";
import {
  CLAIM_LEASE_MS,
  counterDelta,
  isActive,
  isReady,
  outcomeKey,
  readyInOrder,
  reduceTarget,
  type TargetEvent,
} from "../../src/domain/target-machine.js";

const policy: ConflictRetryPolicy = {
  retryTimeoutMs: 3_600_000,
  initialRetryDelayMs: 30_000,
  maxRetryDelayMs: 300_000,
};
const now = 1_000_000;
const ID = "aaaaaaaa-0000-4000-8000-000000000001";

function target(over: Partial<Target> = {}): Target {
  return {
    id: ID,
    runId: "11111111-1111-4111-8111-111111111111",
    rackId: "bbbbbbbb-0000-4000-8000-000000000001",
    sequenceIndex: 3,
    phaseIndex: 1,
    status: "PENDING",
    message: "",
    componentsByType: [{ type: "COMPUTE", componentIds: ["c1"] }],
    createdAt: 0,
    updatedAt: 0,
    conflictAttempts: 0,
    ...over,
  };
}

function apply(t: Target, event: TargetEvent, at = now): Target {
  const r = reduceTarget(t, event, at, policy);
  if (!r.ok) throw r.error;
  expect(r.changed).toBe(true);
  return r.target;
}

function rejection(t: Target, event: TargetEvent, at = now): FailedPreconditionError {
  const r = reduceTarget(t, event, at, policy);
  if (r.ok) throw new Error(`expected a rejection, got ${r.target.status}`);
  return r.error;
}

const ALL: TargetStatus[] = [
  "PENDING",
  "BLOCKED",
  "CLAIMED",
  "SUBMITTED",
  "COMPLETED",
  "FAILED",
  "TERMINATED",
  "SKIPPED",
];

describe("target machine: claim", () => {
  it("PENDING → CLAIMED with a lease, the reference's message, and no stale task id", () => {
    const t = apply(target(), { type: "claim", leaseMs: CLAIM_LEASE_MS });
    expect(t).toEqual(
      target({
        status: "CLAIMED",
        message: "claimed for submission",
        leaseExpiresAt: now + 30_000,
        updatedAt: now,
      }),
    );
    expect("retryAt" in t).toBe(false);
    expect("taskId" in t).toBe(false);
  });

  it("BLOCKED whose retry time has come → CLAIMED, retryAt dropped, backoff state kept", () => {
    const blocked = target({ status: "BLOCKED", retryAt: now, conflictAttempts: 2, firstBlockedAt: 5 });
    const t = apply(blocked, { type: "claim", leaseMs: 30_000 });
    expect(t).toMatchObject({
      status: "CLAIMED",
      conflictAttempts: 2,
      firstBlockedAt: 5,
      leaseExpiresAt: now + 30_000,
    });
    expect("retryAt" in t).toBe(false);
  });

  it("BLOCKED before its retry time → rejected", () => {
    expect(
      rejection(target({ status: "BLOCKED", retryAt: now + 1 }), { type: "claim", leaseMs: 30_000 }).message,
    ).toBe(`target ${ID} cannot be claimed from status BLOCKED`);
  });

  it("CLAIMED under an expired lease → re-claimed with a new lease (another dispatcher takes over)", () => {
    const t = apply(target({ status: "CLAIMED", leaseExpiresAt: now }), { type: "claim", leaseMs: 30_000 });
    expect(t.leaseExpiresAt).toBe(now + 30_000);
  });

  it("CLAIMED under a live lease → rejected", () => {
    const e = rejection(target({ status: "CLAIMED", leaseExpiresAt: now + 1 }), {
      type: "claim",
      leaseMs: 30_000,
    });
    expect(e).toBeInstanceOf(FailedPreconditionError);
    expect(e.code).toBe("FAILED_PRECONDITION");
    expect(e.message).toBe(`target ${ID} cannot be claimed from status CLAIMED`);
  });

  it.each(["SUBMITTED", "COMPLETED", "FAILED", "TERMINATED", "SKIPPED"] as const)(
    "%s → rejected",
    (status) => {
      expect(rejection(target({ status, taskId: "task" }), { type: "claim", leaseMs: 30_000 }).message).toBe(
        `target ${ID} cannot be claimed from status ${status}`,
      );
    },
  );
});

describe("target machine: submitted", () => {
  it("CLAIMED → SUBMITTED with the task id; lease and conflict state cleared", () => {
    const claimed = target({
      status: "CLAIMED",
      leaseExpiresAt: now + 5,
      conflictAttempts: 3,
      firstBlockedAt: 7,
    });
    const t = apply(claimed, { type: "submitted", taskId: "task-1" });
    expect(t).toEqual(
      target({
        status: "SUBMITTED",
        message: "submitted",
        taskId: "task-1",
        conflictAttempts: 0,
        updatedAt: now,
      }),
    );
  });

  it.each(ALL.filter((s) => s !== "CLAIMED"))("%s → rejected", (status) => {
    expect(rejection(target({ status }), { type: "submitted", taskId: "x" }).message).toBe(
      `target ${ID} cannot be marked submitted from status ${status}`,
    );
  });
});

describe("target machine: conflict", () => {
  it.each([
    // attempts before, delay, message
    [0, 30_000, "blocked by rack conflict; retrying in 30s"],
    [1, 60_000, "blocked by rack conflict; retrying in 1m0s"],
    [3, 240_000, "blocked by rack conflict; retrying in 4m0s"],
    [9, 300_000, "blocked by rack conflict; retrying in 5m0s"],
  ])("CLAIMED with %d earlier blocks → BLOCKED for %d ms: %s", (before, delay, message) => {
    const t = apply(target({ status: "CLAIMED", leaseExpiresAt: now + 5, conflictAttempts: before }), {
      type: "conflict",
    });
    expect(t).toMatchObject({
      status: "BLOCKED",
      message,
      conflictAttempts: before + 1,
      retryAt: now + delay,
    });
    expect("leaseExpiresAt" in t).toBe(false);
  });

  it("the first block records firstBlockedAt = now", () => {
    expect(apply(target({ status: "CLAIMED" }), { type: "conflict" }).firstBlockedAt).toBe(now);
  });

  it("a later block keeps the first firstBlockedAt", () => {
    expect(
      apply(target({ status: "CLAIMED", firstBlockedAt: 42, conflictAttempts: 1 }), { type: "conflict" })
        .firstBlockedAt,
    ).toBe(42);
  });

  it.each(ALL.filter((s) => s !== "CLAIMED"))("%s → rejected", (status) => {
    expect(rejection(target({ status }), { type: "conflict" }).message).toBe(
      `target ${ID} cannot be blocked from status ${status}`,
    );
  });
});

describe("target machine: submitFailed", () => {
  it("CLAIMED → FAILED with the error text", () => {
    const t = apply(target({ status: "CLAIMED", leaseExpiresAt: now + 5 }), {
      type: "submitFailed",
      message: "task submission did not return exactly one task",
    });
    expect(t).toEqual(
      target({
        status: "FAILED",
        message: "task submission did not return exactly one task",
        updatedAt: now,
      }),
    );
  });

  it.each(ALL.filter((s) => s !== "CLAIMED"))("%s → rejected", (status) => {
    expect(rejection(target({ status }), { type: "submitFailed", message: "x" }).message).toBe(
      `target ${ID} cannot fail submission from status ${status}`,
    );
  });
});

describe("target machine: outcome", () => {
  it.each(["COMPLETED", "FAILED", "TERMINATED"] as const)(
    "SUBMITTED → %s with the child task's message",
    (status) => {
      const t = apply(target({ status: "SUBMITTED", taskId: "task-1" }), {
        type: "outcome",
        status,
        message: "done",
      });
      expect(t).toEqual(target({ status, message: "done", taskId: "task-1", updatedAt: now }));
    },
  );

  it("SUBMITTED → SKIPPED is rejected: a target with a task was started", () => {
    expect(
      rejection(target({ status: "SUBMITTED", taskId: "task-1" }), {
        type: "outcome",
        status: "SKIPPED",
        message: "m",
      }).message,
    ).toBe(`target ${ID} cannot be skipped: it has a task from status SUBMITTED`);
  });

  it.each(["COMPLETED", "FAILED", "TERMINATED", "SKIPPED"] as const)(
    "CLAIMED → %s (the child finished before SUBMITTED was recorded, or a cancel skipped the claim)",
    (status) => {
      const t = apply(target({ status: "CLAIMED", leaseExpiresAt: now + 5 }), {
        type: "outcome",
        status,
        message: "m",
      });
      expect(t.status).toBe(status);
      expect("leaseExpiresAt" in t).toBe(false);
    },
  );

  it.each(["PENDING", "BLOCKED"] as const)(
    "%s → SKIPPED when a cancel stops it before it had a task",
    (status) => {
      const t = apply(target({ status, retryAt: now + 5 }), {
        type: "outcome",
        status: "SKIPPED",
        message: "not started: operation run cancelled",
      });
      expect(t).toMatchObject({ status: "SKIPPED", message: "not started: operation run cancelled" });
      expect("retryAt" in t).toBe(false);
    },
  );

  it.each([
    ["PENDING", "COMPLETED"],
    ["PENDING", "FAILED"],
    ["PENDING", "TERMINATED"],
    ["BLOCKED", "COMPLETED"],
    ["BLOCKED", "FAILED"],
    ["BLOCKED", "TERMINATED"],
  ] as const)("%s → %s is rejected: only a cancel ends a target without a task", (from, to) => {
    expect(rejection(target({ status: from }), { type: "outcome", status: to, message: "m" }).message).toBe(
      `target ${ID} cannot end ${to} without a task from status ${from}`,
    );
  });

  it.each(["COMPLETED", "FAILED", "TERMINATED"] as const)(
    "a repeated %s outcome is a no-op (changed false)",
    (status) => {
      const t = target({ status, message: "first" });
      const r = reduceTarget(t, { type: "outcome", status, message: "second" }, now, policy);
      expect(r).toEqual({ ok: true, target: t, changed: false });
    },
  );

  it.each([
    ["COMPLETED", "FAILED"],
    ["FAILED", "TERMINATED"],
    ["SKIPPED", "COMPLETED"],
  ] as const)("a terminal %s target rejects a different outcome %s", (from, to) => {
    expect(rejection(target({ status: from }), { type: "outcome", status: to, message: "m" }).message).toBe(
      `target ${ID} cannot end ${to} from status ${from}`,
    );
  });
});

describe("target machine: restartConflictClock", () => {
  it("BLOCKED → firstBlockedAt = now, attempts and retry time kept", () => {
    const t = apply(target({ status: "BLOCKED", firstBlockedAt: 1, conflictAttempts: 4, retryAt: now + 9 }), {
      type: "restartConflictClock",
    });
    expect(t).toMatchObject({
      status: "BLOCKED",
      firstBlockedAt: now,
      conflictAttempts: 4,
      retryAt: now + 9,
    });
  });

  it.each(ALL.filter((s) => s !== "BLOCKED"))("%s → rejected", (status) => {
    expect(rejection(target({ status }), { type: "restartConflictClock" }).message).toBe(
      `target ${ID} cannot restart its conflict clock from status ${status}`,
    );
  });
});

describe("target machine: isReady and isActive", () => {
  it.each([
    [target(), true, false],
    [target({ status: "BLOCKED" }), true, false],
    [target({ status: "BLOCKED", retryAt: now }), true, false],
    [target({ status: "BLOCKED", retryAt: now + 1 }), false, false],
    [target({ status: "CLAIMED" }), true, false],
    [target({ status: "CLAIMED", leaseExpiresAt: now }), true, false],
    [target({ status: "CLAIMED", leaseExpiresAt: now + 1 }), false, true],
    [target({ status: "SUBMITTED", taskId: "t" }), false, true],
    [target({ status: "COMPLETED" }), false, false],
    [target({ status: "FAILED" }), false, false],
    [target({ status: "TERMINATED" }), false, false],
    [target({ status: "SKIPPED" }), false, false],
  ])("%# %o → ready %s, active %s", (t, ready, active) => {
    expect(isReady(t, now)).toBe(ready);
    expect(isActive(t, now)).toBe(active);
  });
});

describe("target machine: readyInOrder", () => {
  const at = (phaseIndex: number, sequenceIndex: number, over: Partial<Target> = {}) =>
    target({ id: `t-${phaseIndex}-${sequenceIndex}`, phaseIndex, sequenceIndex, ...over });

  it("merges the ready held targets with the pending ones in phase-then-sequence order, dropping held ones not ready", () => {
    const held = [
      at(1, 2, { status: "BLOCKED", retryAt: now }),
      at(1, 5, { status: "CLAIMED", leaseExpiresAt: now + 1 }),
      at(1, 7, { status: "CLAIMED", leaseExpiresAt: now }),
      at(1, 9, { status: "BLOCKED", retryAt: now + 1 }),
    ];
    const pending = [at(1, 0), at(1, 3), at(1, 8)];
    expect(readyInOrder({ held, pending }, now).map((t) => t.id)).toEqual([
      "t-1-0",
      "t-1-2",
      "t-1-3",
      "t-1-7",
      "t-1-8",
    ]);
  });

  it("orders by phase before sequence", () => {
    const ready = readyInOrder(
      { held: [at(0, 9, { status: "BLOCKED", retryAt: now })], pending: [at(1, 0)] },
      now,
    );
    expect(ready.map((t) => t.id)).toEqual(["t-0-9", "t-1-0"]);
    expect(readyInOrder({ held: [], pending: [at(2, 1), at(1, 4)] }, now).map((t) => t.id)).toEqual([
      "t-1-4",
      "t-2-1",
    ]);
  });
});

describe("target machine: counterDelta", () => {
  it.each([
    ["PENDING", "CLAIMED", { inFlight: 1 }],
    ["BLOCKED", "CLAIMED", { inFlight: 1 }],
    ["CLAIMED", "CLAIMED", { inFlight: 0 }], // expired lease re-claimed in place: it kept its slot
    ["CLAIMED", "SUBMITTED", { inFlight: 0 }],
    ["CLAIMED", "BLOCKED", { inFlight: -1 }],
    ["CLAIMED", "FAILED", { outcome: "failed", inFlight: -1 }],
    ["SUBMITTED", "COMPLETED", { outcome: "completed", inFlight: -1 }],
    ["SUBMITTED", "FAILED", { outcome: "failed", inFlight: -1 }],
    ["SUBMITTED", "TERMINATED", { outcome: "terminated", inFlight: -1 }],
    ["PENDING", "SKIPPED", { outcome: "skipped", inFlight: 0 }],
    ["BLOCKED", "SKIPPED", { outcome: "skipped", inFlight: 0 }],
    ["CLAIMED", "SKIPPED", { outcome: "skipped", inFlight: -1 }],
    ["BLOCKED", "BLOCKED", { inFlight: 0 }],
    ["COMPLETED", "COMPLETED", { inFlight: 0 }], // a duplicate outcome moves nothing
  ] as const)("%s → %s moves %o", (from, to, delta) => {
    expect(counterDelta(from, to)).toEqual(delta);
  });

  it("every reducer transition's delta keeps inFlight equal to the number of CLAIMED/SUBMITTED targets", () => {
    let t = target();
    let inFlight = 0;
    const outcomes = { completed: 0, failed: 0, terminated: 0, skipped: 0 };
    const step = (event: TargetEvent, at: number) => {
      const next = apply(t, event, at);
      const d = counterDelta(t.status, next.status);
      inFlight += d.inFlight;
      if (d.outcome) outcomes[d.outcome]++;
      t = next;
      expect(inFlight).toBe(t.status === "CLAIMED" || t.status === "SUBMITTED" ? 1 : 0);
    };
    step({ type: "claim", leaseMs: 30_000 }, now);
    step({ type: "conflict" }, now + 1);
    step({ type: "claim", leaseMs: 30_000 }, now + 40_000);
    step({ type: "claim", leaseMs: 30_000 }, now + 80_000);
    step({ type: "submitted", taskId: "t" }, now + 80_001);
    step({ type: "outcome", status: "FAILED", message: "m" }, now + 90_000);
    expect(outcomes).toEqual({ completed: 0, failed: 1, terminated: 0, skipped: 0 });
  });

  it("outcomeKey maps each outcome status to its counter and the rest to none", () => {
    expect(ALL.map(outcomeKey)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      "completed",
      "failed",
      "terminated",
      "skipped",
    ]);
  });
});

describe("target machine: corrupted input is rejected loudly", () => {
  it("an unknown status or event type throws instead of being treated as something valid", () => {
    const bogus = target({ status: "LOST" as TargetStatus });
    expect(() => isReady(bogus, now)).toThrow("unreachable");
    expect(() => outcomeKey("LOST" as TargetStatus)).toThrow("unreachable");
    expect(() =>
      reduceTarget(bogus, { type: "outcome", status: "COMPLETED", message: "" }, now, policy),
    ).toThrow("unreachable");
    expect(() => reduceTarget(target(), { type: "explode" } as unknown as TargetEvent, now, policy)).toThrow(
      "unreachable",
    );
  });
});
