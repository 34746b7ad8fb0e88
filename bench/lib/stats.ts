/**
 * Order statistics for benchmark samples. Percentiles use the nearest rank: the p-th percentile of
 * n sorted samples is sample ⌈p/100 · n⌉ (1-based), so it is always a measured value; with n = 50
 * the p99 is the largest sample, which the tables say by printing n next to it.
 *
 *   percentile([5, 1, 3, 2, 4], 50) → 3 · percentile([5, 1, 3, 2, 4], 99) → 5
 */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

export function median(samples: readonly number[]): number {
  return percentile(samples, 50);
}

export interface Summary {
  n: number;
  median: number;
  p99: number;
  min: number;
  max: number;
}

export function summarize(samples: readonly number[]): Summary {
  return {
    n: samples.length,
    median: median(samples),
    p99: percentile(samples, 99),
    min: percentile(samples, 0),
    max: percentile(samples, 100),
  };
}

/** Milliseconds since `start` (a `process.hrtime.bigint()` reading), to the microsecond. */
export function elapsedMs(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}
