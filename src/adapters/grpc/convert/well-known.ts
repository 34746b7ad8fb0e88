/** The well-known types: Durations and Timestamps, and the UUID message. */

import type * as pb from "../../../gen/flow/v1/flow.js";
import type { Duration } from "../../../gen/google/protobuf/duration.js";
import type { Violations } from "./violations.js";

/** google.protobuf.Duration's documented range: ±10,000 years. */
const MAX_DURATION_SECONDS = 315_576_000_000;

/**
 * Whole milliseconds, rounded away from zero so that a non-zero duration never becomes 0 ms (which
 * the validator would report as "must be positive" for a value the client sent as positive):
 * {seconds: 30} → 30000; {seconds: 1, nanos: 500000000} → 1500; {nanos: 1} → 1; {seconds: -2} → -2000.
 */
export function durationToMs(d: Duration, field: string, v: Violations): number | undefined {
  const { seconds, nanos } = d;
  if (!Number.isInteger(seconds) || Math.abs(seconds) > MAX_DURATION_SECONDS) {
    v.add(field, `must be a valid duration: seconds out of range (got ${seconds})`);
    return undefined;
  }
  if (
    !Number.isInteger(nanos) ||
    Math.abs(nanos) > 999_999_999 ||
    (seconds > 0 && nanos < 0) ||
    (seconds < 0 && nanos > 0)
  ) {
    v.add(field, `must be a valid duration: nanos out of range or of the wrong sign (got ${nanos})`);
    return undefined;
  }
  const ms = seconds * 1000 + nanos / 1_000_000;
  return ms > 0 ? Math.ceil(ms) : Math.floor(ms);
}

/** 1500 → {seconds: 1, nanos: 500000000}; -1500 → {seconds: -1, nanos: -500000000} (same signs). */
export function msToDuration(ms: number): Duration {
  const seconds = Math.trunc(ms / 1000);
  const nanos = Math.round((ms - seconds * 1000) * 1_000_000);
  return { seconds, nanos };
}

/** ts-proto decodes Timestamps to Dates; one outside Date's range decodes to an invalid Date. */
export function dateToMs(date: Date, field: string, v: Violations): number | undefined {
  const ms = date.getTime();
  if (Number.isNaN(ms)) {
    v.add(field, "must be a valid timestamp");
    return undefined;
  }
  return ms;
}

export function msToDate(ms: number): Date;
export function msToDate(ms: number | undefined): Date | undefined;
export function msToDate(ms: number | undefined): Date | undefined {
  return ms === undefined ? undefined : new Date(ms);
}

export const uuidToProto = (id: string): pb.UUID => ({ id });
