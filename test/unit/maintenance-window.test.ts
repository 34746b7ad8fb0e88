/**
 * Maintenance-window arithmetic (src/domain/maintenance-window.ts), pure: the calendar against
 * Date, cron parsing, next and previous matches, windows that span midnight or started before t,
 * a window shorter than a tick, the run's window state at `now`, the plan's next openings, and
 * the validation rules with their field paths. Everything is UTC: there is no daylight saving.
 */
import { describe, expect, it } from "vitest";
import { civilFromDays, formatRfc3339, weekday } from "../../src/domain/calendar.js";
import { type Cron, nextCronTime, parseCron, previousCronTime } from "../../src/domain/cron.js";
import {
  checkSchedule,
  MAX_WINDOW_DURATION_MS,
  nextOpenings,
  nextWindowOpening,
  openWindowClose,
  type ParsedWindow,
  parseWindows,
  type Schedule,
  scheduleOf,
  windowState,
} from "../../src/domain/maintenance-window.js";
import { runConfig } from "../support/domain-fixtures.js";
import { testRandom } from "../support/seeded-random.js";

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const at = (iso: string): number => {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) throw new Error(`bad instant ${iso}`);
  return t;
};
const iso = (t: number | undefined): string | undefined => (t === undefined ? undefined : formatRfc3339(t));

function cron(text: string): Cron {
  const parsed = parseCron(text);
  if (!parsed.ok) throw new Error(`${text}: ${parsed.errors.join("; ")}`);
  return parsed.cron;
}

function windows(...list: [string, number][]): ParsedWindow[] {
  return list.map(([text, durationMs]) => ({ cron: cron(text), durationMs }));
}

describe("maintenance windows: the UTC calendar", () => {
  it.each([
    "1970-01-01T00:00:00.000Z",
    "1969-12-31T23:59:59.000Z",
    "2000-02-29T12:00:00.000Z",
    "2000-03-01T00:00:00.000Z",
    "2024-12-31T23:59:00.000Z",
    "2026-01-01T00:00:00.000Z",
    "2100-02-28T00:00:00.000Z",
    "2100-03-01T00:00:00.000Z",
    "2400-02-29T00:00:00.000Z",
  ])("civilFromDays and weekday agree with Date for %s", (text) => {
    const t = at(text);
    const days = Math.floor(t / DAY);
    const d = new Date(t);
    expect(civilFromDays(days)).toEqual({
      year: d.getUTCFullYear(),
      month: d.getUTCMonth() + 1,
      day: d.getUTCDate(),
    });
    expect(weekday(days)).toBe(d.getUTCDay());
  });

  it("every day of 1999-2001 (two leap-year rules) converts like Date", () => {
    for (let t = at("1999-01-01T00:00:00Z"); t < at("2002-01-01T00:00:00Z"); t += DAY) {
      const d = new Date(t);
      expect(civilFromDays(t / DAY), d.toISOString()).toEqual({
        year: d.getUTCFullYear(),
        month: d.getUTCMonth() + 1,
        day: d.getUTCDate(),
      });
    }
  });

  it.each([
    [0, "1970-01-01T00:00:00Z"],
    [1_500, "1970-01-01T00:00:01.500Z"],
    [at("2026-11-20T08:05:09.007Z"), "2026-11-20T08:05:09.007Z"],
    [at("2026-11-20T23:59:59Z"), "2026-11-20T23:59:59Z"],
  ])("formatRfc3339(%d) = %s", (ms, text) => {
    expect(formatRfc3339(ms)).toBe(text);
  });
});

