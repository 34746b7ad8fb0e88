/**
 * The BMC agent's progress pacing against the Redfish emulator over MQTT and HTTPS, on a stepping
 * clock (bench/lib/stepping-clock.ts: every wait over at once, so a 10-minute flash runs in a
 * second or two). The agent reads a task monitor every 6 s; a BMC's PercentComplete moves one
 * step per read: 1, 2, … 99 (a 10-minute flash ticking 1 % at a time), or 1, then 30 held for
 * 90 s (a stall). Progress goes out at most once per timings.progressIntervalMs, rising, the
 * first at once; a rise held back goes out once the interval is over, stall or not. With the
 * interval 0, every rise does.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { steppingClock } from "../../bench/lib/stepping-clock.js";
import type { BmcEvent } from "../../src/domain/bmc-protocol.js";
import {
  type AgentHarness,
  ack,
  type ImageRef,
  ok,
  progress,
  startAgentHarness,
  TEST_TIMINGS,
} from "../support/redfish-agent.js";

const TICKING = "7b000000-0000-4000-8000-000000000201";
const STALLING = "7b000000-0000-4000-8000-000000000202";
const ONE_TO_99 = Array.from({ length: 99 }, (_, i) => i + 1);
/** 1 % at the first read (6 s), 30 % at the second (12 s), still 30 % until the 17th (102 s). */
const RISE_THEN_STALL = [1, ...Array.from({ length: 15 }, () => 30)];

/** One read every 6 s; two minutes without a new PercentComplete before FLASH_TIMEOUT. */
const FLASH_TIMINGS = {
  pollIntervalMs: 6_000,
  maxRetryAfterMs: TEST_TIMINGS.maxRetryAfterMs,
  noProgressTimeoutMs: 120_000,
  rebootTimeoutMs: TEST_TIMINGS.rebootTimeoutMs,
  settleTimeoutMs: 60_000,
  busyTimeoutMs: TEST_TIMINGS.busyTimeoutMs,
};

const percentsOf = (events: BmcEvent[]): number[] =>
  events.flatMap((e) => (e.type === "progress" ? [e.percent] : []));

function withAgent(timings: Record<string, number>): { h: () => AgentHarness; image: () => ImageRef } {
  let h: AgentHarness | undefined;
  let image: ImageRef | undefined;
  beforeAll(async () => {
    h = await startAgentHarness(
      [
        { id: TICKING, behaviour: { percents: ONE_TO_99 } },
        { id: STALLING, behaviour: { percents: RISE_THEN_STALL } },
      ],
      { agentConfig: { timings }, clock: steppingClock() },
    );
    image = h.images.add("1.3.0");
  });
  afterAll(async () => {
    await h?.stop();
  });
  return { h: () => h!, image: () => image! };
}

describe("bmc agent progress: paced at the default interval (60 s)", () => {
  const { h, image } = withAgent(FLASH_TIMINGS);

  it("a BMC ticking 1 % per 6-s read over a 10-minute flash: 10 progress reports, one a minute, rising (1, 11, … 91), the first at once; ack and result as ever", async () => {
    await h().send(TICKING, h().update("u-paced", "1.3.0", image()));
    expect(await h().eventsUntilResult(TICKING, "u-paced")).toEqual([
      ack("u-paced"),
      ...[1, 11, 21, 31, 41, 51, 61, 71, 81, 91].map((p) => progress("u-paced", p)),
      ok("u-paced", "1.3.0"),
    ]);
    expect(h().emulator.record(TICKING).pushes).toEqual({ BMC: 1 });
  });

  it("a rise held back within the interval goes out once it is over, though the BMC then stalls: 1, then 30", async () => {
    await h().send(STALLING, h().update("u-stall", "1.3.0", image()));
    expect(await h().eventsUntilResult(STALLING, "u-stall")).toEqual([
      ack("u-stall"),
      progress("u-stall", 1),
      progress("u-stall", 30),
      ok("u-stall", "1.3.0"),
    ]);
  });
});

describe("bmc agent progress: unpaced (progressIntervalMs 0)", () => {
  const { h, image } = withAgent({ ...FLASH_TIMINGS, progressIntervalMs: 0 });

  it("the same 10-minute flash: every rise is a progress report, 99 of them (1 … 99)", async () => {
    await h().send(TICKING, h().update("u-every", "1.3.0", image()));
    const events = await h().eventsUntilResult(TICKING, "u-every");
    expect(percentsOf(events)).toEqual(ONE_TO_99);
    expect(events[0]).toEqual(ack("u-every"));
    expect(events.at(-1)).toEqual(ok("u-every", "1.3.0"));
  });
});
