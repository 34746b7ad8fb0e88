/**
 * The rack model's variants for bench:fleet (bench/lib/rack-model.ts): the rack behind the Redfish
 * agent, whose flashes report their progress once a `progressIntervalMs` (docs/agent.md, "Progress,
 * paced"), and the Step Functions callbacks a rack's waits send (one SendTaskSuccess a wait, a
 * SendTaskHeartbeat per moment of a waiting wave, at most one a wait a minute), on
 * the GB200-shaped demo rack of 39 BMCs; and the cost of the agent's reports more
 * (bench/lib/rack-cost.ts).
 */
import { describe, expect, it } from "vitest";
import { costWithMoreReports, REPORT_WRITE_WRU } from "../../bench/lib/rack-cost.js";
import {
  agentProgressPerFlash,
  FLASH_HEARTBEAT_INTERVALS,
  modelAgentRack,
  modelRack,
  oneMessageAMoment,
  ROLLOUT_MAX_PARALLEL,
  rackCallbacks,
} from "../../bench/lib/rack-model.js";
import { LAMBDA_PRICE, PRICE } from "../../bench/lib/rollout-figures.js";
import { UPDATE_ONLY_RULE } from "../../bench/lib/rollout-rules.js";
import { generateDemoFleet } from "../../local/demo-fleet.js";
import { DEFAULT_RULE } from "../../src/domain/operation-rules.js";
import { DEFAULT_TIMINGS } from "../../src/service/bmc-agent/config.js";

const components = generateDemoFleet({ racks: 1 })[0]?.components ?? [];
const options = { maxParallel: ROLLOUT_MAX_PARALLEL, checksPerFlashStep: 1, path: "after" as const };

describe("progress a 10-minute flash behind the agent", () => {
  it("one an interval: 10 at the default 60 s, 5 at 120 s, 4 at the longest (150 s), every rise (99) at 0, as docs/agent.md's table", () => {
    expect(DEFAULT_TIMINGS.progressIntervalMs).toBe(60_000);
    expect([60_000, 120_000, 150_000, 0].map((interval) => agentProgressPerFlash(interval))).toEqual([
      10, 5, 4, 99,
    ]);
  });
});

describe("the rack behind the agent", () => {
  it("the default rule at 10 progress a flash: the 39 flashes' 7 reports more each (624 reports, 780 IoT messages), 7 moments more a flash wave (91), the same states and invocations", () => {
    const simulated = modelRack(DEFAULT_RULE, components, options);
    const agent = modelAgentRack(DEFAULT_RULE, components, { ...options, progressPerFlash: 10 });
    expect(agent).toEqual({
      ...simulated,
      reports: 351 + 39 * 7,
      iotMessages: 507 + 39 * 7,
      bmcResultUnshared: 49 + 6 * 7,
    });
    expect([agent.transitions, agent.taskSteps]).toEqual([25, 22]);
  });

  it("at 3 progress a flash it is the simulated BMCs' rack", () => {
    expect(modelAgentRack(UPDATE_ONLY_RULE, components, { ...options, progressPerFlash: 3 })).toEqual(
      modelRack(UPDATE_ONLY_RULE, components, options),
    );
  });
});

describe("a rack's callbacks", () => {
  it("the default rule: 19 waits (the preflight, 18 steps); 18 heartbeats at one batch a moment (6 flash waves' 3 progress; their acks and the activations' come in the wait's first interval); its moments are the model's", () => {
    const callbacks = rackCallbacks(DEFAULT_RULE, components, { maxParallel: ROLLOUT_MAX_PARALLEL });
    expect(callbacks.waits).toBe(19);
    expect(callbacks.heartbeatsOneBatchAMoment).toBe(6 * 3);
    const model = modelRack(DEFAULT_RULE, components, options);
    expect(callbacks.moments.reduce((sum, m) => sum + m.count, 0)).toBe(model.bmcResultUnshared);
    expect(callbacks.moments.reduce((sum, m) => sum + m.count * m.reports, 0)).toBe(model.reports);
    // One terminal moment a wait: the answers that complete it.
    expect(callbacks.moments.filter((m) => m.terminal).reduce((sum, m) => sum + m.count, 0)).toBe(19);
    // The compute trays' flash wave: 18 reports a moment, its ack and 3 progress not terminal,
    // the ack in the wait's first interval.
    expect(callbacks.moments).toContainEqual({ reports: 18, count: 4, terminal: false, heartbeats: 3 });
    // The preflight's answers: its wait (AwaitPreflight) has no heartbeat.
    expect(callbacks.moments[0]).toEqual({ reports: 39, count: 1, terminal: true, heartbeats: 0 });
  });

  it("one heartbeat a wait a minute: a flash wave's 99 progress reports (the agent's interval 0) send 10 (its 10 minutes' intervals after the wait's own), not one each", () => {
    expect(FLASH_HEARTBEAT_INTERVALS).toBe(11);
    const every = rackCallbacks(UPDATE_ONLY_RULE, components, {
      maxParallel: ROLLOUT_MAX_PARALLEL,
      progressPerFlash: 99,
    });
    expect(every.moments).toContainEqual({ reports: 18, count: 100, terminal: false, heartbeats: 10 });
    expect(every.heartbeatsOneBatchAMoment).toBe(6 * 10);
  });

  it("the update alone: 7 waits, 18 heartbeats; behind the agent (10 progress) 60", () => {
    const simulated = rackCallbacks(UPDATE_ONLY_RULE, components, { maxParallel: ROLLOUT_MAX_PARALLEL });
    const agent = rackCallbacks(UPDATE_ONLY_RULE, components, {
      maxParallel: ROLLOUT_MAX_PARALLEL,
      progressPerFlash: 10,
    });
    expect([simulated.waits, simulated.heartbeatsOneBatchAMoment]).toEqual([7, 18]);
    expect([agent.waits, agent.heartbeatsOneBatchAMoment]).toEqual([7, 6 * 10]);
  });

  it("waves of 8: the 18 compute trays' moments are of 8, 8 and 2 reports", () => {
    const callbacks = rackCallbacks(UPDATE_ONLY_RULE, components, { maxParallel: 8 });
    const compute = callbacks.moments.filter((m) => m.terminal).map((m) => m.reports);
    // The preflight (39), power shelves (8), switch trays (8, 1), compute (8, 8, 2), CDU, UMS, ToR (2).
    expect(compute).toEqual([39, 8, 8, 1, 8, 8, 2, 1, 1, 2]);
  });
});