describe("maintenance windows: cron parsing", () => {
  it("lists, ranges, steps, names and 7 for Sunday", () => {
    const c = cron("*/15 0-6/2 1,15 JAN-mar mon-FRI");
    expect(c.minutes).toEqual([0, 15, 30, 45]);
    expect(c.hours).toEqual([0, 2, 4, 6]);
    expect(c.daysOfMonth.flatMap((on, d) => (on ? [d] : []))).toEqual([1, 15]);
    expect(c.months.flatMap((on, m) => (on ? [m] : []))).toEqual([1, 2, 3]);
    expect(c.daysOfWeek).toEqual([false, true, true, true, true, true, false]);
    expect([c.domRestricted, c.dowRestricted]).toEqual([true, true]);
    expect(cron("5/20 * * * 7").minutes).toEqual([5, 25, 45]);
    expect(cron("0 0 * * 7").daysOfWeek[0]).toBe(true);
    expect(cron(" 0  0 */2 * *  ")).toMatchObject({ text: "0  0 */2 * *", domRestricted: false });
  });

  it.each([
    ["", "must have 5 fields (minute hour day-of-month month day-of-week), got 0"],
    ["0 2 * *", "must have 5 fields (minute hour day-of-month month day-of-week), got 4"],
    ["0 2 * * * 2026", "must have 5 fields (minute hour day-of-month month day-of-week), got 6"],
    ["60 * * * *", "minute: 60 is out of range 0-59"],
    ["0 24 * * *", "hour: 24 is out of range 0-23"],
    ["0 0 0 * *", "day-of-month: 0 is out of range 1-31"],
    ["0 0 * 13 *", "month: 13 is out of range 1-12"],
    ["0 0 * * 8", "day-of-week: 8 is out of range 0-7"],
    ["x * * * *", 'minute: "x" is not a number'],
    ["0 0 * FOO *", 'month: "FOO" is not a number or a name such as FEB'],
    ["0 0 * * SUNDAY", 'day-of-week: "SUNDAY" is not a number or a name such as MON'],
    ["5-1 * * * *", "minute: range 5-1 is backwards"],
    ["*/0 * * * *", 'minute: step "0" must be a whole number of at least 1'],
    ["*/x * * * *", 'minute: step "x" must be a whole number of at least 1'],
    ["1/2/3 * * * *", 'minute: "1/2/3" has more than one "/"'],
    ["1-2-3 * * * *", 'minute: "1-2-3" is not a value or a range'],
    ["1,,2 * * * *", 'minute: "" is not a number'],
    ["@daily", "must have 5 fields (minute hour day-of-month month day-of-week), got 1"],
  ])("%j is refused: %s", (text, error) => {
    expect(parseCron(text)).toEqual({ ok: false, errors: [error] });
  });

  it("reports every bad field at once", () => {
    expect(parseCron("99 99 * * *")).toEqual({
      ok: false,
      errors: ["minute: 99 is out of range 0-59", "hour: 99 is out of range 0-23"],
    });
  });

  it("a stored window that no longer parses is corrupted data and throws", () => {
    expect(() => parseWindows([{ cron: "nope", durationMs: 1 }])).toThrow(
      'stored maintenance window cron "nope" is invalid',
    );
  });
});

