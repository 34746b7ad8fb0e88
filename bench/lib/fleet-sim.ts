/**
 * One fleet scenario for bench/fleet.ts: R runs of N racks at concurrency C, each flash T ms,
 * driven by the product's own dispatcher (src/app/dispatcher.ts) and stream evaluator
 * (src/app/stream-evaluator.ts) over a RunStore, with the outcome recorded through the port the
 * outcome recorder uses (`recordOutcome` with the target's phase) and the run woken as deployed:
 * directly (an asynchronous Invoke) and through the stream. The child task between its
 * StartExecution and its outcome is a timer of T ms; its own requests, invocations, transitions
 * and IoT messages are the per-rack figures bench:rollout measured, spread over its flash.
 *
 * The same function runs on virtual time over the latency-injected in-memory store, and on real
 * time over the DynamoDB adapter on moto (the comparison the simulation is checked against).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { createDispatcher } from "../../src/app/dispatcher.js";
import type { Metrics } from "../../src/app/observability.js";
import type { ChildTaskRequest, Clock, RunStore } from "../../src/app/ports.js";
import { createStreamEvaluator } from "../../src/app/stream-evaluator.js";
import { isTerminalRun } from "../../src/domain/model.js";
import { type RequestKind, type StoreCall, withLatency } from "./latency-store.js";
import { runWithTargets } from "./run-builders.js";
import { drawLatency, type Latency } from "./virtual-time.js";

export interface Scenario {
  runs: number;
  racks: number;
  concurrency: number;
  flashMs: number;
  tickMs: number;
}

export interface Environment {
  /** The store under test: its calls answer after `latency` (virtual) or the service's own time. */
  store: RunStore;
  clock: Clock;
  /** Runs the clock until `done` (virtual time), or waits for it (real time). */
  runUntil(done: () => boolean): Promise<void>;
  /** Latency of the non-DynamoDB hops. */
  invoke: Latency;
  startExecution: Latency;
  /** From an outcome's commit to the stream evaluator's call (the shard's polling). */
  stream: Latency;
  random: () => number;
  /** StartExecution token bucket (burst, refill per second); undefined: no throttling. */
  startBucket?: { burst: number; perSecond: number };
  /** The latency added to each store call; absent: the store is real and answers in its own time. */
  latency?: Record<RequestKind, Latency>;
  serial?: boolean;
}

export interface ScenarioResult {
  wallMs: number;
  /** Per run: from the start to its finish. */
  makespans: number[];
  /** Per freed slot: from the outcome's commit to the next submission of its run. */
  refillLags: number[];
  passMs: number[];
  tickMs: number[];
  /** Store requests made within each tick (its passes included). */
  tickRequests: number[];
  calls: StoreCall[];
  submits: number[];
  /** Flash intervals [start, end] (ms from the start) per child task. */
  flashes: [number, number][];
  /** Dispatcher invocations: direct wake-ups, stream evaluator calls, ticks. */
  invocations: number[];
  throttledStarts: number;
}

const scope = new AsyncLocalStorage<string>();

function idOf(prefix: string, n: number): string {
  return `${prefix}-0000-4000-8000-${String(n).padStart(12, "0")}`;
}

