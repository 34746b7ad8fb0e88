/**
 * The UTC calendar (src/domain/calendar.ts), pure, against Date: days to civil dates, weekdays and
 * RFC 3339. Everything is UTC: there is no daylight saving.
 */
import { describe, expect, it } from "vitest";
import { civilFromDays, formatRfc3339, weekday } from "../../src/domain/calendar.js";
import { at, DAY } from "../support/window-cases.js";

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
