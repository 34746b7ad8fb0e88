/**
 * The racks bench:fleet spreads over its simulated child tasks, and what each costs per rack at
 * each scale: the demo fleet's GB200-shaped rack of 39 BMCs under the built-in default rule (the
 * rack the simulation's rates use) and under its update step alone (the work the per-rack aims
 * were set against), each with the simulated BMCs (3 progress reports a 10-minute flash) and
 * behind the Redfish agent (one a `progressIntervalMs`, 10 at the default 60 s: docs/agent.md).
 * Every flash step is checked as the product's schedule checks a 10-minute flash
 * (production-model.ts: once, AwaitWave's heartbeat kept by the flash's reports; the agent's, a
 * report every ~60–90 s, keep the 300-s heartbeat as well).
 */
import { generateDemoFleet } from "../../local/demo-fleet.js";
import { DEFAULT_CHILD_TASK_SETTINGS } from "../../src/app/child-task/settings.js";
import type { OperationRule } from "../../src/domain/model.js";
import { DEFAULT_RULE } from "../../src/domain/operation-rules.js";
import { DEFAULT_TIMINGS } from "../../src/service/bmc-agent/config.js";
import {
  bucketRefusals,
  type CallbackSeries,
  callbacksPerRack,
  invocationsPerRack,
  type RackTraffic,
  type ReportBatching,
} from "./fleet-rates.js";
import { modelProductionWave } from "./production-model.js";
import { costWithMoreReports, REPORT_WRITE_WRU } from "./rack-cost.js";
import {
  agentProgressPerFlash,
  modelAgentRack,
  modelRack,
  oneMessageAMoment,
  type RackModel,
  ROLLOUT_MAX_PARALLEL,
  rackCallbacks,
} from "./rack-model.js";
import type { RackRecord } from "./rollout-rack-record.js";
import { UPDATE_ONLY_RULE } from "./rollout-rules.js";
import { fixed, printTable } from "./table.js";

export type FleetRack = RackModel & RackTraffic;

/** Progress reports a 10-minute flash behind the agent at its default `progressIntervalMs`. */
export const AGENT_PROGRESS = agentProgressPerFlash(DEFAULT_TIMINGS.progressIntervalMs);

/** The demo rack under `rule`: the simulated BMCs', or the agent's with `progressPerFlash`. */
export function rackOf(rule: Pick<OperationRule, "stages">, progressPerFlash?: number): FleetRack {
  const components = generateDemoFleet({ racks: 1 })[0]?.components ?? [];
  const options = {
    maxParallel: ROLLOUT_MAX_PARALLEL,
    checksPerFlashStep: modelProductionWave(DEFAULT_CHILD_TASK_SETTINGS).checksPerWave,
    path: "after" as const,
  };
  const model =
    progressPerFlash === undefined
      ? modelRack(rule, components, options)
      : modelAgentRack(rule, components, { ...options, progressPerFlash });
  const callbacks = rackCallbacks(rule, components, {
    maxParallel: ROLLOUT_MAX_PARALLEL,
    ...(progressPerFlash === undefined ? {} : { progressPerFlash }),
  });
  return { ...model, ...callbacks };
}

export const FLEET_RACKS = {
  updateAlone: rackOf(UPDATE_ONLY_RULE),
  defaultRule: rackOf(DEFAULT_RULE),
  updateAloneAgent: rackOf(UPDATE_ONLY_RULE, AGENT_PROGRESS),
  defaultRuleAgent: rackOf(DEFAULT_RULE, AGENT_PROGRESS),
  updateAloneAgentBatched: oneMessageAMoment(rackOf(UPDATE_ONLY_RULE, AGENT_PROGRESS)),
  defaultRuleAgentBatched: oneMessageAMoment(rackOf(DEFAULT_RULE, AGENT_PROGRESS)),
};
const NAMES: Record<keyof typeof FLEET_RACKS, string> = {
  updateAlone: "update alone",
  defaultRule: "default rule",
  updateAloneAgent: "update alone, agent",
  defaultRuleAgent: "default rule, agent",
  updateAloneAgentBatched: "update alone, agent, a message a moment",
  defaultRuleAgentBatched: "default rule, agent, a message a moment",
};

/** The Lambda aim per rack, with the update alone and the default rule. */
export const INVOCATIONS_AIM = 16;

export interface PerRack {
  lambda: ReturnType<typeof invocationsPerRack>;
  callbacks: ReturnType<typeof callbacksPerRack>;
  /** SendTaskHeartbeat in the scenario's busiest second, and the calls its bucket refuses. */
  peakHeartbeats: number;
  refusedHeartbeats: number;
  /** The same, one a batch as before (`heartbeatsPerBatch`). */
  peakHeartbeatsPerBatch: number;
  refusedHeartbeatsPerBatch: number;
}

/** A rack's per-rack figures in a scenario of `racks` racks whose seconds gave `series`. */
export function perRack(
  rack: Pick<RackModel, "taskSteps">,
  series: CallbackSeries,
  racks: number,
  bucket: { burst: number; perSecond: number },
): PerRack {
  return {
    lambda: invocationsPerRack(rack, series, racks),
    callbacks: callbacksPerRack(series, racks),
    peakHeartbeats: series.heartbeats.reduce((m, v) => Math.max(m, v), 0),
    refusedHeartbeats: bucketRefusals(series.heartbeats, bucket),
    peakHeartbeatsPerBatch: series.heartbeatsPerBatch.reduce((m, v) => Math.max(m, v), 0),
    refusedHeartbeatsPerBatch: bucketRefusals(series.heartbeatsPerBatch, bucket),
  };
}

