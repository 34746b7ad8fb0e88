/**
 * Cron expressions for maintenance windows (maintenance-window.ts): parsing, and the next and
 * previous match of one, in UTC.
 *
 * `minute hour day-of-month month day-of-week`, fields separated by white space:
 *
 *   field          values                       names
 *   minute         0-59
 *   hour           0-23
 *   day-of-month   1-31
 *   month          1-12                         JAN-DEC (any case)
 *   day-of-week    0-7 (0 and 7 are Sunday)     SUN-SAT (any case)
 *
 * Each field is a comma list of items; an item is `*`, a value `5`, a range `1-5` (never
 * backwards: `5-1` is refused), and optionally a step `/n` (n ≥ 1) after `*` or a range (`*` or
 * `a-b`), or after a single value, meaning "from it to the field's maximum" (`5/15` = 5,20,35,50).
 * Not supported: `@daily` and other macros, `L`, `W`, `#`, `?`, seconds, years, time zones.
 *
 * Day-of-month and day-of-week combine as in Vixie cron: when BOTH are restricted (neither field
 * starts with `*`) a day matches if EITHER does; otherwise both must match (an unrestricted field
 * matches every day). So `0 2 1 * MON` is 02:00 on the 1st and on every Monday, while
 * `0 2 * * MON` is Mondays only and `0 2 *\/2 * MON` is Mondays with an odd day of the month.
 */

import { civilFromDays, DAY_MS, MINUTE_MS, weekday } from "./calendar.js";

/**
 * How far ahead a cron is searched, in days. Ten years covers the rarest valid cron, 29 February,
 * across the skipped leap year of 2100 (2096 → 2104). A cron with no match inside it never fires.
 */
const HORIZON_DAYS = 3653;

export interface Cron {
  readonly text: string;
  /** Ascending. */
  readonly minutes: readonly number[];
  /** Ascending. */
  readonly hours: readonly number[];
  /** Index 1-31. */
  readonly daysOfMonth: readonly boolean[];
  /** Index 1-12. */
  readonly months: readonly boolean[];
  /** Index 0-6, Sunday = 0. */
  readonly daysOfWeek: readonly boolean[];
  /** Whether the field does not start with `*` (the day-of-month/day-of-week OR rule). */
  readonly domRestricted: boolean;
  readonly dowRestricted: boolean;
}

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  /** Names for min, min+1, … (month: JAN = 1; day-of-week: SUN = 0). */
  names?: readonly string[];
}

