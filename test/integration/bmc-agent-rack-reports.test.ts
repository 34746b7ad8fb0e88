/**
 * One message per rack per moment: the real agent against the Redfish emulator (HTTPS) and the
 * local MQTT broker, its reports counted on the broker. The agent's clock is the real one except
 * for its flush window, which ends only when the test says: so "a moment" is exactly the events
 * the rack's BMCs produced while the window was held (the workers go on meanwhile), and the count
 * is not a timing.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { AgentClock } from "../../src/app/ports/bmc-agent.js";
import { realClock } from "../../src/service/bmc-agent/agent.js";
import { until } from "../support/poll.js";
import { type AgentHarness, ack, ok, progress, startAgentHarness } from "../support/redfish-agent.js";

const BMCS = 8;
const id = (n: number): string => `7b000000-0000-4000-8000-0000000007${String(n).padStart(2, "0")}`;
const ids = Array.from({ length: BMCS }, (_, n) => id(n + 1));
/** A flush window no other wait of the agent has: the clock holds exactly these. */
const FLUSH_MS = 4_321;

/** The real clock, but a sleep of FLUSH_MS lasts until `release()`. */
function heldWindows() {
  const held: (() => void)[] = [];
  const clock: AgentClock = {
    now: realClock.now,
    sleep: (ms, signal) =>
      ms === FLUSH_MS ? new Promise<void>((resolve) => held.push(resolve)) : realClock.sleep(ms, signal),
  };
  return {
    clock,
    release: () => {
      for (const end of held.splice(0)) end();
    },
  };
}

let h: AgentHarness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

describe("bmc agent: one message per rack per moment, counted on the broker", () => {
  /** The agent's report figures once it has `messages` acknowledged. */
  const acknowledged = (harness: AgentHarness, messages: number) =>
    until(`${messages} messages acknowledged`, () => {
      const figures = harness.agent.reports();
      return figures.messages >= messages ? figures : undefined;
    });

  /** Lets one moment go: waits until `count` events are held, then ends the window. */
  async function moment(harness: AgentHarness, windows: ReturnType<typeof heldWindows>, count: number) {
    await until(`${count} events held`, () => (harness.agent.reports().held === count ? true : undefined));
    windows.release();
  }

  it(`${BMCS} BMCs' queries: ${BMCS} statuses in one message on the rack's topic, none on a component's`, async () => {
    const windows = heldWindows();
    h = await startAgentHarness(
      ids.map((i) => ({ id: i })),
      { agentConfig: { reportFlushMs: FLUSH_MS }, clock: windows.clock },
    );
    for (const c of ids) await h.send(c, { v: 1, type: "query", requestId: `q-${c}` });
    await moment(h, windows, BMCS);
    for (const c of ids) await h.eventsUntilResult(c, `q-${c}`);
    expect(h.messages).toEqual({ evt: 0, rack: 1 });
    // The agent counts a message once the broker acknowledged it, which may be after delivering it.
    expect(await acknowledged(h, 1)).toEqual({ messages: 1, events: BMCS, held: 0 });
  });

  it(`a rack's update of ${BMCS} BMCs within one window: ack, three progress and the result of each, one message for ${BMCS * 5} events, every BMC's in order; the next moment's query its own`, async () => {
    const windows = heldWindows();
    h = await startAgentHarness(
      ids.map((i) => ({ id: i })),
      { agentConfig: { reportFlushMs: FLUSH_MS }, clock: windows.clock },
    );
    const image = h.images.add("1.3.0");
    for (const c of ids) await h.send(c, h.update(`u-${c}`, "1.3.0", image));
    // ack, 25, 50, 75 %, result of every BMC, while the window is held: the flashes go on.
    await moment(h, windows, BMCS * 5);
    for (const c of ids) {
      expect(await h.eventsUntilResult(c, `u-${c}`)).toEqual([
        ack(`u-${c}`),
        progress(`u-${c}`, 25),
        progress(`u-${c}`, 50),
        progress(`u-${c}`, 75),
        ok(`u-${c}`, "1.3.0"),
      ]);
    }
    expect(h.messages).toEqual({ evt: 0, rack: 1 });
    expect(await acknowledged(h, 1)).toEqual({ messages: 1, events: BMCS * 5, held: 0 });
    // A later moment is a message of its own.
    await h.send(ids[0]!, { v: 1, type: "query", requestId: "q-after" });
    await moment(h, windows, 1);
    await h.eventsUntilResult(ids[0]!, "q-after");
    expect(h.messages).toEqual({ evt: 0, rack: 2 });
  });

  it("stopping the agent sends what its window holds, before the connection closes", async () => {
    const windows = heldWindows();
    h = await startAgentHarness([{ id: ids[0]! }], {
      agentConfig: { reportFlushMs: FLUSH_MS },
      clock: windows.clock,
    });
    await h.send(ids[0]!, { v: 1, type: "query", requestId: "q-stop" });
    await until("the status held", () => (h!.agent.reports().held === 1 ? true : undefined));
    await h.stopAgent();
    expect(await h.eventsUntilResult(ids[0]!, "q-stop")).toEqual([
      { v: 1, type: "status", requestId: "q-stop", version: "1.0.0" },
    ]);
    expect(h.messages).toEqual({ evt: 0, rack: 1 });
  });
});
