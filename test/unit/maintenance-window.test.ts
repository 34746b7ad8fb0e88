/**
 * Maintenance-window arithmetic (src/domain/maintenance-window.ts), pure: windows that span
 * midnight or started before t, a window shorter than a tick, the run's window state at `now`, the
 * plan's next openings, and the validation rules with their field paths. Everything is UTC.
 */
import { describe, expect, it } from "vitest";
import { formatRfc3339 } from "../../src/domain/calendar.js";
import {
  checkSchedule,
  MAX_WINDOW_DURATION_MS,
  nextOpenings,
  nextWindowOpening,
  openWindowClose,
  type Schedule,
  scheduleOf,
  windowState,
} from "../../src/domain/maintenance-window.js";
import { runConfig } from "../support/domain-fixtures.js";
import { at, DAY, HOUR, iso, MIN, windows } from "../support/window-cases.js";

describe("maintenance windows: inside a window, and the next opening", () => {
  const nightly = windows(["0 22 * * *", 4 * HOUR]); // 22:00 → 02:00, across midnight

  it.each([
    ["2026-11-20T21:59:59Z", undefined],
    ["2026-11-20T22:00:00Z", "2026-11-21T02:00:00Z"],
    ["2026-11-20T23:30:00Z", "2026-11-21T02:00:00Z"],
    ["2026-11-21T01:59:59.999Z", "2026-11-21T02:00:00Z"], // opened the day before: still inside
    ["2026-11-21T02:00:00Z", undefined], // the close is exclusive
  ])("a window spanning midnight: at %s it closes at %s", (t, close) => {
    expect(iso(openWindowClose(nightly, at(t)))).toBe(close);
  });

  it("a window shorter than a tick (5 s every 10 minutes) is exact to the millisecond", () => {
    const brief = windows(["*/10 * * * *", 5_000]);
    expect(iso(openWindowClose(brief, at("2026-11-20T12:10:04.999Z")))).toBe("2026-11-20T12:10:05Z");
    expect(openWindowClose(brief, at("2026-11-20T12:10:05Z"))).toBeUndefined();
    expect(iso(nextWindowOpening(brief, at("2026-11-20T12:10:05Z")))).toBe("2026-11-20T12:20:00Z");
  });

  it("overlapping windows: the latest close among those open; the earliest opening among all", () => {
    const two = windows(["0 1 * * *", 2 * HOUR], ["30 1 * * *", 3 * HOUR]);
    expect(iso(openWindowClose(two, at("2026-11-20T01:15:00Z")))).toBe("2026-11-20T03:00:00Z");
    expect(iso(openWindowClose(two, at("2026-11-20T02:00:00Z")))).toBe("2026-11-20T04:30:00Z");
    expect(iso(nextWindowOpening(two, at("2026-11-20T05:00:00Z")))).toBe("2026-11-21T01:00:00Z");
    expect(nextWindowOpening(two, at("2026-11-20T05:00:00Z"), at("2026-11-21T01:00:00Z"))).toBeUndefined();
  });
});

