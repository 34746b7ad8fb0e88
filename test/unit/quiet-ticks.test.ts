/**
 * The local stack's quiet ticks (local/quiet-ticks.ts): a tick is left out only when the due
 * index would answer nothing. On the in-memory run store (its due index as the DynamoDB one), a
 * clock the test sets, and a pass that defers every run it finds by 500 ms: each tick is checked
 * against `listDueRunIds` itself, so a quiet tick that skipped a due run fails the test.
 */
import { describe, expect, it } from "vitest";
import { quietTicks } from "../../local/quiet-ticks.js";
import type { TickResult } from "../../src/app/dispatcher.js";
import type { RunStore } from "../../src/app/ports.js";
import { runWithTargets, uuid } from "../support/dynamodb-fixtures.js";
import { MemoryRunStore } from "../support/memory-stores.js";

const TICK_MS = 150;
const DEFER_MS = 500;

function world() {
  let now = 0;
  const store = new MemoryRunStore();
  const quiet = quietTicks({ clock: { now: () => now }, backstopMs: 1_000 });
  const runs: RunStore = quiet.watch(store);
  /** The dispatcher's tick reduced to its schedule: each due run read, then deferred. */
  const pass = async (): Promise<TickResult> => {
    const ids = await runs.listDueRunIds(now);
    for (const id of ids) {
      const read = await runs.getRunForDispatch(id);
      if (read !== undefined) await runs.deferRun(id, read.schedule.mark, now + DEFER_MS);
    }
    return { runs: ids.length, failed: 0, submitted: 0 };
  };
  /** One tick at `at`: "pass" or "quiet", after checking a quiet one against the index. */
  const tickAt = async (at: number): Promise<"pass" | "quiet"> => {
    now = at;
    const due = await store.listDueRunIds(at);
    const result = await quiet.tick(pass);
    if (result === undefined) {
      expect(due, `quiet tick at ${at} ms with runs due`).toEqual([]);
      return "quiet";
    }
    return "pass";
  };
  const ticks = async (from: number, to: number) => {
    const seen: string[] = [];
    for (let at = from; at <= to; at += TICK_MS) seen.push(`${at}:${await tickAt(at)}`);
    return seen;
  };
  return { store, quiet, ticks, tickAt };
}

describe("quiet ticks", () => {
  it("a run deferred by a pass gets a pass at the first tick at or after its time, and the ticks between are quiet", async () => {
    const w = world();
    const { run, targets } = runWithTargets(uuid(1, "q0000000"), { phaseSizes: [1] });
    await w.store.createRun(run, targets);
    w.quiet.wrote();
    // 0: the first tick passes (finds the run, defers it to 500); 150: passes (the last one found
    // a run) and finds none; then quiet until 600, the first tick past 500; and so on.
    expect(await w.ticks(0, 1_200)).toEqual([
      "0:pass",
      "150:pass",
      "300:quiet",
      "450:quiet",
      "600:pass",
      "750:pass",
      "900:quiet",
      "1050:quiet",
      "1200:pass",
    ]);
    expect(w.quiet.stats).toEqual({ passes: 5, quiet: 4 });
  });

  it("a write heard of makes the next tick a pass", async () => {
    const w = world();
    expect(await w.ticks(0, 300)).toEqual(["0:pass", "150:quiet", "300:quiet"]);
    const { run, targets } = runWithTargets(uuid(2, "q0000000"), { phaseSizes: [1] });
    await w.store.createRun(run, targets);
    w.quiet.wrote();
    expect(await w.tickAt(450)).toBe("pass");
  });

  it("with nothing known to be due and nothing written, a pass at least once per backstop", async () => {
    const w = world();
    expect(await w.ticks(0, 1_200)).toEqual([
      "0:pass",
      "150:quiet",
      "300:quiet",
      "450:quiet",
      "600:quiet",
      "750:quiet",
      "900:quiet",
      "1050:pass",
      "1200:quiet",
    ]);
  });

  it("a pass that fails leaves the next tick a pass", async () => {
    const w = world();
    expect(await w.ticks(0, 150)).toEqual(["0:pass", "150:quiet"]);
    w.quiet.wrote();
    await expect(w.quiet.tick(() => Promise.reject(new Error("store down")))).rejects.toThrow("store down");
    expect(await w.tickAt(450)).toBe("pass");
  });

  it("watch passes every other call through to the store", async () => {
    const w = world();
    const { run, targets } = runWithTargets(uuid(3, "q0000000"), { phaseSizes: [1] });
    const watched = w.quiet.watch(w.store);
    await watched.createRun(run, targets);
    expect((await watched.getRun(run.id))?.id).toBe(run.id);
    expect(await watched.listActiveRunIds()).toEqual([run.id]);
  });
});
