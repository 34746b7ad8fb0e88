/**
 * Durations on the command line (`--tick 10s`, `FLOW_TICK=200ms`): a number and a unit, no space.
 *
 *   "200ms" → 200    "2s" → 2000    "1.5s" → 1500    "1m" → 60000    "1h" → 3600000
 *
 * A bare number is refused (is `10` seconds or milliseconds?), as are fractions of a millisecond
 * (`1.5ms`), zero, negatives and compound forms (`1m30s`: write `90s`).
 */

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
const PATTERN = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/;

/**
 * Milliseconds, or what is wrong with the text, for the local stack's configuration reader
 * (local/config.ts puts the flag's or the variable's name in front):
 * `"10" is not a duration: write a number and a unit (ms, s, m, h), e.g. 200ms, 2s, 10s, 1m`.
 */
export function checkDuration(text: string): { value: number } | { problem: string } {
  const quoted = JSON.stringify(text);
  const match = PATTERN.exec(text.trim());
  if (match === null) {
    return {
      problem: `${quoted} is not a duration: write a number and a unit (ms, s, m, h), e.g. 200ms, 2s, 10s, 1m`,
    };
  }
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  // 0.1s is 100.00000000000001 in binary floating point: round to a microsecond first.
  const rounded = Math.round(ms * 1000) / 1000;
  if (!Number.isInteger(rounded)) return { problem: `${quoted} is not a whole number of milliseconds` };
  if (rounded <= 0) return { problem: `${quoted} must be greater than zero` };
  if (!Number.isSafeInteger(rounded)) return { problem: `${quoted} is too large` };
  return { value: rounded };
}

/** The shortest exact text for `ms`, for messages and `--help`: 10000 → "10s", 1500 → "1500ms". */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0ms";
  if (ms % UNIT_MS.h === 0) return `${ms / UNIT_MS.h}h`;
  if (ms % UNIT_MS.m === 0) return `${ms / UNIT_MS.m}m`;
  if (ms % UNIT_MS.s === 0) return `${ms / UNIT_MS.s}s`;
  return `${ms}ms`;
}
