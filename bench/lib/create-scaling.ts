/**
 * CreateOperationRun's DynamoDB calls and capacity against the size of the fleet, before and after
 * creates read their racks by key, in one run: the API benchmark's scaling rows.
 *
 * For each fleet size a fresh set of tables in its own moto holds the demo fleet (39 components a
 * rack). Creates run through the create use case on the real DynamoDB stores, metered (estimated
 * units, capacity-estimate.ts), without gRPC: the calls measured are the create's own.
 *
 *   after    the product: racks by key (src/app/plan-inventory.ts)
 *   before   every lookup answered from one Scan of the inventory table (scan-inventory.ts)
 *
 * Two requests: a 10-rack explicit spec (rack ids, 100 %: 10 targets), and the default scope
 * (every rack; more than 100 is the planner's candidate-limit error, INTERNAL, which is what such
 * a create answers, so its cost is measured all the same).
 *
 * moto's Scan pages restart from the first item every page (quadratic: a Scan of the 1,000-rack
 * fleet's 40,000 items takes about a minute), so `before` runs once per row and not at all above
 * `maxScanRacks`; such rows are printed as the 1,000-rack figure scaled by the fleet (the fleet is
 * copies of one rack shape, so a Scan's size is linear in it), marked as not run. moto also answers
 * an index Query by walking the whole table, so the latency of `after` default-scope creates grows
 * with the fleet on moto, though what they read does not; DynamoDB reads the index.
 */

import { randomUUID } from "node:crypto";
import { generateDemoFleet } from "../../local/demo-fleet.js";
import { startLocalMoto } from "../../local/moto.js";
import { createDynamoDbClient } from "../../src/adapters/aws-config.js";
import {
  createDynamoStores,
  createTables,
  deleteTables,
  tableNames,
} from "../../src/adapters/dynamodb/index.js";
import { systemClock } from "../../src/adapters/system-clock.js";
import { createRunService } from "../../src/app/runs.js";
import type { CreateRunInput } from "../../src/domain/create-run-input.js";
import { CandidateLimitError } from "../../src/domain/errors.js";
import { registerBenchImages } from "./bench-images.js";
import { installCapacityMeter } from "./capacity-meter.js";
import { scanningInventory } from "./scan-inventory.js";
import { elapsedMs, summarize } from "./stats.js";

export type Way = "before (Scan)" | "after (by key)";
export type Request = "10 racks by id" | "default scope";

export interface ScalingRow {
  racks: number;
  request: Request;
  way: Way;
  /** Samples; 0 for a row not run (then the figures are scaled from a smaller fleet's). */
  n: number;
  medianMs: number;
  /** Per create. */
  calls: number;
  rcu: number;
  wcu: number;
  /** Of `calls` and `rcu`: the inventory Scan's share (pages of the whole table). */
  scanCalls: number;
  scanRcu: number;
  outcome: "created" | "candidate limit" | "not run";
}

export interface ScalingOptions {
  sizes: readonly number[];
  /** Samples of each `after` row: at least 2, at most `samples`, while 20 s last; `before` rows take one. */
  samples: number;
  /** Larger fleets' `before` rows are scaled, not run (see the module comment). */
  maxScanRacks: number;
  progress: (line: string) => void;
}

/** Time per `after` row, past its first two samples (moto's index Queries walk the whole table). */
const ROW_BUDGET_MS = 20_000;

