/**
 * Part 2 of the dispatcher benchmark (bench/dispatch.ts): a process's first tick over many active
 * runs (the sweep: it passes every active run), then its next tick (the due index: only runs due,
 * here none), then the same after many finished runs are added; the finished runs must not change
 * the figures (the active-runs and due indexes are sparse).
 */

import { BatchWriteCommand } from "@aws-sdk/lib-dynamodb";
import { runToItem, targetToItem } from "../../src/adapters/dynamodb/items.js";
import { systemClock } from "../../src/adapters/system-clock.js";
import { createDispatcher } from "../../src/app/dispatcher.js";
import type { Run, Target } from "../../src/domain/model.js";
import { type DispatchEnv, environment, uuidFor } from "./dispatch-env.js";
import { FakeSubmitter } from "./fake-submitter.js";
import { runWithTargets } from "./run-builders.js";

export interface ScaleOptions {
  activeRuns: number;
  finishedRuns: number;
}

/** Runs the part and prints its figures. */
export async function scalePart(o: ScaleOptions): Promise<void> {
  console.log(
    `\n2. scale: a first tick (the sweep) and the next over ${o.activeRuns} active runs, then with ${o.finishedRuns} finished runs added`,
  );
  const env = await environment("scale");
  const now = Date.now();
  await writeRuns(
    env,
    Array.from({ length: o.activeRuns }, (_, i) => activeRun(i, now)),
  );
  // Written as items, the runs have no dispatch schedule yet: a first sweep gives them theirs (as a
  // process's first sweep does for runs stored before the due index), one write each; the
  // figures are of the runs as every write since keeps them, scheduled.
  const scheduling = await scalePass(env, "scheduling");
  console.log(
    `   (a first sweep scheduled the ${scheduling.runs} runs written without a schedule: ${scheduling.meter.calls} DynamoDB calls)`,
  );
  const before = await scalePass(env, `${o.activeRuns} active`);
  const t = performance.now();
  await writeRuns(
    env,
    Array.from({ length: o.finishedRuns }, (_, i) => finishedRun(i, now)),
  );
  console.log(
    `   (wrote ${o.finishedRuns} finished runs in ${((performance.now() - t) / 1000).toFixed(1)} s)`,
  );
  const after = await scalePass(env, `${o.activeRuns} active + ${o.finishedRuns} finished`);
  for (const r of [before, after]) {
    const ops = Object.entries(r.meter.byOperation)
      .map(([op, v]) => `${op} ${v.calls}`)
      .join(", ");
    console.log(
      `   ${r.label.padEnd(32)} the sweep: runs dispatched ${r.runs}; DynamoDB calls ${r.meter.calls} (${(r.meter.calls / Math.max(1, r.runs)).toFixed(2)}/run: ${ops}); capacity ${r.meter.capacityUnits.toFixed(1)} units (RCU ${r.meter.readCapacityUnits.toFixed(1)}, WCU ${r.meter.writeCapacityUnits.toFixed(1)}); wall ${(r.wallMs / 1000).toFixed(2)} s`,
    );
    console.log(
      `   ${"".padEnd(32)} the next tick: runs dispatched ${r.next.runs}; DynamoDB calls ${r.next.calls}; wall ${(r.next.wallMs / 1000).toFixed(3)} s`,
    );
  }
  console.log(`   calls changed by the finished runs: ${after.meter.calls - before.meter.calls}`);
  await env.stop();
}

/**
 * Active runs in steady state: RUNNING, limit 1, one target SUBMITTED (its task running) and one
 * PENDING waiting for the slot, message already "waiting for active targets quota": a pass reads
 * and decides, and has nothing to write. Written with BatchWrite for speed (createRun would cost a
 * transaction per run and test nothing more here).
 */
function activeRun(n: number, now: number): { run: Run; targets: Target[] } {
  const { run, targets } = runWithTargets(uuidFor("a1000000", n), {
    phaseSizes: [2],
    maxConcurrent: 1,
    status: "RUNNING",
    createdAt: now,
  });
  run.inFlight = 1;
  run.statusMessage = "waiting for active targets quota";
  run.startedAt = now;
  const first = targets[0] as Target;
  first.status = "SUBMITTED";
  first.taskId = uuidFor("7a5c0000", n);
  first.message = "submitted";
  return { run, targets };
}

function finishedRun(n: number, now: number): { run: Run; targets: Target[] } {
  const { run, targets } = runWithTargets(uuidFor("f1000000", n), {
    phaseSizes: [1],
    status: "COMPLETED",
    createdAt: now - 86_400_000,
  });
  run.statusMessage = "operation run completed";
  run.counters = [{ completed: 1, failed: 0, terminated: 0, skipped: 0 }];
  run.finishedAt = now - 3_600_000;
  const only = targets[0] as Target;
  only.status = "COMPLETED";
  only.taskId = uuidFor("7f5c0000", n);
  return { run, targets };
}

async function writeRuns(env: DispatchEnv, runs: { run: Run; targets: Target[] }[]): Promise<void> {
  const items = runs.flatMap(({ run, targets }) => [
    { table: env.names.runs, item: runToItem(run) },
    ...targets.map((t) => ({ table: env.names.targets, item: targetToItem(t) })),
  ]);
  const batches: (typeof items)[] = [];
  for (let i = 0; i < items.length; i += 25) batches.push(items.slice(i, i + 25));
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < batches.length) {
        const batch = batches[next++] ?? [];
        const byTable: Record<string, { PutRequest: { Item: Record<string, unknown> } }[]> = {};
        for (const { table, item } of batch) {
          const list = byTable[table] ?? [];
          list.push({ PutRequest: { Item: item } });
          byTable[table] = list;
        }
        let request: typeof byTable | undefined = byTable;
        while (request !== undefined && Object.keys(request).length > 0) {
          const out = await env.stores.doc.send(new BatchWriteCommand({ RequestItems: request }));
          request = out.UnprocessedItems as typeof byTable | undefined;
        }
      }
    }),
  );
}

async function scalePass(env: DispatchEnv, label: string) {
  const submitter = new FakeSubmitter({
    runs: env.stores.runs,
    clock: Date.now,
    behaviour: () => ({ kind: "hang" }),
  });
  const dispatcher = createDispatcher({ runs: env.stores.runs, submitter, clock: systemClock });
  const tick = async () => {
    env.meter.reset();
    const started = performance.now();
    const result = await dispatcher.tick();
    const wallMs = performance.now() - started;
    if (result.failed > 0 || submitter.starts.size > 0)
      throw new Error(`${label}: the steady-state pass changed something`);
    return { runs: result.runs, wallMs, meter: env.meter.snapshot() };
  };
  // A fresh dispatcher's first tick is the sweep; the one after it reads the due index alone.
  const sweep = await tick();
  const next = await tick();
  return { label, ...sweep, next: { runs: next.runs, wallMs: next.wallMs, calls: next.meter.calls } };
}
