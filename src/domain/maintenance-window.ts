/**
 * Maintenance windows: when a run (or a plain UpgradeFirmware task) may start work on a rack.
 *
 * A schedule has up to three parts, all optional:
 * - `startTime`: nothing starts before it;
 * - `endTime`: nothing starts at or after it (the hard end: a flash already running finishes);
 * - `windows` (runs only): recurring windows, each a 5-field cron in UTC and a duration. Work starts
 *   only inside one; `startTime`/`endTime` still bound the whole run.
 *
 * Instants are epoch milliseconds, UTC throughout: there is no time zone and so no daylight saving
 * (a window at 02:30 exists every day, once). Calendar arithmetic is done here by hand because the
 * domain has no `Date` (Howard Hinnant's days ↔ civil date algorithms).
 *
 * ## Cron (what is supported)
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
 *
 * ## Windows
 * A window is open from each cron match `o` (a whole minute) until `o + duration`: `[o, o + d)`.
 * An instant `t` is inside when some opening `o ≤ t` has `t < o + d`, so a window that opened
 * before `t` (before the run was created, say) and lasts past it counts. When several windows are
 * open at `t`, the current window closes at the LATEST of their closes; overlapping windows are not
 * merged beyond that: at that close, the next pass finds whichever window is then open.
 *
 *   windows [{ "0 22 * * *", 4h }], t = 2026-11-20T23:30Z  → inside (opened 22:00, closes 02:00 next day)
 *   same, t = 2026-11-21T02:00Z                             → outside, next opens 2026-11-21T22:00Z
 *   windows [{ "*\/10 * * * *", 5s }], t = 12:10:04.999     → inside; t = 12:10:05 → outside, next 12:20:00
 *
 * A window shorter than the dispatcher's tick (10 s by default) may open and close between two
 * ticks; the arithmetic is exact, but whether a dispatch pass falls inside it is up to the shell
 * (docs/dispatcher.md).
 */

import { formatGoDuration } from "./duration.js";
import type { FieldViolation } from "./errors.js";
import type { MaintenanceWindow, RunConfig } from "./model.js";

const MINUTE = 60_000;
const DAY = 86_400_000;

/** Windows per run: more than a handful is a mistake, and each one costs a search per pass. */
export const MAX_WINDOWS = 16;
/** A window may last up to a week (a monthly 3-day window fits; a window is not a whole schedule). */
export const MAX_WINDOW_DURATION_MS = 7 * DAY;
/**
 * How far ahead a cron is searched, in days. Ten years covers the rarest valid cron, 29 February,
 * across the skipped leap year of 2100 (2096 → 2104). A cron with no match inside it never fires.
 */
const HORIZON_DAYS = 3653;

// ---------------------------------------------------------------------------------------------
// Calendar (UTC, proleptic Gregorian)

/** Days since 1970-01-01 → { year, month 1-12, day 1-31 } (Hinnant's civil_from_days). */
export function civilFromDays(days: number): { year: number; month: number; day: number } {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  return { year, month, day };
}

/** 0 = Sunday … 6 = Saturday; 1970-01-01 was a Thursday. */
export function weekday(days: number): number {
  return (((days + 4) % 7) + 7) % 7;
}

const pad = (n: number, width = 2): string => String(n).padStart(width, "0");

/**
 * RFC 3339 in UTC, milliseconds only when there are any:
 * 0 → `1970-01-01T00:00:00Z`; 1_795_680_000_000 → `2026-11-25T08:00:00Z`; 1_500 → `1970-01-01T00:00:01.500Z`.
 */
export function formatRfc3339(ms: number): string {
  const days = Math.floor(ms / DAY);
  const { year, month, day } = civilFromDays(days);
  const rest = ms - days * DAY;
  const h = Math.floor(rest / 3_600_000);
  const m = Math.floor((rest % 3_600_000) / MINUTE);
  const s = Math.floor((rest % MINUTE) / 1000);
  const milli = rest % 1000;
  const fraction = milli === 0 ? "" : `.${pad(milli, 3)}`;
  return `${pad(year, 4)}-${pad(month)}-${pad(day)}T${pad(h)}:${pad(m)}:${pad(s)}${fraction}Z`;
}

