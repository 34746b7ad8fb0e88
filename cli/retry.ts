/**
 * Retrying a call the service refused for now: RESOURCE_EXHAUSTED (its admission limits were full;
 * the call was not started) and UNAVAILABLE (not reachable, or its store was not). Only calls that
 * are safe to repeat use it: `run create` sends the same client request id on every attempt, so a
 * retry of a create that did happen answers that run instead of making a second.
 *
 * Backoff: full jitter, attempt n (from 1) waits a uniform random time in [0, min(cap, base · 2^(n-1))),
 * so many clients refused at the same moment do not come back at the same moment. With the
 * defaults (6 attempts, 250 ms, cap 4 s) the waits are at most 0.25, 0.5, 1, 2 and 4 s: under 8 s
 * in all, then the last error is reported as it is.
 */
import { status as GrpcStatus } from "@grpc/grpc-js";
import { isServiceError, statusName } from "./errors.js";

export interface RetryPolicy {
  /** Calls in all, the first included. */
  attempts: number;
  baseMs: number;
  capMs: number;
  /** A float in [0, 1): Math.random, or a seeded generator in tests. */
  random: () => number;
  sleep: (ms: number) => Promise<void>;
  /** Told before each wait, e.g. to print "retrying in 0.4 s". */
  onRetry?: (info: { attempt: number; attempts: number; delayMs: number; status: string }) => void;
}

export const DEFAULT_RETRY = { attempts: 6, baseMs: 250, capMs: 4_000 } as const;

export const RETRYABLE: ReadonlySet<GrpcStatus> = new Set([
  GrpcStatus.RESOURCE_EXHAUSTED,
  GrpcStatus.UNAVAILABLE,
]);

/** The wait before retry `attempt` (1 = the first retry). */
export function backoffMs(policy: Pick<RetryPolicy, "baseMs" | "capMs" | "random">, attempt: number): number {
  return policy.random() * Math.min(policy.capMs, policy.baseMs * 2 ** (attempt - 1));
}

export async function withRetries<T>(call: () => Promise<T>, policy: RetryPolicy): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (!isServiceError(error) || !RETRYABLE.has(error.code) || attempt >= policy.attempts) throw error;
      const delayMs = backoffMs(policy, attempt);
      policy.onRetry?.({ attempt, attempts: policy.attempts, delayMs, status: statusName(error.code) });
      await policy.sleep(delayMs);
    }
  }
}
