/**
 * bench:fleet's rates of what a rack's child task does, per second of a simulated scenario: its
 * share of each second (every child task's traffic spread evenly over its flash), the reports'
 * batches that share decides (bmc-result invocations), and the Step Functions callbacks those
 * batches send (SendTaskHeartbeat, SendTaskSuccess), held against a token bucket.
 *
 * The batching (the reports queue's event source mapping): a second's reports are taken by the
 * mapping's pollers, 5 at first, each handing its own batch of up to 1,000 (gathered for at most
 * the 1-s window) to an invocation; more batches when the second's reports overflow them. The
 * reports of one moment (a wave's acknowledgements, one progress of it, its results: sent within
 * the same second, minutes from the next) are dealt among that second's batches at random, so a
 * moment of 18 reports lands in ~4.9 batches of 5, one of a single report in one. A batch is one
 * invocation whatever moments it holds: racks in flight together share them.
 *
 * Poisson, per batch: the moments of a second arrive independently, a moment of n reports puts at
 * least one in a given batch of b with probability 1 − (1 − 1/b)^n, so a batch is empty with
 * probability exp(−Σ moments·(1 − (1 − 1/b)^n)). Few moments a second: about one invocation per
 * batch a moment touches; many: every batch of the second is one.
 *
 * SendTaskHeartbeat, now (`heartbeatDue`: one a wait a heartbeat interval, decided by its
 * record's writes): a moment that does not complete its wait sends one whatever the batches it
 * lands in (the moment's first write in its interval: ReportMoment.heartbeats); a terminal moment
 * one when its reports land in more than one batch, with probability 1 − b^(1−n) (all n in one of
 * b: b·(1/b)^n), its first batch storing results that do not complete the wait. Before, one
 * per batch a moment touched but the batch that completed the wait (`heartbeatsPerBatch`), the
 * preflight's too: printed beside it.
 */
import type { RackCallbacks, RackModel } from "./rack-model.js";

export interface ReportBatching {
  /** The mapping's batch size, and the pollers a second's reports are dealt among. */
  size: number;
  pollers: number;
}

/** A rack's traffic: the model's counts and its waits' callbacks. */
export type RackTraffic = Pick<RackModel, "reports"> & RackCallbacks;

/**
 * Per second of a scenario of `seconds`, how many racks' child tasks it holds: each flash [from, to]
 * (ms) puts 1/span of its rack in each of its seconds, as the rates spread a rack's traffic.
 */
export function rackShares(flashes: readonly (readonly [number, number])[], seconds: number): Float64Array {
  const shares = new Float64Array(seconds);
  for (const [from, to] of flashes) {
    const a = Math.floor(from / 1000);
    const b = Math.max(a + 1, Math.floor(to / 1000));
    const span = b - a;
    for (let s = a; s < b && s < seconds; s++) shares[s]! += 1 / span;
  }
  return shares;
}

/** The batches a second's `reports` are dealt among: one a poller, more when they overflow them. */
export function batchesFor(reports: number, batching: ReportBatching): number {
  return Math.max(batching.pollers, Math.ceil(reports / batching.size));
}

/** Of `batches`, how many hold at least one of `reports` dealt among them at random. */
export function touched(batches: number, reports: number): number {
  return batches * (1 - (1 - 1 / batches) ** reports);
}

export interface SecondCallbacks {
  /** bmc-result invocations: the second's batches that hold a report. */
  invocations: number;
  /** SendTaskHeartbeat: one a moment's wait an interval (see the module comment). */
  heartbeats: number;
  /** SendTaskHeartbeat before: per moment, the batches it touches, less the one that completes the wait. */
  heartbeatsPerBatch: number;
  /** SendTaskSuccess: one a wait. */
  wakeUps: number;
}

