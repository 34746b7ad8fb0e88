/**
 * Part 1 of the dispatcher benchmark (bench/dispatch.ts): the makespan of one run against its ideal
 * ⌈N/C⌉·T for each way a freed slot is refilled (tick only, stream wake-ups, direct wake-ups), with
 * the refill lag, the refill path's round trips and the store's calls and capacity per target.
 */

import { DEMO_RACK_SHAPE, seededUuid } from "../../local/demo-fleet.js";
import { startStreamPoller } from "../../local/stream-poller.js";
import { startTicker } from "../../local/ticker.js";
import { DynamoCommandSetStore } from "../../src/adapters/dynamodb/command-set-store.js";
import { streamBatchHandler } from "../../src/adapters/dynamodb/stream-records.js";
import { systemClock } from "../../src/adapters/system-clock.js";
import { createDispatcher, inProcessWaker } from "../../src/app/dispatcher.js";
import { silentLogger } from "../../src/app/observability.js";
import { createStreamEvaluator } from "../../src/app/stream-evaluator.js";
import type { Run, Target } from "../../src/domain/model.js";
import { environment, uuidFor } from "./dispatch-env.js";
import { productSubmitter } from "./product-submitter.js";
import { runWithTargets } from "./run-builders.js";
import { median } from "./stats.js";
import { currentScope, roundTrips, tableOf } from "./work-scope.js";

export interface MakespanOptions {
  targets: number;
  concurrency: number;
  taskMs: number;
  tickMs: number;
}

/** Runs the part and prints its figures. */
export async function makespanPart(o: MakespanOptions): Promise<void> {
  const ideal = Math.ceil(o.targets / o.concurrency) * o.taskMs;
  console.log(
    `\n1. makespan: ${o.targets} targets, concurrency ${o.concurrency}, task ${o.taskMs} ms, tick ${o.tickMs} ms; ideal ⌈N/C⌉·T = ${ideal} ms`,
  );
  // One after the other: on a small machine two moto servers at once slow each other down.
  const direct = await makespan(o, "direct");
  const stream = await makespan(o, "stream");
  const tickOnly = await makespan(o, "tick");
  const efficiency = (r: MakespanResult) => ideal / r.ms;
  const describe = (p: number[]) => {
    const sorted = [...p].sort((a, b) => a - b);
    const mean = p.reduce((a, b) => a + b, 0) / Math.max(1, p.length);
    return `${p.length} passes outside ticks, mean ${mean.toFixed(0)} ms, p90 ${(sorted[Math.floor(sorted.length * 0.9)] ?? 0).toFixed(0)} ms`;
  };
  const med = (xs: number[]) => median(xs).toFixed(0);
  for (const [label, r] of [
    ["tick only", tickOnly],
    ["tick + stream wake-ups", stream],
    ["tick + stream + direct wake-ups", direct],
  ] as const) {
    console.log(
      `   ${`${label}:`.padEnd(34)} ${r.ms} ms (${r.status}), efficiency ${efficiency(r).toFixed(3)}, ${(efficiency(r) / efficiency(tickOnly)).toFixed(2)}× tick only`,
    );
    if (r === tickOnly) continue;
    console.log(
      `      start → first StartExecution ${r.firstStartMs.toFixed(0)} ms (the create ${r.createMs.toFixed(0)}, then the first pass); last task end → run finished ${r.tailMs.toFixed(0)} ms`,
    );
    console.log(`      ${describe(r.passes)}`);
    const { lag } = r;
    console.log(
      `      refill lag per freed slot, medians: ${med(lag.total)} ms = task end → outcome committed ${med(lag.recording)} + → next submit ${med(lag.refill)}`,
    );
    if (r.refills.length > 0) console.log(describeRefills(r.refills));
  }
  const calls = (c: Record<string, number>) =>
    Object.entries(c)
      .sort((a, b) => b[1] - a[1])
      .map(([op, n]) => `${op} ${n}`)
      .join(", ");
  for (const [label, r] of [
    ["tick only", tickOnly],
    ["stream", stream],
    ["stream + direct", direct],
  ] as const) {
    const total = Object.values(r.calls).reduce((a, b) => a + b, 0);
    console.log(
      `   DynamoDB during the run, ${label}: ${calls(r.calls)} (${(total / o.targets).toFixed(2)} per target); estimated ${(r.rcu / o.targets).toFixed(2)} RCU + ${(r.wcu / o.targets).toFixed(2)} WCU per target; a request in flight ${(r.busyMs / 1000).toFixed(1)} s of ${(r.ms / 1000).toFixed(1)} s (${((100 * r.busyMs) / r.ms).toFixed(0)} %)`,
    );
  }
}

