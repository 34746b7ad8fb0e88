/**
 * The local stand-in for the EventBridge schedule + 10-second loop: calls `tick()` every
 * `intervalMs`, never two at once. A tick that comes while the previous pass is still running is
 * skipped and logged as an overrun (dispatch passes are safe to overlap, but overlapping ticks would
 * only pile up work when the store is slow). A slow pass skips every tick until it ends: the first
 * skip is logged, the rest are counted into one line when the pass ends (foldRepeats).
 */
import { foldRepeats } from "../src/app/observability.js";

export interface TickerOptions {
  intervalMs: number;
  tick: () => Promise<unknown>;
  log?: (line: string) => void;
  /** Also tick once right away (default false). */
  immediate?: boolean;
  now?: () => number;
}

export interface Ticker {
  /** Ticks now unless a pass is running (then resolves when that one ends). */
  runNow(): Promise<void>;
  /** Stops the interval and waits for a running pass to finish. */
  stop(): Promise<void>;
  readonly stats: { ticks: number; skipped: number; failed: number };
}

export function startTicker(options: TickerOptions): Ticker {
  const log = options.log ?? (() => {});
  const now = options.now ?? Date.now;
  const stats = { ticks: 0, skipped: 0, failed: 0 };
  let running: Promise<void> | undefined;
  let startedAt = 0;
  let stopped = false;
  const skips = foldRepeats(log, now);

  const runNow = (): Promise<void> => {
    if (running !== undefined) return running;
    startedAt = now();
    stats.ticks += 1;
    running = options
      .tick()
      .then(
        () => undefined,
        (error: unknown) => {
          stats.failed += 1;
          log(`ticker: dispatch pass failed: ${error instanceof Error ? error.message : String(error)}`);
        },
      )
      .finally(() => {
        running = undefined;
        skips.cleared();
      });
    return running;
  };

  const timer = setInterval(() => {
    if (stopped) return;
    if (running !== undefined) {
      stats.skipped += 1;
      skips.occurred(`ticker: previous pass still running after ${now() - startedAt} ms; tick skipped`);
      return;
    }
    void runNow();
  }, options.intervalMs);
  timer.unref?.();
  if (options.immediate === true) void runNow();

  return {
    runNow,
    stats,
    async stop() {
      stopped = true;
      clearInterval(timer);
      if (running !== undefined) await running;
    },
  };
}
