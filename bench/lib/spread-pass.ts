/**
 * The failure-domain spread's cost per dispatch pass (bench/dispatch.ts part 3): one run of N
 * targets, concurrency C, tasks that hang (nothing ends by itself), measured with the capacity
 * meter over two passes: the first (fills C slots) and a refill (after 3 tasks are ended by hand:
 * 3 slots free). Three shapes: no spread; 1 per row with the rows interleaved in the seeded order
 * (nothing to skip); 1 per row with each row's racks together (the pass skips the rest of every
 * row it took). The spread must not add a request per target: the pass reads the phase's queue in
 * one query either way, and the claim is one transaction. The outcome of a target with a domain
 * is written after a read of it (its domain counter moves too): that read is counted separately.
 */

import type { DynamoStores } from "../../src/adapters/dynamodb/index.js";
import { systemClock } from "../../src/adapters/system-clock.js";
import { createDispatcher } from "../../src/app/dispatcher.js";
import type { CapacityMeter } from "./capacity-meter.js";
import { FakeSubmitter } from "./fake-submitter.js";
import { runWithTargets } from "./run-builders.js";

export type SpreadShape = "no spread" | "1 per row, rows interleaved" | "1 per row, rows clustered";

export interface SpreadPassFigures {
  shape: SpreadShape;
  fill: PassFigures;
  refill: PassFigures;
  /** DynamoDB calls recording the 3 outcomes between the passes. */
  outcomeCalls: number;
}

interface PassFigures {
  submitted: number;
  calls: number;
  byOperation: string;
  rcu: number;
  wcu: number;
}

export async function spreadPass(
  env: { stores: DynamoStores; meter: CapacityMeter },
  shape: SpreadShape,
  options: { targets: number; concurrency: number; rows: number; seq: number },
): Promise<SpreadPassFigures> {
  const id = `5b${String(options.seq).padStart(6, "0")}-0000-4000-8000-000000000000`;
  const { run, targets } = runWithTargets(id, {
    phaseSizes: [options.targets],
    maxConcurrent: options.concurrency,
  });
  const perRow = Math.ceil(options.targets / options.rows);
  if (shape !== "no spread") {
    run.config.failureDomainSpread = { kind: "ROW", maxInFlight: 1 };
    targets.forEach((t, i) => {
      const row = shape === "1 per row, rows interleaved" ? i % options.rows : Math.floor(i / perRow);
      t.failureDomain = `dc1/${String(row).padStart(2, "0")}`;
    });
  }
  await env.stores.runs.createRun(run, targets);
  const submitter = new FakeSubmitter({
    runs: env.stores.runs,
    clock: Date.now,
    behaviour: () => ({ kind: "hang" }),
  });
  const dispatcher = createDispatcher({ runs: env.stores.runs, submitter, clock: systemClock });
  const measure = async (): Promise<PassFigures> => {
    env.meter.reset();
    const result = await dispatcher.dispatchRun(id);
    const m = env.meter.snapshot();
    return {
      submitted: result.submitted,
      calls: m.calls,
      byOperation: Object.entries(m.byOperation)
        .map(([op, v]) => `${op} ${v.calls}`)
        .join(", "),
      rcu: m.readCapacityUnits,
      wcu: m.writeCapacityUnits,
    };
  };
  const fill = await measure();
  env.meter.reset();
  for (const task of [...submitter.tasks.values()].slice(0, 3))
    await submitter.finish(task.targetId, "COMPLETED");
  await submitter.settle();
  const outcomeCalls = env.meter.snapshot().calls;
  const refill = await measure();
  return { shape, fill, refill, outcomeCalls };
}

export function describeSpreadPass(r: SpreadPassFigures): string[] {
  const line = (label: string, p: PassFigures) =>
    `      ${label.padEnd(7)} ${p.submitted} submitted; ${p.calls} calls (${p.byOperation}); RCU ${p.rcu.toFixed(1)}, WCU ${p.wcu.toFixed(1)}`;
  return [
    `   ${r.shape}:`,
    line("fill", r.fill),
    line("refill", r.refill),
    `      3 outcomes recorded between them: ${r.outcomeCalls} calls`,
  ];
}
