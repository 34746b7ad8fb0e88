/**
 * The dispatcher's claims: free slots, the batch claim and its one-by-one fallback, what a wake-up
 * reads, the run's status message after a claim, and the failure-domain spread.
 */
import { describe, expect, it } from "vitest";
import { createDispatcher } from "../../src/app/dispatcher.js";
import { CLAIM_LEASE_MS } from "../../src/domain/target-machine.js";
import { clockOf } from "../support/clock.js";
import { key, passResult, RUN, world } from "../support/dispatcher-world.js";
import { MemoryRunStore } from "../support/memory-stores.js";
import { type RunState, runInState, T0 } from "../support/run-states.js";
import { taskIdFor } from "../support/scripted-submitter.js";

describe("dispatcher: free slots and the batch claim", () => {
  it("max 3 with one SUBMITTED: ONE batch claim of the next two PENDING targets in sequence order, no single claims", async () => {
    const w = await world({ phases: [["SUBMITTED", "PENDING", "PENDING", "PENDING"]], maxConcurrent: 3 });
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 2 }));
    expect(w.runs.calls.of("claimTargets")).toBe(1);
    expect(w.runs.calls.of("claimTarget")).toBe(0);
    expect(w.submitter.submittedTargets()).toEqual([w.targets[1]!.id, w.targets[2]!.id]);
    expect(await w.statuses()).toEqual(["SUBMITTED", "SUBMITTED", "SUBMITTED", "PENDING"]);
    expect((await w.stored()).inFlight).toBe(3);
  });

  it("every slot taken: nothing claimed, 'waiting for active targets quota' written once; the next pass writes nothing", async () => {
    const w = await world({ phases: [["SUBMITTED", "SUBMITTED", "PENDING"]], maxConcurrent: 2 });
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING" }));
    expect((await w.stored()).statusMessage).toBe("waiting for active targets quota");
    expect(w.runs.calls.of("claimTargets") + w.runs.calls.of("claimTarget")).toBe(0);
    w.runs.calls.reset();
    w.clock.now += 1000;
    await w.pass();
    expect(w.runs.writes()).toBe(0);
  });

  it("an expired claim is re-claimed in place with every slot taken, and submitted again under its key (not as a first attempt: its task may exist)", async () => {
    const w = await world({ phases: [["CLAIMED", "PENDING"]], maxConcurrent: 1 }, { at: CLAIM_LEASE_MS });
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 1 }));
    expect(w.submitter.submits.map((r) => [r.idempotencyKey, r.firstAttempt])).toEqual([
      [key(w.targets[0]!), undefined],
    ]);
    expect(await w.statuses()).toEqual(["SUBMITTED", "PENDING"]);
    expect((await w.stored()).inFlight).toBe(1);
  });

  it("a claim under a live lease is left alone (another pass is submitting it)", async () => {
    const w = await world({ phases: [["CLAIMED", "PENDING"]], maxConcurrent: 1 }, { at: CLAIM_LEASE_MS - 1 });
    await w.pass();
    expect(w.submitter.submits).toEqual([]);
    expect(await w.statuses()).toEqual(["CLAIMED", "PENDING"]);
  });

  it("a BLOCKED target whose retry is due goes before later PENDING ones and takes a slot; one not yet due waits and is counted", async () => {
    const w = await world(
      {
        phases: [["BLOCKED", "BLOCKED", "PENDING", "PENDING"]],
        maxConcurrent: 2,
        target: (i) => (i === 1 ? { retryAt: T0 + 10 * 60_000 } : {}),
      },
      { at: 60_000 },
    );
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 2 }));
    expect(w.submitter.submittedTargets()).toEqual([w.targets[0]!.id, w.targets[2]!.id]);
    // Ready were 0, 2 and 3; the batch holds only as many as there are free slots.
    expect(w.runs.calls.of("claimTargets")).toBe(1);
    expect(w.runs.calls.of("claimTarget")).toBe(0);
    expect((await w.stored()).statusMessage).toBe(
      "submitted 2 operation run targets; 1 target waiting on rack conflicts",
    );
  });

  it("100 ready targets and 100 slots: one batch claim of 98, then the last two one by one", async () => {
    const w = await world({
      phases: [Array.from({ length: 100 }, () => "PENDING" as const)],
      maxConcurrent: 100,
    });
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 100 }));
    expect(w.runs.calls.of("claimTargets")).toBe(1);
    expect(w.runs.calls.of("claimTarget")).toBe(2);
    expect(new Set(w.submitter.submittedTargets()).size).toBe(100);
    expect((await w.stored()).inFlight).toBe(100);
  });

  it("the batch lost to a rival's claim ('lost-race') → one by one over the same list: the rival's target skipped", async () => {
    const w = await world({
      phases: [["PENDING", "PENDING", "PENDING", "PENDING", "PENDING"]],
      maxConcurrent: 3,
    });
    w.runs.interleave("claimTargets", () => w.runs.claimTarget(w.targets[1]!, CLAIM_LEASE_MS, w.clock.now));
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 2 }));
    expect(w.submitter.submittedTargets()).toEqual([w.targets[0]!.id, w.targets[2]!.id]);
    expect(await w.statuses()).toEqual(["SUBMITTED", "CLAIMED", "SUBMITTED", "PENDING", "PENDING"]);
    expect((await w.stored()).inFlight).toBe(3);
  });

  it("the batch refused because a rival took a slot ('slots-full') → one by one until the store says the slots are full", async () => {
    // Ready as read: 0, 1, 2 (PENDING up to the 3 free slots) and 4 (BLOCKED, due).
    const w = await world(
      { phases: [["PENDING", "PENDING", "PENDING", "PENDING", "BLOCKED"]], maxConcurrent: 3 },
      { at: 60_000 },
    );
    w.runs.interleave("claimTargets", () => w.runs.claimTarget(w.targets[3]!, CLAIM_LEASE_MS, w.clock.now));
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 2 }));
    expect(w.submitter.submittedTargets()).toEqual([w.targets[0]!.id, w.targets[1]!.id]);
    // The rival's claim, then ours: 0 and 1 claimed, 2 'slots-full', and 4 is not even tried.
    expect(w.runs.calls.of("claimTarget")).toBe(4);
    expect(await w.statuses()).toEqual(["SUBMITTED", "SUBMITTED", "PENDING", "CLAIMED", "BLOCKED"]);
  });

  it("an operator pause between the pass's read and its claim ('run-not-active'): nothing claimed, no one-by-one", async () => {
    const w = await world({ phases: [["PENDING", "PENDING"]] });
    w.runs.interleave("claimTargets", () => w.controls.pause(RUN));
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING" }));
    expect(w.runs.calls.of("claimTarget")).toBe(0);
    expect(w.submitter.submits).toEqual([]);
    expect(await w.stored()).toMatchObject({
      status: "PAUSED",
      reason: "OPERATOR_PAUSED",
      statusMessage: "operation run paused by operator",
      inFlight: 0,
    });
  });
});

