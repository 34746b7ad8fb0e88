/**
 * What the rollout benchmark measures and prices (bench/rollout.ts): the figures of one run, the
 * list prices they are costed at, the aims they are held to, and the median of several runs.
 */
import type { RackModel } from "./rack-model.js";
import type { StepKind } from "./rollout-parts.js";
import type { RolloutPath } from "./rollout-paths.js";
import { median } from "./stats.js";

/**
 * List prices, us-east-1, as published on the AWS pricing pages (checked 2026-11; on-demand,
 * no free tier, x86 Lambda):
 *   Step Functions Standard   $0.025 per 1,000 state transitions
 *   Lambda                    $0.20 per 1M requests + $0.0000166667 per GB-second
 *   IoT Core messaging        $1.00 per 1M messages (5 KB units; first 1B/month tier)
 *   IoT Core rules engine     $0.15 per 1M rules triggered + $0.15 per 1M actions executed
 *   SQS standard              $0.40 per 1M requests (each report sent by the rule's action)
 *   DynamoDB on-demand        $0.625 per 1M write request units, $0.125 per 1M read request units
 *                             (prices after the November 2024 on-demand reduction)
 */
export const PRICE = {
  transition: 0.025 / 1000,
  lambdaRequest: 0.2 / 1e6,
  lambdaGbSecond: 0.0000166667,
  iotMessage: 1.0 / 1e6,
  iotRule: 0.15 / 1e6,
  iotAction: 0.15 / 1e6,
  sqsRequest: 0.4 / 1e6,
  wru: 0.625 / 1e6,
  rru: 0.125 / 1e6,
};
/** task-steps and bmc-result: 256 MB, ~60 ms billed per invocation (mostly one or two DynamoDB calls). */
export const LAMBDA_GB = 0.25;
export const LAMBDA_SECONDS = 0.06;
export const LAMBDA_PRICE = PRICE.lambdaRequest + LAMBDA_GB * LAMBDA_SECONDS * PRICE.lambdaGbSecond;

/** Where the per-rack cost work started, 2026-12-01 (`npm run bench` on this machine, 10 racks × 39 BMCs, 5 at a time). */
export const TODAY = {
  requests: 500,
  capacityUnits: 558,
  lambda: 271,
  rolloutVsIdeal: 7.2,
  rackVsIdeal: 7,
  cost10min: 0.0069,
};
/** The per-rack figures of 2026-12-03, measured before activation joined the default rule, and the aims set against them. */
export const BEFORE_ACTIVATION = { requests: 46, lambda: 32, transitions: 36, iot: 312, cost10min: 0.00193 };
export const HALVED_AIMS = { requests: 25, lambda: 16, cost10min: 0.001 };
export const AIMS = {
  requests: 60,
  capacityUnits: 150,
  lambda: 60,
  rolloutVsIdeal: 2.5,
  rackVsIdeal: 2,
  cost10min: 0.004,
};

export function usd(x: number): string {
  return x < 0.01 ? `$${x.toFixed(5)}` : `$${x.toFixed(4)}`;
}

export interface PartFigures {
  requests: number;
  rcu: number;
  wcu: number;
  lambda: number;
  transitions: number;
  byOperation: Record<string, number>;
}

/** Per rack, the wave steps of one kind (flash, activation, bring-up, health check...). */
export interface KindFigures {
  steps: number;
  requests: number;
  transitions: number;
  lambda: number;
  checks: number;
  /** The time the racks' executions spent in these steps (their states, entered to left), per rack. */
  wallMs: number;
}

export interface Figures {
  path: RolloutPath;
  status: string;
  racks: number;
  upgraded: number;
  components: number;
  flashes: number;
  wallMs: number;
  rolloutIdealMs: number;
  rackIdealMs: number;
  rack: { p50: number; p90: number; max: number };
  /** Per rack upgraded. */
  perRack: {
    requests: number;
    capacityUnits: number;
    rcu: number;
    wcu: number;
    /** What the benchmark quoted before the per-rack cost work: moto's placeholders where it gives any. */
    capacityUnitsAsMotoReports: number;
    lambda: number;
    taskSteps: number;
    bmcResult: number;
    reportsReceived: number;
    transitions: number;
    commands: number;
    reports: number;
    /** Of the reports, those sent through Basic Ingest (`$aws/rules/<rule>/...`: no messaging charge). */
    reportsIngested: number;
    waves: number;
    checksPerWave: number;
  };
  taskStepsByStep: Record<string, number>;
  parts: Record<string, PartFigures>;
  byKind: Partial<Record<StepKind, KindFigures>>;
  cost: {
    measured: number;
    breakdown: Record<string, number>;
    model: {
      checksPerWave: number;
      transitions: number;
      /** The same wave polled by the backoff alone (no progress estimate): its checks and transitions. */
      backoffChecksPerWave: number;
      backoffTransitions: number;
      /** The same schedule in Wait states, no wake-up. */
      pollChecksPerWave: number;
      taskSteps: number;
      rru: number;
      wru: number;
      /**
       * DynamoDB requests per rack: the measured ones; per extra check, its read and its AwaitWave's
       * write; per flash step, the report writes a 10-minute flash makes more than this run's.
       */
      requests: number;
      /**
       * Of them, the writes of BMC acknowledgements and progress alone (no result, no answer): this
       * run's, and the report writes more.
       */
      newsRequests: number;
      /** The report writes a 10-minute flash step makes more than one of this run's (its progress). */
      reportWritesPerFlash: number;
      /** The flash steps per rack, and the checks each took here (only they gain checks in the model). */
      flashSteps: number;
      flashChecksPerStep: number;
      /** The reports priced as this run's BMCs sent them. */
      total: number;
      /** The same with every report through the message broker ($1/M each), and with none (Basic Ingest). */
      throughBroker: number;
      throughBasicIngest: number;
    };
  };
  callsPerSecond: number;
  /** The definition's model of a rack (bench/lib/rack-model.ts): at this stack's timing (one check a step) and at production's. */
  rackModel: { local: RackModel; production: RackModel };
}

/** The median of each number over the runs (objects field by field; other values from the first run). */
export function medianOf<T>(runs: readonly T[]): T {
  const first = runs[0] as T;
  if (typeof first === "number") return median(runs as unknown as number[]) as T;
  if (typeof first !== "object" || first === null) return first;
  const keys = new Set(runs.flatMap((r) => Object.keys(r as object)));
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const values = runs.map((r) => (r as Record<string, unknown>)[key]);
    const present = values.filter((v) => v !== undefined);
    out[key] = present.every((v) => typeof v === "number")
      ? median([...(present as number[]), ...Array(values.length - present.length).fill(0)])
      : medianOf(present as unknown[]);
  }
  return out as T;
}
