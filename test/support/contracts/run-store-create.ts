/**
 * The RunStore contract (run-store.ts), createRun: the client request id and mayCommit, what a created run reads back as, and a run created with an origin (a retry or rollback run).
 */
import { describe, expect, it } from "vitest";
import type { Run } from "../../../src/domain/model.js";
import { runWithTargets, uuid } from "../dynamodb-fixtures.js";
import { ALL, type RunStoreCase, ZERO } from "./run-store-case.js";

export function describeCreateWithRequestId(suite: RunStoreCase): void {
  const { nextSeq, lastSeq } = suite;

  describe("createRun with a client request id, and mayCommit", () => {
    const request = (id: string, expiresAt: number) => ({ id, fingerprint: `fp-${id}`, expiresAt });
    const fresh = () => runWithTargets(uuid(nextSeq(), "c0ffee00"), { phaseSizes: [2] });

    it("the id is committed with the run: getClientRequest answers its run until it expires", async () => {
      const made = fresh();
      const id = `contract-req-${lastSeq()}`;
      const expiresAt = made.run.createdAt + 60_000;
      expect(
        await suite.runs.createRun(made.run, made.targets, { clientRequest: request(id, expiresAt) }),
      ).toEqual({
        outcome: "created",
      });
      expect(await suite.runs.getClientRequest(id, made.run.createdAt)).toEqual({
        runId: made.run.id,
        fingerprint: `fp-${id}`,
        expiresAt,
      });
      expect(await suite.runs.getClientRequest(id, expiresAt)).toBeUndefined();
      expect(await suite.runs.getClientRequest(`${id}-unknown`, made.run.createdAt)).toBeUndefined();
    });

    it("a second create with a live id is 'request-id-taken' and invisible; after expiry the id is free", async () => {
      const first = fresh();
      const id = `contract-req-${lastSeq()}`;
      const expiresAt = first.run.createdAt + 1000;
      await suite.runs.createRun(first.run, first.targets, { clientRequest: request(id, expiresAt) });
      const second = fresh();
      expect(
        await suite.runs.createRun(second.run, second.targets, { clientRequest: request(id, expiresAt + 5) }),
      ).toEqual({ outcome: "request-id-taken" });
      expect(await suite.runs.getRun(second.run.id)).toBeUndefined();
      expect((await suite.runs.getClientRequest(id, first.run.createdAt))?.runId).toBe(first.run.id);

      const later = runWithTargets(uuid(nextSeq(), "c0ffee00"), { phaseSizes: [1], createdAt: expiresAt });
      expect(
        await suite.runs.createRun(later.run, later.targets, {
          clientRequest: request(id, expiresAt + 60_000),
        }),
      ).toEqual({ outcome: "created" });
      expect((await suite.runs.getClientRequest(id, expiresAt))?.runId).toBe(later.run.id);
    });

    it("mayCommit false: 'abandoned', no run and no target visible", async () => {
      const made = fresh();
      expect(await suite.runs.createRun(made.run, made.targets, { mayCommit: () => false })).toEqual({
        outcome: "abandoned",
      });
      expect(await suite.runs.getRun(made.run.id)).toBeUndefined();
      expect(
        await suite.runs.listTargets(made.run.id, {
          phaseFrom: 0,
          phaseTo: 0,
          page: { offset: 0, limit: 10 },
        }),
      ).toBeUndefined();
    });
  });
}

