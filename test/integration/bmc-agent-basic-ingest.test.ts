/**
 * The BMC agent with `reportsRule`: every report goes straight to the rack reports' rule through
 * AWS IoT Basic Ingest, none on the plain topics: its rack's batches
 * (`$aws/rules/<rule>/flow/rack/<rack>/reports`), or with `reportFlushMs: 0` each report alone
 * (`$aws/rules/<rule>/flow/rack/<rack>/bmc/<component>/evt`); commands still arrive on the rack's
 * cmd topic.
 *
 * Real parts: the agent over TCP to the local broker (aedes takes a client's publish to a `$aws/`
 * topic: it reserves `$SYS/` only), the Redfish emulator over HTTPS. End to end, the child-task
 * machinery on moto with the local IoT rule stand-in, which subscribes to its rule's Basic Ingest
 * topics by name: a task's preflight query is answered by the agent through Basic Ingest, the
 * receiver stores the answer, and the task ends on it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { LOCAL_REPORTS_RULE } from "../../local/child-tasks.js";
import type { FleetConfig } from "../../local/fleet-file.js";
import { type RedfishEmulator, startRedfishEmulator } from "../../local/redfish-emulator.js";
import type { BmcEvent } from "../../src/domain/bmc-protocol.js";
import { decodeBmcEvent } from "../../src/domain/bmc-protocol-decode.js";
import { readRackReports } from "../../src/domain/bmc-rack-reports.js";
import {
  BMC_EVT_TOPIC_FILTER,
  basicIngestEvtTopic,
  basicIngestEvtTopicFilter,
  basicIngestRackReportsTopic,
  basicIngestRackReportsTopicFilter,
  RACK_REPORTS_TOPIC_FILTER,
} from "../../src/domain/bmc-topics.js";
import type { OperationRule } from "../../src/domain/operation-rules.js";
import { parseReport } from "../../src/domain/task-report.js";
import { type BmcAgent, startBmcAgent } from "../../src/service/bmc-agent/agent.js";
import { parseAgentConfig } from "../../src/service/bmc-agent/config.js";
import {
  type AgentHarness,
  ack,
  ok,
  progress,
  startAgentHarness,
  TEST_RACK_ID,
} from "../support/redfish-agent.js";
import {
  type Harness,
  HEALTHY_FLEET_SETTINGS,
  rack,
  startHarness,
  until,
  upgradeRequest,
  waitForTask,
} from "./child-task-harness.js";

const RULE = "Flow_test_rack_bmc_events";
const C1 = "7b000000-0000-4000-8000-000000000501";

/** Every message the broker routes on `filter`: its topic and decoded event, in arrival order. */
async function collect(
  broker: AgentHarness["broker"],
  filter: string,
): Promise<{ topic: string; event: BmcEvent }[]> {
  const seen: { topic: string; event: BmcEvent }[] = [];
  await broker.subscribe(filter, (topic, payload) => {
    const decoded = decodeBmcEvent(payload);
    if (!decoded.ok) throw new Error(`undecodable event on ${topic}`);
    seen.push({ topic, event: decoded.value });
  });
  return seen;
}

/** Every rack batch the broker routes on `filter`: its topic and its reports, in arrival order. */
async function collectBatches(
  broker: AgentHarness["broker"],
  filter: string,
): Promise<{ topic: string; reports: { componentId: string; event: BmcEvent }[] }[]> {
  const seen: { topic: string; reports: { componentId: string; event: BmcEvent }[] }[] = [];
  await broker.subscribe(filter, (topic, payload) => {
    const read = readRackReports(JSON.parse(payload.toString("utf8")) as Record<string, unknown>);
    if (!read.ok) throw new Error(`undecodable batch on ${topic}: ${read.message}`);
    seen.push({
      topic,
      reports: read.value.map((item) => {
        if (!item.ok) throw new Error(item.message);
        return item.value;
      }),
    });
  });
  return seen;
}

describe("bmc agent: reports through Basic Ingest", () => {
  let h: AgentHarness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it("with reportsRule: its rack's batches go to $aws/rules/<rule>/flow/rack/<rack>/reports, carrying every report in order; none to the plain topics", async () => {
    h = await startAgentHarness([{ id: C1 }], { agentConfig: { reportsRule: RULE } });
    const ingested = await collectBatches(h.broker, basicIngestRackReportsTopicFilter(RULE));
    const plain = await collectBatches(h.broker, RACK_REPORTS_TOPIC_FILTER);
    const image = h.images.add("1.3.0");
    await h.send(C1, { v: 1, type: "query", requestId: "q-bb" });
    await until("the query's status", () => ingested.length > 0 || undefined);
    await h.send(C1, h.update("u-bb", "1.3.0", image));
    await until(
      "the update's result",
      () => ingested.some((m) => m.reports.some((r) => r.event.type === "result")) || undefined,
    );
    expect(ingested.flatMap((m) => m.reports.map((r) => [r.componentId, r.event]))).toEqual(
      [
        { v: 1, type: "status", requestId: "q-bb", version: "1.0.0" },
        ack("u-bb"),
        progress("u-bb", 25),
        progress("u-bb", 50),
        progress("u-bb", 75),
        ok("u-bb", "1.3.0"),
      ].map((e) => [C1, e]),
    );
    expect(new Set(ingested.map((m) => m.topic))).toEqual(
      new Set([basicIngestRackReportsTopic(RULE, TEST_RACK_ID)]),
    );
    expect(plain).toEqual([]);
    expect(h.messages.evt).toBe(0);
  });

  it("with reportsRule and reportFlushMs 0: a query's status and an update's ack, progress and result all go to $aws/rules/<rule>/...; none to the plain topic", async () => {
    h = await startAgentHarness([{ id: C1 }], { agentConfig: { reportsRule: RULE, reportFlushMs: 0 } });
    const ingested = await collect(h.broker, basicIngestEvtTopicFilter(RULE));
    const plain = await collect(h.broker, BMC_EVT_TOPIC_FILTER);
    const image = h.images.add("1.3.0");
    await h.send(C1, { v: 1, type: "query", requestId: "q-bi" });
    await until("the query's status", () => ingested.some((m) => m.event.type === "status") || undefined);
    await h.send(C1, h.update("u-bi", "1.3.0", image));
    await until("the update's result", () => ingested.some((m) => m.event.type === "result") || undefined);
    expect(ingested.map((m) => m.event)).toEqual([
      { v: 1, type: "status", requestId: "q-bi", version: "1.0.0" },
      ack("u-bi"),
      progress("u-bi", 25),
      progress("u-bi", 50),
      progress("u-bi", 75),
      ok("u-bi", "1.3.0"),
    ]);
    const topic = basicIngestEvtTopic(RULE, { rackId: TEST_RACK_ID, componentId: C1 });
    expect(new Set(ingested.map((m) => m.topic))).toEqual(new Set([topic]));
    expect(plain).toEqual([]);
  });
});

