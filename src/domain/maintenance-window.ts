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
 * (a window at 02:30 exists every day, once). The calendar arithmetic is in calendar.ts and the cron
 * syntax (what is supported, how day-of-month and day-of-week combine) in cron.ts.
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

import { DAY_MS, MINUTE_MS } from "./calendar.js";
import { type Cron, nextCronTime, parseCron, previousCronTime } from "./cron.js";
import { formatGoDuration } from "./duration.js";
import type { FieldViolation } from "./errors.js";
import type { MaintenanceWindow, RunConfig } from "./model.js";

/** Windows per run: more than a handful is a mistake, and each one costs a search per pass. */
export const MAX_WINDOWS = 16;
/** A window may last up to a week (a monthly 3-day window fits; a window is not a whole schedule). */
export const MAX_WINDOW_DURATION_MS = 7 * DAY_MS;

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
    t = opening + MINUTE_MS;
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
