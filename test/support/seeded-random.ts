/**
 * Randomness for tests that draw delays, orders or batch sizes: every draw of a test comes from ONE
 * seeded PRNG (mulberry32), and a failing test prints its seed, so the same draws can be replayed:
 *
 *   FLOW_TEST_SEED=1234567 npx vitest run --project integration test/integration/dispatcher-races.test.ts
 *
 * Without FLOW_TEST_SEED every call draws a fresh seed, so runs keep exploring new interleavings.
 * (fast-check prints its own seed and path on failure; its runs need nothing from here.)
 */
import { randomInt } from "node:crypto";
import { relative } from "node:path";
import { onTestFailed } from "vitest";

export const TEST_SEED_ENV = "FLOW_TEST_SEED";

export interface SeededRandom {
  readonly seed: number;
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [0, maxExclusive). */
  int(maxExclusive: number): number;
  /** A shuffled copy (Fisher–Yates). */
  shuffle<T>(items: readonly T[]): T[];
}

/** mulberry32: 32 bits of state, a full period of 2^32, plenty for test jitter. */
export function seededRandom(seed: number): SeededRandom {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const int = (maxExclusive: number): number => Math.floor(next() * maxExclusive);
  return {
    seed,
    next,
    int,
    shuffle<T>(items: readonly T[]): T[] {
      const out = [...items];
      for (let i = out.length - 1; i > 0; i--) {
        const j = int(i + 1);
        [out[i], out[j]] = [out[j] as T, out[i] as T];
      }
      return out;
    },
  };
}

/** The seed FLOW_TEST_SEED names (a non-negative integer), else a fresh one. */
export function testSeed(env: Record<string, string | undefined> = process.env): number {
  const text = env[TEST_SEED_ENV]?.trim();
  if (text === undefined || text === "") return randomInt(2 ** 31);
  if (!/^\d+$/.test(text) || Number(text) > 0xffff_ffff) {
    throw new Error(`${TEST_SEED_ENV} must be an integer from 0 to 4294967295 (got ${text})`);
  }
  return Number(text);
}

/**
 * The PRNG for the running test (call it inside the test): seeded from FLOW_TEST_SEED or fresh, and
 * the seed printed with the replay command if the test fails.
 */
export function testRandom(): SeededRandom {
  const random = seededRandom(testSeed());
  onTestFailed(({ task }) => {
    console.error(
      `"${task.name}" failed with random seed ${random.seed}; replay: ${TEST_SEED_ENV}=${random.seed} npx vitest run ${relative(process.cwd(), task.file.filepath)}`,
    );
  });
  return random;
}