describe("dispatcher: a wake-up's reads", () => {
  /** The order of the pass's reads: a read's start, its end, and the queue asked for (phase, PENDING limit). */
  function traceReads(w: Awaited<ReturnType<typeof world>>): string[] {
    const reads: string[] = [];
    const getRun = w.runs.getRunForDispatch.bind(w.runs);
    const listQueued = w.runs.listQueuedTargets.bind(w.runs);
    w.runs.getRunForDispatch = async (id) => {
      reads.push("run…");
      const run = await getRun(id);
      reads.push("…run");
      return run;
    };
    w.runs.listQueuedTargets = async (id, phase, limit) => {
      reads.push(`queue(phase ${phase}, ${limit} pending)`);
      return listQueued(id, phase, limit);
    };
    return reads;
  }

  it("a wake-up's pass of a run seen before reads its queue beside the run (phase and limit as last seen); the first pass and a tick's read in turn, for the free slots", async () => {
    const w = await world({ phases: [["SUBMITTED", "PENDING", "PENDING", "PENDING"]], maxConcurrent: 3 });
    const reads = traceReads(w);
    await w.pass();
    expect(reads).toEqual(["run…", "…run", "queue(phase 0, 2 pending)"]);
    await w.runs.recordOutcome(RUN, w.targets[0]!.id, "COMPLETED", "done", w.clock.now);
    reads.length = 0;
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 1 }));
    expect(reads).toEqual(["run…", "queue(phase 0, 3 pending)", "…run"]);
    await w.runs.recordOutcome(RUN, w.targets[1]!.id, "COMPLETED", "done", w.clock.now);
    reads.length = 0;
    await w.dispatcher.tick();
    expect(reads).toEqual(["run…", "…run", "queue(phase 0, 1 pending)"]);
    expect(await w.statuses()).toEqual(["COMPLETED", "COMPLETED", "SUBMITTED", "SUBMITTED"]);
    expect((await w.stored()).inFlight).toBe(2);
  });

  it("a run that moved to another phase since it was seen: the queue guessed is dropped, the new phase's read and claimed", async () => {
    const w = await world({
      phases: [
        ["SUBMITTED", "PENDING"],
        ["PENDING", "PENDING"],
      ],
      maxConcurrent: 2,
    });
    const reads = traceReads(w);
    await w.pass();
    expect(await w.statuses()).toEqual(["SUBMITTED", "SUBMITTED", "PENDING", "PENDING"]);
    // Another process ended phase 0 and opened phase 1.
    for (const t of w.targets.slice(0, 2))
      await w.runs.recordOutcome(RUN, t.id, "COMPLETED", "done", w.clock.now);
    const run = await w.stored();
    expect(
      await w.runs.saveRun({ ...run, currentPhaseIndex: 1, updatedAt: run.updatedAt + 1 }, run.updatedAt),
    ).toBe("saved");
    reads.length = 0;
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 2 }));
    expect(reads).toEqual(["run…", "queue(phase 0, 2 pending)", "…run", "queue(phase 1, 2 pending)"]);
    expect(w.submitter.submittedTargets().slice(-2)).toEqual([w.targets[2]!.id, w.targets[3]!.id]);
  });
});