/**
 * Prints, per scenario and rack: the Lambda invocations per rack against the aim, the Step
 * Functions callbacks per rack, and the racks side by side (messages, moments, callbacks, cost).
 */
export function printPerRack(input: {
  scenarios: { label: string; racks: number; seriesOf: (rack: FleetRack) => CallbackSeries }[];
  batching: ReportBatching;
  bucket: { burst: number; perSecond: number };
  record: RackRecord;
}): void {
  const { batching, bucket, record } = input;
  const racks = Object.entries(FLEET_RACKS) as [keyof typeof FLEET_RACKS, FleetRack][];
  const figures = input.scenarios.map((s) =>
    racks.map(([, rack]) => perRack(rack, s.seriesOf(rack), s.racks, bucket)),
  );
  const header = ["scenario", ...racks.map(([key]) => NAMES[key])];
  console.log(
    `\nLambda invocations per rack (aim <= ${INVOCATIONS_AIM}): task-steps + bmc-result's share of the batches (${batching.pollers} pollers, batches of ${batching.size})`,
  );
  printTable(
    header,
    input.scenarios.map((s, i) => [
      s.label,
      ...figures[i]!.map(({ lambda }) => {
        const met = lambda.total <= INVOCATIONS_AIM ? "" : " (NOT met)";
        return `${lambda.taskSteps} + ${fixed(lambda.bmcResult, 2)} = ${fixed(lambda.total, 1)}${met}`;
      }),
    ]),
  );
  console.log(
    `\nStep Functions callbacks per rack: SendTaskHeartbeat (the busiest second against the ${bucket.perSecond}-a-second refill; calls its bucket of ${bucket.burst} refuses), SendTaskSuccess; the receiver's report writes (one per set a batch touches)`,
  );
  printTable(
    header,
    input.scenarios.map((s, i) => [
      s.label,
      ...figures[i]!.map(
        (f) =>
          `${fixed(f.callbacks.heartbeats, 1)} (${fixed(f.peakHeartbeats, 0)}/s, ${fixed((100 * f.peakHeartbeats) / bucket.perSecond, 1)} %; ${fixed(f.refusedHeartbeats, 0)} refused), ${fixed(f.callbacks.wakeUps, 0)}; ${fixed(f.callbacks.reportWrites, 1)} writes`,
      ),
    ]),
  );
  console.log(
    "\nSendTaskHeartbeat per rack before (one per batch a moment touched, the preflight's too), against now (one a wait a heartbeat interval: HEARTBEAT_INTERVAL_MS, src/domain/command-sets.ts), in the same run",
  );
  printTable(
    header,
    input.scenarios.map((s, i) => [
      s.label,
      ...figures[i]!.map(
        (f) =>
          `${fixed(f.callbacks.heartbeatsPerBatch, 1)} (${fixed(f.peakHeartbeatsPerBatch, 0)}/s, ${fixed((100 * f.peakHeartbeatsPerBatch) / bucket.perSecond, 1)} %; ${fixed(f.refusedHeartbeatsPerBatch, 0)} refused) -> ${fixed(f.callbacks.heartbeats, 1)} (${fixed((100 * f.peakHeartbeats) / bucket.perSecond, 1)} %)`,
      ),
    ]),
  );
  console.log(
    `\nPer rack, one report batch a moment: behind the Redfish agent (${AGENT_PROGRESS} progress a 10-minute flash at its default progressIntervalMs ${DEFAULT_TIMINGS.progressIntervalMs} ms) and with the simulated BMCs (3). Cost for 10-minute flashes: bench:rollout's $${record.cost10min.toFixed(5)} for the simulated default-rule rack (${record.measuredAt}), each report more priced, each moment more a bmc-result invocation and a write of ${REPORT_WRITE_WRU} WRU; "+" what the agent adds to the update alone's`,
  );
  const { defaultRule, updateAlone } = FLEET_RACKS;
  const cost = (key: keyof typeof FLEET_RACKS, rack: FleetRack): string => {
    if (key === "updateAlone") return "-";
    if (key === "updateAloneAgent" || key === "updateAloneAgentBatched") {
      return `+$${costWithMoreReports({ simulatedUsd: 0, simulated: updateAlone, rack }).added.toFixed(5)}`;
    }
    const c = costWithMoreReports({ simulatedUsd: record.cost10min, simulated: defaultRule, rack });
    return `$${c.broker.toFixed(5)} / $${c.basicIngest.toFixed(5)}`;
  };
  printTable(
    ["per rack", ...racks.map(([key]) => NAMES[key])],
    [
      ["IoT messages (reports)", ...racks.map(([, r]) => `${r.iotMessages} (${r.reports})`)],
      [
        "report moments (bmc-result, one batch a moment)",
        ...racks.map(([, r]) => String(r.bmcResultUnshared)),
      ],
      ["SendTaskHeartbeat, one batch a moment", ...racks.map(([, r]) => String(r.heartbeatsOneBatchAMoment))],
      ["SendTaskSuccess (waits)", ...racks.map(([, r]) => String(r.waits))],
      ["cost: broker / Basic Ingest", ...racks.map(([key, r]) => cost(key, r))],
    ],
  );
}