export function describeCreateAndReads(suite: RunStoreCase): void {
  const { created, target, run, nextSeq } = suite;

  describe("createRun and the reads", () => {
    it("a created run and its targets read back field for field", async () => {
      const made = runWithTargets(uuid(nextSeq(), "c0ffee00"), { phaseSizes: [2, 3] });
      made.run.startedAt = made.run.createdAt + 5;
      made.targets[0]!.taskId = uuid(9);
      made.targets[1]!.rackExternalId = "EXT-1";
      await suite.runs.createRun(made.run, made.targets);
      expect(await suite.runs.getRun(made.run.id)).toEqual(made.run);
      for (const t of made.targets) expect(await suite.runs.getTarget(made.run.id, t.id)).toEqual(t);
      expect(await suite.runs.listTargets(made.run.id, { phaseFrom: 0, phaseTo: 1, page: ALL })).toEqual({
        targets: made.targets,
        total: 5,
      });
    });

    it("unknown ids read as absent: getRun, getRunSecrets, getTarget; listTargets is undefined", async () => {
      const { run: known, targets } = await created();
      const missing = uuid(nextSeq(), "dead0000");
      expect(await suite.runs.getRun(missing)).toBeUndefined();
      expect(await suite.runs.getRunSecrets(missing)).toBeUndefined();
      expect(await suite.runs.getTarget(missing, targets[0]!.id)).toBeUndefined();
      expect(await suite.runs.getTarget(known.id, uuid(1, "dead0000"))).toBeUndefined();
      expect(await suite.runs.listTargets(missing, { phaseFrom: 0, phaseTo: 0, page: ALL })).toBeUndefined();
    });

    it("an existing run id is ALREADY_EXISTS, and the first run and its targets stay as they were", async () => {
      const first = await created({ phaseSizes: [2] });
      const second = runWithTargets(first.run.id, { phaseSizes: [3], name: "other" });
      for (const t of second.targets) t.id = t.id.replace(/^.{8}/, "5ec0d000");
      await expect(suite.runs.createRun(second.run, second.targets)).rejects.toMatchObject({
        code: "ALREADY_EXISTS",
      });
      expect(await run(first.run)).toEqual(first.run);
      expect(
        (await suite.runs.listTargets(first.run.id, { phaseFrom: 0, phaseTo: 0, page: ALL }))?.targets,
      ).toEqual(first.targets);
      expect(await suite.runs.getTarget(first.run.id, second.targets[2]!.id)).toBeUndefined();
    });

    it("firmware credentials are left out of getRun and listRuns and come back from getRunSecrets only", async () => {
      const made = runWithTargets(uuid(nextSeq(), "c0ffee00"), { phaseSizes: [1], name: "with-secrets" });
      made.run.config.operation.firmware.authentication = { kind: "shared", secret: "hunter2" };
      await suite.runs.createRun(made.run, made.targets);
      const read = await run(made.run);
      expect("authentication" in read.config.operation.firmware).toBe(false);
      expect(JSON.stringify(read)).not.toContain("hunter2");
      const listed = await suite.runs.listRuns((e) => e.id === made.run.id, ALL);
      expect(JSON.stringify(listed)).not.toContain("hunter2");
      expect(await suite.runs.getRunSecrets(made.run.id)).toEqual({ kind: "shared", secret: "hunter2" });
      const plain = await created();
      expect(await suite.runs.getRunSecrets(plain.run.id)).toBeUndefined();
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
}

export function describeCreateWithOrigin(suite: RunStoreCase): void {
  const { created, run, nextSeq } = suite;

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
      const a = runWithTargets(uuid(nextSeq(), "c0ffee00"), { phaseSizes: [1] });
      a.run.origin = { kind: "retry", runId: first.id, includeTerminated: false, includeSkipped: true };
      expect(await suite.runs.createRun(a.run, a.targets, { origin: followed(first, a.run.id) })).toEqual({
        outcome: "created",
      });
      expect((await run(a.run)).origin).toEqual(a.run.origin);
      const after = await run(first);
      expect(after.followUps).toEqual([{ kind: "retry", runId: a.run.id }]);
      expect(after.updatedAt).toBe(first.updatedAt + 5);
      expect(after.status).toBe(first.status);
      const events = (await suite.runs.listRunEvents(first.id, ALL))?.events ?? [];
      expect(events.at(-1)).toMatchObject({
        kind: "RETRIED",
        detail: { type: "followUp", runId: a.run.id },
      });
      // Read before a's commit: stale now, nothing of b is written.
      const b = runWithTargets(uuid(nextSeq(), "c0ffee00"), { phaseSizes: [1] });
      expect(await suite.runs.createRun(b.run, b.targets, { origin: followed(first, b.run.id) })).toEqual({
        outcome: "origin-changed",
      });
      expect(await suite.runs.getRun(b.run.id)).toBeUndefined();
      expect((await run(first)).followUps).toEqual([{ kind: "retry", runId: a.run.id }]);
    });
  });
}
