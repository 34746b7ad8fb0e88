import { stripVTControlCharacters } from "node:util";
import { describe, expect, it } from "vitest";
import { formatElapsed } from "../../cli/durations.js";
import { componentTypes, runStatuses, targetStatuses } from "../../cli/names.js";
import { stateFilters } from "../../cli/run-commands.js";
import {
  bar,
  buildModel,
  exitCodeFor,
  finalLine,
  fit,
  gateViews,
  type PhaseView,
  renderFrame,
  renderPlainLine,
} from "../../cli/watch-view.js";
import { windowText } from "../../cli/window.js";
import * as pb from "../../src/gen/flow/v1/flow.js";

const RUN_ID = "9a6f1a9e-0000-4000-8000-000000000001";
const T = pb.OperationRunTargetStatus;
const St = pb.OperationRunStatus;
const Re = pb.OperationRunStatusReason;
const CUMULATIVE = pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CUMULATIVE_RUN;
const CURRENT = pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CURRENT_PHASE;

function phase(p: Partial<PhaseView>): PhaseView {
  return {
    index: 0,
    planned: 10,
    completed: 0,
    failed: 0,
    terminated: 0,
    skipped: 0,
    inFlight: 0,
    pending: 0,
    blocked: 0,
    ...p,
  };
}

function target(phaseIndex: number, status: pb.OperationRunTargetStatus): pb.OperationRunTarget {
  return pb.OperationRunTarget.fromPartial({ phaseIndex, status });
}

function run(opts: {
  status?: pb.OperationRunStatus;
  reason?: pb.OperationRunStatusReason;
  current?: number;
  total?: number;
  message?: string;
  gates?: pb.OperationRunSafetyGate[];
  startedAt?: Date;
  finishedAt?: Date;
}): pb.OperationRun {
  return pb.OperationRun.fromPartial({
    summary: {
      id: { id: RUN_ID },
      name: "canary",
      state: {
        status: opts.status ?? St.OPERATION_RUN_STATUS_RUNNING,
        reason: opts.reason ?? Re.OPERATION_RUN_STATUS_REASON_NONE,
      },
      statusMessage: opts.message ?? "",
      totalPhases: opts.total ?? 3,
      currentPhaseIndex: opts.current ?? 0,
      startedAt: opts.startedAt ?? new Date("2026-11-20T08:00:00Z"),
      ...(opts.finishedAt === undefined ? {} : { finishedAt: opts.finishedAt }),
    },
    configuration: { options: { maxConcurrentTargets: 2, safetyPolicy: { gates: opts.gates ?? [] } } },
  });
}

describe("watch: progress bars", () => {
  it("3 completed, 1 failed, 6 pending of 10 in 10 cells → ███x░░░░░░", () => {
    expect(bar(phase({ completed: 3, failed: 1, pending: 6 }), 10, false)).toBe("███x░░░░░░");
  });

  it("every group in 20 cells: 2 completed, 1 failed, 1 terminated, 2 in flight, 4 pending of 10", () => {
    expect(bar(phase({ completed: 2, failed: 1, terminated: 1, inFlight: 2, pending: 4 }), 20, false)).toBe(
      "████xx//▒▒▒▒░░░░░░░░",
    );
  });

  it("cells always add up to the width (1 of 3 completed in 10 cells → 3 + 7)", () => {
    const b = bar(phase({ planned: 3, completed: 1, pending: 2 }), 10, false);
    expect(b).toBe("███░░░░░░░");
  });

  it("a phase of unknown size is drawn all pending", () => {
    expect(bar(phase({ planned: undefined }), 5, false)).toBe("░░░░░");
  });

  it("with colour, each group is wrapped in its SGR colour and reset", () => {
    expect(bar(phase({ planned: 2, completed: 1, failed: 1 }), 2, true)).toBe(
      "\x1b[32m█\x1b[0m\x1b[31mx\x1b[0m",
    );
  });
});

