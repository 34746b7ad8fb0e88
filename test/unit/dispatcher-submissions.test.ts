/**
 * What the dispatcher does with each outcome of a submission (started, refused, failed, unknown).
 */
import { describe, expect, it } from "vitest";
import { CLAIM_LEASE_MS } from "../../src/domain/target-machine.js";
import { HOUR, key, passResult, RUN, world } from "../support/dispatcher-world.js";
import { taskIdFor } from "../support/scripted-submitter.js";

describe("dispatcher: submission outcomes", () => {
  it("submitted: the request carries the key, the target's phase, first attempt (it was PENDING), the rack, its components and the frozen template; the target is SUBMITTED", async () => {
    const w = await world({ phases: [["PENDING"]] });
    await w.pass();
    const t = w.targets[0]!;
    const run = await w.stored();
    expect(w.submitter.submits).toEqual([
      {
        idempotencyKey: key(t),
        runId: RUN,
        targetId: t.id,
        phaseIndex: 0,
        firstAttempt: true,
        rackId: t.rackId,
        componentsByType: t.componentsByType,
        template: run.config.operation.firmware,
      },
    ]);
    expect(await w.target(0)).toMatchObject({
      status: "SUBMITTED",
      taskId: taskIdFor(t.id),
      message: "submitted",
    });
    expect(run.inFlight).toBe(1);
  });

  it("conflict: BLOCKED with the submitter's text and the slot released; the delay doubles per attempt up to the max, attempts and first block kept across re-claims", async () => {
    const w = await world({
      phases: [["PENDING"]],
      config: { conflictRetry: { retryTimeoutMs: HOUR, initialRetryDelayMs: 1000, maxRetryDelayMs: 4000 } },
    });
    w.submitter.answer = () => ({ kind: "conflict", message: "rack already has a conflicting task" });
    const firstBlock = w.clock.now;
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 4; attempt++) {
      expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", blocked: 1 }));
      const t = await w.target(0);
      expect(t).toMatchObject({
        status: "BLOCKED",
        message: "rack already has a conflicting task",
        conflictAttempts: attempt,
        firstBlockedAt: firstBlock,
      });
      expect(t.leaseExpiresAt).toBeUndefined();
      delays.push((t.retryAt as number) - w.clock.now);
      expect((await w.stored()).inFlight).toBe(0);
      w.clock.now = t.retryAt as number;
    }
    expect(delays).toEqual([1000, 2000, 4000, 4000]);
    expect((await w.stored()).statusMessage).toBe("1 target waiting on rack conflicts");
  });

  it("rejected: FAILED with the submitter's text, the slot released, the phase's failed counter +1", async () => {
    const w = await world({ phases: [["PENDING", "PENDING"]], maxConcurrent: 1 });
    w.submitter.answer = () => ({ kind: "rejected", message: "rack has no BMC" });
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", failed: 1 }));
    expect(await w.target(0)).toMatchObject({ status: "FAILED", message: "rack has no BMC" });
    const run = await w.stored();
    expect(run.inFlight).toBe(0);
    expect(run.counters[0]).toEqual({ completed: 0, failed: 1, terminated: 0, skipped: 0 });
    expect((await w.target(1)).status).toBe("PENDING");
  });

  it("a submit that throws leaves the target CLAIMED and is logged; once the lease is over a pass re-claims it and submits under the same key", async () => {
    const w = await world({ phases: [["PENDING"]] });
    w.submitter.answer = () => {
      throw new Error("step functions unavailable");
    };
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING" }));
    const t = w.targets[0]!;
    expect(await w.target(0)).toMatchObject({
      status: "CLAIMED",
      leaseExpiresAt: w.clock.now + CLAIM_LEASE_MS,
    });
    expect(w.logs).toContain(
      `warn target submission failed; retried after the claim lease runId=${RUN} targetId=${t.id} error=Error: step functions unavailable`,
    );
    w.submitter.answer = (r) => ({ kind: "submitted", taskId: taskIdFor(r.targetId) });
    const claimedAt = w.clock.now;
    w.clock.now = claimedAt + CLAIM_LEASE_MS - 1;
    await w.pass();
    expect(w.submitter.submits).toHaveLength(1);
    w.clock.now = claimedAt + CLAIM_LEASE_MS;
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 1 }));
    expect(w.submitter.submits.map((r) => [r.idempotencyKey, r.firstAttempt])).toEqual([
      [key(t), true],
      [key(t), undefined],
    ]);
    expect(await w.stored()).toMatchObject({ inFlight: 1 });
    expect((await w.target(0)).status).toBe("SUBMITTED");
  });

  it("recordSubmitted lost to a cancel that skipped the CLAIMED target: the task just started is stopped", async () => {
    const w = await world({ phases: [["PENDING"]] });
    w.submitter.answer = async (r) => {
      await w.controls.cancel(RUN, "window closed");
      return { kind: "submitted", taskId: taskIdFor(r.targetId) };
    };
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 1 }));
    const t = w.targets[0]!;
    expect(w.submitter.cancels).toEqual([
      { taskId: taskIdFor(t.id), reason: "operation run target was skipped before its task was recorded" },
    ]);
    const target = await w.target(0);
    expect(target).toMatchObject({ status: "SKIPPED", message: "not started: operation run cancelled" });
    expect(target.taskId).toBeUndefined();
    expect(await w.stored()).toMatchObject({
      status: "CANCELLED",
      statusMessage: "operation run cancelled: window closed",
    });
  });

  it("recordSubmitted lost to a task that already ended: nothing is stopped and the outcome stands", async () => {
    const w = await world({ phases: [["PENDING"]] });
    w.submitter.answer = async (r) => {
      await w.runs.recordOutcome(RUN, r.targetId, "COMPLETED", "task completed", w.clock.now);
      return { kind: "submitted", taskId: taskIdFor(r.targetId) };
    };
    await w.pass();
    expect(w.submitter.cancels).toEqual([]);
    expect(await w.target(0)).toMatchObject({ status: "COMPLETED", message: "task completed" });
    expect(await w.stored()).toMatchObject({
      inFlight: 0,
      counters: [{ completed: 1, failed: 0, terminated: 0, skipped: 0 }],
    });
  });
});