// ---------------------------------------------------------------------------------------------
// Cron

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
  const start = Math.ceil(from / MINUTE) * MINUTE;
  const firstDay = Math.floor(start / DAY);
  const lastDay = Math.min(Math.floor((before - 1) / DAY), firstDay + HORIZON_DAYS);
  for (let day = firstDay; day <= lastDay; day++) {
    if (!dayMatches(cron, day)) continue;
    const earliest = day === firstDay ? (start - day * DAY) / MINUTE : 0;
    for (const h of cron.hours) {
      for (const m of cron.minutes) {
        if (h * 60 + m < earliest) continue;
        const t = day * DAY + (h * 60 + m) * MINUTE;
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
  const end = Math.floor(at / MINUTE) * MINUTE;
  const lastDay = Math.floor(end / DAY);
  const firstDay = Math.floor(notBefore / DAY);
  for (let day = lastDay; day >= firstDay; day--) {
    if (!dayMatches(cron, day)) continue;
    const latest = day === lastDay ? (end - day * DAY) / MINUTE : 24 * 60;
    for (let hi = cron.hours.length - 1; hi >= 0; hi--) {
      for (let mi = cron.minutes.length - 1; mi >= 0; mi--) {
        const minuteOfDay = (cron.hours[hi] as number) * 60 + (cron.minutes[mi] as number);
        if (minuteOfDay > latest) continue;
        const t = day * DAY + minuteOfDay * MINUTE;
        return t >= notBefore ? t : undefined;
      }
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Windows and the schedule

export interface ParsedWindow {
  cron: Cron;
  durationMs: number;
}

/** Stored windows were validated at create; one that no longer parses is corrupted data. */
export function parseWindows(windows: readonly MaintenanceWindow[]): ParsedWindow[] {
  return windows.map((w) => {
    const parsed = parseCron(w.cron);
    if (!parsed.ok) throw new Error(`stored maintenance window cron ${JSON.stringify(w.cron)} is invalid`);
    return { cron: parsed.cron, durationMs: w.durationMs };
  });
}

/**
 * When the window open at `t` closes: the latest `o + duration` over every window with an opening
 * `o ≤ t < o + duration`; undefined when none is open. Only openings within one duration before `t`
 * can cover it, so the backward search is at most a week long.
 */
export function openWindowClose(windows: readonly ParsedWindow[], t: number): number | undefined {
  let close: number | undefined;
  for (const w of windows) {
    const opened = previousCronTime(w.cron, t, t - w.durationMs + 1);
    if (opened !== undefined) close = Math.max(close ?? 0, opened + w.durationMs);
  }
  return close;
}

/** The earliest opening of any window at or after `from` and before `before`. */
export function nextWindowOpening(
  windows: readonly ParsedWindow[],
  from: number,
  before: number = Number.POSITIVE_INFINITY,
): number | undefined {
  let next: number | undefined;
  for (const w of windows) {
    const t = nextCronTime(w.cron, from, before);
    if (t !== undefined && (next === undefined || t < next)) next = t;
  }
  return next;
}

/** The schedule of a run: its template's start and end, and its recurring windows. */
export interface Schedule {
  startTime?: number;
  endTime?: number;
  windows: readonly MaintenanceWindow[];
}

export function scheduleOf(config: RunConfig): Schedule {
  const { startTime, endTime } = config.operation.firmware;
  return { startTime, endTime, windows: config.maintenanceWindows ?? [] };
}

/**
 * Where a run stands against its schedule at `now`:
 * - `closed`: `endTime` has passed (`now ≥ endTime`): nothing is claimed any more, ever;
 * - `before`: `now < startTime`; `opensAt` is the first instant work may start (startTime itself,
 *   or the first window opening after it; absent if none opens before endTime);
 * - `open`: work may start now; `closesAt` is when it must stop (the current window's close or
 *   endTime, whichever is first; absent = never);
 * - `outside`: recurring windows, none open now; `opensAt` is the next opening (absent if none
 *   opens before endTime: the run waits for endTime and is then `closed`).
 *
 * Examples (start 08:00, end 12:00, no windows): 07:00 → before, opens 08:00; 09:00 → open, closes
 * 12:00; 12:00 → closed at 12:00. With a window "0 9 * * *" for 1 h: 08:30 → outside, next 09:00;
 * 09:10 → open, closes 10:00; 10:00 → outside, no opening before 12:00.
 */
export type WindowState =
  | { kind: "open"; closesAt?: number }
  | { kind: "before"; opensAt?: number }
  | { kind: "outside"; opensAt?: number }
  | { kind: "closed"; closedAt: number };

export function windowState(schedule: Schedule, now: number): WindowState {
  const { startTime, endTime } = schedule;
  if (endTime !== undefined && now >= endTime) return { kind: "closed", closedAt: endTime };
  const windows = parseWindows(schedule.windows);
  const before = endTime ?? Number.POSITIVE_INFINITY;
  if (startTime !== undefined && now < startTime) {
    const opensAt = firstOpenInstant(windows, startTime, before);
    return opensAt === undefined ? { kind: "before" } : { kind: "before", opensAt };
  }
  if (windows.length === 0)
    return endTime === undefined ? { kind: "open" } : { kind: "open", closesAt: endTime };
  const close = openWindowClose(windows, now);
  if (close !== undefined) return { kind: "open", closesAt: Math.min(close, before) };
  const opensAt = nextWindowOpening(windows, now, before);
  return opensAt === undefined ? { kind: "outside" } : { kind: "outside", opensAt };
}

/** The first instant at or after `t` (and before `before`) at which work may start. */
function firstOpenInstant(windows: readonly ParsedWindow[], t: number, before: number): number | undefined {
  if (windows.length === 0 || openWindowClose(windows, t) !== undefined) return t;
  return nextWindowOpening(windows, t, before);
}

/** Candidate openings examined by `nextOpenings` before it gives up (windows that always overlap). */
const MAX_OPENINGS_EXAMINED = 1000;

/**
 * The next `count` instants after `now` at which the schedule opens (claiming becomes allowed
 * after not being allowed), ascending, before endTime: startTime when it is in the future and open,
 * then each window opening at which no window was already open. Example: now 2026-11-20T10:00Z,
 * windows [{ "0 2 * * *", 2h }], count 3 → 2026-11-21T02:00Z, 2026-11-22T02:00Z, 2026-11-23T02:00Z.
 * Without windows and with startTime in the past, there is nothing to wait for: [].
 */
export function nextOpenings(schedule: Schedule, now: number, count: number): number[] {
  const windows = parseWindows(schedule.windows);
  const before = schedule.endTime ?? Number.POSITIVE_INFINITY;
  const from = Math.max(now, schedule.startTime ?? now);
  const out: number[] = [];
  const { startTime } = schedule;
  if (startTime !== undefined && startTime > now && startTime < before) {
    if (windows.length === 0 || openWindowClose(windows, startTime) !== undefined) out.push(startTime);
  }
  let t = from;
  for (let i = 0; i < MAX_OPENINGS_EXAMINED && out.length < count; i++) {
    const opening = nextWindowOpening(windows, t, before);
    if (opening === undefined) break;
    if (
      opening > now &&
      opening !== out[out.length - 1] &&
      openWindowClose(windows, opening - 1) === undefined
    ) {
      out.push(opening);
    }
    t = opening + MINUTE;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Validation

/** A schedule as sent, before validation: a window's duration may be missing. */
export interface ScheduleInput {
  startTime?: number;
  endTime?: number;
  windows: readonly { cron: string; durationMs?: number }[];
}

/** The proto paths the violations name. */
export interface SchedulePaths {
  endTime: string;
  windows: string;
}

export const MSG_WINDOW_ALREADY_CLOSED = "maintenance window already closed";

/**
 * Every problem with a schedule, each with its field path (empty = valid). `now` decides what is
 * already past; the domain has no clock.
 *   end_time ≤ start_time                  → <endTime>: end_time must be after start_time
 *   end_time ≤ now                         → <endTime>: maintenance window already closed
 *   more than 16 windows                   → <windows>: at most 16 maintenance windows (got 17)
 *   windows[1].cron "0 25 * * *"           → <windows>[1].cron: hour: 25 is out of range 0-23
 *   windows[0].cron "0 0 30 2 *"           → <windows>[0].cron: never fires (no match within 10 years)
 *   windows[0].duration absent / 0 / 8 d   → <windows>[0].duration: duration is required / must be
 *                                            greater than 0 / must be at most 168h0m0s (got 192h0m0s)
 *   valid, but none opens before end_time  → <windows>: no maintenance window opens before end_time
 */
export function checkSchedule(input: ScheduleInput, now: number, paths: SchedulePaths): FieldViolation[] {
  const violations: FieldViolation[] = [];
  const add = (field: string, rule: string) => violations.push({ field, rule });
  const { startTime, endTime } = input;
  if (startTime !== undefined && endTime !== undefined && endTime <= startTime) {
    add(paths.endTime, "end_time must be after start_time");
  } else if (endTime !== undefined && endTime <= now) {
    add(paths.endTime, MSG_WINDOW_ALREADY_CLOSED);
  }

  if (input.windows.length > MAX_WINDOWS) {
    add(paths.windows, `at most ${MAX_WINDOWS} maintenance windows (got ${input.windows.length})`);
    return violations;
  }
  const windows: ParsedWindow[] = [];
  input.windows.forEach((w, i) => {
    const at = `${paths.windows}[${i}]`;
    const parsed = parseCron(w.cron);
    if (!parsed.ok) for (const error of parsed.errors) add(`${at}.cron`, error);
    else if (nextCronTime(parsed.cron, now) === undefined)
      add(`${at}.cron`, "never fires (no match within 10 years)");
    const d = w.durationMs;
    if (d === undefined) add(`${at}.duration`, "duration is required");
    else if (d <= 0) add(`${at}.duration`, "duration must be greater than 0");
    else if (d > MAX_WINDOW_DURATION_MS) {
      add(
        `${at}.duration`,
        `duration must be at most ${formatGoDuration(MAX_WINDOW_DURATION_MS)} (got ${formatGoDuration(d)})`,
      );
    }
    if (parsed.ok && d !== undefined) windows.push({ cron: parsed.cron, durationMs: d });
  });

  if (violations.length === 0 && endTime !== undefined && windows.length > 0) {
    const from = Math.max(now, startTime ?? now);
    if (firstOpenInstant(windows, from, endTime) === undefined) {
      add(paths.windows, "no maintenance window opens before end_time");
    }
  }
  return violations;
}