describe("watch: the model from the run and its targets", () => {
  it("counts targets per phase by status group; future phases come from the plan, all pending", () => {
    const m = buildModel({
      run: run({ current: 1, total: 3 }),
      targets: [
        target(0, T.OPERATION_RUN_TARGET_STATUS_COMPLETED),
        target(0, T.OPERATION_RUN_TARGET_STATUS_FAILED),
        target(1, T.OPERATION_RUN_TARGET_STATUS_SUBMITTED),
        target(1, T.OPERATION_RUN_TARGET_STATUS_CLAIMED),
        target(1, T.OPERATION_RUN_TARGET_STATUS_BLOCKED),
        target(1, T.OPERATION_RUN_TARGET_STATUS_PENDING),
        target(1, T.OPERATION_RUN_TARGET_STATUS_TERMINATED),
        target(1, T.OPERATION_RUN_TARGET_STATUS_SKIPPED),
      ],
      plannedSizes: [2, 6, 4],
      now: new Date("2026-11-20T08:01:00Z"),
    });
    expect(m.phases).toEqual([
      phase({ index: 0, planned: 2, completed: 1, failed: 1 }),
      phase({ index: 1, planned: 6, inFlight: 2, pending: 2, blocked: 1, terminated: 1, skipped: 1 }),
      phase({ index: 2, planned: 4, pending: 4 }),
    ]);
    expect(m.finished).toBe(4);
    expect(m.planned).toBe(12);
    expect(m.plannedKnown).toBe(true);
    expect(m.elapsedMs).toBe(60_000);
    // 4 finished in 60 s, 8 left → 120 s.
    expect(m.etaMs).toBe(120_000);
  });

  it("without a plan, future phases' sizes are unknown and the estimate covers the listed phases", () => {
    const m = buildModel({
      run: run({ current: 0, total: 2 }),
      targets: [
        target(0, T.OPERATION_RUN_TARGET_STATUS_COMPLETED),
        target(0, T.OPERATION_RUN_TARGET_STATUS_PENDING),
      ],
      plannedSizes: undefined,
      now: new Date("2026-11-20T08:00:10Z"),
    });
    expect(m.phases[1]?.planned).toBeUndefined();
    expect(m.plannedKnown).toBe(false);
    expect(m.planned).toBe(2);
    expect(m.etaMs).toBe(10_000);
  });

  it("no estimate before a target has finished, nor once the run has ended", () => {
    const before = buildModel({
      run: run({}),
      targets: [target(0, T.OPERATION_RUN_TARGET_STATUS_SUBMITTED)],
      plannedSizes: undefined,
      now: new Date("2026-11-20T08:00:10Z"),
    });
    expect(before.etaMs).toBeUndefined();
    const ended = buildModel({
      run: run({
        status: St.OPERATION_RUN_STATUS_COMPLETED,
        total: 1,
        finishedAt: new Date("2026-11-20T08:00:30Z"),
      }),
      targets: [target(0, T.OPERATION_RUN_TARGET_STATUS_COMPLETED)],
      plannedSizes: undefined,
      now: new Date("2026-11-20T09:00:00Z"),
    });
    expect(ended.etaMs).toBeUndefined();
    // Elapsed stops at finished_at, not at the watcher's clock.
    expect(ended.elapsedMs).toBe(30_000);
  });
});

describe("watch: gates by the service's rules", () => {
  const phases = [
    phase({ index: 0, planned: 4, completed: 3, failed: 1 }),
    phase({ index: 1, planned: 10, completed: 2, failed: 1, pending: 7 }),
    phase({ index: 2, planned: 6, pending: 6 }),
  ];
  const config = (gates: pb.OperationRunSafetyGate[]) =>
    pb.OperationRunConfiguration.fromPartial({
      options: { safetyPolicy: { gates } },
    });

  it("a count gate over the cumulative run counts failed targets of phases up to the current one", () => {
    const views = gateViews(
      config([{ gate: { $case: "failureCount", value: { scope: CUMULATIVE, failureThresholdCount: 2 } } }]),
      phases,
      1,
    );
    expect(views).toEqual([
      { label: "failureCount ≥ 2 (cumulative run)", value: "2/2 failed", tripped: true },
    ]);
  });

  it("a rate gate over the current phase trips at failed × 100 ≥ percent × planned (1 of 10 at 10% trips, at 11% not)", () => {
    const at = (pct: number) =>
      gateViews(
        config([{ gate: { $case: "failureRate", value: { scope: CURRENT, failureThresholdPercent: pct } } }]),
        phases,
        1,
      )[0];
    expect(at(10)).toEqual({
      label: "failureRate ≥ 10% (current phase)",
      value: "1 of 10 failed (10%)",
      tripped: true,
    });
    expect(at(11)?.tripped).toBe(false);
  });

  it("an observed-rate gate divides by finished targets and waits for min finished (cumulative: 2 of 7 finished)", () => {
    const at = (pct: number, minFinished?: number) =>
      gateViews(
        config([
          {
            gate: {
              $case: "observedFailureRate",
              value: {
                scope: CUMULATIVE,
                failureThresholdPercent: pct,
                ...(minFinished ? { minFinished } : {}),
              },
            },
          },
        ]),
        phases,
        1,
      )[0];
    expect(at(28)).toEqual({
      label: "observedFailureRate ≥ 28% after 5 finished (cumulative run)",
      value: "2 of 7 finished failed (29%)",
      tripped: true,
    });
    expect(at(29)?.tripped).toBe(false);
    expect(at(10, 8)).toMatchObject({
      label: "observedFailureRate ≥ 10% after 8 finished (cumulative run)",
      tripped: false,
    });
  });

  it("terminated targets never count toward a gate", () => {
    const views = gateViews(
      config([{ gate: { $case: "failureCount", value: { scope: CURRENT, failureThresholdCount: 1 } } }]),
      [phase({ index: 0, planned: 3, terminated: 3 })],
      0,
    );
    expect(views[0]?.tripped).toBe(false);
  });
});

