/**
 * A rack's modelled cost for 10-minute flashes when it sends more reports than the simulated BMCs
 * (the Redfish agent's paced progress: bench/lib/rack-model.ts `modelAgentRack`), from
 * bench:rollout's modelled cost of the simulated rack (bench/rollout-rack.json) and the list
 * prices (rollout-figures.ts PRICE): each report more is an IoT message, the rule, its action and
 * an SQS request; each report moment more (a progress of a wave) one bmc-result invocation and one
 * write of the wave's command set, at one batch a moment (the floor: the fleet's pollers split a
 * moment over more batches, bench/lib/fleet-rates.ts). Through Basic Ingest no report is billed
 * as a message. A heartbeat is an API call, not a state transition: Step Functions bills none.
 */
import type { RackModel } from "./rack-model.js";
import { LAMBDA_PRICE, PRICE } from "./rollout-figures.js";

/** A wave's command set (18 trays' entries, ~2 KB): write units of one report write, assumed. */
export const REPORT_WRITE_WRU = 2;

export interface RackCost {
  /** Every report through the message broker, and every report through Basic Ingest. */
  broker: number;
  basicIngest: number;
  /** What the reports more add, through the broker. */
  added: number;
}

export function costWithMoreReports(input: {
  /** bench:rollout's modelled cost of `simulated`, its reports through the broker. */
  simulatedUsd: number;
  simulated: Pick<RackModel, "reports" | "bmcResultUnshared">;
  rack: Pick<RackModel, "reports" | "bmcResultUnshared">;
}): RackCost {
  const { simulatedUsd, simulated, rack } = input;
  const reports = rack.reports - simulated.reports;
  const moments = rack.bmcResultUnshared - simulated.bmcResultUnshared;
  const added =
    reports * (PRICE.iotMessage + PRICE.iotRule + PRICE.iotAction + PRICE.sqsRequest) +
    moments * (LAMBDA_PRICE + REPORT_WRITE_WRU * PRICE.wru);
  const broker = simulatedUsd + added;
  return { broker, basicIngest: broker - rack.reports * PRICE.iotMessage, added };
}
