/**
 * Virtual time for the fleet simulation (bench/fleet.ts): a `Clock` (src/app/ports/clock.ts) whose
 * timers fire in time order as fast as the process can run them, so hours of 10-minute flashes run
 * in seconds. The product's code runs unchanged on it: what it awaits is a timer of this clock (a
 * store call's latency, a flash), a microtask, or an immediate or I/O request `settle` waits out.
 *
 * `run` fires the earliest timers (all of one instant at once), then lets the work they started
 * settle before the clock moves on (`settle`), and again, until `done()` or no timer is left.
 *
 *   const time = new VirtualTime(0); time.after(50, f); time.after(10, g)
 *   await time.run(() => false) → g at 10, then f at 50; time.now() = 50
 */
import type { Clock } from "../../src/app/ports.js";

/**
 * Macrotask turns a settle takes at most: a chain of immediates or I/O requests that is still
 * going after this many (work of the process's own, not of the fired timers) does not hold the
 * clock back for ever.
 */
const MAX_SETTLE_TURNS = 10_000;

/**
 * What makes work wait for a macrotask turn rather than a microtask: a pending `setImmediate`, or
 * an I/O request in flight (a file read, a DNS lookup: FSReqCallback, FSReqPromise,
 * GetAddrInfoReqWrap, ...). Long-lived handles (sockets, pipes, real timers) are not work in flight.
 */
function macrotaskPending(): boolean {
  return process.getActiveResourcesInfo().some((r) => r === "Immediate" || r.includes("Req"));
}

interface Timer {
  at: number;
  seq: number;
  fire: () => void;
  cancelled: boolean;
}

export class VirtualTime implements Clock {
  private current: number;
  private seq = 0;
  private readonly heap: Timer[] = [];

  constructor(start: number) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  after(ms: number, fire: () => void): () => void {
    const timer: Timer = { at: this.current + Math.max(0, ms), seq: this.seq++, fire, cancelled: false };
    this.push(timer);
    return () => {
      timer.cancelled = true;
    };
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.after(ms, resolve));
  }

  /** Runs timers until `done()` is true, no timer is left, or the clock passes `until`. */
  async run(done: () => boolean, until = Number.POSITIVE_INFINITY): Promise<void> {
    for (;;) {
      await this.settle();
      if (done()) return;
      const first = this.pop();
      if (first === undefined || first.at > until) return;
      this.current = Math.max(this.current, first.at);
      const due = [first];
      while (this.heap.length > 0 && (this.heap[0] as Timer).at <= this.current)
        due.push(this.pop() as Timer);
      for (const timer of due) if (!timer.cancelled) timer.fire();
    }
  }

  /**
   * Lets what the fired timers started run until it waits on this clock again (or ends). One
   * `setImmediate` turn runs every microtask (Node takes the next macrotask only once the microtask
   * queue is empty), but not work that goes through a macrotask on its way to its next timer (an
   * await of a `setImmediate`, of a file read): its turn comes after this one, and the clock would
   * move past the instant it was due to set its timer at. So: turns while one is pending, bounded.
   */
  private async settle(): Promise<void> {
    for (let turn = 0; turn < MAX_SETTLE_TURNS; turn++) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (!macrotaskPending()) return;
    }
  }

  private before(a: Timer, b: Timer): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  private push(timer: Timer): void {
    const heap = this.heap;
    heap.push(timer);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(heap[i] as Timer, heap[parent] as Timer)) break;
      [heap[i], heap[parent]] = [heap[parent] as Timer, heap[i] as Timer];
      i = parent;
    }
  }

  private pop(): Timer | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined || heap.length === 0) return top;
    heap[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && this.before(heap[l] as Timer, heap[m] as Timer)) m = l;
      if (r < heap.length && this.before(heap[r] as Timer, heap[m] as Timer)) m = r;
      if (m === i) return top;
      [heap[i], heap[m]] = [heap[m] as Timer, heap[i] as Timer];
      i = m;
    }
  }
}

/** A seeded generator of uniform [0, 1) numbers (mulberry32): the same seed, the same run. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A latency distribution given by its median and 99th percentile: log-normal through both. */
export interface Latency {
  p50: number;
  p99: number;
}

/** Draws from `latency` with `random` (Box-Muller; z of the 99th percentile = 2.326). */
export function drawLatency(latency: Latency, random: () => number): number {
  if (latency.p99 <= latency.p50) return latency.p50;
  const sigma = Math.log(latency.p99 / latency.p50) / 2.326;
  const z = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  return latency.p50 * Math.exp(sigma * z);
}