interface MakespanResult {
  ms: number;
  status: string;
  passes: number[];
  /** Per freed slot: the task's end → its outcome committed → the next submit (see refillLag). */
  lag: { recording: number[]; refill: number[]; total: number[] };
  /** Per refill (a task's end whose wake-up led to a submission): its sequential round trips. */
  refills: { op: string; table: string }[][][];
  /** DynamoDB calls during the run, by operation (the stream poller's are not on this client). */
  calls: Record<string, number>;
  /** Time within the makespan with at least one of those calls in flight (moto serves one at a time). */
  busyMs: number;
  /** The makespan's ends: start → the first StartExecution (the create and the first pass), the last task's end → the run finished. */
  firstStartMs: number;
  tailMs: number;
  /** Of firstStartMs, the create's (its 100 targets, a rack's 39 components each). */
  createMs: number;
  /** Capacity the product's calls used, estimated by DynamoDB's sizing rules (moto reports none). */
  rcu: number;
  wcu: number;
}

/**
 * `tick`: the ticker alone. `stream`: plus the targets/runs stream wake-ups (the local poller).
 * `direct`: plus the wake-up the outcome recorder sends right after recording (as deployed: the
 * local stack's in-process waker, the dispatcher Lambda's async invocation on AWS).
 */
type WakeMode = "tick" | "stream" | "direct";

async function makespan(o: MakespanOptions, mode: WakeMode): Promise<MakespanResult> {
  // Every call estimated from its items: moto's own figures are placeholders.
  const env = await environment(mode, { reportedFigures: "ignore" });
  const { stores } = env;
  const id = uuidFor({ tick: "b1000000", stream: "b2000000", direct: "b3000000" }[mode], 1);
  const { run, targets } = runWithTargets(id, { phaseSizes: [o.targets], maxConcurrent: o.concurrency });
  // Targets as the planner freezes them for the demo fleet's racks (39 components each), so item
  // sizes, and with them the capacity figures, are those of a real rollout.
  for (const t of targets) t.componentsByType = demoComponents(t.rackId);
  // A timeline of the events that make up a slot's refill lag (performance.now(), ms).
  const ends: number[] = [];
  const recorded: number[] = [];
  const submits: number[] = [];
  // An outcome is committed by the task store's ending of a run child (the task, its target and
  // the run's counters in one transaction) or, when that cannot write it, by recordOutcome.
  const runs = Object.create(stores.runs) as typeof stores.runs;
  runs.recordOutcome = async (...args) => {
    const outcome = await stores.runs.recordOutcome(...args);
    if (outcome === "recorded") recorded.push(performance.now());
    return outcome;
  };
  const tasks = Object.create(stores.tasks) as typeof stores.tasks;
  tasks.saveTaskWithOutcome = async (...args) => {
    const saved = await stores.tasks.saveTaskWithOutcome(...args);
    if (saved === "saved") recorded.push(performance.now());
    return saved;
  };
  // Each refill chain's DynamoDB calls, timed, for its sequential round trips; and every call's
  // interval, for the time the store spent with at least one of the product's requests in flight.
  const intervals: [number, number][] = [];
  env.client.middlewareStack.add(
    (next, context) => async (args) => {
      const scope = currentScope();
      const start = performance.now();
      try {
        return await next(args);
      } finally {
        intervals.push([start, performance.now()]);
        scope?.chain?.calls.push({
          op: (context.commandName ?? "?").replace(/Command$/, ""),
          table: tableOf(args.input as Record<string, unknown>),
          start,
          end: performance.now(),
          ...(scope.submission === undefined ? {} : { submission: scope.submission }),
        });
      }
    },
    { step: "initialize", name: "benchRefillChains" },
  );
  // The product's child-task path (task service, last state, wake-up), the flash a timer.
  const product = productSubmitter({
    tasks,
    commands: new DynamoCommandSetStore(stores.doc, env.names.tasks),
    runs,
    locks: stores.locks,
    taskMs: o.taskMs,
    clock: Date.now,
    ...(mode === "direct" ? { waker: inProcessWaker(() => dispatcher, silentLogger) } : {}),
    onTaskEnd: () => ends.push(performance.now()),
    onStart: () => submits.push(performance.now()),
  });
  const passes: number[] = [];
  let finished: (() => void) | undefined;
  const done = new Promise<void>((resolve) => (finished = resolve));
  const inner = createDispatcher({ runs: stores.runs, submitter: product.submitter, clock: systemClock });
  const dispatcher = {
    ...inner,
    dispatchRun: async (runId: string) => {
      const t = performance.now();
      const result = await inner.dispatchRun(runId);
      passes.push(performance.now() - t);
      // The pass that finishes the run says so: no polling of the store during the measurement
      // (every extra request would queue on serialized moto with the ones being measured).
      if (result.decision === "finished" || result.decision === "inactive") finished?.();
      return result;
    },
    // The dispatcher's own tick calls its unwrapped dispatchRun: a tick that finds no active run
    // (the next one after the run finished) ends the wait in tick-only mode.
    tick: async () => {
      const result = await inner.tick();
      if (result.runs === 0) finished?.();
      return result;
    },
  };
  const poller =
    mode !== "tick"
      ? await startStreamPoller({
          client: env.client,
          tableNames: [env.names.runs, env.names.targets],
          handler: streamBatchHandler(createStreamEvaluator({ dispatcher })),
        })
      : undefined;
  env.meter.reset();
  const startedAt = performance.now();
  const started = Date.now();
  await stores.runs.createRun({ ...run, createdAt: started, updatedAt: started }, targets);
  const createMs = performance.now() - startedAt;
  const ticker = startTicker({ intervalMs: o.tickMs, tick: () => dispatcher.tick(), immediate: true });
  const limitMs = 20 * Math.ceil(o.targets / o.concurrency) * Math.max(o.tickMs, o.taskMs);
  await Promise.race([done, sleep(limitMs)]);
  const final: Run | undefined = await stores.runs.getRun(id);
  const meter = env.meter.snapshot();
  const calls = Object.fromEntries(Object.entries(meter.byOperation).map(([op, v]) => [op, v.calls]));
  // The run's own finishedAt is the end of the makespan.
  const ms = (final?.finishedAt ?? Date.now()) - started;
  const busyMs = busyWithin(intervals, startedAt, startedAt + ms);
  const firstStartMs = Math.min(...submits) - startedAt;
  const tailMs = startedAt + ms - Math.max(...ends);
  await ticker.stop();
  await poller?.stop();
  await product.settle();
  if (product.duplicateStarts().length > 0) throw new Error("a target was started twice");
  await env.stop();
  return {
    ms,
    status: final?.status ?? "missing",
    passes,
    lag: refillLag(o, ends, recorded, submits),
    refills: product.chains.filter((c) => c.submittedAt !== undefined).map(roundTrips),
    calls,
    busyMs,
    firstStartMs,
    tailMs,
    createMs,
    rcu: meter.readCapacityUnits,
    wcu: meter.writeCapacityUnits,
  };
}

