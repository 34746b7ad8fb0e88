/**
 * Instants and windows for the maintenance-window tests: minutes, hours and days in ms, an ISO time
 * to epoch ms and back, a cron that must parse, and parsed windows.
 */
import { formatRfc3339 } from "../../src/domain/calendar.js";
import { type Cron, parseCron } from "../../src/domain/cron.js";
import type { ParsedWindow } from "../../src/domain/maintenance-window.js";

export const MIN = 60_000;
export const HOUR = 60 * MIN;
export const DAY = 24 * HOUR;
export const at = (iso: string): number => {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) throw new Error(`bad instant ${iso}`);
  return t;
};
export const iso = (t: number | undefined): string | undefined =>
  t === undefined ? undefined : formatRfc3339(t);

export function cron(text: string): Cron {
  const parsed = parseCron(text);
  if (!parsed.ok) throw new Error(`${text}: ${parsed.errors.join("; ")}`);
  return parsed.cron;
}

export function windows(...list: [string, number][]): ParsedWindow[] {
  return list.map(([text, durationMs]) => ({ cron: cron(text), durationMs }));
}
