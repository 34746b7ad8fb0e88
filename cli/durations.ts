/**
 * Durations as operators write them, to and from `google.protobuf.Duration`.
 *
 * Accepted: one or more `<number><unit>` parts with the units Go's `time.ParseDuration` knows
 * (`h`, `m`, `s`, `ms`, `us`/`µs`, `ns`), so the texts the service prints in its messages can be
 * pasted back: `30s` → 30 s; `1h30m` → 5400 s; `1.5s` → 1 s + 500000000 ns; `250ms`; `1h0m0s`.
 * A bare number is refused: is `30` seconds or minutes?
 *
 * Printed back in the shortest exact form: 3600 s → `1h`, 5400 s → `1h30m`, 1.5 s → `1.5s`,
 * 0.25 s → `250ms`.
 */
import type { Duration } from "../src/gen/google/protobuf/duration.js";

const UNIT_NS: Record<string, bigint> = {
  h: 3_600_000_000_000n,
  m: 60_000_000_000n,
  s: 1_000_000_000n,
  ms: 1_000_000n,
  us: 1_000n,
  µs: 1_000n,
  ns: 1n,
};
const PART = /(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s|us|µs|ns)/y;
const NS_PER_SECOND = 1_000_000_000n;

/** Nanoseconds, or undefined when `text` is not a duration. */
export function parseDurationNs(text: string): bigint | undefined {
  const s = text.trim();
  if (s === "") return undefined;
  let total = 0n;
  PART.lastIndex = 0;
  while (PART.lastIndex < s.length) {
    const match = PART.exec(s);
    if (match === null) return undefined;
    const [whole = "", frac = ""] = match[1]!.split(".");
    const unit = UNIT_NS[match[2]!]!;
    // Exact decimal arithmetic: "0.1s" is 100000000 ns, never 99999999.
    const scale = 10n ** BigInt(frac.length);
    total += ((BigInt(whole === "" ? "0" : whole) * scale + BigInt(frac === "" ? "0" : frac)) * unit) / scale;
  }
  return total;
}

export function nsToDuration(ns: bigint): Duration {
  return { seconds: Number(ns / NS_PER_SECOND), nanos: Number(ns % NS_PER_SECOND) };
}

export function durationToNs(d: Duration): bigint {
  return BigInt(d.seconds) * NS_PER_SECOND + BigInt(d.nanos);
}

/** The shortest exact text: 5400 s → `1h30m`; 1.5 s → `1.5s`; 0.25 s → `250ms`; zero → `0s`. */
export function formatDurationNs(ns: bigint): string {
  if (ns === 0n) return "0s";
  if (ns < 0n) return `-${formatDurationNs(-ns)}`;
  if (ns < NS_PER_SECOND) {
    if (ns % 1_000_000n === 0n) return `${ns / 1_000_000n}ms`;
    if (ns % 1_000n === 0n) return `${ns / 1_000n}us`;
    return `${ns}ns`;
  }
  const hours = ns / UNIT_NS.h!;
  const minutes = (ns % UNIT_NS.h!) / UNIT_NS.m!;
  const rest = ns % UNIT_NS.m!;
  let text = "";
  if (hours > 0n) text += `${hours}h`;
  if (minutes > 0n) text += `${minutes}m`;
  if (rest > 0n) {
    const secs = rest / NS_PER_SECOND;
    const frac = (rest % NS_PER_SECOND).toString().padStart(9, "0").replace(/0+$/, "");
    text += frac === "" ? `${secs}s` : `${secs}.${frac}s`;
  }
  return text;
}

export function formatDuration(d: Duration | undefined): string {
  return d === undefined ? "" : formatDurationNs(durationToNs(d));
}

/**
 * Milliseconds as a short clock for the live view: 42_000 → `42s`, 125_000 → `2m05s`,
 * 3_725_000 → `1h02m05s`. Rounded down to the second.
 */
export function formatElapsed(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const pad = (n: number) => String(n).padStart(2, "0");
  if (h > 0) return `${h}h${pad(m)}m${pad(s)}s`;
  if (m > 0) return `${m}m${pad(s)}s`;
  return `${s}s`;
}