const FIELDS: readonly FieldSpec[] = [
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day-of-month", min: 1, max: 31 },
  {
    name: "month",
    min: 1,
    max: 12,
    names: ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"],
  },
  { name: "day-of-week", min: 0, max: 7, names: ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"] },
];

export type CronParse = { ok: true; cron: Cron } | { ok: false; errors: string[] };

/**
 * Parses a 5-field cron (grammar in the module comment). Every problem is reported, each naming its
 * field: `"0 25 * * *"` → `hour: 25 is out of range 0-23`; `"0 2 * *"` → `must have 5 fields
 * (minute hour day-of-month month day-of-week), got 4`.
 */
export function parseCron(text: string): CronParse {
  const trimmed = text.trim();
  const parts = trimmed === "" ? [] : trimmed.split(/\s+/);
  if (parts.length !== 5) {
    return {
      ok: false,
      errors: [`must have 5 fields (minute hour day-of-month month day-of-week), got ${parts.length}`],
    };
  }
  const errors: string[] = [];
  const sets = FIELDS.map((spec, i) => parseField(parts[i] as string, spec, errors));
  if (errors.length > 0) return { ok: false, errors };
  const [minutes, hours, dom, months, dow] = sets as boolean[][];
  // 7 is Sunday too.
  (dow as boolean[])[0] = (dow as boolean[])[0] || (dow as boolean[])[7] === true;
  return {
    ok: true,
    cron: {
      text: trimmed,
      minutes: indexesOf(minutes as boolean[]),
      hours: indexesOf(hours as boolean[]),
      daysOfMonth: dom as boolean[],
      months: months as boolean[],
      daysOfWeek: (dow as boolean[]).slice(0, 7),
      domRestricted: !(parts[2] as string).startsWith("*"),
      dowRestricted: !(parts[4] as string).startsWith("*"),
    },
  };
}

function indexesOf(set: readonly boolean[]): number[] {
  const out: number[] = [];
  set.forEach((on, i) => {
    if (on) out.push(i);
  });
  return out;
}

/** One field as a membership array indexed by value; problems go to `errors`. */
function parseField(text: string, spec: FieldSpec, errors: string[]): boolean[] {
  const set: boolean[] = Array.from({ length: spec.max + 1 }, () => false);
  for (const item of text.split(",")) {
    const [base = "", step, ...extra] = item.split("/");
    if (extra.length > 0) {
      errors.push(`${spec.name}: "${item}" has more than one "/"`);
      continue;
    }
    let by = 1;
    if (step !== undefined) {
      if (!/^\d+$/.test(step) || Number(step) < 1) {
        errors.push(`${spec.name}: step "${step}" must be a whole number of at least 1`);
        continue;
      }
      by = Number(step);
    }
    let from: number | undefined;
    let to: number | undefined;
    if (base === "*") {
      from = spec.min;
      to = spec.max;
    } else {
      const [a = "", b, ...more] = base.split("-");
      if (more.length > 0) {
        errors.push(`${spec.name}: "${base}" is not a value or a range`);
        continue;
      }
      from = parseValue(a, spec, errors);
      to = b === undefined ? (step === undefined ? from : spec.max) : parseValue(b, spec, errors);
      if (from === undefined || to === undefined) continue;
      if (from > to) {
        errors.push(`${spec.name}: range ${base} is backwards`);
        continue;
      }
    }
    for (let v = from; v <= to; v += by) set[v] = true;
  }
  return set;
}

function parseValue(text: string, spec: FieldSpec, errors: string[]): number | undefined {
  let value: number;
  if (/^\d+$/.test(text)) value = Number(text);
  else {
    const named = spec.names?.indexOf(text.toUpperCase()) ?? -1;
    if (named < 0) {
      const kind = spec.names === undefined ? "a number" : `a number or a name such as ${spec.names[1]}`;
      errors.push(`${spec.name}: "${text}" is not ${kind}`);
      return undefined;
    }
    value = named + spec.min;
  }
  if (value < spec.min || value > spec.max) {
    errors.push(`${spec.name}: ${value} is out of range ${spec.min}-${spec.max}`);
    return undefined;
  }
  return value;
}

/** Whether the cron's day fields and month match day `days` (days since the epoch). */
function dayMatches(cron: Cron, days: number): boolean {
  const { month, day } = civilFromDays(days);
  if (!cron.months[month]) return false;
  const dom = cron.daysOfMonth[day] === true;
  const dow = cron.daysOfWeek[weekday(days)] === true;
  return cron.domRestricted && cron.dowRestricted ? dom || dow : dom && dow;
}

/**
 * The first match at or after `from` and strictly before `before`, or undefined (none, or none
 * within the search horizon). Matches are whole minutes. Example: "30 2 * * *", from
 * 2026-11-20T02:30:00.001Z → 2026-11-21T02:30:00Z.
 */
export function nextCronTime(
  cron: Cron,
  from: number,
  before: number = Number.POSITIVE_INFINITY,
): number | undefined {
  const start = Math.ceil(from / MINUTE_MS) * MINUTE_MS;
  const firstDay = Math.floor(start / DAY_MS);
  const lastDay = Math.min(Math.floor((before - 1) / DAY_MS), firstDay + HORIZON_DAYS);
  for (let day = firstDay; day <= lastDay; day++) {
    if (!dayMatches(cron, day)) continue;
    const earliest = day === firstDay ? (start - day * DAY_MS) / MINUTE_MS : 0;
    for (const h of cron.hours) {
      for (const m of cron.minutes) {
        if (h * 60 + m < earliest) continue;
        const t = day * DAY_MS + (h * 60 + m) * MINUTE_MS;
        return t < before ? t : undefined;
      }
    }
  }
  return undefined;
}

/**
 * The last match at or before `at` and at or after `notBefore`, or undefined. Example:
 * "0 22 * * *", at 2026-11-21T01:00Z, notBefore 4 h earlier → 2026-11-20T22:00Z.
 */
export function previousCronTime(cron: Cron, at: number, notBefore: number): number | undefined {
  const end = Math.floor(at / MINUTE_MS) * MINUTE_MS;
  const lastDay = Math.floor(end / DAY_MS);
  const firstDay = Math.floor(notBefore / DAY_MS);
  for (let day = lastDay; day >= firstDay; day--) {
    if (!dayMatches(cron, day)) continue;
    const latest = day === lastDay ? (end - day * DAY_MS) / MINUTE_MS : 24 * 60;
    for (let hi = cron.hours.length - 1; hi >= 0; hi--) {
      for (let mi = cron.minutes.length - 1; mi >= 0; mi--) {
        const minuteOfDay = (cron.hours[hi] as number) * 60 + (cron.minutes[mi] as number);
        if (minuteOfDay > latest) continue;
        const t = day * DAY_MS + minuteOfDay * MINUTE_MS;
        return t >= notBefore ? t : undefined;
      }
    }
  }
  return undefined;
}
