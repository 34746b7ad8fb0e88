/**
 * Whether the data store can be reached, as one visible state: a cheap probe (StoreProbe, e.g.
 * DescribeTable on the runs table) every `intervalMs` while it answers; once one fails, the state is
 * "unreachable" and the probe retries with backoff (`retry.firstMs` doubling up to `retry.maxMs`)
 * until one answers. Store adapters report every failure they see (`suspect()`), so an outage is
 * noticed at the first failed call, not at the next interval. One log line per change of state,
 * never one per attempt:
 *
 *   warn data store unreachable; health NOT_SERVING error=connect ECONNREFUSED 127.0.0.1:5000
 *   info data store reachable again; health SERVING downForMs=4210 failedProbes=6
 *
 * Listeners (the gRPC health service: NOT_SERVING while unreachable) hear every change.
 * `failFastWhileUnreachable` answers API calls UNAVAILABLE at once meanwhile, instead of letting
 * each one wait out the SDK's retries against a store that is known to be down.
 */
import { StoreUnavailableError } from "../domain/errors.js";
import type { FlowApi } from "./api.js";
import { errorText, type Logger } from "./observability.js";
import type { Clock, StoreProbe } from "./ports.js";

export interface StoreHealthOptions {
  probe: StoreProbe;
  logger: Logger;
  /** Between probes while the store answers (default 5 s). */
  intervalMs?: number;
  /** Backoff between probes while it does not (default 250 ms doubling up to 5 s). */
  retry?: { firstMs: number; maxMs: number };
  /** Times the outage and runs the probe timer. */
  clock: Clock;
}

export interface StoreHealth {
  /** False from the first failed probe until one succeeds again. */
  readonly reachable: boolean;
  /** `listener(reachable)` on every change of state. */
  onChange(listener: (reachable: boolean) => void): void;
  /**
   * A store call just failed as unavailable: while the store counts as reachable, probe now (or
   * join the probe running); once it is known unreachable, the backoff decides.
   */
  suspect(): void;
  /**
   * The store is known to be down (the local stack saw its moto exit): unreachable now, then
   * probed with backoff until it answers.
   */
  down(reason: string): void;
  /** Starts probing (the first probe at once). */
  start(): void;
  /** Stops probing; resolves once a running probe has ended. */
  stop(): Promise<void>;
}

export function createStoreHealth(options: StoreHealthOptions): StoreHealth {
  const { probe, logger, clock } = options;
  const intervalMs = options.intervalMs ?? 5_000;
  const retry = options.retry ?? { firstMs: 250, maxMs: 5_000 };
  const listeners: ((reachable: boolean) => void)[] = [];
  let reachable = true;
  let downSince = 0;
  let failedProbes = 0;
  let cancelTimer = () => {};
  let running: Promise<void> | undefined;
  let stopped = true;

  const change = (next: boolean, error?: unknown) => {
    if (next === reachable) return;
    reachable = next;
    if (!next) {
      downSince = clock.now();
      logger.warn("data store unreachable; health NOT_SERVING", { error: errorText(error) });
    } else {
      logger.info("data store reachable again; health SERVING", {
        downForMs: clock.now() - downSince,
        failedProbes,
      });
      failedProbes = 0;
    }
    for (const listener of listeners) listener(next);
  };

  const schedule = (ms: number) => {
    if (stopped) return;
    cancelTimer();
    cancelTimer = clock.after(ms, () => void probeNow());
  };

  const probeNow = (): Promise<void> => {
    running ??= probe
      .probe()
      .then(
        () => change(true),
        (error: unknown) => {
          failedProbes += 1;
          change(false, error);
        },
      )
      .then(() => {
        running = undefined;
        // From the state as it is now: `down()` may have come while this probe was answering.
        schedule(
          reachable
            ? intervalMs
            : Math.min(retry.maxMs, retry.firstMs * 2 ** Math.min(Math.max(0, failedProbes - 1), 30)),
        );
      });
    return running;
  };

  return {
    get reachable() {
      return reachable;
    },
    onChange(listener) {
      listeners.push(listener);
    },
    suspect() {
      if (!stopped && reachable) void probeNow();
    },
    down(reason) {
      if (stopped) return;
      change(false, reason);
      // A probe answering now reschedules itself from this state.
      if (running === undefined) schedule(retry.firstMs);
    },
    start() {
      if (!stopped) return;
      stopped = false;
      void probeNow();
    },
    async stop() {
      stopped = true;
      cancelTimer();
      await running;
    },
  };
}

/**
 * `api`, answering every call but `version` with StoreUnavailableError (UNAVAILABLE) while
 * `health` says the store is unreachable: the caller learns at once what a call would learn after
 * the SDK's retries, and the dead store is not sent more work.
 */
export function failFastWhileUnreachable(api: FlowApi, health: Pick<StoreHealth, "reachable">): FlowApi {
  const guarded = {} as Record<string, unknown>;
  for (const [name, method] of Object.entries(api) as [string, (...args: unknown[]) => unknown][]) {
    guarded[name] =
      name === "version"
        ? method
        : async (...args: unknown[]) => {
            if (!health.reachable) throw new StoreUnavailableError("unreachable");
            return method(...args);
          };
  }
  return guarded as unknown as FlowApi;
}
