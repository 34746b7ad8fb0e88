/**
 * What AWS does for an event whose handler failed because the store was down, played locally:
 * Lambda retries an asynchronous invocation (the EventBridge execution-status rule), and SQS
 * delivers a batch's failed reports again, instead of dropping them. `fn` is called again, with backoff
 * (250 ms doubling up to 5 s), for as long as it fails with StoreUnavailableError, up to
 * `maxMs` (default 6 minutes, about Lambda's two retries); any other error, or the last one,
 * is thrown.
 */
import { StoreUnavailableError } from "../src/domain/errors.js";

export async function retryWhileUnavailable<T>(fn: () => Promise<T>, maxMs = 6 * 60_000): Promise<T> {
  const deadline = Date.now() + maxMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if (!(error instanceof StoreUnavailableError) || Date.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, 250 * 2 ** Math.min(attempt, 5))));
    }
  }
}
