/**
 * Cron (src/domain/cron.ts), pure: parsing, every bad field reported at once, and the next and
 * previous matches, checked against a minute-by-minute search of seeded random crons. In UTC.
 */
import { describe, expect, it } from "vitest";
import { type Cron, nextCronTime, parseCron, previousCronTime } from "../../src/domain/cron.js";
import { parseWindows } from "../../src/domain/maintenance-window.js";
import { testRandom } from "../support/seeded-random.js";
import { at, cron, DAY, iso, MIN } from "../support/window-cases.js";

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
