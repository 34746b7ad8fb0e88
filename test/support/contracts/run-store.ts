/**
 * The RunStore contract (src/app/ports.ts) as one suite, run against every implementation: the
 * in-memory fake (test/unit/memory-stores.test.ts) and DynamoDB on moto
 * (test/integration/store-contracts.test.ts). A fake that passes it behaves, for the use cases,
 * like the real store: same outcomes for the same conditional writes, same counters, same order.
 *
 * The suite makes its own runs with distinct ids and never assumes an empty store: listings are
 * narrowed to the runs of the case at hand (by name for listRuns, by id for the active index).
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { RunStore } from "../../../src/app/ports.js";
import type { Run, Target } from "../../../src/domain/model.js";
import { runWithTargets, uuid } from "../dynamodb-fixtures.js";

export interface RunStoreSubject {
  runs: RunStore;
}

const T = 1_700_000_100_000;
const LEASE = 30_000;
const ALL = { offset: 0, limit: 100 };
const ZERO = { completed: 0, failed: 0, terminated: 0, skipped: 0 };

export function describeRunStoreContract(name: string, setup: () => Promise<RunStoreSubject>): void {
  describe(`RunStore contract: ${name}`, () => {
    let runs: RunStore;
    let seq = 0;
    beforeAll(async () => {
      ({ runs } = await setup());
    });

    /** A committed run with PENDING targets in sequence order (phase sizes as given). */
    async function created(
      options: { phaseSizes?: number[]; maxConcurrent?: number; name?: string; createdAt?: number } = {},
      id = uuid(++seq, "c0ffee00"),
    ): Promise<{ run: Run; targets: Target[] }> {
      const made = runWithTargets(id, { phaseSizes: [3], ...options });
      await runs.createRun(made.run, made.targets);
      return made;
    }
    const target = async (t: Target) => (await runs.getTarget(t.runId, t.id)) as Target;
    const run = async (r: Run) => (await runs.getRun(r.id)) as Run;
    const statuses = (targets: Target[]) => Promise.all(targets.map(async (t) => (await target(t)).status));
    const ids = (targets: Target[]) => targets.map((t) => t.id);
    /** saveRun with the next version, as the use cases write it. */
    const save = async (r: Run, changes: Partial<Run>) => {
      const current = await run(r);
      return runs.saveRun({ ...current, ...changes, updatedAt: current.updatedAt + 1 }, current.updatedAt);
    };

    describe("createRun with a client request id, and mayCommit", () => {
      const request = (id: string, expiresAt: number) => ({ id, fingerprint: `fp-${id}`, expiresAt });
      const fresh = () => runWithTargets(uuid(++seq, "c0ffee00"), { phaseSizes: [2] });

      it("the id is committed with the run: getClientRequest answers its run until it expires", async () => {
        const made = fresh();
        const id = `contract-req-${seq}`;
        const expiresAt = made.run.createdAt + 60_000;
        expect(
          await runs.createRun(made.run, made.targets, { clientRequest: request(id, expiresAt) }),
        ).toEqual({
          outcome: "created",
        });
        expect(await runs.getClientRequest(id, made.run.createdAt)).toEqual({
          runId: made.run.id,
          fingerprint: `fp-${id}`,
          expiresAt,
        });
        expect(await runs.getClientRequest(id, expiresAt)).toBeUndefined();
        expect(await runs.getClientRequest(`${id}-unknown`, made.run.createdAt)).toBeUndefined();
      });

      it("a second create with a live id is 'request-id-taken' and invisible; after expiry the id is free", async () => {
        const first = fresh();
        const id = `contract-req-${seq}`;
        const expiresAt = first.run.createdAt + 1000;
        await runs.createRun(first.run, first.targets, { clientRequest: request(id, expiresAt) });
        const second = fresh();
        expect(
          await runs.createRun(second.run, second.targets, { clientRequest: request(id, expiresAt + 5) }),
        ).toEqual({ outcome: "request-id-taken" });
        expect(await runs.getRun(second.run.id)).toBeUndefined();
        expect((await runs.getClientRequest(id, first.run.createdAt))?.runId).toBe(first.run.id);

        const later = runWithTargets(uuid(++seq, "c0ffee00"), { phaseSizes: [1], createdAt: expiresAt });
        expect(
          await runs.createRun(later.run, later.targets, { clientRequest: request(id, expiresAt + 60_000) }),
        ).toEqual({ outcome: "created" });
        expect((await runs.getClientRequest(id, expiresAt))?.runId).toBe(later.run.id);
      });

      it("mayCommit false: 'abandoned', no run and no target visible", async () => {
        const made = fresh();
        expect(await runs.createRun(made.run, made.targets, { mayCommit: () => false })).toEqual({
          outcome: "abandoned",
        });
        expect(await runs.getRun(made.run.id)).toBeUndefined();
        expect(
          await runs.listTargets(made.run.id, { phaseFrom: 0, phaseTo: 0, page: { offset: 0, limit: 10 } }),
        ).toBeUndefined();
      });
    });

    describe("createRun and the reads", () => {
      it("a created run and its targets read back field for field", async () => {
        const made = runWithTargets(uuid(++seq, "c0ffee00"), { phaseSizes: [2, 3] });
        made.run.startedAt = made.run.createdAt + 5;
        made.targets[0]!.taskId = uuid(9);
        made.targets[1]!.rackExternalId = "EXT-1";
        await runs.createRun(made.run, made.targets);
        expect(await runs.getRun(made.run.id)).toEqual(made.run);
        for (const t of made.targets) expect(await runs.getTarget(made.run.id, t.id)).toEqual(t);
        expect(await runs.listTargets(made.run.id, { phaseFrom: 0, phaseTo: 1, page: ALL })).toEqual({
          targets: made.targets,
          total: 5,
        });
      });

      it("unknown ids read as absent: getRun, getRunSecrets, getTarget; listTargets is undefined", async () => {
        const { run: known, targets } = await created();
        const missing = uuid(++seq, "dead0000");
        expect(await runs.getRun(missing)).toBeUndefined();
        expect(await runs.getRunSecrets(missing)).toBeUndefined();
        expect(await runs.getTarget(missing, targets[0]!.id)).toBeUndefined();
        expect(await runs.getTarget(known.id, uuid(1, "dead0000"))).toBeUndefined();
        expect(await runs.listTargets(missing, { phaseFrom: 0, phaseTo: 0, page: ALL })).toBeUndefined();
      });

      it("an existing run id is ALREADY_EXISTS, and the first run and its targets stay as they were", async () => {
        const first = await created({ phaseSizes: [2] });
        const second = runWithTargets(first.run.id, { phaseSizes: [3], name: "other" });
        for (const t of second.targets) t.id = t.id.replace(/^.{8}/, "5ec0d000");
        await expect(runs.createRun(second.run, second.targets)).rejects.toMatchObject({
          code: "ALREADY_EXISTS",
        });
        expect(await run(first.run)).toEqual(first.run);
        expect(
          (await runs.listTargets(first.run.id, { phaseFrom: 0, phaseTo: 0, page: ALL }))?.targets,
        ).toEqual(first.targets);
        expect(await runs.getTarget(first.run.id, second.targets[2]!.id)).toBeUndefined();
      });

      it("firmware credentials are left out of getRun and listRuns and come back from getRunSecrets only", async () => {
        const made = runWithTargets(uuid(++seq, "c0ffee00"), { phaseSizes: [1], name: "with-secrets" });
        made.run.config.operation.firmware.authentication = { kind: "shared", secret: "hunter2" };
        await runs.createRun(made.run, made.targets);
        const read = await run(made.run);
        expect("authentication" in read.config.operation.firmware).toBe(false);
        expect(JSON.stringify(read)).not.toContain("hunter2");
        const listed = await runs.listRuns((e) => e.id === made.run.id, ALL);
        expect(JSON.stringify(listed)).not.toContain("hunter2");
        expect(await runs.getRunSecrets(made.run.id)).toEqual({ kind: "shared", secret: "hunter2" });
        const plain = await created();
        expect(await runs.getRunSecrets(plain.run.id)).toBeUndefined();
      });

      it("what is read is a copy: mutating it, or what was given to createRun, changes nothing stored", async () => {
        const made = await created({ phaseSizes: [1] });
        const expected = structuredClone(made);
        made.run.counters[0]!.failed = 9;
        made.targets[0]!.status = "FAILED";
        const read = await run(made.run);
        read.inFlight = 7;
        read.config.safetyGates.push({ kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 1 });
        const readTarget = await target(made.targets[0]!);
        readTarget.componentsByType[0]!.componentIds.push("x");
        expect(await run(made.run)).toEqual(expected.run);
        expect(await target(made.targets[0]!)).toEqual(expected.targets[0]);
      });
    });

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
        const { runs: listed, total } = await runs.listRuns(only, ALL);
        expect(listed.map((r) => r.id)).toEqual([order[3], order[2], order[1], order[0]]);
        expect(total).toBe(4);
      });

      it("offset 1 limit 2 → the 2nd and 3rd newest; an offset past the end is empty; total stays 4", async () => {
        const middle = await runs.listRuns(only, { offset: 1, limit: 2 });
        expect(middle.runs.map((r) => r.id)).toEqual([order[2], order[1]]);
        expect(middle.total).toBe(4);
        expect(await runs.listRuns(only, { offset: 10, limit: 5 })).toEqual({ runs: [], total: 4 });
      });

      it("the filter sees each run's list entry as it is now (status and reason after a saveRun)", async () => {
        const newest = (await runs.getRun(order[3]!)) as Run;
        expect(await save(newest, { status: "PAUSED", reason: "OPERATOR_PAUSED" })).toBe("saved");
        const seen: unknown[] = [];
        const paused = await runs.listRuns((e) => {
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

    describe("listTargets", () => {
      let made: { run: Run; targets: Target[] };
      beforeAll(async () => {
        made = runWithTargets(uuid(++seq, "c0ffee00"), { phaseSizes: [2, 3, 2] });
        // Given out of order: the listing orders by phase, then sequence, whatever the input order.
        await runs.createRun(made.run, [...made.targets].reverse());
        expect(await runs.recordOutcome(made.run.id, made.targets[3]!.id, "FAILED", "boom", T)).toBe(
          "recorded",
        );
      });
      const list = (options: Partial<Parameters<RunStore["listTargets"]>[1]>) =>
        runs.listTargets(made.run.id, { phaseFrom: 0, phaseTo: 2, page: ALL, ...options });
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

    describe("saveRun and the active runs", () => {
      it("saves on the version read; an older version is 'stale' and writes nothing; an unknown run is 'not-found'", async () => {
        const { run: r } = await created();
        const first: Run = {
          ...r,
          status: "RUNNING",
          startedAt: r.createdAt + 1,
          updatedAt: r.updatedAt + 1,
        };
        expect(await runs.saveRun(first, r.updatedAt)).toBe("saved");
        const late: Run = { ...r, status: "CANCELLED", updatedAt: r.updatedAt + 2 };
        expect(await runs.saveRun(late, r.updatedAt)).toBe("stale");
        expect(await run(r)).toEqual(first);
        expect(await runs.saveRun({ ...r, id: uuid(++seq, "dead0000") }, r.updatedAt - 1)).toBe("not-found");
      });

      it("writes the control fields only: name, configuration, plan, counters and inFlight stay as stored", async () => {
        const { run: r, targets } = await created({ phaseSizes: [2] });
        expect(await runs.claimTarget(targets[0]!, LEASE, T)).toBe("claimed");
        expect(await runs.recordOutcome(r.id, targets[1]!.id, "COMPLETED", "", T)).toBe("recorded");
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
        expect(await runs.saveRun(written, r.updatedAt)).toBe("saved");
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
        expect(await runs.claimTarget(targets[0]!, LEASE, T)).toBe("claimed");
        const pause: Run = {
          ...r,
          status: "PAUSED",
          reason: "MAINTENANCE_WINDOW",
          statusMessage: "maintenance window closed at 2023-11-14T22:15:00Z: 2 targets not started",
          updatedAt: r.updatedAt + 1,
        };
        expect(await runs.saveRun(pause, r.updatedAt)).toBe("stale");
        expect((await run(r))?.status).toBe(r.status);
        // Decided again on what is there now (1 flashing), the pause is written.
        expect(
          await runs.saveRun({ ...pause, inFlight: 1, statusMessage: "…1 not started" }, r.updatedAt),
        ).toBe("saved");
        // Other writes never pin inFlight (a gate's pause, a message): counters stay theirs.
        const { run: g, targets: gt } = await created({ phaseSizes: [2] });
        expect(await runs.claimTarget(gt[0]!, LEASE, T)).toBe("claimed");
        const gate: Run = { ...g, status: "PAUSED", reason: "SAFETY_GATE", updatedAt: g.updatedAt + 1 };
        expect(await runs.saveRun(gate, g.updatedAt)).toBe("saved");
      });

      it("startedAt and finishedAt left out of a save are removed", async () => {
        const { run: r } = await created();
        expect(await save(r, { status: "COMPLETED", startedAt: T, finishedAt: T + 1 })).toBe("saved");
        const done = await run(r);
        const { startedAt: _s, finishedAt: _f, ...without } = done;
        expect(await runs.saveRun({ ...without, updatedAt: done.updatedAt + 1 }, done.updatedAt)).toBe(
          "saved",
        );
        const read = await run(r);
        expect(read.startedAt).toBeUndefined();
        expect(read.finishedAt).toBeUndefined();
      });

      it("PENDING and RUNNING runs are active; PAUSED and terminal ones are not", async () => {
        const { run: r } = await created();
        const active = async () => (await runs.listActiveRunIds()).includes(r.id);
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
        expect(await runs.listQueuedTargets(r.id, 0, 2)).toEqual({ held: [], pending: [t0, t1] });
        expect(ids((await runs.listQueuedTargets(r.id, 0, 100)).pending)).toEqual(ids(targets.slice(0, 6)));
        expect((await runs.listQueuedTargets(r.id, 0, 0)).pending).toEqual([]);
        expect(ids((await runs.listQueuedTargets(r.id, 1, 5)).pending)).toEqual([t6.id, t7.id]);

        // t0 submitted and t3 completed leave the queue, t4 terminated too; t1 CLAIMED and t2
        // BLOCKED are held.
        expect((await runs.claimTargets([t0, t1, t2, t3], LEASE, T)).outcome).toBe("claimed");
        expect(await runs.recordSubmitted(r.id, t0.id, "task-0", T + 1)).toBe("recorded");
        const blocked = { message: "rack busy", retryAt: T + 5000, conflictAttempts: 1, firstBlockedAt: T };
        expect(await runs.recordBlocked(r.id, t2.id, blocked, T + 1)).toBe("recorded");
        expect(await runs.recordOutcome(r.id, t3.id, "COMPLETED", "done", T + 2)).toBe("recorded");
        expect(await runs.skipTargets(r.id, [t4.id], "cancelled", T + 3)).toBe(1);

        const queue = await runs.listQueuedTargets(r.id, 0, 10);
        expect(queue.held.map((t) => [t.id, t.status])).toEqual([
          [t1.id, "CLAIMED"],
          [t2.id, "BLOCKED"],
        ]);
        expect(ids(queue.pending)).toEqual([t5.id]);
        expect(queue.held).toEqual([await target(t1), await target(t2)]);
      });

      it("more held targets than the last read saw, and fewer: still every held one and exactly the first N PENDING", async () => {
        const { run: r, targets } = await created({ phaseSizes: [9], maxConcurrent: 9 });
        expect(ids((await runs.listQueuedTargets(r.id, 0, 2)).pending)).toEqual(ids(targets.slice(0, 2)));
        expect((await runs.claimTargets(targets.slice(0, 6), LEASE, T)).outcome).toBe("claimed");
        const grown = await runs.listQueuedTargets(r.id, 0, 2);
        expect(ids(grown.held)).toEqual(ids(targets.slice(0, 6)));
        expect(ids(grown.pending)).toEqual(ids(targets.slice(6, 8)));
        for (const t of targets.slice(0, 5))
          expect(await runs.recordSubmitted(r.id, t.id, `task-${t.id}`, T + 1)).toBe("recorded");
        const shrunk = await runs.listQueuedTargets(r.id, 0, 1);
        expect(ids(shrunk.held)).toEqual([targets[5]!.id]);
        expect(ids(shrunk.pending)).toEqual([targets[6]!.id]);
        expect(ids((await runs.listQueuedTargets(r.id, 0, 0)).held)).toEqual([targets[5]!.id]);
        expect(ids((await runs.listQueuedTargets(r.id, 0, 50)).pending)).toEqual(ids(targets.slice(6)));
      });
    });

    describe("claims and the maintenance window's hard end (end_time)", () => {
      /** A run whose template ends at `end`: the store keeps it and judges every claim by it. */
      async function windowed(end: number, phaseSizes = [3]): Promise<{ run: Run; targets: Target[] }> {
        const made = runWithTargets(uuid(++seq, "c0ffee00"), { phaseSizes });
        const firmware = { ...made.run.config.operation.firmware, endTime: end };
        const r = {
          ...made.run,
          config: { ...made.run.config, operation: { kind: "upgradeFirmware" as const, firmware } },
        };
        await runs.createRun(r, made.targets);
        return { run: r, targets: made.targets };
      }

      it("a claim 1 ms before end_time commits; one at end_time is 'window-closed' and nothing moves", async () => {
        const { run: r, targets } = await windowed(T + 1000);
        expect(await runs.claimTarget(targets[0]!, LEASE, T + 999)).toBe("claimed");
        expect(await runs.claimTarget(targets[1]!, LEASE, T + 1000)).toBe("window-closed");
        expect((await runs.claimTargets([targets[1]!, targets[2]!], LEASE, T + 1000)).outcome).toBe(
          "window-closed",
        );
        expect(await statuses(targets)).toEqual(["CLAIMED", "PENDING", "PENDING"]);
        expect((await run(r)).inFlight).toBe(1);
      });

      it("`until` (a recurring window's close) refuses a claim at or after it, whatever the run holds", async () => {
        const { run: r, targets } = await created();
        expect(await runs.claimTarget(targets[0]!, LEASE, T, T)).toBe("window-closed");
        expect(await runs.claimTargets(targets.slice(0, 2), LEASE, T, T - 1)).toEqual({
          outcome: "window-closed",
          claimed: [],
        });
        expect(await runs.claimTarget(targets[0]!, LEASE, T, T + 1)).toBe("claimed");
        expect((await run(r)).inFlight).toBe(1);
      });

      it("a paused run past its end_time is 'run-not-active' (the status is judged first)", async () => {
        const { run: r, targets } = await windowed(T);
        expect(await save(r, { status: "PAUSED", reason: "OPERATOR_PAUSED" })).toBe("saved");
        expect(await runs.claimTarget(targets[0]!, LEASE, T + 5)).toBe("run-not-active");
      });
    });

    describe("claimTarget", () => {
      it("PENDING → CLAIMED with a lease and updatedAt now, the message kept, taking one slot", async () => {
        const { run: r, targets } = await created();
        expect(await runs.claimTarget(targets[0]!, LEASE, T)).toBe("claimed");
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
        expect(await runs.claimTarget(a, LEASE, T)).toBe("claimed");
        expect(await runs.claimTarget(a, LEASE, T)).toBe("lost-race"); // read as PENDING, now CLAIMED
        const claimedA = await target(a);
        expect(await runs.claimTarget(claimedA, LEASE, T + LEASE - 1)).toBe("lost-race"); // lease still running
        expect(await runs.claimTarget(b, LEASE, T)).toBe("claimed");
        const blocked = { message: "busy", retryAt: T + 2000, conflictAttempts: 1, firstBlockedAt: T };
        expect(await runs.recordBlocked(r.id, b.id, blocked, T)).toBe("recorded");
        expect(await runs.claimTarget(await target(b), LEASE, T + 1999)).toBe("lost-race"); // retry not due
        expect(await runs.claimTarget(c, LEASE, T)).toBe("claimed");
        expect(await runs.recordSubmitted(r.id, c.id, "task-c", T)).toBe("recorded");
        expect(await runs.claimTarget(await target(c), LEASE, T + LEASE)).toBe("lost-race"); // SUBMITTED
        expect(await runs.claimTarget({ ...d, id: uuid(7, "dead0000") }, LEASE, T)).toBe("lost-race");
        expect(await statuses(targets)).toEqual(["CLAIMED", "BLOCKED", "SUBMITTED", "PENDING"]);
        expect((await run(r)).inFlight).toBe(2);
      });

      it("'slots-full' once inFlight reached max_concurrent_targets; nothing moves", async () => {
        const { run: r, targets } = await created({ phaseSizes: [3], maxConcurrent: 2 });
        expect(await runs.claimTarget(targets[0]!, LEASE, T)).toBe("claimed");
        expect(await runs.claimTarget(targets[1]!, LEASE, T)).toBe("claimed");
        expect(await runs.claimTarget(targets[2]!, LEASE, T)).toBe("slots-full");
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
          expect(await runs.claimTarget(targets[0]!, 1000, T)).toBe("claimed");
          expect(await save(r, { status, reason })).toBe("saved");
          expect(await runs.claimTarget(targets[1]!, LEASE, T)).toBe("run-not-active");
          expect(await runs.claimTarget(await target(targets[0]!), LEASE, T + 1000)).toBe("run-not-active");
          expect(await statuses(targets)).toEqual(["CLAIMED", "PENDING", "PENDING"]);
          expect((await target(targets[0]!)).leaseExpiresAt).toBe(T + 1000);
          expect((await run(r)).inFlight).toBe(1);
        },
      );

      it("an expired claim is re-claimed in place without a new slot, even with every slot taken", async () => {
        const { run: r, targets } = await created({ phaseSizes: [2], maxConcurrent: 1 });
        expect(await runs.claimTarget(targets[0]!, 1000, T)).toBe("claimed");
        expect(await runs.claimTarget(targets[1]!, LEASE, T + 1000)).toBe("slots-full");
        expect(await runs.claimTarget(await target(targets[0]!), 1000, T + 1000)).toBe("claimed");
        expect(await target(targets[0]!)).toMatchObject({ status: "CLAIMED", leaseExpiresAt: T + 2000 });
        expect((await run(r)).inFlight).toBe(1);
      });

      it("a BLOCKED target whose retry is due takes a slot and keeps its backoff state and message", async () => {
        const { run: r, targets } = await created({ phaseSizes: [1] });
        expect(await runs.claimTarget(targets[0]!, LEASE, T)).toBe("claimed");
        const blocked = {
          message: "rack busy",
          retryAt: T + 2000,
          conflictAttempts: 3,
          firstBlockedAt: T - 500,
        };
        expect(await runs.recordBlocked(r.id, targets[0]!.id, blocked, T)).toBe("recorded");
        expect((await run(r)).inFlight).toBe(0);
        expect(await runs.claimTarget(await target(targets[0]!), LEASE, T + 2000)).toBe("claimed");
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
          for (const t of (await runs.listQueuedTargets(r.id, 0, 6)).pending) {
            const outcome = await runs.claimTarget(t, LEASE, T);
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

    describe("claimTargets: a batch in one transaction", () => {
      it("the port's example: max 5, inFlight 2, [PENDING, BLOCKED due, CLAIMED expired] → k = 2, inFlight 4, all three as stored; then k = 2 more → 'slots-full'", async () => {
        const { run: r, targets } = await created({ phaseSizes: [6], maxConcurrent: 5 });
        const [a, b, c, d, e, f] = targets as [Target, Target, Target, Target, Target, Target];
        expect((await runs.claimTargets([b, c, d], 1000, T)).outcome).toBe("claimed");
        const blocked = { message: "busy", retryAt: T + 1000, conflictAttempts: 1, firstBlockedAt: T };
        expect(await runs.recordBlocked(r.id, b.id, blocked, T)).toBe("recorded");
        expect((await run(r)).inFlight).toBe(2); // c and d, both with leases over at T + 1000
        const batch = [a, await target(b), await target(c)];
        const result = await runs.claimTargets(batch, LEASE, T + 1000);
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
        expect(await runs.claimTargets([e, f], LEASE, T + 1000)).toEqual({
          outcome: "slots-full",
          claimed: [],
        });
        expect(await statuses([e, f])).toEqual(["PENDING", "PENDING"]);
        expect((await run(r)).inFlight).toBe(4);
      });

      it("a batch needing more slots than are free is 'slots-full' and claims nothing; exactly the free slots fit", async () => {
        const { run: r, targets } = await created({ phaseSizes: [5], maxConcurrent: 3 });
        expect((await runs.claimTargets(targets.slice(0, 2), LEASE, T)).outcome).toBe("claimed");
        expect(await runs.claimTargets(targets.slice(2, 4), LEASE, T)).toEqual({
          outcome: "slots-full",
          claimed: [],
        });
        expect(await runs.claimTargets(targets.slice(2, 5), LEASE, T)).toEqual({
          outcome: "slots-full",
          claimed: [],
        });
        expect(await statuses(targets)).toEqual(["CLAIMED", "CLAIMED", "PENDING", "PENDING", "PENDING"]);
        expect((await run(r)).inFlight).toBe(2);
        expect((await runs.claimTargets(targets.slice(2, 3), LEASE, T)).outcome).toBe("claimed");
        expect((await run(r)).inFlight).toBe(3);
      });

      it("expired claims in a batch take no new slot: two re-claims fit a full run, one more new target does not", async () => {
        const { run: r, targets } = await created({ phaseSizes: [3], maxConcurrent: 2 });
        expect((await runs.claimTargets(targets.slice(0, 2), 1000, T)).outcome).toBe("claimed");
        const expired = [await target(targets[0]!), await target(targets[1]!)];
        expect((await runs.claimTargets([...expired, targets[2]!], 1000, T + 1000)).outcome).toBe(
          "slots-full",
        );
        const again = await runs.claimTargets(expired, 1000, T + 1000);
        expect(again.outcome).toBe("claimed");
        expect(again.claimed.map((t) => t.leaseExpiresAt)).toEqual([T + 2000, T + 2000]);
        expect((await run(r)).inFlight).toBe(2);
      });

      it("one target moved since it was read → 'lost-race', and none of the others is claimed", async () => {
        const { run: r, targets } = await created();
        expect(await runs.claimTarget(targets[1]!, LEASE, T)).toBe("claimed");
        expect(await runs.claimTargets(targets, LEASE, T)).toEqual({ outcome: "lost-race", claimed: [] });
        expect(await statuses(targets)).toEqual(["PENDING", "CLAIMED", "PENDING"]);
        expect((await run(r)).inFlight).toBe(1);
      });

      it("a paused run is 'run-not-active' and nothing moves, re-claims only included", async () => {
        const { run: r, targets } = await created();
        expect((await runs.claimTargets(targets.slice(0, 1), 1000, T)).outcome).toBe("claimed");
        expect(await save(r, { status: "PAUSED", reason: "OPERATOR_PAUSED" })).toBe("saved");
        expect(await runs.claimTargets(targets.slice(1), LEASE, T)).toEqual({
          outcome: "run-not-active",
          claimed: [],
        });
        expect((await runs.claimTargets([await target(targets[0]!)], 1000, T + 1000)).outcome).toBe(
          "run-not-active",
        );
        expect(await statuses(targets)).toEqual(["CLAIMED", "PENDING", "PENDING"]);
        expect((await run(r)).inFlight).toBe(1);
      });

      it("an empty batch is 'claimed' with nothing; two runs, a repeated target or more than 98 targets throw", async () => {
        const a = runWithTargets(uuid(++seq, "c0ffee00"), { phaseSizes: [2] });
        const b = runWithTargets(uuid(++seq, "c0ffee00"), { phaseSizes: [1] });
        expect(await runs.claimTargets([], LEASE, T)).toEqual({ outcome: "claimed", claimed: [] });
        await expect(runs.claimTargets([a.targets[0]!, b.targets[0]!], LEASE, T)).rejects.toThrow(
          "claimTargets: targets of one run only",
        );
        await expect(runs.claimTargets([a.targets[0]!, a.targets[0]!], LEASE, T)).rejects.toThrow(
          "claimTargets: a target appears twice",
        );
        const many = runWithTargets(uuid(++seq, "c0ffee00"), { phaseSizes: [99] });
        await expect(runs.claimTargets(many.targets, LEASE, T)).rejects.toThrow(
          "claimTargets takes at most 98 targets, got 99",
        );
      });
    });

    describe("target transitions and the run's counters", () => {
      it("recordSubmitted: CLAIMED → SUBMITTED with the task id, 'submitted' by default, lease cleared, slot kept", async () => {
        const { run: r, targets } = await created();
        const [a, b, c] = targets as [Target, Target, Target];
        expect(await runs.recordSubmitted(r.id, a.id, "task-a", T)).toBe("lost-race"); // PENDING
        expect((await runs.claimTargets([a, b], LEASE, T)).outcome).toBe("claimed");
        expect(await runs.recordSubmitted(r.id, a.id, "task-a", T + 1)).toBe("recorded");
        expect(await target(a)).toEqual({
          ...a,
          status: "SUBMITTED",
          taskId: "task-a",
          message: "submitted",
          updatedAt: T + 1,
        });
        expect(await runs.recordSubmitted(r.id, a.id, "task-a", T + 2)).toBe("already-recorded");
        expect(await runs.recordSubmitted(r.id, a.id, "task-other", T + 2)).toBe("lost-race");
        expect(await runs.recordSubmitted(r.id, b.id, "task-b", T + 1, "resubmitted")).toBe("recorded");
        expect((await target(b)).message).toBe("resubmitted");
        expect(await runs.recordSubmitted(r.id, uuid(8, "dead0000"), "task-x", T)).toBe("not-found");
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
        expect(await runs.recordBlocked(r.id, targets[1]!.id, blocked, T)).toBe("lost-race"); // PENDING
        expect(await runs.claimTarget(targets[0]!, LEASE, T)).toBe("claimed");
        expect(await runs.recordBlocked(r.id, targets[0]!.id, blocked, T + 1)).toBe("recorded");
        expect(await target(targets[0]!)).toEqual({
          ...targets[0],
          status: "BLOCKED",
          ...blocked,
          updatedAt: T + 1,
        });
        expect(await runs.recordBlocked(r.id, targets[0]!.id, blocked, T + 2)).toBe("lost-race");
        expect(await runs.recordBlocked(r.id, uuid(9, "dead0000"), blocked, T)).toBe("not-found");
        expect((await run(r)).inFlight).toBe(0);
      });

      it("recordOutcome: the phase's counter +1 and, from CLAIMED or SUBMITTED only, inFlight −1; lease and retry cleared", async () => {
        const { run: r, targets } = await created({ phaseSizes: [1, 3] });
        const [p0, a, b, c] = targets as [Target, Target, Target, Target];
        expect((await runs.claimTargets([a, b], LEASE, T)).outcome).toBe("claimed");
        expect(await runs.recordSubmitted(r.id, b.id, "task-b", T)).toBe("recorded");
        expect((await run(r)).inFlight).toBe(2);
        expect(await runs.recordOutcome(r.id, a.id, "FAILED", "flash failed", T + 1)).toBe("recorded");
        expect(await runs.recordOutcome(r.id, b.id, "COMPLETED", "task completed", T + 2)).toBe("recorded");
        expect(await runs.recordOutcome(r.id, c.id, "TERMINATED", "cancelled", T + 3)).toBe("recorded");
        expect(await runs.recordOutcome(r.id, p0.id, "SKIPPED", "", T + 4)).toBe("recorded");
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
        expect(await runs.claimTarget(t, LEASE, T)).toBe("claimed");
        expect(await runs.recordSubmitted(r.id, t.id, "task-t", T)).toBe("recorded");
        const outcomes = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            runs.recordOutcome(r.id, t.id, i % 2 === 0 ? "FAILED" : "TERMINATED", "x", T + 1),
          ),
        );
        expect(outcomes.filter((o) => o === "recorded")).toHaveLength(1);
        expect(outcomes.filter((o) => o === "already-recorded")).toHaveLength(9);
        expect(await runs.recordOutcome(r.id, t.id, "COMPLETED", "late", T + 2)).toBe("already-recorded");
        const after = await run(r);
        expect(after.inFlight).toBe(0);
        expect(after.counters[0]).toEqual(ZERO);
        expect(after.counters[1]!.failed + after.counters[1]!.terminated).toBe(1);
        expect(await runs.recordOutcome(r.id, uuid(10, "dead0000"), "FAILED", "", T)).toBe("not-found");
      });

      it("recordOutcome with the target's phase (a child task's outcome): the same effects, exactly once; a target not in flight, or a wrong phase, is handled as without it", async () => {
        const { run: r, targets } = await created({ phaseSizes: [2, 3] });
        const [p0, p1, a, b, c] = targets as [Target, Target, Target, Target, Target];
        expect((await runs.claimTargets([a, b], LEASE, T)).outcome).toBe("claimed");
        expect(await runs.recordSubmitted(r.id, b.id, "task-b", T)).toBe("recorded");
        expect(await runs.recordOutcome(r.id, a.id, "FAILED", "flash failed", T + 1, 1)).toBe("recorded");
        const repeats = await Promise.all(
          Array.from({ length: 10 }, () => runs.recordOutcome(r.id, b.id, "COMPLETED", "done", T + 2, 1)),
        );
        expect(repeats.filter((o) => o === "recorded")).toHaveLength(1);
        expect(repeats.filter((o) => o === "already-recorded")).toHaveLength(9);
        expect(await runs.recordOutcome(r.id, a.id, "COMPLETED", "late", T + 3, 1)).toBe("already-recorded");
        // PENDING (not in flight): its counter moves, inFlight does not.
        expect(await runs.recordOutcome(r.id, c.id, "SKIPPED", "not started", T + 4, 1)).toBe("recorded");
        // In flight, but told the wrong phase: counted in its own.
        expect(await runs.claimTarget(p0, LEASE, T + 5)).toBe("claimed");
        expect(await runs.recordOutcome(r.id, p0.id, "TERMINATED", "stopped", T + 6, 1)).toBe("recorded");
        expect(await runs.recordOutcome(r.id, uuid(11, "dead0000"), "FAILED", "", T, 0)).toBe("not-found");
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
        expect(await runs.claimTarget(targets[0]!, LEASE, T)).toBe("claimed");
        expect(await save(r, { status: "PAUSED", reason: "OPERATOR_PAUSED" })).toBe("saved");
        expect(await runs.recordOutcome(r.id, targets[0]!.id, "COMPLETED", "", T + 1)).toBe("recorded");
        expect(await run(r)).toMatchObject({
          status: "PAUSED",
          inFlight: 0,
          counters: [{ ...ZERO, completed: 1 }],
        });
      });

      it("skipTargets moves each open target once to SKIPPED, returns how many moved, and frees only the slots held", async () => {
        const { run: r, targets } = await created({ phaseSizes: [4] });
        const [a, b, c, d] = targets as [Target, Target, Target, Target];
        expect((await runs.claimTargets([a, b, d], LEASE, T)).outcome).toBe("claimed");
        expect(await runs.recordOutcome(r.id, b.id, "COMPLETED", "", T)).toBe("recorded");
        const blocked = { message: "busy", retryAt: T + 9000, conflictAttempts: 2, firstBlockedAt: T - 1 };
        expect(await runs.recordBlocked(r.id, d.id, blocked, T)).toBe("recorded");
        expect(
          await runs.skipTargets(
            r.id,
            [a.id, b.id, c.id, d.id],
            "not started: operation run cancelled",
            T + 1,
          ),
        ).toBe(3);
        expect(await runs.skipTargets(r.id, [a.id, c.id], "again", T + 2)).toBe(0);
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
        expect(await runs.restartConflictClock(r.id, targets[0]!.id, T)).toBe("lost-race");
        expect(await runs.claimTarget(targets[0]!, LEASE, T)).toBe("claimed");
        const blocked = {
          message: "busy",
          retryAt: T + 60_000,
          conflictAttempts: 4,
          firstBlockedAt: T - 9000,
        };
        expect(await runs.recordBlocked(r.id, targets[0]!.id, blocked, T)).toBe("recorded");
        expect(await runs.restartConflictClock(r.id, targets[0]!.id, T + 5)).toBe("recorded");
        expect(await target(targets[0]!)).toEqual({
          ...targets[0],
          status: "BLOCKED",
          ...blocked,
          firstBlockedAt: T + 5,
          updatedAt: T + 5,
        });
        expect(await runs.restartConflictClock(r.id, uuid(11, "dead0000"), T)).toBe("not-found");
      });
    });

    describe("createRun with an origin (a retry or rollback run)", () => {
      it("the followed run's version and follow-ups and its event commit with the new run, on the version read; else 'origin-changed' and nothing", async () => {
        const { run: first } = await created({ phaseSizes: [1] });
        const followed = (from: Run, id: string) => {
          const at = from.updatedAt + 5;
          const run: Run = {
            ...from,
            updatedAt: at,
            followUps: [...(from.followUps ?? []), { kind: "retry", runId: id }],
          };
          const event = {
            runId: from.id,
            at,
            seq: 0,
            kind: "RETRIED" as const,
            runName: from.name,
            status: from.status,
            reason: from.reason,
            message: `retried by run ${id}: 1 target`,
            phaseIndex: 0,
            totalPhases: 1,
            stats: {
              current: { phaseIndex: 0, selectedTargets: 1, outcomes: ZERO },
              cumulative: { phaseIndex: 0, selectedTargets: 1, outcomes: ZERO },
            },
            detail: { type: "followUp" as const, runId: id, targets: 1 },
          };
          return { run, expectedUpdatedAt: from.updatedAt, event };
        };
        const a = runWithTargets(uuid(++seq, "c0ffee00"), { phaseSizes: [1] });
        a.run.origin = { kind: "retry", runId: first.id, includeTerminated: false, includeSkipped: true };
        expect(await runs.createRun(a.run, a.targets, { origin: followed(first, a.run.id) })).toEqual({
          outcome: "created",
        });
        expect((await run(a.run)).origin).toEqual(a.run.origin);
        const after = await run(first);
        expect(after.followUps).toEqual([{ kind: "retry", runId: a.run.id }]);
        expect(after.updatedAt).toBe(first.updatedAt + 5);
        expect(after.status).toBe(first.status);
        const events = (await runs.listRunEvents(first.id, ALL))?.events ?? [];
        expect(events.at(-1)).toMatchObject({
          kind: "RETRIED",
          detail: { type: "followUp", runId: a.run.id },
        });
        // Read before a's commit: stale now, nothing of b is written.
        const b = runWithTargets(uuid(++seq, "c0ffee00"), { phaseSizes: [1] });
        expect(await runs.createRun(b.run, b.targets, { origin: followed(first, b.run.id) })).toEqual({
          outcome: "origin-changed",
        });
        expect(await runs.getRun(b.run.id)).toBeUndefined();
        expect((await run(first)).followUps).toEqual([{ kind: "retry", runId: a.run.id }]);
      });
    });

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
        expect(await runs.claimTarget(targets[0]!, LEASE, T)).toBe("claimed");
        expect(await runs.recordSubmitted(r.id, targets[0]!.id, "task-1", T + 1)).toBe("recorded");
        const before = await target(targets[0]!);
        expect(await runs.recordPriorVersions(r.id, targets[0]!.id, priors)).toBe("recorded");
        expect(await target(targets[0]!)).toEqual({ ...before, priorVersions: priors });
        const again = [{ ...priors[0]!, version: "2.0" }];
        expect(await runs.recordPriorVersions(r.id, targets[0]!.id, again)).toBe("already-recorded");
        expect((await target(targets[0]!)).priorVersions).toEqual(priors);
        // Listed with the target, and an outcome leaves them.
        expect(await runs.recordOutcome(r.id, targets[0]!.id, "FAILED", "boom", T + 2)).toBe("recorded");
        const listed = await runs.listTargets(r.id, { phaseFrom: 0, phaseTo: 0, page: ALL });
        expect(listed?.targets.find((t) => t.id === targets[0]!.id)?.priorVersions).toEqual(priors);
        expect(listed?.targets.find((t) => t.id === targets[1]!.id)?.priorVersions).toBeUndefined();
        expect(await runs.recordPriorVersions(r.id, uuid(12, "dead0000"), priors)).toBe("not-found");
      });
    });
  });
}
