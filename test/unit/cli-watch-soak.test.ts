import { stripVTControlCharacters } from "node:util";
import { describe, expect, it } from "vitest";
import { buildModel, renderFrame, renderPlainLine, soakText, soakView } from "../../cli/watch-view.js";
import * as pb from "../../src/gen/flow/v1/flow.js";

const ENDS = new Date("2026-12-05T00:00:30Z");
const St = pb.OperationRunStatus;

function run(status: pb.OperationRunStatus, soakEndsAt: Date | undefined): pb.OperationRun {
  return pb.OperationRun.fromPartial({
    summary: {
      id: { id: "9a6f1a9e-0000-4000-8000-000000000002" },
      name: "soaked",
      state: { status, reason: pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_NONE },
      statusMessage: "phase 1 soaking until 2026-12-05T00:00:30Z",
      totalPhases: 2,
      currentPhaseIndex: 0,
      startedAt: new Date("2026-12-05T00:00:00Z"),
      ...(soakEndsAt === undefined ? {} : { soakEndsAt }),
    },
  });
}

const at = (iso: string) => new Date(iso);

describe("flowctl run watch: the soak countdown", () => {
  it("counts down to soak_ends_at in whole seconds, rounded up, while the soak holds", () => {
    const summary = run(St.OPERATION_RUN_STATUS_RUNNING, ENDS).summary;
    expect(soakView(summary, at("2026-12-05T00:00:05Z"))).toEqual({
      phaseIndex: 0,
      endsAt: ENDS,
      leftMs: 25_000,
    });
    expect(soakText(soakView(summary, at("2026-12-05T00:00:05Z"))!)).toBe(
      "phase 1: 25s left, until 00:00:30Z",
    );
    expect(soakText(soakView(summary, at("2026-12-05T00:00:29.999Z"))!)).toBe(
      "phase 1: 1s left, until 00:00:30Z",
    );
  });

  it("shows nothing once the deadline passed, on a finished run, or without a soak", () => {
    expect(soakView(run(St.OPERATION_RUN_STATUS_RUNNING, ENDS).summary, ENDS)).toBeUndefined();
    expect(
      soakView(run(St.OPERATION_RUN_STATUS_COMPLETED, ENDS).summary, at("2026-12-05T00:00:01Z")),
    ).toBeUndefined();
    expect(
      soakView(run(St.OPERATION_RUN_STATUS_RUNNING, undefined).summary, at("2026-12-05T00:00:01Z")),
    ).toBeUndefined();
  });

  it("the frame has a soak line; the plain line names the deadline, not a countdown", () => {
    const m = buildModel({
      run: run(St.OPERATION_RUN_STATUS_RUNNING, ENDS),
      targets: [],
      plannedSizes: [1, 1],
      now: at("2026-12-05T00:00:10Z"),
    });
    const frame = renderFrame(m, { color: true, columns: 200 }).map((l) => stripVTControlCharacters(l));
    expect(frame).toContain("soak     phase 1: 20s left, until 00:00:30Z");
    expect(renderPlainLine(m, at("2026-12-05T00:00:10Z"))).toContain("| soak phase 1 until 00:00:30Z |");
    expect(renderPlainLine(m, at("2026-12-05T00:00:10Z"))).not.toContain("left");
  });
});