describe("dispatcher: the run's status message after a claim", () => {
  type Answer = "submitted" | "conflict" | "rejected";
  it.each([
    [["submitted"], "submitted 1 operation run target"],
    [["submitted", "submitted"], "submitted 2 operation run targets"],
    [["submitted", "conflict"], "submitted 1 operation run target; 1 target waiting on rack conflicts"],
    [["conflict", "conflict"], "2 targets waiting on rack conflicts"],
    [["rejected"], "operation run resumed"],
  ] as [Answer[], string][])("answers %j → %j", async (answers, message) => {
    const w = await world({
      phases: [answers.map(() => "PENDING" as const)],
      statusMessage: "operation run resumed",
    });
    const byTarget = new Map(w.targets.map((t, i) => [t.id, answers[i]]));
    w.submitter.answer = (r) => {
      const answer = byTarget.get(r.targetId);
      if (answer === "submitted") return { kind: "submitted", taskId: taskIdFor(r.targetId) };
      return { kind: answer === "conflict" ? "conflict" : "rejected", message: "no" };
    };
    await w.pass();
    expect((await w.stored()).statusMessage).toBe(message);
  });

  it("a control that wrote during the submissions wins: no message is set on the paused run", async () => {
    const w = await world({ phases: [["PENDING"]] });
    w.submitter.answer = async (r) => {
      await w.controls.pause(RUN);
      return { kind: "submitted", taskId: taskIdFor(r.targetId) };
    };
    expect(await w.pass()).toEqual(passResult("claimed", { status: "RUNNING", submitted: 1 }));
    expect(await w.stored()).toMatchObject({
      status: "PAUSED",
      reason: "OPERATOR_PAUSED",
      statusMessage: "operation run paused by operator",
    });
  });
});

describe("dispatcher: the failure-domain spread (1 per row)", () => {
  const ROWS = ["A", "A", "A", "B"];
  const state: RunState = {
    phases: [["SUBMITTED", "PENDING", "PENDING", "PENDING"]],
    maxConcurrent: 3,
    config: { failureDomainSpread: { kind: "ROW", maxInFlight: 1 } },
    target: (i) => ({ failureDomain: ROWS[i] as string }),
  };

  async function spreadWorld(stale: boolean) {
    const store = new MemoryRunStore();
    const w = await world(state, { store });
    // The store's run holds row A (target 0 in flight), as a claim of it would have left it.
    const { run, targets } = runInState(RUN, state);
    run.domainInFlight = { A: 1 };
    const fresh = new MemoryRunStore();
    await fresh.createRun(run, targets);
    const getRun = fresh.getRun.bind(fresh);
    // A stale read: the pass decides as if row A were free; only the claim's condition knows.
    if (stale) {
      const getRunForDispatch = fresh.getRunForDispatch.bind(fresh);
      fresh.getRunForDispatch = async (id: string) => {
        const read = await getRunForDispatch(id);
        if (read !== undefined) delete read.run.domainInFlight;
        return read;
      };
    }
    const dispatcher = createDispatcher({
      runs: fresh,
      submitter: w.submitter,
      clock: clockOf(() => w.clock.now),
    });
    fresh.calls.reset();
    return { ...w, fresh, getRun, pass: () => dispatcher.dispatchRun(RUN) };
  }

  it("row A full as read: the pass skips A's racks and claims B's, in one batch", async () => {
    const w = await spreadWorld(false);
    expect(await w.pass()).toMatchObject({ decision: "claimed", submitted: 1 });
    expect(w.submitter.submittedTargets()).toEqual([w.targets[3]?.id]);
    expect(w.fresh.calls.of("claimTargets")).toBe(1);
    expect(w.fresh.calls.of("claimTarget")).toBe(0);
    expect((await w.getRun(RUN))?.domainInFlight).toEqual({ A: 1, B: 1 });
  });

  it("row A full but read free: the batch is refused, one by one A's rack meets domain-full, the rest of A waits, B is claimed", async () => {
    const w = await spreadWorld(true);
    expect(await w.pass()).toMatchObject({ decision: "claimed", submitted: 1 });
    expect(w.submitter.submittedTargets()).toEqual([w.targets[3]?.id]);
    // The batch [A1, B] refused; then A1 refused for its row and A2 not tried; then B claimed.
    expect(w.fresh.calls.of("claimTargets")).toBe(1);
    expect(w.fresh.calls.of("claimTarget")).toBe(2);
    const statuses = await Promise.all(
      w.targets.map(async (t) => (await w.fresh.getTarget(RUN, t.id))?.status),
    );
    expect(statuses).toEqual(["SUBMITTED", "PENDING", "PENDING", "SUBMITTED"]);
    expect((await w.getRun(RUN))?.domainInFlight).toEqual({ A: 1, B: 1 });
  });
});
