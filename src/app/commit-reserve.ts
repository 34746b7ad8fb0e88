/**
 * How much of its deadline a create must have left to be worth committing. A commit that starts
 * just before the deadline may finish after it: the run then exists while the client hears
 * DEADLINE_EXCEEDED, which is exactly what idempotent clients must retry and others duplicate.
 * So a create starts (and, right before its commit, goes on) only with at least the reserve left,
 * and otherwise answers UNAVAILABLE at once, having written nothing visible: retryable, and
 * within the deadline.
 *
 * The reserve follows the store: 1.5 times the slowest of the last 20 freezes (the store's whole
 * createRun: pre-commit chunks, commit, seal), never under 250 ms. On DynamoDB a freeze takes tens
 * of milliseconds, so the floor applies; on a saturated moto freezes take seconds and the reserve
 * grows with them, shedding creates that could not finish rather than letting them time out.
 *
 *   observe(40), observe(60) → reserveMs() = 250     observe(2_000) → reserveMs() = 3_000
 */
export const MIN_COMMIT_RESERVE_MS = 250;
const WINDOW = 20;
const FACTOR = 1.5;

export interface CommitReserve {
  reserveMs(): number;
  /** One freeze's duration, in ms. */
  observe(ms: number): void;
}

export function createCommitReserve(): CommitReserve {
  const recent: number[] = [];
  return {
    reserveMs: () => Math.max(MIN_COMMIT_RESERVE_MS, FACTOR * Math.max(0, ...recent)),
    observe(ms) {
      recent.push(ms);
      if (recent.length > WINDOW) recent.shift();
    },
  };
}