/** The length of the union of `intervals` clipped to [from, to]. */
function busyWithin(intervals: [number, number][], from: number, to: number): number {
  let busy = 0;
  let reached = from;
  for (const [start, end] of [...intervals].sort((a, b) => a[0] - b[0])) {
    const s = Math.max(start, reached);
    const e = Math.min(end, to);
    if (e > s) busy += e - s;
    reached = Math.max(reached, e);
  }
  return busy;
}

/** A demo-fleet rack's components (DEMO_RACK_SHAPE: 39 in six groups), ids derived from the rack. */
function demoComponents(rackId: string): Target["componentsByType"] {
  return DEMO_RACK_SHAPE.map(({ type, count, tag }) => ({
    type,
    componentIds: Array.from({ length: count }, (_, i) => seededUuid(rackId, `${tag}${i + 1}`)),
  }));
}

/**
 * The k-th task end frees the slot the (C+k)-th submission takes (both in time order; a submission
 * needs a slot, and the (C+k)-th needs k+1 of them freed). For each pair: end → its outcome
 * committed (`recording`, which frees the slot), committed → the submission (`refill`: wake-up,
 * pass, claim); `total` = end → submission.
 */
function refillLag(
  o: MakespanOptions,
  ends: number[],
  recorded: number[],
  submits: number[],
): MakespanResult["lag"] {
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  const [e, r, s] = [sorted(ends), sorted(recorded), sorted(submits)];
  const lag: MakespanResult["lag"] = { recording: [], refill: [], total: [] };
  for (let k = 0; k + o.concurrency < s.length && k < e.length; k++) {
    const submitted = s[k + o.concurrency] as number;
    lag.recording.push((r[k] as number) - (e[k] as number));
    lag.refill.push(submitted - (r[k] as number));
    lag.total.push(submitted - (e[k] as number));
  }
  return lag;
}

/**
 * The refill path: sequential store round trips from a task's end (its last state, the last wave's
 * check, starting: its read of the results is the first round trip, and the one that finds the task
 * done) to the StartExecution of the target that takes the freed slot, over the refills whose chain
 * led to a submission; with the most common sequence, round by round (parallel calls joined with
 * " ∥ "). Until 2026-12-01 the last state was RecordSuccess, after the check, and the chain
 * started there: the check's read was not counted.
 */
function describeRefills(refills: { op: string; table: string }[][][]): string {
  const counts = refills.map((r) => r.length);
  const byCount = new Map<number, number>();
  for (const c of counts) byCount.set(c, (byCount.get(c) ?? 0) + 1);
  const sequences = new Map<string, number>();
  for (const r of refills) {
    const text = r.map((round) => round.map((c) => `${c.op} ${c.table}`).join(" ∥ ")).join(" → ");
    sequences.set(text, (sequences.get(text) ?? 0) + 1);
  }
  const [common, times] = [...sequences.entries()].sort((a, b) => b[1] - a[1])[0] ?? ["", 0];
  return [
    `      refill path: ${median(counts)} sequential store round trips (median of ${refills.length} refills; ${[
      ...byCount.entries(),
    ]
      .sort((a, b) => a[0] - b[0])
      .map(([c, n]) => `${c}: ${n}`)
      .join(
        ", ",
      )}) + StartExecution; ${median(counts) - 1} after the check's read of the results (how it was counted before 2026-12-01, from RecordSuccess)`,
    `      most common (${times}×): ${common} → StartExecution`,
  ].join("\n");
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
