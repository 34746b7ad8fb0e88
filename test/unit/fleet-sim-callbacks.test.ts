/**
 * bench:fleet's per-second rates of a rack's child task (bench/lib/fleet-rates.ts): the racks a
 * second holds, the batches its reports are dealt among, the bmc-result invocations, SendTaskHeartbeat
 * and SendTaskSuccess those batches send, the calls a token bucket refuses, and the per-rack sums.
 * Pure arithmetic: no random draw.
 */
import { describe, expect, it } from "vitest";
import { perRack } from "../../bench/lib/fleet-racks.js";
import {
  batchesFor,
  bucketRefusals,
  callbackSeries,
  callbacksInSecond,
  callbacksPerRack,
  invocationsPerRack,
  type RackTraffic,
  rackShares,
  touched,
} from "../../bench/lib/fleet-rates.js";

const BATCHING = { size: 1_000, pollers: 5 };

/** One wait of a wave of 18: its acknowledgement (not terminal) and its results (terminal). */
const WAVE: RackTraffic = {
  reports: 36,
  waits: 1,
  moments: [
    { reports: 18, count: 1, terminal: false, heartbeats: 1 },
    { reports: 18, count: 1, terminal: true, heartbeats: 1 },
  ],
  heartbeatsOneBatchAMoment: 1,
};

describe("the racks a second holds", () => {
  it("a flash puts 1/span of its rack in each of its seconds; one shorter than a second, all of it in its first", () => {
    const shares = rackShares(
      [
        [0, 3_000],
        [1_500, 1_600],
      ],
      4,
    );
    expect(Array.from(shares)).toEqual([1 / 3, 1 / 3 + 1, 1 / 3, 0]);
  });
});

describe("report batches", () => {
  it("a second's reports are dealt among the 5 pollers' batches, more when they overflow batches of 1,000", () => {
    expect([batchesFor(0.5, BATCHING), batchesFor(5_000, BATCHING), batchesFor(5_850, BATCHING)]).toEqual([
      5, 5, 6,
    ]);
  });

  it("a moment of one report touches one batch; of 18, 5·(1 − 0.8^18) of 5", () => {
    expect(touched(5, 1)).toBeCloseTo(1, 12);
    expect(touched(5, 18)).toBeCloseTo(5 * (1 - 0.8 ** 18), 12);
    expect(touched(6, 39)).toBeCloseTo(6 * (1 - (5 / 6) ** 39), 12);
  });
});

