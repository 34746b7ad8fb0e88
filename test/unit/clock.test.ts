/**
 * The clocks behind the `Clock` port: the system clock every deployable runs on, and the shiftable
 * one the local stack can be started with (local/clock.ts), which window and schedule tests jump.
 * Timers are observed by what they do (a promise each fires), never by waiting and seeing nothing.
 */
import { describe, expect, it, vi } from "vitest";
import { shiftableClock } from "../../local/clock.js";
import { systemClock } from "../../src/adapters/system-clock.js";

/** A timer's firing as a promise of the clock's time at that moment. */
function firing(after: (fire: () => void) => () => void, now: () => number) {
  let cancel = () => {};
  const fired = new Promise<number>((resolve) => {
    cancel = after(() => resolve(now()));
  });
  return { fired, cancel };
}

describe("systemClock", () => {
  it("reads the platform's time, fires a timer once its time has passed, and cancels one", async () => {
    const before = Date.now();
    const read = systemClock.now();
    expect(read).toBeGreaterThanOrEqual(before);
    expect(read).toBeLessThanOrEqual(Date.now());
    const fired: string[] = [];
    const cancel = systemClock.after(1, () => fired.push("cancelled"));
    cancel();
    const kept = firing((fire) => systemClock.after(20, fire), systemClock.now);
    expect(await kept.fired).toBeGreaterThanOrEqual(read + 20);
    // The cancelled one was due first and would have fired before the kept one.
    expect(fired).toEqual([]);
  });
});

describe("systemClock: a platform timer that fires early", () => {
  it("is armed again for the rest, so the call never runs before Date.now() shows its time", async () => {
    // Date.now() as the clock reads it: when armed, when the platform first fires (1 ms short),
    // then on time.
    const readings = [1_000, 1_019, 1_020];
    const now = vi
      .spyOn(Date, "now")
      .mockImplementation(() => (readings.length > 1 ? readings.shift() : readings[0]) as number);
    try {
      const firedAt = await new Promise<number>((resolve) =>
        systemClock.after(20, () => resolve(Date.now())),
      );
      expect(firedAt).toBe(1_020);
    } finally {
      now.mockRestore();
    }
  });
});

describe("shiftableClock", () => {
  it("runs at the wall clock's rate until it jumps; a jump moves it ahead, never back", () => {
    const clock = shiftableClock();
    const before = Date.now();
    const read = clock.now();
    expect(read).toBeGreaterThanOrEqual(before);
    expect(read).toBeLessThanOrEqual(Date.now());

    const target = read + 3_600_000;
    clock.advanceTo(target);
    const jumped = clock.now();
    expect(jumped).toBeGreaterThanOrEqual(target);
    clock.advanceTo(read);
    expect(clock.now()).toBeGreaterThanOrEqual(jumped);
  });

  it("a jump fires the timers it passes, at or after their time on the clock; the others later", async () => {
    const clock = shiftableClock();
    const start = clock.now();
    const soon = firing((fire) => clock.after(60_000, fire), clock.now);
    const later = firing((fire) => clock.after(3_600_000, fire), clock.now);
    const order: string[] = [];
    void soon.fired.then(() => order.push("soon"));
    void later.fired.then(() => order.push("later"));

    clock.advanceTo(start + 60_000);
    expect(await soon.fired).toBeGreaterThanOrEqual(start + 60_000);
    clock.advanceTo(start + 3_600_000);
    expect(await later.fired).toBeGreaterThanOrEqual(start + 3_600_000);
    expect(order).toEqual(["soon", "later"]);
  });

  it("a cancelled timer never fires, neither by a jump nor by the wall clock", async () => {
    const clock = shiftableClock();
    const start = clock.now();
    const fired: string[] = [];
    const cancel = clock.after(1, () => fired.push("cancelled"));
    cancel();
    const kept = firing((fire) => clock.after(10, fire), clock.now);
    clock.advanceTo(start + 60_000);
    await kept.fired;
    // Both were due by the jump and would have fired in the order set; only the kept one did.
    expect(fired).toEqual([]);
  });

  it("a jump that stops short of a timer brings it nearer: it fires when what is left has passed", async () => {
    const clock = shiftableClock();
    const start = clock.now();
    const near = firing((fire) => clock.after(3_600_000, fire), clock.now);
    // 20 ms short of the timer on the clock: it fires about 20 ms later, not an hour later.
    clock.advanceTo(start + 3_600_000 - 20);
    expect(await near.fired).toBeGreaterThanOrEqual(start + 3_600_000);
  });

  it("a timer fires by the wall clock too, without a jump", async () => {
    const clock = shiftableClock();
    const start = clock.now();
    expect(await firing((fire) => clock.after(5, fire), clock.now).fired).toBeGreaterThanOrEqual(start + 5);
  });
});