describe("maintenance windows: the run's window state at now", () => {
  const START = at("2026-11-20T08:00:00Z");
  const END = at("2026-11-20T12:00:00Z");
  const nine = [{ cron: "0 9 * * *", durationMs: HOUR }];
  const state = (schedule: Schedule, t: string) => {
    const s = windowState(schedule, at(t));
    return {
      kind: s.kind,
      ...("opensAt" in s ? { opensAt: iso(s.opensAt) } : {}),
      ...("closesAt" in s ? { closesAt: iso(s.closesAt) } : {}),
      ...("closedAt" in s ? { closedAt: iso(s.closedAt) } : {}),
    };
  };

  it.each([
    // [schedule, now, state]
    [{ windows: [] }, "2026-11-20T07:00:00Z", { kind: "open" }],
    [
      { startTime: START, windows: [] },
      "2026-11-20T07:00:00Z",
      { kind: "before", opensAt: "2026-11-20T08:00:00Z" },
    ],
    [{ startTime: START, windows: [] }, "2026-11-20T08:00:00Z", { kind: "open" }],
    [
      { endTime: END, windows: [] },
      "2026-11-20T11:59:59Z",
      { kind: "open", closesAt: "2026-11-20T12:00:00Z" },
    ],
    [
      { endTime: END, windows: [] },
      "2026-11-20T12:00:00Z",
      { kind: "closed", closedAt: "2026-11-20T12:00:00Z" },
    ],
    [
      { startTime: START, endTime: END, windows: nine },
      "2026-11-20T07:00:00Z",
      { kind: "before", opensAt: "2026-11-20T09:00:00Z" },
    ],
    [
      { startTime: START, endTime: END, windows: nine },
      "2026-11-20T08:30:00Z",
      { kind: "outside", opensAt: "2026-11-20T09:00:00Z" },
    ],
    [
      { startTime: START, endTime: END, windows: nine },
      "2026-11-20T09:10:00Z",
      { kind: "open", closesAt: "2026-11-20T10:00:00Z" },
    ],
    [{ startTime: START, endTime: END, windows: nine }, "2026-11-20T10:00:00Z", { kind: "outside" }], // none before 12:00
    [{ windows: nine }, "2026-11-20T10:00:00Z", { kind: "outside", opensAt: "2026-11-21T09:00:00Z" }],
    // The window closes after end_time: claiming stops at end_time.
    [
      { endTime: at("2026-11-20T09:30:00Z"), windows: nine },
      "2026-11-20T09:10:00Z",
      { kind: "open", closesAt: "2026-11-20T09:30:00Z" },
    ],
    // A start inside a window: open from the start (the window opened at 09:00, before it).
    [
      { startTime: at("2026-11-20T09:20:00Z"), windows: nine },
      "2026-11-20T09:00:00Z",
      { kind: "before", opensAt: "2026-11-20T09:20:00Z" },
    ],
    [
      { startTime: at("2026-11-20T09:20:00Z"), windows: nine },
      "2026-11-20T09:20:00Z",
      { kind: "open", closesAt: "2026-11-20T10:00:00Z" },
    ],
    // No window between start and end (validation refuses it; the state still says so).
    [
      { startTime: at("2026-11-20T10:30:00Z"), endTime: END, windows: nine },
      "2026-11-20T07:00:00Z",
      { kind: "before" },
    ],
  ] as [Schedule, string, object][])("%o at %s → %o", (schedule, now, expected) => {
    expect(state(schedule, now)).toEqual(expected);
  });

  it("scheduleOf reads the template's times and the options' windows", () => {
    const config = runConfig({ maintenanceWindows: nine });
    config.operation.firmware = { ...config.operation.firmware, startTime: START, endTime: END };
    expect(scheduleOf(config)).toEqual({ startTime: START, endTime: END, windows: nine });
    expect(scheduleOf(runConfig())).toEqual({ startTime: undefined, endTime: undefined, windows: [] });
  });
});

describe("maintenance windows: the next openings (PlanOperationRun)", () => {
  const NOW = at("2026-11-20T10:00:00Z");

  it.each([
    // [schedule, openings]
    [{ windows: [] }, []],
    [{ startTime: at("2026-11-20T09:00:00Z"), windows: [] }, []], // started already: nothing to wait for
    [{ startTime: at("2026-11-20T20:00:00Z"), windows: [] }, ["2026-11-20T20:00:00Z"]],
    [
      { windows: [{ cron: "0 2 * * *", durationMs: 2 * HOUR }] },
      ["2026-11-21T02:00:00Z", "2026-11-22T02:00:00Z", "2026-11-23T02:00:00Z"],
    ],
    [
      // The start falls inside the 20:00 window: it opens then, and the next opening is tomorrow's.
      { startTime: at("2026-11-20T21:00:00Z"), windows: [{ cron: "0 20 * * *", durationMs: 2 * HOUR }] },
      ["2026-11-20T21:00:00Z", "2026-11-21T20:00:00Z", "2026-11-22T20:00:00Z"],
    ],
    [
      // Bounded by end_time; the start is outside a window, so it is not an opening itself.
      {
        startTime: at("2026-11-20T12:00:00Z"),
        endTime: at("2026-11-22T03:00:00Z"),
        windows: [{ cron: "0 2 * * *", durationMs: HOUR }],
      },
      ["2026-11-21T02:00:00Z", "2026-11-22T02:00:00Z"],
    ],
    [
      // Openings inside another open window are not openings: 01:00 opens, 01:30 does not.
      {
        windows: [
          { cron: "0 1 * * *", durationMs: 2 * HOUR },
          { cron: "30 1 * * *", durationMs: HOUR },
        ],
      },
      ["2026-11-21T01:00:00Z", "2026-11-22T01:00:00Z", "2026-11-23T01:00:00Z"],
    ],
    [{ windows: [{ cron: "* * * * *", durationMs: 2 * MIN }] }, []], // always open: no opening to wait for
  ] as [Schedule, string[]][])("%o → %o", (schedule, openings) => {
    expect(nextOpenings(schedule, NOW, 3).map(formatRfc3339)).toEqual(openings);
  });
});