describe("watch: frames, lines and exit codes", () => {
  const model = buildModel({
    run: run({
      status: St.OPERATION_RUN_STATUS_PAUSED,
      reason: Re.OPERATION_RUN_STATUS_REASON_PHASE_GATE,
      message: "waiting for phase advance",
      current: 0,
      total: 2,
      gates: [{ gate: { $case: "failureCount", value: { scope: CURRENT, failureThresholdCount: 1 } } }],
    }),
    targets: [
      target(0, T.OPERATION_RUN_TARGET_STATUS_COMPLETED),
      target(0, T.OPERATION_RUN_TARGET_STATUS_COMPLETED),
    ],
    plannedSizes: [2, 3],
    now: new Date("2026-11-20T08:00:05Z"),
  });

  it("the frame has a status line, a bar per phase with its counts, the gates and a legend", () => {
    const lines = renderFrame(model, { color: false, columns: 200, barWidth: 10 });
    expect(lines).toEqual([
      `run ${RUN_ID}  canary`,
      "status   PAUSED (PHASE_GATE)  ·  phase 1/2  ·  2/5 targets finished  ·  elapsed 5s  ·  left ~7s",
      "message  waiting for phase advance",
      "▸phase 1  ██████████   2/2  2 completed",
      " phase 2  ░░░░░░░░░░   0/3  3 pending",
      "gates    failureCount ≥ 1 (current phase): 0/1 failed  ok",
      "legend   █ completed  x failed  / terminated  ▒ in flight  ░ pending",
    ]);
  });

  it("lines are cut to the terminal width so the redraw can count them", () => {
    const lines = renderFrame(model, { color: true, columns: 20 });
    for (const l of lines) expect(stripVTControlCharacters(l).length).toBeLessThanOrEqual(20);
  });

  it("fit keeps escape sequences and adds an ellipsis: 'abcdef' in 4 columns → 'abc…'", () => {
    expect(fit("abcdef", 4)).toBe("abc…");
    expect(fit("\x1b[1mabcdef\x1b[0m", 4)).toBe("\x1b[1mabc\x1b[0m…\x1b[0m");
    expect(fit("abc", 4)).toBe("abc");
  });

  it("the plain line carries status, per-phase progress, totals, gates and time", () => {
    expect(renderPlainLine(model, new Date("2026-11-20T08:00:05Z"))).toBe(
      "08:00:05 PAUSED (PHASE_GATE) phase 1/2 | p1 2/2 p2 0/3 | 0 failed, 0 terminated, 0 in flight, 3 pending | gates ok | elapsed 5s  ·  left ~7s",
    );
  });

  it("a run paused at a phase gate ends with the advance command to run next", () => {
    expect(finalLine(model)).toBe(
      `run ${RUN_ID} PAUSED (PHASE_GATE) after 5s: 2 completed, 0 failed, 0 terminated — waiting for phase advance; next: flowctl run advance ${RUN_ID}`,
    );
  });

  it.each([
    [St.OPERATION_RUN_STATUS_COMPLETED, 0],
    [St.OPERATION_RUN_STATUS_FAILED, 2],
    [St.OPERATION_RUN_STATUS_COMPLETED_WITH_FAILURES, 2],
    [St.OPERATION_RUN_STATUS_CANCELLED, 2],
    [St.OPERATION_RUN_STATUS_PAUSED, 3],
    [St.OPERATION_RUN_STATUS_RUNNING, undefined],
    [St.OPERATION_RUN_STATUS_PENDING, undefined],
  ])("status %s → exit code %s", (status, code) => {
    expect(exitCodeFor(status)).toBe(code);
  });
});

