/**
 * The fleet simulation's parts (bench/lib/virtual-time.ts, latency-store.ts, fleet-sim.ts), and
 * the tick's aim at scale on them: with 1,000 active runs, a tick with 100 runs to serve finishes
 * within 2 s of simulated DynamoDB latency. Every random draw is seeded (the seed is in the name).
 */
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { runScenario } from "../../bench/lib/fleet-sim.js";
import { withLatency } from "../../bench/lib/latency-store.js";
import { MemoryRunStore } from "../../bench/lib/memory-run-store.js";
import { percentile } from "../../bench/lib/stats.js";
import { drawLatency, seededRandom, VirtualTime } from "../../bench/lib/virtual-time.js";
import { createDispatcher } from "../../src/app/dispatcher.js";
import { runInState } from "../support/run-states.js";
import { ScriptedSubmitter } from "../support/scripted-submitter.js";

const SEED = 11;
const DYNAMO = {
  GetItem: { p50: 4, p99: 12 },
  Query: { p50: 5, p99: 15 },
  UpdateItem: { p50: 6, p99: 18 },
  TransactWriteItems: { p50: 12, p99: 36 },
};

describe("virtual time", () => {
  it("fires timers in time order, one instant's in the order they were set, and never a cancelled one", async () => {
    const time = new VirtualTime(1_000);
    const fired: string[] = [];
    time.after(50, () => fired.push("b@50"));
    time.after(10, () => fired.push("a@10"));
    time.after(50, () => fired.push("c@50"));
    const cancel = time.after(20, () => fired.push("never"));
    cancel();
    await time.run(() => false);
    expect(fired).toEqual(["a@10", "b@50", "c@50"]);
    expect(time.now()).toBe(1_050);
  });

  it("awaits inside fired timers settle before the next instant", async () => {
    const time = new VirtualTime(0);
    const seen: number[] = [];
    void (async () => {
      await time.sleep(5);
      seen.push(time.now());
      await Promise.resolve();
      await time.sleep(5);
      seen.push(time.now());
    })();
    time.after(7, () => seen.push(-7));
    await time.run(() => false);
    expect(seen).toEqual([5, -7, 10]);
  });

  it("work that reaches its next timer through macrotasks (immediates, a file read) sets it before the clock moves on", async () => {
    const time = new VirtualTime(0);
    const seen: (number | string)[] = [];
    void (async () => {
      await time.sleep(5);
      await new Promise<void>((resolve) => setImmediate(resolve));
      await new Promise<void>((resolve) => setImmediate(resolve));
      const source = await readFile(fileURLToPath(import.meta.url), "utf8");
      seen.push(source.includes("through macrotasks") ? "read" : "not read");
      await time.sleep(1);
      seen.push(time.now());
    })();
    time.after(7, () => seen.push(-7));
    await time.run(() => false);
    expect(seen).toEqual(["read", 6, -7]);
  });
});

describe(`latency draws (seed ${SEED})`, () => {
  it("10,000 draws have the stated median and 99th percentile within 10 %", () => {
    const random = seededRandom(SEED);
    const draws = Array.from({ length: 10_000 }, () => drawLatency({ p50: 10, p99: 40 }, random));
    expect(percentile(draws, 50)).toBeGreaterThan(9);
    expect(percentile(draws, 50)).toBeLessThan(11);
    expect(percentile(draws, 99)).toBeGreaterThan(36);
    expect(percentile(draws, 99)).toBeLessThan(44);
  });
});

/**
 * What these tests measure is on the virtual clock and the same on any machine; their wall time is
 * the machine's: 0.5 to 2 s each alone, more in a coverage run beside other work on 2 cores, where
 * vitest's default of 5 s a test is no bound on anything they check.
 */
const WALL_TIMEOUT_MS = 60_000;

describe(`the tick at scale on simulated DynamoDB latency (seed ${SEED})`, {
  timeout: WALL_TIMEOUT_MS,
}, () => {
  it("1,000 active runs, 100 of them with a slot just freed: one tick serves the 100 within 2 s, reading no other run", async () => {
    const time = new VirtualTime(1_800_000_000_000);
    const memory = new MemoryRunStore();
    const ids: string[] = [];
    for (let i = 0; i < 1000; i++) {
      const id = `f1ee7e57-0000-4000-8000-${String(i).padStart(12, "0")}`;
      const { run, targets } = runInState(id, {
        phases: [["SUBMITTED", "SUBMITTED", "SUBMITTED", "PENDING", "PENDING"]],
      });
      run.createdAt = run.updatedAt = time.now() - 1;
      await memory.createRun(run, targets);
      ids.push(id);
    }
    const runs = withLatency(memory, { clock: time, latency: DYNAMO, random: seededRandom(SEED) });
    const submitter = new ScriptedSubmitter();
    const dispatcher = createDispatcher({ runs, submitter, clock: time });
    const tick = async () => {
      const started = time.now();
      let done = false;
      const result = dispatcher.tick().finally(() => {
        done = true;
      });
      await time.run(() => done);
      return { result: await result, ms: time.now() - started };
    };
    await tick(); // the sweep: every run scheduled
    for (const id of ids.slice(0, 100)) {
      const listed = await memory.listTargets(id, {
        phaseFrom: 0,
        phaseTo: 0,
        page: { offset: 0, limit: 5 },
      });
      await memory.recordOutcome(id, listed!.targets[0]!.id, "COMPLETED", "done", time.now());
    }
    memory.calls.reset();
    const served = await tick();
    expect(served.result).toEqual({ runs: 100, failed: 0, submitted: 100 });
    expect(served.ms).toBeLessThanOrEqual(2_000);
    expect(memory.calls.of("getRunForDispatch")).toBe(100);
  });

  it("the harness finishes every run at its ideal makespan within 1 %, idle ticks costing one request", async () => {
    const time = new VirtualTime(1_800_000_000_000);
    const s = { runs: 20, racks: 20, concurrency: 10, flashMs: 600_000, tickMs: 10_000 };
    const result = await runScenario(s, {
      store: new MemoryRunStore(),
      clock: time,
      runUntil: (done) => time.run(done),
      latency: DYNAMO,
      invoke: { p50: 25, p99: 80 },
      startExecution: { p50: 40, p99: 120 },
      stream: { p50: 150, p99: 300 },
      random: seededRandom(SEED),
    });
    const ideal = 2 * s.flashMs;
    for (const ms of result.makespans) {
      expect(ms).toBeGreaterThanOrEqual(ideal);
      expect(ms).toBeLessThanOrEqual(ideal * 1.01);
    }
    expect(result.submits).toHaveLength(s.runs * s.racks);
    expect(percentile(result.tickRequests, 50)).toBe(1);
  });
});