describe("maintenance windows: validation, with field paths", () => {
  const NOW = at("2026-11-20T10:00:00Z");
  const PATHS = { endTime: "x.end_time", windows: "o.maintenance_windows" };
  const check = (input: Parameters<typeof checkSchedule>[0]) => checkSchedule(input, NOW, PATHS);

  it("a valid schedule has no violations; a window may be open right now", () => {
    expect(
      check({
        startTime: NOW - HOUR,
        endTime: NOW + DAY,
        windows: [{ cron: "0 * * * *", durationMs: HOUR }],
      }),
    ).toEqual([]);
    expect(check({ windows: [] })).toEqual([]);
  });

  it.each([
    [
      { startTime: NOW + 2 * HOUR, endTime: NOW + HOUR, windows: [] },
      "x.end_time",
      "end_time must be after start_time",
    ],
    [
      { startTime: NOW + HOUR, endTime: NOW + HOUR, windows: [] },
      "x.end_time",
      "end_time must be after start_time",
    ],
    [{ endTime: NOW, windows: [] }, "x.end_time", "maintenance window already closed"],
    [{ endTime: NOW - DAY, windows: [] }, "x.end_time", "maintenance window already closed"],
    [
      { windows: [{ cron: "0 25 * * *", durationMs: HOUR }] },
      "o.maintenance_windows[0].cron",
      "hour: 25 is out of range 0-23",
    ],
    [
      { windows: [{ cron: "0 0 30 2 *", durationMs: HOUR }] },
      "o.maintenance_windows[0].cron",
      "never fires (no match within 10 years)",
    ],
    [{ windows: [{ cron: "0 2 * * *" }] }, "o.maintenance_windows[0].duration", "duration is required"],
    [
      { windows: [{ cron: "0 2 * * *", durationMs: 0 }] },
      "o.maintenance_windows[0].duration",
      "duration must be greater than 0",
    ],
    [
      { windows: [{ cron: "0 2 * * *", durationMs: MAX_WINDOW_DURATION_MS + 1000 }] },
      "o.maintenance_windows[0].duration",
      "duration must be at most 168h0m0s (got 168h0m1s)",
    ],
    [
      { windows: Array.from({ length: 17 }, () => ({ cron: "0 2 * * *", durationMs: HOUR })) },
      "o.maintenance_windows",
      "at most 16 maintenance windows (got 17)",
    ],
    [
      // Valid parts, but no window opens between now and end_time.
      { endTime: at("2026-11-21T01:00:00Z"), windows: [{ cron: "0 2 * * *", durationMs: HOUR }] },
      "o.maintenance_windows",
      "no maintenance window opens before end_time",
    ],
    [
      // …or between start_time and end_time.
      {
        startTime: at("2026-11-21T03:00:00Z"),
        endTime: at("2026-11-22T01:00:00Z"),
        windows: [{ cron: "0 2 * * *", durationMs: HOUR }],
      },
      "o.maintenance_windows",
      "no maintenance window opens before end_time",
    ],
  ] as [Parameters<typeof checkSchedule>[0], string, string][])("%o → %s: %s", (input, field, rule) => {
    expect(check(input)).toEqual([{ field, rule }]);
  });

  it("a window still open at start_time counts: 02:00-04:00 covers a 03:00 start before a 03:30 end", () => {
    expect(
      check({
        startTime: at("2026-11-21T03:00:00Z"),
        endTime: at("2026-11-21T03:30:00Z"),
        windows: [{ cron: "0 2 * * *", durationMs: 2 * HOUR }],
      }),
    ).toEqual([]);
  });

  it("every problem at once, windows in order", () => {
    expect(
      check({
        startTime: NOW + HOUR,
        endTime: NOW,
        windows: [
          { cron: "0 2 * *", durationMs: -1 },
          { cron: "61 2 * * *", durationMs: HOUR },
        ],
      }),
    ).toEqual([
      { field: "x.end_time", rule: "end_time must be after start_time" },
      {
        field: "o.maintenance_windows[0].cron",
        rule: "must have 5 fields (minute hour day-of-month month day-of-week), got 4",
      },
      { field: "o.maintenance_windows[0].duration", rule: "duration must be greater than 0" },
      { field: "o.maintenance_windows[1].cron", rule: "minute: 61 is out of range 0-59" },
    ]);
  });
});
