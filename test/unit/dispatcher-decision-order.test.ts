/**
 * The dispatcher's decision order as a table (finish, conflict timeout, gates, phase boundary,
 * claim), on the in-memory RunStore and a scripted submitter. Whole runs through the real store
 * stay in test/integration/dispatcher-decisions.
 */
import { describe, expect, it } from "vitest";
import type { PassResult } from "../../src/app/dispatcher.js";
import type { Run, Target } from "../../src/domain/model.js";
import { FAIL_ONE, HOUR, passResult, world } from "../support/dispatcher-world.js";
import { uuid } from "../support/dynamodb-fixtures.js";
import type { RunState } from "../support/run-states.js";

describe("dispatcher: the decision order (finish, conflict timeout, gates, phase boundary, claim)", () => {
  interface Row {
    state: RunState;
    /** Clock offset from T0 (default 1 s). */
    at?: number;
    decision: PassResult["decision"];
    run: Pick<Run, "status" | "reason" | "currentPhaseIndex"> & {
      statusMessage: string | ((t: Target[]) => string);
    };
    submitted?: number;
  }
  const rows: [string, Row][] = [
    [
      "every target has an outcome, none failed → COMPLETED 'operation run completed'",
      {
        state: { phases: [["COMPLETED", "COMPLETED"], ["SKIPPED"]] },
        decision: "finished",
        run: {
          status: "COMPLETED",
          reason: "NONE",
          statusMessage: "operation run completed",
          currentPhaseIndex: 0,
        },
      },
    ],
    [
      "every target has an outcome, one terminated → COMPLETED_WITH_FAILURES",
      {
        state: { phases: [["COMPLETED", "TERMINATED"]] },
        decision: "finished",
        run: {
          status: "COMPLETED_WITH_FAILURES",
          reason: "NONE",
          statusMessage: "operation run completed with failed targets",
          currentPhaseIndex: 0,
        },
      },
    ],
    [
      "every target failed or was terminated → FAILED 'operation run failed'",
      {
        state: { phases: [["FAILED", "TERMINATED"]] },
        decision: "finished",
        run: {
          status: "FAILED",
          reason: "NONE",
          statusMessage: "operation run failed",
          currentPhaseIndex: 0,
        },
      },
    ],
    [
      "finish comes before a tripped gate: the last targets failing together end the run FAILED",
      {
        state: { phases: [["FAILED", "FAILED"]], config: { safetyGates: [FAIL_ONE] } },
        decision: "finished",
        run: {
          status: "FAILED",
          reason: "NONE",
          statusMessage: "operation run failed",
          currentPhaseIndex: 0,
        },
      },
    ],
    [
      "the conflict timeout comes before a tripped gate: blocked for retry_timeout → PAUSED CONFLICT_RETRY_TIMEOUT",
      {
        state: { phases: [["BLOCKED", "FAILED", "PENDING"]], config: { safetyGates: [FAIL_ONE] } },
        at: HOUR,
        decision: "paused",
        run: {
          status: "PAUSED",
          reason: "CONFLICT_RETRY_TIMEOUT",
          statusMessage: (t) => `target ${t[0]!.id} blocked by rack conflict for 1h0m0s`,
          currentPhaseIndex: 0,
        },
      },
    ],
    [
      "1 ms short of retry_timeout the blocked target is due for retry and is claimed with the rest",
      {
        state: { phases: [["BLOCKED", "PENDING"]] },
        at: HOUR - 1,
        decision: "claimed",
        run: {
          status: "RUNNING",
          reason: "NONE",
          statusMessage: "submitted 2 operation run targets",
          currentPhaseIndex: 0,
        },
        submitted: 2,
      },
    ],
    [
      "a tripped gate comes before the phase boundary → PAUSED SAFETY_GATE with the gate's message",
      {
        state: {
          phases: [["FAILED", "COMPLETED"], ["PENDING"]],
          config: { safetyGates: [FAIL_ONE], autoAdvance: false },
        },
        decision: "paused",
        run: {
          status: "PAUSED",
          reason: "SAFETY_GATE",
          statusMessage:
            "failure_count safety gate tripped for current_phase: 1/2 targets failed (threshold 1)",
          currentPhaseIndex: 0,
        },
      },
    ],
    [
      "a complete phase without auto-advance → PAUSED PHASE_GATE 'waiting for phase advance'",
      {
        state: { phases: [["COMPLETED"], ["PENDING"]], config: { autoAdvance: false } },
        decision: "paused",
        run: {
          status: "PAUSED",
          reason: "PHASE_GATE",
          statusMessage: "waiting for phase advance",
          currentPhaseIndex: 0,
        },
      },
    ],
    [
      "a complete phase with auto-advance → the next phase, claimed in the same pass",
      {
        state: { phases: [["COMPLETED"], ["PENDING", "PENDING"]], config: { autoAdvance: true } },
        decision: "claimed",
        run: {
          status: "RUNNING",
          reason: "NONE",
          statusMessage: "submitted 2 operation run targets",
          currentPhaseIndex: 1,
        },
        submitted: 2,
      },
    ],
    [
      "a PENDING run with work → RUNNING and a claim",
      {
        state: { phases: [["PENDING", "PENDING"]], status: "PENDING" },
        decision: "claimed",
        run: {
          status: "RUNNING",
          reason: "NONE",
          statusMessage: "submitted 2 operation run targets",
          currentPhaseIndex: 0,
        },
        submitted: 2,
      },
    ],
    [
      "a current phase with no planned targets (a corrupted plan) → FAILED, the phase counted from 1",
      {
        state: { phases: [[], ["PENDING"]] },
        decision: "finished",
        run: {
          status: "FAILED",
          reason: "NONE",
          statusMessage: "operation run phase 1 has no targets; persisted phase plan is invalid",
          currentPhaseIndex: 0,
        },
      },
    ],
  ];

  it.each(rows)("%s", async (_, row) => {
    const w = await world(row.state, { ...(row.at === undefined ? {} : { at: row.at }) });
    const { statusMessage, ...fields } = row.run;
    const message = typeof statusMessage === "function" ? statusMessage(w.targets) : statusMessage;
    expect(await w.pass()).toEqual(
      passResult(row.decision, { status: row.run.status, submitted: row.submitted ?? 0 }),
    );
    const run = await w.stored();
    expect(run).toMatchObject({ ...fields, statusMessage: message });
    if (row.decision === "finished") expect(run.finishedAt).toBe(w.clock.now);
    if (row.decision !== "claimed") {
      expect(w.submitter.submits).toEqual([]);
      expect(w.runs.calls.of("claimTargets") + w.runs.calls.of("claimTarget")).toBe(0);
    }
  });

  it("a PENDING run's first claim sets startedAt to now; later passes keep it", async () => {
    const w = await world({ phases: [["PENDING", "PENDING"]], status: "PENDING", maxConcurrent: 1 });
    await w.pass();
    const started = w.clock.now;
    expect((await w.stored()).startedAt).toBe(started);
    w.clock.now += 5000;
    await w.pass();
    expect((await w.stored()).startedAt).toBe(started);
  });

  it.each([
    ["PAUSED", "OPERATOR_PAUSED"],
    ["PAUSED", "PHASE_GATE"],
    ["COMPLETED", "NONE"],
    ["CANCELLED", "NONE"],
  ] as const)(
    "a %s (%s) run is not dispatched: 'inactive', nothing read past the run, nothing written",
    async (status, reason) => {
      const w = await world({ phases: [["PENDING"]], status, reason });
      expect(await w.pass()).toEqual(passResult("inactive", { status }));
      expect(w.runs.writes()).toBe(0);
      expect(w.runs.calls.of("listQueuedTargets")).toBe(0);
    },
  );

  it("an unknown run is 'not-found' and nothing is written", async () => {
    const w = await world({ phases: [["PENDING"]] });
    expect(await w.dispatcher.dispatchRun(uuid(2, "d15a0000"))).toEqual({
      ...passResult("not-found"),
      runId: uuid(2, "d15a0000"),
    });
    expect(w.runs.writes()).toBe(0);
  });
});