/** An update alone: with the BMC already at the target, the task's one BMC exchange is its preflight query. */
const QUERY_ONLY: OperationRule = {
  id: "cb000000-0000-4000-8000-0000000000c5",
  version: 1,
  createdAt: 1,
  name: "update-only",
  description: "",
  readinessTimeoutSeconds: 0,
  stages: [
    {
      name: "compute",
      componentTypes: ["COMPUTE"],
      maxParallel: 1,
      steps: [{ action: "UPDATE_FIRMWARE", timeoutSeconds: 60, sleepSeconds: 0 }],
    },
  ],
};

describe("bmc agent: Basic Ingest reports reach the receiver (local IoT rule stand-in)", () => {
  const P = "c3500000";
  // The fleet simulates the first rack; the agent alone serves the second.
  const [fleetRack, agentRack] = [1, 2].map((n) => rack(P, n, [{ type: "COMPUTE" as const, count: 1 }]));
  const fleet: FleetConfig = { defaults: { outcome: "succeed", updateMs: 60 }, racks: {}, components: {} };
  let stack: Harness | undefined;
  let emulator: RedfishEmulator | undefined;
  let agent: BmcAgent | undefined;
  let stateDir: string | undefined;
  afterEach(async () => {
    await agent?.stop();
    if (stateDir !== undefined) rmSync(stateDir, { recursive: true, force: true });
    await emulator?.stop();
    await stack?.close();
  });

  it("an agent with the stand-in's rule name answers the preflight in its rack's batch through Basic Ingest; the receiver stores it and the task completes on it", async () => {
    stack = await startHarness({
      label: "bmcbi",
      racks: [fleetRack!],
      fleet,
      settings: HEALTHY_FLEET_SETTINGS,
    });
    await stack.stores.inventory.upsertRacks([agentRack!]);
    expect(await stack.stores.policy.putRuleVersion(QUERY_ONLY)).toBe("written");
    const componentId = agentRack!.components[0]!.id;
    stateDir = mkdtempSync(join(tmpdir(), "flow-bmc-agent-bi-"));
    emulator = await startRedfishEmulator({ bmcs: [{ id: componentId }], username: "flow", password: "pw" });
    const ingested = await collectBatches(
      stack.broker,
      basicIngestRackReportsTopicFilter(LOCAL_REPORTS_RULE),
    );
    agent = await startBmcAgent(
      parseAgentConfig(
        {
          rackId: agentRack!.id,
          reportsRule: LOCAL_REPORTS_RULE,
          mqtt: { url: stack.broker.url, clientId: "basic-ingest-agent" },
          stateDir,
          timings: { pollIntervalMs: 20 },
          bmcs: [{ componentId, url: emulator.urlOf(componentId), username: "flow", passwordEnv: "PW" }],
        },
        { baseDir: "/", env: { PW: "pw" } },
      ),
      { log: () => {} },
    );
    const before = stack.child.reportStats();
    // At the version the BMC runs (the emulator's 1.0.0): the preflight's answer alone ends it.
    const { taskIds } = await stack.child.tasksApi.upgradeFirmware(
      upgradeRequest([agentRack!.id], { ruleId: QUERY_ONLY.id, targetVersion: "1.0.0" }),
    );
    const task = await waitForTask(stack, taskIds[0] as string);
    expect(task.status).toBe("COMPLETED");
    expect(task.message).toBe("all 1 components already at 1.0.0");
    expect(parseReport(task.report).components.map((c) => [c.id, c.status])).toEqual([
      [componentId, "SKIPPED"],
    ]);
    expect(ingested.map((m) => [m.topic, m.reports.map((r) => [r.componentId, r.event.type])])).toEqual([
      [basicIngestRackReportsTopic(LOCAL_REPORTS_RULE, agentRack!.id), [[componentId, "status"]]],
    ]);
    const after = stack.child.reportStats();
    expect(after.recorded - before.recorded).toBe(1);
    expect(after.invalid - before.invalid).toBe(0);
  });
});
