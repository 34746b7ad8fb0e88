/**
 * The CLI's durations (cli/durations.ts): parsing, printing and a protobuf Duration in nanoseconds.
 */
import { describe, expect, it } from "vitest";
import { durationToNs, formatDurationNs, parseDurationNs } from "../../cli/durations.js";

describe("durations", () => {
  it.each([
    ["30s", 30_000_000_000n],
    ["1h30m", 5_400_000_000_000n],
    ["1.5s", 1_500_000_000n],
    ["0.1s", 100_000_000n],
    ["250ms", 250_000_000n],
    ["1h0m0s", 3_600_000_000_000n],
    ["2us", 2_000n],
  ])("%s → %i ns", (text, ns) => {
    expect(parseDurationNs(text)).toBe(ns);
  });

  it.each(["", "30", "s", "1 h", "1d", "-5s", "1h 30m"])("%j is not a duration", (text) => {
    expect(parseDurationNs(text)).toBeUndefined();
  });

  it.each([
    [3_600_000_000_000n, "1h"],
    [5_400_000_000_000n, "1h30m"],
    [3_605_000_000_000n, "1h5s"],
    [1_500_000_000n, "1.5s"],
    [250_000_000n, "250ms"],
    [0n, "0s"],
  ])("%i ns prints as %s", (ns, text) => {
    expect(formatDurationNs(ns)).toBe(text);
    expect(parseDurationNs(text)).toBe(ns);
  });

  it("a Duration message converts to nanoseconds", () => {
    expect(durationToNs({ seconds: 2, nanos: 5 })).toBe(2_000_000_005n);
  });
});
