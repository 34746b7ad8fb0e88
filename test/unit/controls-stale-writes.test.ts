/**
 * The manual controls (src/app/controls.ts) when their write is 'stale': the run is read again and
 * the control decided again.
 */
import { describe, expect, it } from "vitest";
import type { Run } from "../../src/domain/model.js";
import { RUN, refused, world } from "../support/controls-world.js";
import { MemoryRunStore } from "../support/memory-stores.js";
import { T0 } from "../support/run-states.js";

describe("controls: 'stale' writes are read again and decided again", () => {
  /** A rival that writes the run first (as a dispatcher or another control would), changing `fields`. */
  const rivalWrite = (runs: MemoryRunStore, fields: Partial<Run>) => async () => {
    const run = (await runs.getRun(RUN)) as Run;
    expect(await runs.saveRun({ ...run, ...fields, updatedAt: run.updatedAt + 1 }, run.updatedAt)).toBe(
      "saved",
    );
  };

  it("a dispatcher auto-advanced first: pause pauses the run as it is now, in phase 1", async () => {
    const w = await world({ phases: [["COMPLETED"], ["PENDING"]] });
    w.runs.interleave(
      "saveRun",
      rivalWrite(w.runs, { currentPhaseIndex: 1, statusMessage: "advanced to next phase" }),
    );
    expect(await w.controls.pause(RUN)).toMatchObject({
      status: "PAUSED",
      reason: "OPERATOR_PAUSED",
      currentPhaseIndex: 1,
    });
    expect(w.runs.calls.of("saveRun")).toBe(3);
  });

  it("another operator cancelled first: pause is refused as on a cancelled run", async () => {
    const w = await world({ phases: [["PENDING"]] });
    w.runs.interleave("saveRun", rivalWrite(w.runs, { status: "CANCELLED", finishedAt: T0 }));
    await expect(w.controls.pause(RUN)).rejects.toMatchObject(
      refused(`${RUN} is in terminal state cancelled`),
    );
  });

  it("a gate paused the run first: advance is refused, it is no longer at a phase gate", async () => {
    const w = await world({ phases: [["COMPLETED"], ["PENDING"]], status: "PAUSED", reason: "PHASE_GATE" });
    w.runs.interleave("saveRun", rivalWrite(w.runs, { reason: "SAFETY_GATE" }));
    await expect(w.controls.advance(RUN, 1)).rejects.toMatchObject(
      refused(`${RUN} is not paused at a phase gate`),
    );
    expect(w.dispatched).toEqual([]);
  });

  it("cancel after a stale write acts once, after its own commit", async () => {
    const w = await world({ phases: [["SUBMITTED", "PENDING"]] });
    w.runs.interleave("saveRun", rivalWrite(w.runs, { statusMessage: "submitted 1 operation run target" }));
    await w.controls.cancel(RUN, "");
    expect(w.submitter.cancels).toHaveLength(1);
    expect(w.runs.calls.of("skipTargets")).toBe(1);
  });

  it.each([
    [10, "saves on the 11th try"],
    [11, "gives up: 'operation run <id> kept changing; gave up after 11 attempts'"],
  ])("%i stale writes in a row: pause %s", async (stale) => {
    const w = await world({ phases: [["PENDING"]] });
    for (let i = 0; i < stale; i++)
      w.runs.interleave("saveRun", rivalWrite(w.runs, { statusMessage: `rival ${i}` }));
    const pausing = w.controls.pause(RUN);
    if (stale === 10) expect((await pausing).status).toBe("PAUSED");
    else
      await expect(pausing).rejects.toThrow(`operation run ${RUN} kept changing; gave up after 11 attempts`);
  });

  it("the run is gone when the write lands ('not-found') → NotFound", async () => {
    class VanishingRunStore extends MemoryRunStore {
      override async saveRun(): Promise<"not-found"> {
        return "not-found";
      }
    }
    const w = await world({ phases: [["PENDING"]] }, { store: new VanishingRunStore() });
    await expect(w.controls.cancel(RUN, "")).rejects.toMatchObject({
      code: "NOT_FOUND",
      message: `operation run not found: ${RUN}`,
    });
    expect(w.submitter.cancels).toEqual([]);
  });
});