export async function measureCreateScaling(options: ScalingOptions): Promise<ScalingRow[]> {
  const moto = await startLocalMoto();
  const client = createDynamoDbClient({ endpoint: moto.endpoint });
  const meter = installCapacityMeter(client, { reportedFigures: "ignore" });
  const rows: ScalingRow[] = [];
  try {
    for (const size of options.sizes) {
      const names = tableNames(`scale-${size}-${randomUUID().slice(0, 6)}-`);
      await createTables(client, names);
      const stores = createDynamoStores(client, names);
      const fleet = generateDemoFleet({ racks: size });
      const loading = process.hrtime.bigint();
      await stores.inventory.upsertRacks(fleet);
      await registerBenchImages(stores.images);
      options.progress(`${size} racks loaded in ${(elapsedMs(loading) / 1000).toFixed(0)} s`);
      const ways: Record<Way, ReturnType<typeof createRunService>> = {
        "after (by key)": createRunService({
          runs: stores.runs,
          inventory: stores.inventory,
          images: stores.images,
          clock: systemClock,
          newId: randomUUID,
        }),
        "before (Scan)": createRunService({
          runs: stores.runs,
          inventory: scanningInventory(stores.inventory),
          images: stores.images,
          clock: systemClock,
          newId: randomUUID,
        }),
      };
      const requests: Record<Request, CreateRunInput> = {
        "10 racks by id": createInput(fleet.slice(0, 10).map((r) => r.id)),
        "default scope": createInput(undefined),
      };
      for (const request of Object.keys(requests) as Request[]) {
        for (const way of Object.keys(ways) as Way[]) {
          const scanned = way === "before (Scan)";
          if (scanned && size > options.maxScanRacks) {
            rows.push(scaledFrom(rows, size, request, options.maxScanRacks));
            continue;
          }
          const max = scanned ? 1 : options.samples;
          const samples: number[] = [];
          let outcome: ScalingRow["outcome"] = "created";
          meter.reset();
          const row = process.hrtime.bigint();
          while (
            samples.length < max &&
            (samples.length < Math.min(2, max) || elapsedMs(row) < ROW_BUDGET_MS)
          ) {
            const t = process.hrtime.bigint();
            try {
              await ways[way].createRun(requests[request]);
            } catch (error) {
              if (!(error instanceof CandidateLimitError)) throw error;
              outcome = "candidate limit";
            }
            samples.push(elapsedMs(t));
          }
          const n = samples.length;
          const totals = meter.snapshot();
          const scan = totals.byOperation.Scan ?? { calls: 0, capacityUnits: 0 };
          rows.push({
            racks: size,
            request,
            way,
            n,
            medianMs: summarize(samples).median,
            calls: totals.calls / n,
            rcu: totals.readCapacityUnits / n,
            wcu: totals.writeCapacityUnits / n,
            scanCalls: scan.calls / n,
            scanRcu: scan.capacityUnits / n,
            outcome,
          });
          options.progress(
            `${size} racks, ${request}, ${way}: ${(summarize(samples).median / 1000).toFixed(2)} s`,
          );
        }
      }
      // moto keeps every table in memory: drop each fleet before loading the next.
      await deleteTables(client, names);
    }
  } finally {
    client.destroy();
    await moto.stop();
  }
  return rows;
}

/** A `before` row too slow to run on moto, from the largest fleet's row that ran (linear in the fleet). */
function scaledFrom(rows: readonly ScalingRow[], size: number, request: Request, ran: number): ScalingRow {
  const base = rows.find((r) => r.racks === ran && r.request === request && r.way === "before (Scan)");
  if (base === undefined) throw new Error(`no ${ran}-rack "${request}" Scan row to scale from`);
  const factor = size / ran;
  return {
    ...base,
    racks: size,
    n: 0,
    medianMs: Number.NaN,
    // The Scan grows with the fleet; the create's other calls (its writes) do not.
    calls: base.calls + base.scanCalls * (factor - 1),
    rcu: base.rcu + base.scanRcu * (factor - 1),
    scanCalls: base.scanCalls * factor,
    scanRcu: base.scanRcu * factor,
    outcome: "not run",
  };
}

/** A run of `rackIds` (100 %), or of the default scope when none are given. */
function createInput(rackIds: string[] | undefined): CreateRunInput {
  return {
    name: "bench-scale",
    description: "",
    configuration: {
      selector: { kind: "percentage", percentage: 100, seed: "bench" },
      options: {
        maxConcurrentTargets: 10,
        safetyPolicy: { gates: [{ kind: "failureCount", scope: "UNKNOWN", thresholdCount: 5 }] },
      },
      operation: {
        upgradeFirmware: {
          description: "bench",
          subTargets: [],
          overrideReadinessCheck: false,
          overrideVersionCheck: false,
          targetVersion: "9.9.9",
          ...(rackIds === undefined
            ? {}
            : {
                targetSpec: {
                  kind: "racks" as const,
                  racks: rackIds.map((id) => ({ ref: { by: "id" as const, id }, componentTypes: [] })),
                },
              }),
        },
      },
    },
  };
}
