/**
 * Where the BMC agent listens and answers: with `rackId`, on its rack's topics (protocol v4), one
 * subscription for the rack, its reports batched on the rack's reports topic (or, with
 * `reportFlushMs: 0`, one by one on each component's evt topic); without, on each BMC's v1-v3
 * per-component topic, with a warning.
 */
import { afterEach, describe, expect, it } from "vitest";
import { encodeBmcMessage } from "../../src/domain/bmc-protocol.js";
import { bmcCmdTopic } from "../../src/domain/bmc-topics.js";
import { type AgentHarness, startAgentHarness, TEST_RACK_ID } from "../support/redfish-agent.js";

const C1 = "7b000000-0000-4000-8000-000000000301";
const OTHER_RACK = "7b000000-0000-4000-8000-0000000003a2";

let h: AgentHarness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** The topics the agent's reports arrived on, as the broker saw them. */
async function reportTopics(harness: AgentHarness): Promise<string[]> {
  const topics: string[] = [];
  await harness.broker.subscribe("flow/#", (topic) => {
    if (topic.endsWith("/evt") || topic.endsWith("/reports")) topics.push(topic);
  });
  return topics;
}

describe("bmc agent: topics", () => {
  it("with rackId: commands on its rack's topic are answered on that rack's reports topic; another rack's are not its own", async () => {
    h = await startAgentHarness([{ id: C1 }]);
    const topics = await reportTopics(h);
    // A command for the same component under another rack: the agent's one subscription is its
    // own rack's filter, so the broker does not even deliver it; the query after it is answered.
    await h.broker.publish(
      bmcCmdTopic({ rackId: OTHER_RACK, componentId: C1 }),
      encodeBmcMessage({ v: 1, type: "query", requestId: "q-astray" }),
    );
    await h.send(C1, { v: 1, type: "query", requestId: "q-own" });
    expect(await h.eventsUntilResult(C1, "q-own")).toEqual([
      { v: 1, type: "status", requestId: "q-own", version: "1.0.0" },
    ]);
    expect(h.events.get(C1)?.map((e) => e.requestId)).toEqual(["q-own"]);
    expect(topics).toEqual([`flow/rack/${TEST_RACK_ID}/reports`]);
    expect(h.logs.filter((l) => l.includes("WARNING"))).toEqual([]);
  });

  it("with rackId and reportFlushMs 0: each report alone on its component's evt topic of the rack", async () => {
    h = await startAgentHarness([{ id: C1 }], { agentConfig: { reportFlushMs: 0 } });
    const topics = await reportTopics(h);
    await h.send(C1, { v: 1, type: "query", requestId: "q-alone" });
    expect(await h.eventsUntilResult(C1, "q-alone")).toEqual([
      { v: 1, type: "status", requestId: "q-alone", version: "1.0.0" },
    ]);
    expect(topics).toEqual([`flow/rack/${TEST_RACK_ID}/bmc/${C1}/evt`]);
    expect(h.messages).toEqual({ evt: 1, rack: 0 });
  });

  it("without rackId: the v1-v3 per-component topics, and a warning at start", async () => {
    h = await startAgentHarness([{ id: C1 }], { agentConfig: { rackId: undefined } });
    const topics = await reportTopics(h);
    await h.send(C1, { v: 1, type: "query", requestId: "q-legacy" });
    expect(await h.eventsUntilResult(C1, "q-legacy")).toEqual([
      { v: 1, type: "status", requestId: "q-legacy", version: "1.0.0" },
    ]);
    expect(topics).toEqual([`flow/bmc/${C1}/evt`]);
    expect(h.logs).toContain(
      "flow-bmc-agent: WARNING: no rackId: listening on each BMC's per-component topic (protocol v1-v3), which the product publishes on only when its deployment keeps the legacy topics; set rackId",
    );
  });
});
