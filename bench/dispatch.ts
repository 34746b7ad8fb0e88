/**
 * Dispatcher benchmarks against moto (each part on its own moto_server; with AWS_ENDPOINT_URL set,
 * on fresh tables at that endpoint instead, e.g. LocalStack), printing figures and stopping by itself:
 *
 * 1. Makespan efficiency: N targets, concurrency C, each child task T ms, tick every K ms.
 *    ideal = ⌈N/C⌉·T; efficiency = ideal / measured, one after the other, for tick-only dispatch,
 *    tick plus stream wake-ups (the local stream poller against moto), and tick plus stream plus
 *    the direct wake-up the outcome recorder sends (as deployed), each with its ratio to tick only,
 *    the refill lag per freed slot split at the outcome's commit, the makespan's two ends (start →
 *    the first StartExecution; the last task's end → the run finished), and the DynamoDB calls and
 *    estimated capacity per target with the time at least one of them was in flight (moto serves
 *    one at a time, so that is how busy the product kept it; the stream poller's reads come on top). The child tasks are the product's (bench/lib/product-submitter.ts:
 *    the real task service submits, the real last state records the outcome), only the flash is a
 *    timer; with the direct wake-up it also prints the refill path: the sequential store round
 *    trips from a task's end to the next StartExecution, traced through the async context.
 *    Targets carry a demo-fleet rack's 39 components, so item sizes are a real rollout's. The run's
 *    end is told by the pass that finishes it: the benchmark does not poll the store while
 *    measuring (on serialized moto every extra request queues with the measured ones).
 * 2. Scale: one dispatcher pass (`tick()`) over A active runs, then the same after F finished runs
 *    are added: DynamoDB calls and capacity per pass (bench/lib/capacity-meter.ts), wall
 *    time. The finished runs must not change the figures (the active-runs index is sparse).
 *
 *   npx tsx bench/dispatch.ts                 defaults: N=100 C=10 T=2000 K=10000, A=1000 F=10000
 *   npx tsx bench/dispatch.ts --quick         N=30 C=10 T=500 K=2500, A=100 F=1000 (about a minute)
 * 3. Failure-domain spread: a fill pass and a refill pass of one run without a spread and with one
 *    (rows interleaved, rows clustered): DynamoDB calls and capacity per pass (bench/lib/spread-pass.ts).
 *
 *   flags: --targets --concurrency --task-ms --tick-ms --active-runs --finished-runs
 *          --skip-makespan --skip-scale --skip-spread
 */

import { environment } from "./lib/dispatch-env.js";
import { type MakespanOptions, makespanPart } from "./lib/dispatch-makespan.js";
import { type ScaleOptions, scalePart } from "./lib/dispatch-scale.js";
import { describeSpreadPass, type SpreadShape, spreadPass } from "./lib/spread-pass.js";

interface Options extends MakespanOptions, ScaleOptions {
  makespan: boolean;
  scale: boolean;
  spread: boolean;
}

function parseArgs(argv: string[]): Options {
  const quick = argv.includes("--quick");
  const o: Options = quick
    ? {
        targets: 30,
        concurrency: 10,
        taskMs: 500,
        tickMs: 2500,
        activeRuns: 100,
        finishedRuns: 1000,
        makespan: true,
        scale: true,
        spread: true,
      }
    : {
        targets: 100,
        concurrency: 10,
        taskMs: 2000,
        tickMs: 10_000,
        activeRuns: 1000,
        finishedRuns: 10_000,
        makespan: true,
        scale: true,
        spread: true,
      };
  const num = (flag: string, set: (n: number) => void) => {
    const i = argv.indexOf(flag);
    if (i >= 0) {
      const n = Number(argv[i + 1]);
      if (!Number.isInteger(n) || n <= 0) throw new Error(`${flag} needs a positive integer`);
      set(n);
    }
  };
  num("--targets", (n) => (o.targets = n));
  num("--concurrency", (n) => (o.concurrency = n));
  num("--task-ms", (n) => (o.taskMs = n));
  num("--tick-ms", (n) => (o.tickMs = n));
  num("--active-runs", (n) => (o.activeRuns = n));
  num("--finished-runs", (n) => (o.finishedRuns = n));
  if (argv.includes("--skip-makespan")) o.makespan = false;
  if (argv.includes("--skip-scale")) o.scale = false;
  if (argv.includes("--skip-spread")) o.spread = false;
  return o;
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  console.log(`dispatch benchmark (${JSON.stringify(o)})`);

  if (o.makespan) await makespanPart(o);
  if (o.scale) await scalePart(o);

  if (o.spread) {
    const rows = 10;
    console.log(
      `\n3. failure-domain spread: one run of 100 targets in ${rows} rows, concurrency ${rows}; a fill pass, then a refill of 3 slots`,
    );
    const env = await environment("spread", { reportedFigures: "ignore" });
    const shapes: SpreadShape[] = ["no spread", "1 per row, rows interleaved", "1 per row, rows clustered"];
    for (const [i, shape] of shapes.entries()) {
      const r = await spreadPass(env, shape, { targets: 100, concurrency: rows, rows, seq: i });
      for (const line of describeSpreadPass(r)) console.log(line);
    }
    await env.stop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
