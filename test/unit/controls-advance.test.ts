/**
 * Advance (src/app/controls.ts) as a table on the in-memory RunStore: every state it meets, with the
 * exact FailedPrecondition texts, and the dispatch it triggers.
 */
import { describe, expect, it } from "vitest";
import { RUN, refused, world } from "../support/controls-world.js";
import type { RunState } from "../support/run-states.js";

describe("controls: advance", () => {
  const atGate: RunState = {
    phases: [["COMPLETED", "FAILED"], ["PENDING"], ["PENDING"]],
    status: "PAUSED",
    reason: "PHASE_GATE",
    statusMessage: "waiting for phase advance",
  };

  it.each([
    ["RUNNING", "NONE"],
    ["PAUSED", "OPERATOR_PAUSED"],
    ["PAUSED", "SAFETY_GATE"],
    ["COMPLETED", "NONE"],
  ] as const)(
    "%s (%s) → FailedPrecondition '…: <id> is not paused at a phase gate'",
    async (status, reason) => {
      const w = await world({ ...atGate, status, reason });
      await expect(w.controls.advance(RUN, 1)).rejects.toMatchObject(
        refused(`${RUN} is not paused at a phase gate`),
      );
      expect(w.runs.writes()).toBe(0);
    },
  );

  it("at a phase gate with the phase not complete → '…: phase 0 is not complete'", async () => {
    const w = await world({ ...atGate, phases: [["COMPLETED", "SUBMITTED"], ["PENDING"]] });
    await expect(w.controls.advance(RUN)).rejects.toMatchObject(refused("phase 0 is not complete"));
  });

  it("at a phase gate in the final phase (an earlier one still open) → '…: phase 1 is the final phase'", async () => {
    const w = await world({ ...atGate, phases: [["SUBMITTED"], ["COMPLETED"]], currentPhaseIndex: 1 });
    await expect(w.controls.advance(RUN)).rejects.toMatchObject(refused("phase 1 is the final phase"));
  });

  it("a wrong expected phase → '…: expected phase 2, next phase is 1'", async () => {
    const w = await world(atGate);
    await expect(w.controls.advance(RUN, 2)).rejects.toMatchObject(
      refused("expected phase 2, next phase is 1"),
    );
    expect(w.runs.writes()).toBe(0);
  });

  it.each([
    ["the next phase, 1", 1],
    ["0 (skips the check)", 0],
    ["nothing (skips the check)", undefined],
  ])("expected %s → RUNNING 'advanced to phase 1' in phase 1, then one dispatch", async (_, expected) => {
    const w = await world(atGate);
    const advanced = await w.controls.advance(RUN, expected);
    expect(advanced).toMatchObject({
      status: "RUNNING",
      reason: "NONE",
      statusMessage: "advanced to phase 1",
      currentPhaseIndex: 1,
    });
    expect(await w.stored()).toEqual(advanced);
    expect(w.dispatched).toEqual([RUN]);
  });

  it("at a phase gate with every target already ended → the final status, no dispatch", async () => {
    const w = await world({ ...atGate, phases: [["COMPLETED"], ["COMPLETED"]] });
    expect(await w.controls.advance(RUN, 1)).toMatchObject({
      status: "COMPLETED",
      statusMessage: "operation run completed",
      currentPhaseIndex: 0,
    });
    expect(w.dispatched).toEqual([]);
  });
});
