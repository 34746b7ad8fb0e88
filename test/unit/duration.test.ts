import { describe, expect, it } from "vitest";
import { formatGoDuration } from "../../src/domain/duration.js";

describe("duration: formatGoDuration matches Go's time.Duration.String()", () => {
  it.each([
    [0, "0s"],
    [250, "250ms"],
    [1, "1ms"],
    [999, "999ms"],
    [1.5, "1.5ms"],
    [0.001, "1µs"],
    [0.0015, "1.5µs"],
    [0.000_5, "500ns"],
    [0.000_001, "1ns"],
    [1000, "1s"],
    [1500, "1.5s"],
    [1001, "1.001s"],
    [30_000, "30s"],
    [59_999, "59.999s"],
    [60_000, "1m0s"],
    [90_000, "1m30s"],
    [300_000, "5m0s"],
    [1_800_000, "30m0s"],
    [3_600_000, "1h0m0s"],
    [5_400_000, "1h30m0s"],
    [3_601_000, "1h0m1s"],
    [93_784_005, "26h3m4.005s"],
    [-1500, "-1.5s"],
    [-250, "-250ms"],
    [-3_600_000, "-1h0m0s"],
  ])("%d ms → %s", (ms, text) => {
    expect(formatGoDuration(ms)).toBe(text);
  });

  it("keeps whole milliseconds exact beyond 2^53 nanoseconds (292 years is Go's maximum)", () => {
    // 9_223_372_036_854 ms is just under Go's maximum Duration (2^63-1 ns); Go prints 2562047h47m16.854s.
    expect(formatGoDuration(9_223_372_036_854)).toBe("2562047h47m16.854s");
  });

  it("rounds fractional milliseconds to whole nanoseconds", () => {
    expect(formatGoDuration(0.000_000_4)).toBe("0s");
    expect(formatGoDuration(1.000_000_6)).toBe("1.000001ms");
  });
});
