/**
 * Calendar arithmetic in UTC on the proleptic Gregorian calendar, for a domain that has no `Date`:
 * instants are epoch milliseconds and days are counted from 1970-01-01 (Howard Hinnant's days ↔
 * civil date algorithms).
 */

export const MINUTE_MS = 60_000;
export const DAY_MS = 86_400_000;

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
  const days = Math.floor(ms / DAY_MS);
  const { year, month, day } = civilFromDays(days);
  const rest = ms - days * DAY_MS;
  const h = Math.floor(rest / 3_600_000);
  const m = Math.floor((rest % 3_600_000) / MINUTE_MS);
  const s = Math.floor((rest % MINUTE_MS) / 1000);
  const milli = rest % 1000;
  const fraction = milli === 0 ? "" : `.${pad(milli, 3)}`;
  return `${pad(year, 4)}-${pad(month)}-${pad(day)}T${pad(h)}:${pad(m)}:${pad(s)}${fraction}Z`;
}
