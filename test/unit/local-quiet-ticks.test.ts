/**
 * The local stack's quiet ticks (local/quiet-ticks.ts): which ticks reach the dispatcher, on the
 * test's clock, with a scripted dispatcher tick.
 */
import { describe, expect, it } from "vitest";
import { quietTicks } from "../../local/quiet-ticks.js";
import type { TickResult } from "../../src/app/dispatcher.js";

const IDLE: TickResult = { runs: 0, failed: 0, submitted: 0 };

/** Quiet ticks over a dispatcher tick that answers `answers()` and counts its calls. */
function world(answers: () => TickResult, during?: () => void) {
  const clock = { now: 1_000_000 };
  let ticks = 0;
  const quiet = quietTicks({
    tick: async () => {
      ticks += 1;
      during?.();
      return answers();
    },
    now: () => clock.now,
    maxQuietMs: 5_000,
  });
  /** One ticker tick at `at`; true if it reached the dispatcher. */
  const tickAt = async (at: number): Promise<boolean> => {
    clock.now = at;
    const before = ticks;
    await quiet.tick();
    return ticks > before;
  };
  return { clock, quiet, tickAt };
}

describe("quiet ticks", () => {
  it("after a tick with nothing due and none falling due: no tick for maxQuietMs, then one", async () => {
    const w = world(() => IDLE);
    expect(await w.tickAt(1_000_000)).toBe(true);
    for (const at of [1_000_150, 1_002_000, 1_004_999]) expect(await w.tickAt(at), `at ${at}`).toBe(false);
    expect(await w.tickAt(1_005_000)).toBe(true);
    expect(w.quiet.skipped).toBe(3);
  });

  it("a run falling due within the quiet: the tick at its time reads, not one before", async () => {
    const w = world(() => ({ ...IDLE, nextDueAt: 1_001_200 }));
    expect(await w.tickAt(1_000_000)).toBe(true);
    expect(await w.tickAt(1_001_199)).toBe(false);
    expect(await w.tickAt(1_001_200)).toBe(true);
  });

  it("a write of the runs table ends the quiet: the next tick reads", async () => {
    const w = world(() => IDLE);
    expect(await w.tickAt(1_000_000)).toBe(true);
    expect(await w.tickAt(1_000_150)).toBe(false);
    w.quiet.wrote();
    expect(await w.tickAt(1_000_300)).toBe(true);
    expect(await w.tickAt(1_000_450)).toBe(false);
  });

  it("a tick that passed runs leaves no quiet", async () => {
    const w = world(() => ({ runs: 1, failed: 0, submitted: 1 }));
    for (const at of [1_000_000, 1_000_150, 1_000_300]) expect(await w.tickAt(at), `at ${at}`).toBe(true);
  });

  it("a write made while a tick reads leaves no quiet after it (the read may have missed it)", async () => {
    let write: (() => void) | undefined;
    const w = world(
      () => IDLE,
      () => write?.(),
    );
    write = () => w.quiet.wrote();
    expect(await w.tickAt(1_000_000)).toBe(true);
    write = undefined;
    expect(await w.tickAt(1_000_150)).toBe(true);
    expect(await w.tickAt(1_000_300)).toBe(false);
  });

  it("a failed tick leaves no quiet", async () => {
    let fail = true;
    const w = world(() => {
      if (fail) throw new Error("store down");
      return IDLE;
    });
    await expect(w.tickAt(1_000_000)).rejects.toThrow("store down");
    fail = false;
    expect(await w.tickAt(1_000_150)).toBe(true);
    expect(await w.tickAt(1_000_300)).toBe(false);
  });
});
