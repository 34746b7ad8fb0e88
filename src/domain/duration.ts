/**
 * Durations printed the way Go's `time.Duration.String()` prints them, because the reference
 * implementation puts Go durations into user-visible messages (for example
 * `target <id> blocked by rack conflict for 1h0m0s`) and clients may match on those texts.
 *
 * Rules (Go's, restated for milliseconds in, text out):
 * - Zero is `0s`.
 * - Below one second the largest unit that keeps the integer part non-zero is used, with a
 *   fraction: `250ms`, `1.5ms`, `1µs`, `500ns`.
 * - From one second up: `[<h>h][<m>m]<s>[.<frac>]s`. Hours appear only when non-zero; minutes
 *   appear whenever hours do, even as `0m`: `1h0m0s`, `5m0s`, `30s`, `1.5s`, `26h3m4.005s`.
 * - Fractions drop trailing zeros; negative durations get a leading `-`.
 *
 * Worked examples: 0 → `0s`; 250 → `250ms`; 1500 → `1.5s`; 30_000 → `30s`; 300_000 → `5m0s`;
 * 3_600_000 → `1h0m0s`; 5_400_000 → `1h30m0s`; 0.001 → `1µs`; -1500 → `-1.5s`.
 *
 * Input is milliseconds and may be fractional; it is rounded to whole nanoseconds (Go's
 * resolution). It must be finite.
 */
export function formatGoDuration(ms: number): string {
  // Whole milliseconds convert exactly through BigInt, so long timeouts do not lose precision.
  const ns = Number.isInteger(ms) ? BigInt(ms) * 1_000_000n : BigInt(Math.round(ms * 1e6));
  if (ns === 0n) return "0s";
  const sign = ns < 0n ? "-" : "";
  const u = ns < 0n ? -ns : ns;

  if (u < 1_000_000_000n) {
    const [prec, unit] = u < 1_000n ? [0, "ns"] : u < 1_000_000n ? [3, "µs"] : [6, "ms"];
    const [whole, frac] = splitFraction(u, prec);
    return `${sign}${whole}${frac}${unit}`;
  }

  const [totalSeconds, frac] = splitFraction(u, 9);
  const seconds = totalSeconds % 60n;
  const totalMinutes = totalSeconds / 60n;
  let text = `${seconds}${frac}s`;
  if (totalMinutes > 0n) {
    text = `${totalMinutes % 60n}m${text}`;
    const hours = totalMinutes / 60n;
    if (hours > 0n) text = `${hours}h${text}`;
  }
  return `${sign}${text}`;
}

/**
 * Splits `v` into its integer part and `.digits` for the lowest `prec` decimal places, trailing
 * zeros dropped and no dot when the fraction is zero (Go's `fmtFrac`): (1_500_000n, 6) → [1n, ".5"].
 */
function splitFraction(v: bigint, prec: number): [bigint, string] {
  const divisor = 10n ** BigInt(prec);
  const fraction = v % divisor;
  if (fraction === 0n) return [v / divisor, ""];
  const digits = fraction.toString().padStart(prec, "0").replace(/0+$/, "");
  return [v / divisor, `.${digits}`];
}