describe("names and filters", () => {
  it("enum names parse without prefix, in any case, with - or _", () => {
    expect(componentTypes.parse("nvswitch")).toBe(pb.ComponentType.COMPONENT_TYPE_NVSWITCH);
    expect(componentTypes.parse("COMPONENT_TYPE_CDU")).toBe(pb.ComponentType.COMPONENT_TYPE_CDU);
    expect(runStatuses.parse("completed-with-failures")).toBe(
      St.OPERATION_RUN_STATUS_COMPLETED_WITH_FAILURES,
    );
    expect(targetStatuses.parse("unknown")).toBeUndefined();
    expect(componentTypes.names).toEqual(["COMPUTE", "NVSWITCH", "POWERSHELF", "TORSWITCH", "UMS", "CDU"]);
  });

  it("--status × --reason: each status with each reason; either alone gives one entry each", () => {
    expect(
      stateFilters(
        [St.OPERATION_RUN_STATUS_PAUSED],
        [Re.OPERATION_RUN_STATUS_REASON_SAFETY_GATE, Re.OPERATION_RUN_STATUS_REASON_PHASE_GATE],
      ),
    ).toEqual([
      { status: St.OPERATION_RUN_STATUS_PAUSED, reason: Re.OPERATION_RUN_STATUS_REASON_SAFETY_GATE },
      { status: St.OPERATION_RUN_STATUS_PAUSED, reason: Re.OPERATION_RUN_STATUS_REASON_PHASE_GATE },
    ]);
    expect(stateFilters([St.OPERATION_RUN_STATUS_FAILED, St.OPERATION_RUN_STATUS_CANCELLED], [])).toEqual([
      { status: St.OPERATION_RUN_STATUS_FAILED },
      { status: St.OPERATION_RUN_STATUS_CANCELLED },
    ]);
    expect(stateFilters([], [Re.OPERATION_RUN_STATUS_REASON_OPERATOR_PAUSED])).toEqual([
      { reason: Re.OPERATION_RUN_STATUS_REASON_OPERATOR_PAUSED },
    ]);
  });

  it.each([
    [42_000, "42s"],
    [125_000, "2m05s"],
    [3_725_000, "1h02m05s"],
    [999, "0s"],
  ])("elapsed %i ms → %s", (ms, text) => {
    expect(formatElapsed(ms)).toBe(text);
  });
});

