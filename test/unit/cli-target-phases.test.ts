/** What `flowctl run targets` says its listing left out: the phases outside the scope, by name and size. */
import { describe, expect, it } from "vitest";
import { PHASE_FLAGS } from "../../cli/names.js";
import { phaseNotes } from "../../cli/target-phases.js";
import * as pb from "../../src/gen/flow/v1/flow.js";

const Scope = pb.OperationRunTargetPhaseScope;
const St = pb.OperationRunStatus;
const run = (status: pb.OperationRunStatus, currentPhaseIndex: number, phaseSizes: number[]) => ({
  state: { status, reason: pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_UNKNOWN },
  currentPhaseIndex,
  phaseSizes,
});
const all = Scope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_AND_COMPLETED_PHASES;
const current = Scope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_PHASE;
const completed = Scope.OPERATION_RUN_TARGET_PHASE_SCOPE_COMPLETED_PHASES;

describe("run targets: the notes under the listing", () => {
  it.each([
    [
      "a finished 15-rack run, all visible: nothing left out",
      run(St.OPERATION_RUN_STATUS_COMPLETED, 2, [5, 5, 5]),
      all,
      [],
    ],
    [
      "the same run, current phase only: the completed phases and their size",
      run(St.OPERATION_RUN_STATUS_COMPLETED, 2, [5, 5, 5]),
      current,
      ["completed phases 1-2 hold 10 targets: --phase all-visible lists them"],
    ],
    [
      "a run in its first phase: the future phases and their size",
      run(St.OPERATION_RUN_STATUS_RUNNING, 0, [5, 5, 5]),
      all,
      ["phases 2-3 have not opened yet: their 10 targets are listed once they open"],
    ],
    [
      "completed phases only: the current phase, and the one future phase",
      run(St.OPERATION_RUN_STATUS_PAUSED, 1, [1, 2, 1]),
      completed,
      [
        "the current phase 2 holds 2 targets: --phase all-visible lists them",
        "phase 3 has not opened yet: its 1 target is listed once it opens",
      ],
    ],
    [
      "one completed phase of one target",
      run(St.OPERATION_RUN_STATUS_RUNNING, 1, [1, 5]),
      current,
      ["completed phase 1 holds 1 target: --phase all-visible lists them"],
    ],
    [
      "a run cancelled in phase 1: its later phases never opened",
      run(St.OPERATION_RUN_STATUS_CANCELLED, 0, [3, 4]),
      current,
      ["phase 2 never opened (the run has ended): its 4 targets are not listed"],
    ],
    [
      "an ended run with one target left in its future phases",
      run(St.OPERATION_RUN_STATUS_FAILED, 0, [3, 1, 0]),
      all,
      ["phases 2-3 never opened (the run has ended): their 1 target is not listed"],
    ],
    [
      "a service that sends no phase sizes: nothing can be said",
      run(St.OPERATION_RUN_STATUS_RUNNING, 0, []),
      current,
      [],
    ],
    [
      "a phase index outside the sizes: nothing can be said",
      run(St.OPERATION_RUN_STATUS_RUNNING, 3, [1, 1]),
      all,
      [],
    ],
  ])("%s", (_, summary, scope, notes) => {
    expect(phaseNotes(summary, scope)).toEqual(notes);
  });

  it("--phase values are taken exactly as written; all-visible is current and completed", () => {
    expect(PHASE_FLAGS.names).toEqual(["current", "completed", "all-visible"]);
    expect(PHASE_FLAGS.parse("all-visible")).toBe(all);
    expect(PHASE_FLAGS.parse("All-Visible")).toBeUndefined();
    expect(PHASE_FLAGS.parse("current-and-completed")).toBeUndefined();
  });
});
