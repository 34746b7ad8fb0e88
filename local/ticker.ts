/**
 * The local stand-in for the EventBridge schedule + 10-second loop: calls `tick()` every
 * `intervalMs`, never two at once. A tick that comes while the previous pass is still running is
 * skipped and logged as an overrun (dispatch passes are safe to overlap, but overlapping ticks would
 * only pile up work when the store is slow). A slow pass skips every tick until it ends: the first
 * skip is logged, the rest are counted into one line when the pass ends (foldRepeats).
 *
 * A pass that fails (the store is down) starts a failing streak: one log line, then ticks back
 * off (the interval doubling per failed pass, up to `maxBackoffMs`), and one line when a pass
 * succeeds again. Not a line per tick.
 */
import { foldRepeats } from "../src/app/observability.js";

export interface TickerOptions {
  intervalMs: number;
  tick: () => Promise<unknown>;
  log?: (line: string) => void;
  /** Also tick once right away (default false). */
  immediate?: boolean;
  now?: () => number;
  /** The longest pause between passes while they fail (default 30 s). */
  maxBackoffMs?: number;
}

export interface Ticker {
  /**
   * Ticks now unless a pass is running (then resolves when that one ends); once stopped, starts
   * no pass (a stopping stack must not start tasks it is about to abandon).
   */
  runNow(): Promise<void>;
  /** Stops the interval, waits for a running pass to finish, and logs the ticks it made. */
  stop(): Promise<void>;
  /** `backedOff`: ticks left out while passes were failing. */
  readonly stats: { ticks: number; skipped: number; failed: number; backedOff: number };
}

export function startTicker(options: TickerOptions): Ticker {
  const log = options.log ?? (() => {});
  const now = options.now ?? Date.now;
  const stats = { ticks: 0, skipped: 0, failed: 0, backedOff: 0 };
  const maxBackoffMs = options.maxBackoffMs ?? 30_000;
  let failing = 0;
  let notBefore = 0;
  let running: Promise<void> | undefined;
  let startedAt = 0;
  let stopped = false;
  let stopping: Promise<void> | undefined;
  const skips = foldRepeats(log, now);

  const runNow = (): Promise<void> => {
    if (running !== undefined) return running;
    if (stopped) return Promise.resolve();
    startedAt = now();
    stats.ticks += 1;
    running = options
      .tick()
      .then(
        () => {
          if (failing > 0) log(`ticker: dispatch passes succeed again after ${failing} failed pass(es)`);
          failing = 0;
          notBefore = 0;
        },
        (error: unknown) => {
          stats.failed += 1;
          failing += 1;
          const backoff = Math.min(maxBackoffMs, options.intervalMs * 2 ** Math.min(failing, 20));
          notBefore = now() + backoff;
          if (failing === 1) {
            log(
              `ticker: dispatch pass failed: ${error instanceof Error ? error.message : String(error)}; backing off (up to ${maxBackoffMs} ms between passes) until one succeeds`,
            );
          }
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
    if (failing > 0 && now() < notBefore) {
      stats.backedOff += 1;
      return;
    }
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
    stop() {
      stopping ??= (async () => {
        stopped = true;
        clearInterval(timer);
        if (running !== undefined) await running;
        log(
          `ticker: stopped: ${stats.ticks} tick(s) run, ${stats.skipped} skipped behind a running pass, ${stats.failed} failed`,
        );
      })();
      return stopping;
    },
  };
}