export async function runScenario(s: Scenario, env: Environment): Promise<ScenarioResult> {
  const start0 = env.clock.now();
  const calls: StoreCall[] = [];
  const store = withLatency(env.store, {
    clock: env.clock,
    ...(env.latency === undefined ? {} : { latency: env.latency }),
    random: env.random,
    ...(env.serial ? { serial: true } : {}),
    scope: () => scope.getStore(),
    onCall: (c) => {
      calls.push(c);
      // A finish written by any pass (a tick's included) ends the run's makespan.
      if (c.saved !== undefined && c.runId !== undefined) observe({ runId: c.runId, status: c.saved });
    },
  });
  const runIds = Array.from({ length: s.runs }, (_, i) => idOf("f1ee7000", i + 1));
  for (const id of runIds) {
    const { run, targets } = runWithTargets(id, {
      phaseSizes: [s.racks],
      maxConcurrent: s.concurrency,
      createdAt: start0,
    });
    await env.store.createRun(run, targets);
  }
  const t0 = env.clock.now();
  const sleep = (ms: number) => new Promise<void>((resolve) => env.clock.after(ms, resolve));
  const result: ScenarioResult = {
    wallMs: 0,
    makespans: [],
    refillLags: [],
    passMs: [],
    tickMs: [],
    tickRequests: [],
    calls,
    submits: [],
    flashes: [],
    invocations: [],
    throttledStarts: 0,
  };
  const finished = new Map<string, number>();
  function observe(r: { runId: string; status?: string }): void {
    if (r.status !== undefined && isTerminalRun(r.status as never) && !finished.has(r.runId)) {
      finished.set(r.runId, env.clock.now() - t0);
    }
  }
  const lastOutcome = new Map<string, number[]>();
  const metrics: Metrics = {
    add: (name, value) => {
      if (name === "DispatchLatencyMs") result.passMs.push(value);
      if (name === "TickOverrunMs") result.tickMs.push(value);
    },
    flush: () => undefined,
  };
  // The StartExecution bucket: tokens refill continuously; a call with none reserves the next one
  // (the balance goes negative) and waits for it, so callers are served in arrival order.
  const bucket = env.startBucket;
  let tokens = bucket?.burst ?? 0;
  let tokensAt = t0;
  const takeStart = async () => {
    if (bucket === undefined) return;
    const now = env.clock.now();
    tokens = Math.min(bucket.burst, tokens + ((now - tokensAt) / 1000) * bucket.perSecond);
    tokensAt = now;
    tokens -= 1;
    if (tokens >= 0) return;
    result.throttledStarts += 1;
    await sleep((-tokens / bucket.perSecond) * 1000);
  };

  let dispatcher: ReturnType<typeof createDispatcher>;
  let stopped = false;
  const invokePass = async (runId: string) => {
    if (stopped) return;
    result.invocations.push(env.clock.now() - t0);
    observe(await dispatcher.dispatchRun(runId));
  };
  const evaluator = createStreamEvaluator({ process: invokePass });
  const childTask = async (request: ChildTaskRequest) => {
    const started = env.clock.now();
    await sleep(s.flashMs);
    if (stopped) return;
    result.flashes.push([started - t0, env.clock.now() - t0]);
    await store.recordOutcome(
      request.runId,
      request.targetId,
      "COMPLETED",
      "done",
      env.clock.now(),
      request.phaseIndex,
    );
    const committed = env.clock.now();
    const pending = lastOutcome.get(request.runId) ?? [];
    pending.push(committed);
    lastOutcome.set(request.runId, pending);
    // As deployed: the outcome recorder's direct wake-up, and the stream's record of the target.
    // (A wake-up still on its way when the scenario ends is dropped.)
    void sleep(drawLatency(env.invoke, env.random))
      .then(() => invokePass(request.runId))
      .catch(() => undefined);
    void sleep(drawLatency(env.stream, env.random)).then(() =>
      stopped
        ? undefined
        : evaluator.handle([
            {
              kind: "target",
              runId: request.runId,
              eventName: "MODIFY",
              oldStatus: "SUBMITTED",
              newStatus: "COMPLETED",
            },
          ]),
    );
  };
  dispatcher = createDispatcher({
    runs: store,
    clock: env.clock,
    metrics,
    submitter: {
      async submit(request) {
        await takeStart();
        await sleep(drawLatency(env.startExecution, env.random));
        const now = env.clock.now();
        result.submits.push(now - t0);
        const waiting = lastOutcome.get(request.runId);
        const freed = waiting?.shift();
        if (freed !== undefined) result.refillLags.push(now - freed);
        void childTask(request).catch(() => undefined);
        return { kind: "submitted", taskId: `task-${request.targetId}` };
      },
      async cancel() {},
    },
  });
  // The ticker: a tick, then its interval (infra/constructs/ticker.ts waits after each pass).
  const ticker = (async () => {
    while (!stopped) {
      const before = calls.length;
      result.invocations.push(env.clock.now() - t0);
      await scope.run("tick", () => dispatcher.tick());
      result.tickRequests.push(calls.slice(before).filter((c) => c.scope === "tick").length);
      if (finished.size < s.runs) await sleep(s.tickMs);
    }
  })();
  await env.runUntil(() => finished.size >= s.runs);
  stopped = true;
  result.wallMs = env.clock.now() - t0;
  result.makespans = runIds.map((id) => finished.get(id) ?? Number.NaN);
  void ticker.catch(() => undefined);
  return result;
}