/** What a second holding `share` racks' child tasks sends (expected values; see the module comment). */
export function callbacksInSecond(
  share: number,
  rack: RackTraffic,
  batching: ReportBatching,
): SecondCallbacks {
  if (share <= 0) return { invocations: 0, heartbeats: 0, heartbeatsPerBatch: 0, wakeUps: 0 };
  const reports = share * rack.reports;
  const b = batchesFor(reports, batching);
  let landing = 0;
  let heartbeats = 0;
  let perBatch = 0;
  for (const m of rack.moments) {
    const hit = touched(b, m.reports);
    landing += (m.count * hit) / b;
    // A terminal moment's last batch completes the wait (a wake-up); its first, when it is another, keeps it.
    heartbeats += m.terminal ? m.heartbeats * (1 - b ** (1 - m.reports)) : m.heartbeats;
    perBatch += m.count * (hit - (m.terminal ? 1 : 0));
  }
  return {
    invocations: b * (1 - Math.exp(-share * landing)),
    heartbeats: share * heartbeats,
    heartbeatsPerBatch: share * perBatch,
    wakeUps: share * rack.waits,
  };
}

export interface CallbackSeries {
  invocations: Float64Array;
  heartbeats: Float64Array;
  heartbeatsPerBatch: Float64Array;
  wakeUps: Float64Array;
}

/** callbacksInSecond over every second of `shares`. */
export function callbackSeries(
  shares: Float64Array,
  rack: RackTraffic,
  batching: ReportBatching,
): CallbackSeries {
  const out = {
    invocations: new Float64Array(shares.length),
    heartbeats: new Float64Array(shares.length),
    heartbeatsPerBatch: new Float64Array(shares.length),
    wakeUps: new Float64Array(shares.length),
  };
  shares.forEach((share, s) => {
    const c = callbacksInSecond(share, rack, batching);
    out.invocations[s] = c.invocations;
    out.heartbeats[s] = c.heartbeats;
    out.heartbeatsPerBatch[s] = c.heartbeatsPerBatch;
    out.wakeUps[s] = c.wakeUps;
  });
  return out;
}

/**
 * Calls a token bucket refuses of a per-second demand: it starts full, refills `perSecond` a
 * second up to `burst`, and serves what it holds. A refused SendTaskHeartbeat is logged and lost
 * (its wait may time out into an early check); a refused SendTaskSuccess fails the batch, which
 * the queue delivers again.
 */
export function bucketRefusals(
  demand: ArrayLike<number>,
  bucket: { burst: number; perSecond: number },
): number {
  let tokens = bucket.burst;
  let refused = 0;
  for (let s = 0; s < demand.length; s++) {
    const asked = demand[s]!;
    const served = Math.min(tokens, asked);
    refused += asked - served;
    tokens = Math.min(bucket.burst, tokens - served + bucket.perSecond);
  }
  return refused;
}

function sum(a: ArrayLike<number>): number {
  let total = 0;
  for (let i = 0; i < a.length; i++) total += a[i]!;
  return total;
}

/**
 * Lambda invocations per rack of a scenario of `racks` racks: the task-steps of the rack model and
 * bmc-result's share of the batches its seconds held.
 */
export function invocationsPerRack(
  rack: Pick<RackModel, "taskSteps">,
  series: Pick<CallbackSeries, "invocations">,
  racks: number,
): { taskSteps: number; bmcResult: number; total: number } {
  const bmcResult = sum(series.invocations) / racks;
  return { taskSteps: rack.taskSteps, bmcResult, total: rack.taskSteps + bmcResult };
}

/**
 * Per rack of a scenario: its heartbeats (now, and one a batch as before) and wake-ups, and the
 * receiver's writes of its command sets: one per set a batch touches (receiving.ts), so every
 * batch a moment lands in, which was a heartbeat or, for the one that completes a wait, its
 * wake-up.
 */
export function callbacksPerRack(
  series: CallbackSeries,
  racks: number,
): { heartbeats: number; heartbeatsPerBatch: number; wakeUps: number; reportWrites: number } {
  const heartbeats = sum(series.heartbeats) / racks;
  const heartbeatsPerBatch = sum(series.heartbeatsPerBatch) / racks;
  const wakeUps = sum(series.wakeUps) / racks;
  return { heartbeats, heartbeatsPerBatch, wakeUps, reportWrites: heartbeatsPerBatch + wakeUps };
}