describe("a second's callbacks", () => {
  it("a whole wave in a second: a heartbeat for its acknowledgements whatever the batches they touch, one for its results when they land in more than one batch (1 − 5^−17), one SendTaskSuccess; before, one per batch each touched but the last", () => {
    const c = callbacksInSecond(1, WAVE, BATCHING);
    expect(c.heartbeats).toBeCloseTo(1 + (1 - 5 ** -17), 12);
    expect(c.heartbeatsPerBatch).toBeCloseTo(2 * touched(5, 18) - 1, 12);
    expect(c.wakeUps).toBe(1);
    // Its two moments, each in ~4.9 of the 5 batches: a batch is empty with e^(-2·0.98).
    expect(c.invocations).toBeCloseTo(5 * (1 - Math.exp(-2 * (touched(5, 18) / 5))), 12);
  });

  it("few racks a second: about one invocation per batch each moment touches (no batch shared)", () => {
    const share = 1e-4;
    const c = callbacksInSecond(share, WAVE, BATCHING);
    expect(c.invocations / (share * 2 * touched(5, 18))).toBeCloseTo(1, 3);
  });

  it("many racks a second: every batch holds reports, one invocation each, however many moments", () => {
    const c = callbacksInSecond(100, WAVE, BATCHING);
    expect(c.invocations).toBeCloseTo(5, 9);
    const overflowing = callbacksInSecond(200, WAVE, BATCHING); // 7,200 reports: 8 batches
    expect(overflowing.invocations).toBeCloseTo(8, 9);
    expect(overflowing.heartbeats).toBeCloseTo(200 * (1 + (1 - 8 ** -17)), 9);
    expect(overflowing.heartbeatsPerBatch).toBeCloseTo(200 * (2 * touched(8, 18) - 1), 9);
    expect(overflowing.wakeUps).toBe(200);
  });

  it("a second with no rack sends nothing", () => {
    expect(callbacksInSecond(0, WAVE, BATCHING)).toEqual({
      invocations: 0,
      heartbeats: 0,
      heartbeatsPerBatch: 0,
      wakeUps: 0,
    });
  });

  it("one a wait an interval: a wait without a heartbeat (the preflight's) sends none; a single report's results none (one batch completes the wait); a moment's heartbeats count as the rack model caps them", () => {
    const preflight: RackTraffic = {
      reports: 39,
      waits: 1,
      moments: [{ reports: 39, count: 1, terminal: true, heartbeats: 0 }],
      heartbeatsOneBatchAMoment: 0,
    };
    const c = callbacksInSecond(1, preflight, BATCHING);
    expect(c.heartbeats).toBe(0);
    // Before: every batch its answers touched but the one completing the wait.
    expect(c.heartbeatsPerBatch).toBeCloseTo(touched(5, 39) - 1, 12);
    const single: RackTraffic = {
      reports: 12,
      waits: 1,
      moments: [
        { reports: 1, count: 11, terminal: false, heartbeats: 11 },
        { reports: 1, count: 1, terminal: true, heartbeats: 1 },
      ],
      heartbeatsOneBatchAMoment: 11,
    };
    expect(callbacksInSecond(1, single, BATCHING).heartbeats).toBe(11);
  });
});

describe("the token bucket", () => {
  it("starts full (3,000), refills 500 a second up to it, and refuses what it does not hold", () => {
    const bucket = { burst: 3_000, perSecond: 500 };
    // 3,600 asked at once: 600 refused; then 500 a second held; 600 a second: 100 refused each.
    expect(bucketRefusals([3_600], bucket)).toBe(600);
    expect(bucketRefusals([3_600, 500, 500, 600, 600], bucket)).toBe(600 + 100 + 100);
    // A burst after quiet seconds is served from the refilled bucket.
    expect(bucketRefusals([3_000, 0, 0, 0, 0, 0, 0, 3_000], bucket)).toBe(0);
  });
});

describe("per rack", () => {
  it("a scenario's invocations: the rack's task-steps and its share of the batches; its callbacks summed over its seconds", () => {
    const series = callbackSeries(Float64Array.from([1, 1, 0]), WAVE, BATCHING);
    const lambda = invocationsPerRack({ taskSteps: 5 }, series, 2);
    const one = callbacksInSecond(1, WAVE, BATCHING);
    expect(lambda.taskSteps).toBe(5);
    expect(lambda.bmcResult).toBeCloseTo(one.invocations, 12);
    expect(lambda.total).toBeCloseTo(5 + one.invocations, 12);
    const callbacks = callbacksPerRack(series, 2);
    expect(callbacks.heartbeats).toBeCloseTo(one.heartbeats, 12);
    expect(callbacks.heartbeatsPerBatch).toBeCloseTo(one.heartbeatsPerBatch, 12);
    expect(callbacks.wakeUps).toBe(1);
    // Every batch each moment lands in writes the set: 2 moments of 18, ~4.9 batches each.
    expect(callbacks.reportWrites).toBeCloseTo(2 * touched(5, 18), 12);
    const figures = perRack({ taskSteps: 5 }, series, 2, { burst: 1, perSecond: 1 });
    expect(figures.peakHeartbeats).toBeCloseTo(one.heartbeats, 12);
    // A bucket of 1, refilled 1 a second: of ~2 a second, all but one a second refused.
    expect(figures.refusedHeartbeats).toBeCloseTo(2 * one.heartbeats - 2, 9);
  });
});