describe("maintenance windows: next and previous cron matches", () => {
  it.each([
    // [cron, from, expected next match at or after from]
    ["30 2 * * *", "2026-11-20T02:30:00Z", "2026-11-20T02:30:00Z"], // at a match: inclusive
    ["30 2 * * *", "2026-11-20T02:30:00.001Z", "2026-11-21T02:30:00Z"], // just after: tomorrow
    ["30 2 * * *", "2026-11-20T02:29:59Z", "2026-11-20T02:30:00Z"], // seconds round up to the minute
    ["0 0 1 1 *", "2026-12-31T23:59:00Z", "2027-01-01T00:00:00Z"], // year rollover
    ["0 0 31 * *", "2026-04-01T00:00:00Z", "2026-05-31T00:00:00Z"], // April has no 31st
    ["0 0 29 2 *", "2097-03-01T00:00:00Z", "2104-02-29T00:00:00Z"], // 2100 is no leap year
    ["0 9 * * MON", "2026-11-20T10:00:00Z", "2026-11-23T09:00:00Z"], // Friday → Monday
    ["0 9 1 * MON", "2026-11-20T10:00:00Z", "2026-11-23T09:00:00Z"], // both restricted: OR → Monday first
    ["0 9 1 * MON", "2026-11-24T10:00:00Z", "2026-11-30T09:00:00Z"], // Monday the 30th before the 1st
    ["0 9 */2 * MON", "2026-11-24T10:00:00Z", "2026-12-07T09:00:00Z"], // */2 is unrestricted: AND → odd Monday
    ["*/10 * * * *", "2026-11-20T23:55:00Z", "2026-11-21T00:00:00Z"], // over midnight
    ["45 23 * * *", "2026-11-20T23:50:00Z", "2026-11-21T23:45:00Z"], // today's has passed
  ])("%s from %s → %s", (text, from, expected) => {
    expect(iso(nextCronTime(cron(text), at(from)))).toBe(expected);
  });

  it("nothing at or after `before`, and a cron that never fires finds nothing in 10 years", () => {
    const daily = cron("0 2 * * *");
    expect(nextCronTime(daily, at("2026-11-20T03:00:00Z"), at("2026-11-21T02:00:00Z"))).toBeUndefined();
    expect(iso(nextCronTime(daily, at("2026-11-20T03:00:00Z"), at("2026-11-21T02:00:01Z")))).toBe(
      "2026-11-21T02:00:00Z",
    );
    expect(nextCronTime(cron("0 0 30 2 *"), at("2026-01-01T00:00:00Z"))).toBeUndefined();
  });

  it.each([
    // [cron, at, notBefore, expected last match at or before `at`, not before `notBefore`]
    ["0 22 * * *", "2026-11-21T01:00:00Z", "2026-11-20T21:00:00Z", "2026-11-20T22:00:00Z"], // yesterday
    ["0 22 * * *", "2026-11-20T22:00:00Z", "2026-11-20T21:00:00Z", "2026-11-20T22:00:00Z"], // inclusive
    ["0 22 * * *", "2026-11-20T22:00:59Z", "2026-11-20T21:00:00Z", "2026-11-20T22:00:00Z"], // rounds down
    ["0 22 * * *", "2026-11-20T21:59:00Z", "2026-11-19T22:00:01Z", undefined], // too far back
    ["*/10 * * * *", "2026-11-21T00:05:00Z", "2026-11-20T00:00:00Z", "2026-11-21T00:00:00Z"],
    ["50 23 * * *", "2026-11-21T00:05:00Z", "2026-11-20T23:00:00Z", "2026-11-20T23:50:00Z"],
    ["0 9 * * MON", "2026-11-21T00:00:00Z", "2026-11-20T00:00:00Z", undefined], // no Monday in range
  ])("%s before %s (not before %s) → %s", (text, t, notBefore, expected) => {
    expect(iso(previousCronTime(cron(text), at(t), at(notBefore)))).toBe(expected);
  });

  it("nextCronTime and previousCronTime agree with a minute-by-minute search (seeded random crons)", () => {
    const random = testRandom();
    const pick = (min: number, max: number) => min + random.int(max - min + 1);
    const field = (min: number, max: number): string => {
      switch (random.int(5)) {
        case 0:
          return "*";
        case 1:
          return String(pick(min, max));
        case 2: {
          const a = pick(min, max);
          return `${a}-${pick(a, max)}`;
        }
        case 3:
          return `*/${pick(1, Math.max(1, Math.floor((max - min) / 2)))}`;
        default:
          return `${pick(min, max)},${pick(min, max)}`;
      }
    };
    const matches = (c: Cron, t: number): boolean => {
      const d = new Date(t);
      const dom = c.daysOfMonth[d.getUTCDate()] === true;
      const dow = c.daysOfWeek[d.getUTCDay()] === true;
      return (
        c.minutes.includes(d.getUTCMinutes()) &&
        c.hours.includes(d.getUTCHours()) &&
        c.months[d.getUTCMonth() + 1] === true &&
        (c.domRestricted && c.dowRestricted ? dom || dow : dom && dow)
      );
    };
    for (let i = 0; i < 40; i++) {
      const text = [field(0, 59), field(0, 23), field(1, 31), "*", field(0, 6)].join(" ");
      const c = cron(text);
      const from = at("2026-02-27T00:00:00Z") + random.int(2 * DAY);
      const horizon = from + 4 * DAY;
      let brute: number | undefined;
      for (let t = Math.ceil(from / MIN) * MIN; t < horizon; t += MIN) {
        if (matches(c, t)) {
          brute = t;
          break;
        }
      }
      expect(iso(nextCronTime(c, from, horizon)), `${text} from ${iso(from)}`).toBe(iso(brute));
      let back: number | undefined;
      for (let t = Math.floor(horizon / MIN) * MIN; t >= from; t -= MIN) {
        if (matches(c, t)) {
          back = t;
          break;
        }
      }
      expect(iso(previousCronTime(c, horizon, from)), `${text} back from ${iso(horizon)}`).toBe(iso(back));
    }
  });
});

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