describe("the agent rack's cost", () => {
  it("each report more an IoT message, rule, action and SQS request; each moment more an invocation and a write; Basic Ingest bills no report as a message", () => {
    const simulated = modelRack(DEFAULT_RULE, components, options);
    const agent = modelAgentRack(DEFAULT_RULE, components, { ...options, progressPerFlash: 10 });
    const cost = costWithMoreReports({ simulatedUsd: 0.00247, simulated, rack: agent });
    const added =
      273 * (PRICE.iotMessage + PRICE.iotRule + PRICE.iotAction + PRICE.sqsRequest) +
      42 * (LAMBDA_PRICE + REPORT_WRITE_WRU * PRICE.wru);
    expect(cost.added).toBeCloseTo(added, 12);
    expect(cost.broker).toBeCloseTo(0.00247 + added, 12);
    expect(cost.basicIngest).toBeCloseTo(0.00247 + added - 624 * PRICE.iotMessage, 12);
  });
});

describe("the agent rack with one message per rack per moment (reportFlushMs)", () => {
  const agentRack = (rule: typeof DEFAULT_RULE) => {
    const model = modelAgentRack(rule, components, { ...options, progressPerFlash: 10 });
    return {
      ...model,
      ...rackCallbacks(rule, components, { maxParallel: ROLLOUT_MAX_PARALLEL, progressPerFlash: 10 }),
    };
  };

  it("the default rule: its 624 reports travel in 91 messages, one a moment; 247 IoT messages with the 156 commands; each moment one message in the fleet's batches", () => {
    const one = agentRack(DEFAULT_RULE);
    const batched = oneMessageAMoment(one);
    expect([batched.reports, batched.carried, batched.iotMessages]).toEqual([91, 624, 156 + 91]);
    expect(batched.bmcResultUnshared).toBe(one.bmcResultUnshared);
    expect(batched.moments.every((m) => m.reports === 1)).toBe(true);
    expect(batched.moments.map((m) => m.count)).toEqual(one.moments.map((m) => m.count));
    // The same states, invocations, waits and heartbeats at one batch a moment.
    expect([
      batched.transitions,
      batched.taskSteps,
      batched.waits,
      batched.heartbeatsOneBatchAMoment,
    ]).toEqual([one.transitions, one.taskSteps, one.waits, one.heartbeatsOneBatchAMoment]);
  });

  it("costs each message, not each report, the IoT path: the update alone $0.00054 more becomes $0.00020 less than the simulated rack's", () => {
    const simulated = modelRack(UPDATE_ONLY_RULE, components, options);
    const batched = oneMessageAMoment(agentRack(UPDATE_ONLY_RULE));
    expect([batched.reports, batched.bmcResultUnshared]).toEqual([73, 73]);
    const cost = costWithMoreReports({ simulatedUsd: 0, simulated, rack: batched });
    const added =
      (73 - 234) * (PRICE.iotMessage + PRICE.iotRule + PRICE.iotAction + PRICE.sqsRequest) +
      (73 - 31) * (LAMBDA_PRICE + REPORT_WRITE_WRU * PRICE.wru);
    expect(cost.added).toBeCloseTo(added, 12);
    expect(cost.added.toFixed(5)).toBe("-0.00020");
  });
});
