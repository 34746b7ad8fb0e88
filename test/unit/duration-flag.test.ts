import { describe, expect, it } from "vitest";
import { checkDuration, formatDuration } from "../../local/duration-flag.js";

describe("duration flag: checkDuration", () => {
  it.each([
    ["200ms", 200],
    ["2s", 2000],
    ["10s", 10_000],
    ["1m", 60_000],
    ["1h", 3_600_000],
    ["1.5s", 1500],
    ["0.1s", 100],
    [" 10s ", 10_000],
  ])("%s → %i ms", (text, ms) => {
    expect(checkDuration(text)).toEqual({ value: ms });
  });

  it.each([
    ["10", '"10" is not a duration: write a number and a unit (ms, s, m, h), e.g. 200ms, 2s, 10s, 1m'],
    ["", '"" is not a duration: write a number and a unit (ms, s, m, h), e.g. 200ms, 2s, 10s, 1m'],
    ["10 s", '"10 s" is not a duration: write a number and a unit (ms, s, m, h), e.g. 200ms, 2s, 10s, 1m'],
    ["-1s", '"-1s" is not a duration: write a number and a unit (ms, s, m, h), e.g. 200ms, 2s, 10s, 1m'],
    ["1m30s", '"1m30s" is not a duration: write a number and a unit (ms, s, m, h), e.g. 200ms, 2s, 10s, 1m'],
    ["10S", '"10S" is not a duration: write a number and a unit (ms, s, m, h), e.g. 200ms, 2s, 10s, 1m'],
    ["1.5ms", '"1.5ms" is not a whole number of milliseconds'],
    ["0s", '"0s" must be greater than zero'],
    ["0ms", '"0ms" must be greater than zero'],
    ["99999999999999999h", '"99999999999999999h" is too large'],
  ])("%s is refused: %s", (text, message) => {
    expect(checkDuration(text)).toEqual({ problem: message });
  });
});

describe("duration flag: formatDuration", () => {
  it.each([
    [0, "0ms"],
    [200, "200ms"],
    [1500, "1500ms"],
    [10_000, "10s"],
    [90_000, "90s"],
    [60_000, "1m"],
    [7_200_000, "2h"],
  ])("%i → %s", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it("round-trips through checkDuration", () => {
    for (const ms of [1, 200, 1500, 10_000, 60_000, 3_600_000])
      expect(checkDuration(formatDuration(ms))).toEqual({ value: ms });
  });
});
