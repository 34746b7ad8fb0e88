import { describe, expect, it } from "vitest";
import { seededRandom, testSeed } from "../support/seeded-random.js";

describe("test support: seeded randomness", () => {
  it("the same seed gives the same draws; another seed other draws", () => {
    const draws = (seed: number) => {
      const r = seededRandom(seed);
      return Array.from({ length: 8 }, () => r.int(1000));
    };
    expect(draws(42)).toEqual(draws(42));
    expect(draws(43)).not.toEqual(draws(42));
    const r = seededRandom(7);
    for (let i = 0; i < 1000; i++) {
      const x = r.next();
      expect(x >= 0 && x < 1).toBe(true);
    }
  });

  it("shuffle is a permutation, reproducible from the seed", () => {
    const items = Array.from({ length: 20 }, (_, i) => i);
    const a = seededRandom(9).shuffle(items);
    expect(a).toEqual(seededRandom(9).shuffle(items));
    expect([...a].sort((x, y) => x - y)).toEqual(items);
    expect(a).not.toEqual(items);
  });

  it("FLOW_TEST_SEED names the seed; garbage is refused with the variable and the rule", () => {
    expect(testSeed({ FLOW_TEST_SEED: " 1234 " })).toBe(1234);
    expect(Number.isInteger(testSeed({}))).toBe(true);
    expect(() => testSeed({ FLOW_TEST_SEED: "-1" })).toThrowError(
      "FLOW_TEST_SEED must be an integer from 0 to 4294967295 (got -1)",
    );
    expect(() => testSeed({ FLOW_TEST_SEED: "4294967296" })).toThrowError(
      "FLOW_TEST_SEED must be an integer from 0 to 4294967295 (got 4294967296)",
    );
  });
});