describe("watch and run get: the maintenance window", () => {
  const windowed = (
    fw: { startTime?: Date; endTime?: Date },
    windows: { cron: string; duration: { seconds: number; nanos: number } }[] = [],
  ) =>
    pb.OperationRunConfiguration.fromPartial({
      options: { maxConcurrentTargets: 1, maintenanceWindows: windows },
      operation: { operation: { $case: "upgradeFirmware", value: fw } },
    });
  const at = (iso: string) => new Date(iso);
  const START = at("2026-11-20T08:00:00Z");
  const END = at("2026-11-20T12:00:00Z");
  const NINE = [{ cron: "0 9 * * *", duration: { seconds: 3600, nanos: 0 } }];

  it.each([
    [windowed({}), "2026-11-20T07:00:00Z", undefined],
    [windowed({ startTime: START }), "2026-11-20T07:00:00Z", "not open yet: opens at 2026-11-20T08:00:00Z"],
    [windowed({ startTime: START }), "2026-11-20T08:00:00Z", "open"],
    [windowed({ endTime: END }), "2026-11-20T09:00:00Z", "open: closes at 2026-11-20T12:00:00Z"],
    [windowed({ endTime: END }, NINE), "2026-11-20T09:30:00Z", "open: closes at 2026-11-20T10:00:00Z"],
    [windowed({}, NINE), "2026-11-20T10:00:00Z", "closed now: next opens at 2026-11-21T09:00:00Z"],
    [windowed({ endTime: END }, NINE), "2026-11-20T10:00:00Z", "closed now: no window opens before end_time"],
    [
      windowed({ startTime: at("2026-11-20T10:30:00Z"), endTime: END }, NINE),
      "2026-11-20T07:00:00Z",
      "not open yet: no window opens before end_time",
    ],
    [windowed({ endTime: END }), "2026-11-20T12:00:00Z", "closed for good at 2026-11-20T12:00:00Z"],
  ] as const)("%# at %s → %s", (config, now, text) => {
    expect(windowText(config, at(now))).toBe(text);
  });

  it("the frame and the plain line show the window; a window-closed pause says what to run next", () => {
    const paused = buildModel({
      run: pb.OperationRun.fromPartial({
        ...run({
          status: St.OPERATION_RUN_STATUS_PAUSED,
          reason: Re.OPERATION_RUN_STATUS_REASON_MAINTENANCE_WINDOW,
          message: "maintenance window closed at 2026-11-20T12:00:00Z: 1 target not started",
          total: 1,
        }),
        configuration: windowed({ endTime: END }),
      }),
      targets: [
        target(0, T.OPERATION_RUN_TARGET_STATUS_COMPLETED),
        target(0, T.OPERATION_RUN_TARGET_STATUS_PENDING),
      ],
      plannedSizes: undefined,
      now: at("2026-11-20T12:00:05Z"),
    });
    expect(paused.window).toBe("closed for good at 2026-11-20T12:00:00Z");
    expect(renderFrame(paused, { color: false, columns: 200 })).toContain(
      "window   closed for good at 2026-11-20T12:00:00Z",
    );
    expect(renderPlainLine(paused, at("2026-11-20T12:00:05Z"))).toContain(
      "| window closed for good at 2026-11-20T12:00:00Z | elapsed",
    );
    expect(finalLine(paused)).toBe(
      `run ${RUN_ID} PAUSED (MAINTENANCE_WINDOW) after 4h00m05s: 1 completed, 0 failed, 0 terminated — maintenance window closed at 2026-11-20T12:00:00Z: 1 target not started; next: flowctl run cancel ${RUN_ID} (its window closed: resume is refused; create a new run with a later window)`,
    );
    expect(exitCodeFor(St.OPERATION_RUN_STATUS_PAUSED)).toBe(3);
  });

  it("a run awaiting approval: the last line names approve by a second person, or cancel", () => {
    const waiting = buildModel({
      run: run({
        status: St.OPERATION_RUN_STATUS_PAUSED,
        reason: Re.OPERATION_RUN_STATUS_REASON_AWAITING_APPROVAL,
        message: "awaiting approval: 2 racks, the access policy requires a second person from 2",
        total: 1,
      }),
      targets: [
        target(0, T.OPERATION_RUN_TARGET_STATUS_PENDING),
        target(0, T.OPERATION_RUN_TARGET_STATUS_PENDING),
      ],
      plannedSizes: undefined,
      now: at("2026-11-20T08:00:05Z"),
    });
    expect(finalLine(waiting)).toMatch(
      new RegExp(
        `^run ${RUN_ID} PAUSED \\(AWAITING_APPROVAL\\) after .*— awaiting approval: 2 racks, the access policy requires a second person from 2; next: flowctl run approve ${RUN_ID} by a second person \\(not its creator\\), or flowctl run cancel ${RUN_ID}$`,
      ),
    );
  });

  it("a run an external check left inconclusive: the last line says to look at the rack, then resume or report it failed", () => {
    const reason =
      "external check dcgm inconclusive on rack r-1: no verdict within 60 s; look at the rack, then resume the run or report the rack failed";
    const waiting = buildModel({
      run: run({
        status: St.OPERATION_RUN_STATUS_PAUSED,
        reason: Re.OPERATION_RUN_STATUS_REASON_EXTERNAL_CHECK_INCONCLUSIVE,
        message: reason,
        total: 1,
      }),
      targets: [target(0, T.OPERATION_RUN_TARGET_STATUS_COMPLETED)],
      plannedSizes: undefined,
      now: at("2026-11-20T08:00:05Z"),
    });
    expect(finalLine(waiting)).toMatch(
      new RegExp(
        `^run ${RUN_ID} PAUSED \\(EXTERNAL_CHECK_INCONCLUSIVE\\) after .*— ${reason.replace(/[.]/g, "\\.")}; next: look at the rack, then flowctl run resume ${RUN_ID}, or flowctl run report-failure ${RUN_ID} RACK --reason TEXT$`,
      ),
    );
  });

  it("a cancel's skipped racks appear in the last line, apart from the terminated ones", () => {
    const cancelled = buildModel({
      run: run({ status: St.OPERATION_RUN_STATUS_CANCELLED, message: "operation run cancelled", total: 1 }),
      targets: [
        target(0, T.OPERATION_RUN_TARGET_STATUS_TERMINATED),
        target(0, T.OPERATION_RUN_TARGET_STATUS_SKIPPED),
        target(0, T.OPERATION_RUN_TARGET_STATUS_SKIPPED),
      ],
      plannedSizes: undefined,
      now: new Date("2026-11-20T08:00:05Z"),
    });
    expect(finalLine(cancelled)).toBe(
      `run ${RUN_ID} CANCELLED after 5s: 0 completed, 0 failed, 1 terminated, 2 skipped — operation run cancelled`,
    );
  });
});
