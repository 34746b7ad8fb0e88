/**
 * The BMC command path end to end on the local stand-ins: the real IoTDataPlaneClient publishes
 * through the IoT shim into aedes, the simulated fleet answers on the evt topics, and a subscriber
 * in the broker (standing in for the IoT rule) collects what appears on the wire.
 */

import { type AddressInfo, connect, createServer, type Socket } from "node:net";
import { IoTDataPlaneClient, PublishCommand } from "@aws-sdk/client-iot-data-plane";
import { connectAsync } from "mqtt";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type BmcFleet, startBmcFleet } from "../../local/bmc-fleet.js";
import { generateDemoFleet } from "../../local/demo-fleet.js";
import type { FleetConfig } from "../../local/fleet-file.js";
import { type IotShim, startIotShim } from "../../local/iot-shim.js";
import { type LocalMqttBroker, startMqttBroker } from "../../local/mqtt-broker.js";
import { BmcPublishError, IotPublisher } from "../../src/adapters/iot/publisher.js";
import type { BmcEvent, BmcMessage, UpdateCommand } from "../../src/domain/bmc-protocol.js";
import { decodeBmcEvent } from "../../src/domain/bmc-protocol-decode.js";
import {
  BMC_EVT_TOPIC_FILTER,
  type BmcAddress,
  basicIngestEvtTopic,
  basicIngestEvtTopicFilter,
  bmcCmdTopic,
  legacyBmcCmdTopic,
  parseBmcTopic,
} from "../../src/domain/bmc-topics.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import { until } from "../support/poll.js";

const RACK = "7a000000-0000-4000-8000-000000000001";
const HANG_RACK = "7a000000-0000-4000-8000-000000000002";
const id = (n: number): string => `7a000000-0000-4000-8000-0000000001${String(n).padStart(2, "0")}`;
const C = {
  succeed: id(1),
  fail: id(2),
  hang: id(3),
  disconnect: id(4),
  wrongVersion: id(5),
  wrongSame: id(6),
  dup: id(7),
  busy: id(8),
  inHangRack: id(9),
  slowSucceed: id(10),
  revive: id(11),
};

const UPDATE_MS = 60;

const racks: InventoryRack[] = [
  {
    id: RACK,
    name: "rack-t01",
    externalId: "EXT-T01",
    components: Object.entries(C)
      .filter(([k]) => k !== "inHangRack")
      .map(([, componentId]) => ({ id: componentId, type: "COMPUTE" as const, firmwareVersion: "1.0.0" })),
  },
  { id: HANG_RACK, name: "rack-t02", components: [{ id: C.inHangRack, type: "UMS" }] },
];

const config: FleetConfig = {
  defaults: { outcome: "succeed", updateMs: UPDATE_MS },
  racks: { [HANG_RACK]: { outcome: "hang" } },
  components: {
    [C.fail]: { outcome: "fail" },
    [C.hang]: { outcome: "hang" },
    [C.disconnect]: { outcome: "disconnect" },
    [C.revive]: { outcome: "disconnect" },
    [C.wrongVersion]: { outcome: "wrong-version" },
    [C.wrongSame]: { outcome: "wrong-version" },
    [C.slowSucceed]: { updateMs: 400 },
  },
};

let broker: LocalMqttBroker;
let shim: IotShim;
let fleet: BmcFleet;
let sdk: IoTDataPlaneClient;
let publisher: IotPublisher;
/** Every event seen on flow/rack/+/bmc/+/evt, per component, in arrival order. */
const seen = new Map<string, BmcEvent[]>();
const undecodable: string[] = [];
/** (componentId, version) callbacks, and whether that component's result had been seen by then. */
const firmwareChanges: { componentId: string; version: string; resultSeen: boolean }[] = [];
const logs: string[] = [];

/** Where a command for this component goes: its rack's topic (the main rack for a stranger). */
function at(componentId: string): BmcAddress {
  return { rackId: fleet.rackOf(componentId) ?? RACK, componentId };
}

function eventsOf(componentId: string): BmcEvent[] {
  return seen.get(componentId) ?? [];
}

/** Waits for any terminal report (result) of `requestId`, never for success only. */
function resultOf(componentId: string, requestId: string): Promise<BmcEvent> {
  return until(`result of ${requestId}`, () =>
    eventsOf(componentId).find((e) => e.type === "result" && e.requestId === requestId),
  );
}

/** Waits until the fleet is done with `requestId` (FleetStats.doneByRequest): it sends nothing more for it. */
function doneWith(requestId: string, times = 1): Promise<true> {
  return until(`the fleet to be done with ${requestId}`, () =>
    (fleet.stats().doneByRequest[requestId] ?? 0) >= times ? true : undefined,
  );
}

/**
 * Queries `componentId` and waits for the answer. One BMC's events come in order on its topic, so
 * once the answer is in, everything the fleet published for that component before it is in too.
 */
async function queried(componentId: string, requestId: string): Promise<string[]> {
  await publisher.publish(at(componentId), { v: 1, type: "query", requestId });
  await until(`status of ${requestId}`, () => (trace(componentId, requestId).length > 0 ? true : undefined));
  return trace(componentId, requestId);
}

function updateCmd(requestId: string, targetVersion = "2.0.0", taskId = "task-1"): UpdateCommand {
  return {
    v: 1,
    type: "update",
    requestId,
    taskId,
    targetVersion,
    image: { uri: `https://images.example/compute-${targetVersion}.bin`, sha256: "d".repeat(64), size: 4096 },
    auth: { keyId: "alias/flow-bmc", ciphertext: "c2VjcmV0" },
    issuedAt: 1_767_225_600_000,
  };
}

/** The events of one request, as `type` or `type:detail`, for compact assertions. */
function trace(componentId: string, requestId: string): string[] {
  return eventsOf(componentId)
    .filter((e) => e.requestId === requestId)
    .map((e) => {
      switch (e.type) {
        case "progress":
          return `progress:${e.percent}`;
        case "result":
          return e.ok ? `result:ok:${e.version}` : `result:failed:${e.version}:${e.error.code}`;
        case "status":
          return `status:${e.version}`;
        default:
          return e.type;
      }
    });
}

beforeAll(async () => {
  broker = await startMqttBroker();
  shim = await startIotShim(broker);
  await broker.subscribe(BMC_EVT_TOPIC_FILTER, (topic, payload) => {
    const where = parseBmcTopic(topic);
    const decoded = decodeBmcEvent(payload);
    if (!where || !decoded.ok) {
      undecodable.push(topic);
      return;
    }
    const list = seen.get(where.componentId) ?? [];
    list.push(decoded.value);
    seen.set(where.componentId, list);
  });
  fleet = await startBmcFleet({
    brokerUrl: broker.url,
    racks,
    config,
    onFirmwareChanged: (componentId, version) => {
      const resultSeen = eventsOf(componentId).some((e) => e.type === "result");
      firmwareChanges.push({ componentId, version, resultSeen });
    },
    log: (line) => logs.push(line),
  });
  sdk = new IoTDataPlaneClient({
    endpoint: shim.endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
  });
  publisher = new IotPublisher({ client: sdk });
});

afterAll(async () => {
  sdk?.destroy();
  await fleet?.stop();
  await shim?.stop();
  await broker?.stop();
});

beforeEach(() => {
  expect(undecodable).toEqual([]);
});

describe("iot shim: the real IoTDataPlaneClient publishes into the broker", () => {
  it("a PublishCommand reaches an MQTT subscriber with topic and payload intact", async () => {
    const client = await connectAsync(broker.url, { protocolVersion: 4, clientId: "shim-probe" });
    try {
      const got = new Promise<{ topic: string; payload: string }>((resolve) =>
        client.on("message", (topic, payload) => resolve({ topic, payload: payload.toString("utf8") })),
      );
      await client.subscribeAsync("probe/#", { qos: 1 });
      const topic = "probe/with space/ünïcode";
      await sdk.send(new PublishCommand({ topic, qos: 1, payload: Buffer.from('{"hello":"world"}') }));
      expect(await got).toEqual({ topic, payload: '{"hello":"world"}' });
    } finally {
      await client.endAsync(true);
    }
  });

  it("a wildcard topic is refused with InvalidRequestException, which the publisher wraps", async () => {
    await expect(
      sdk.send(new PublishCommand({ topic: "flow/bmc/+/cmd", qos: 1, payload: Buffer.from("{}") })),
    ).rejects.toMatchObject({
      name: "InvalidRequestException",
      message: "topic must be a concrete topic name (got flow/bmc/+/cmd)",
    });
    const err = await publisher
      .publish(at("+"), { v: 1, type: "query", requestId: "q-wild" })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BmcPublishError);
    expect((err as Error).name).toBe("BmcPublishError");
    expect((err as Error).message).toBe(
      `publishing q-wild to flow/rack/${RACK}/bmc/+/cmd failed: InvalidRequestException: topic must be a concrete topic name (got flow/rack/${RACK}/bmc/+/cmd)`,
    );
  });

  it("qos other than 0 or 1, an unknown path and a GET are refused like IoT refuses them", async () => {
    const bad = await fetch(`${shim.endpoint}/topics/a%2Fb?qos=2`, { method: "POST", body: "x" });
    expect(bad.status).toBe(400);
    expect(bad.headers.get("x-amzn-errortype")).toBe("InvalidRequestException");
    expect(await bad.json()).toEqual({ message: "qos must be 0 or 1 (got 2)" });
    expect((await fetch(`${shim.endpoint}/things/x`, { method: "POST" })).status).toBe(404);
    expect((await fetch(`${shim.endpoint}/topics/a`, { method: "GET" })).status).toBe(405);
  });
});

describe("bmc fleet: each outcome on the evt topic", () => {
  it("succeed: ack, progress 25/50/75, result ok with the target version; inventory hook runs first", async () => {
    await publisher.publish(at(C.succeed), updateCmd("r-succeed"));
    await resultOf(C.succeed, "r-succeed");
    expect(trace(C.succeed, "r-succeed")).toEqual([
      "ack",
      "progress:25",
      "progress:50",
      "progress:75",
      "result:ok:2.0.0",
    ]);
    // The callback ran before the result went out.
    expect(firmwareChanges.filter((c) => c.componentId === C.succeed)).toEqual([
      { componentId: C.succeed, version: "2.0.0", resultSeen: false },
    ]);
    expect(fleet.versionOf(C.succeed)).toBe("2.0.0");
  });

  it("fail: ack, progress, result ok:false with the unchanged version and FLASH_FAILED", async () => {
    await publisher.publish(at(C.fail), updateCmd("r-fail"));
    const result = await resultOf(C.fail, "r-fail");
    expect(trace(C.fail, "r-fail")).toEqual([
      "ack",
      "progress:25",
      "progress:50",
      "progress:75",
      "result:failed:1.0.0:FLASH_FAILED",
    ]);
    expect(result).toMatchObject({ error: { message: "flashing 2.0.0 failed; still on 1.0.0" } });
    expect(fleet.versionOf(C.fail)).toBe("1.0.0");
    expect(firmwareChanges.some((c) => c.componentId === C.fail)).toBe(false);
  });

  it("wrong-version: result ok:true but with the previous version, and no inventory change", async () => {
    await publisher.publish(at(C.wrongVersion), updateCmd("r-wrong"));
    await resultOf(C.wrongVersion, "r-wrong");
    expect(trace(C.wrongVersion, "r-wrong")).toEqual([
      "ack",
      "progress:25",
      "progress:50",
      "progress:75",
      "result:ok:1.0.0",
    ]);
    expect(firmwareChanges.some((c) => c.componentId === C.wrongVersion)).toBe(false);
  });

  it("wrong-version when already at the target: reports T-mismatch, which is what it now runs", async () => {
    await publisher.publish(at(C.wrongSame), updateCmd("r-wrong-same", "1.0.0"));
    await resultOf(C.wrongSame, "r-wrong-same");
    expect(trace(C.wrongSame, "r-wrong-same").at(-1)).toBe("result:ok:1.0.0-mismatch");
    expect(fleet.versionOf(C.wrongSame)).toBe("1.0.0-mismatch");
  });

  it("hang: ack and then nothing, ever; queries are still answered", async () => {
    const hung = fleet.stats().outcomes.hung;
    await publisher.publish(at(C.hang), updateCmd("r-hang"));
    await doneWith("r-hang");
    expect(fleet.stats().outcomes.hung).toBe(hung + 1);
    expect(await queried(C.hang, "q-hang")).toEqual(["status:1.0.0"]);
    expect(trace(C.hang, "r-hang")).toEqual(["ack"]);
    // Still busy with the hung update: another one is refused.
    await publisher.publish(at(C.hang), updateCmd("r-hang-2"));
    expect(await resultOf(C.hang, "r-hang-2")).toMatchObject({ ok: false, error: { code: "BUSY" } });
  });

  it("hang from the rack entry applies to a component with no entry of its own", async () => {
    await publisher.publish(at(C.inHangRack), updateCmd("r-rack-hang"));
    await doneWith("r-rack-hang");
    expect(await queried(C.inHangRack, "q-rack-hang")).toEqual(["status:0.0.0"]);
    expect(trace(C.inHangRack, "r-rack-hang")).toEqual(["ack"]);
  });

  it("disconnect: ack, progress up to half-way, then silence, including to later queries", async () => {
    const drops = fleet.stats().outcomes.disconnected;
    await publisher.publish(at(C.disconnect), updateCmd("r-disc"));
    await doneWith("r-disc");
    expect(fleet.stats().outcomes.disconnected).toBe(drops + 1);
    const ignored = fleet.stats().ignored.offline;
    await publisher.publish(at(C.disconnect), { v: 1, type: "query", requestId: "q-disc" });
    await doneWith("q-disc");
    expect(fleet.stats().ignored.offline).toBe(ignored + 1);
    // Back online it answers again, and behind that answer on its topic nothing else had come.
    fleet.revive(C.disconnect);
    expect(await queried(C.disconnect, "q-disc-revived")).toEqual(["status:1.0.0"]);
    expect(trace(C.disconnect, "r-disc")).toEqual(["ack", "progress:25"]);
    expect(trace(C.disconnect, "q-disc")).toEqual([]);
  });

  it("a revived BMC answers again and a retry of its interrupted request flashes anew", async () => {
    const dropsBefore = fleet.stats().outcomes.disconnected;
    await publisher.publish(at(C.revive), updateCmd("r-revive"));
    await until("the drop", () => (fleet.stats().outcomes.disconnected > dropsBefore ? true : undefined));
    fleet.revive(C.revive);
    fleet.setConfig({ ...config, components: { ...config.components, [C.revive]: { outcome: "succeed" } } });
    await publisher.publish(at(C.revive), updateCmd("r-revive"));
    const result = await resultOf(C.revive, "r-revive");
    expect(result).toMatchObject({ ok: true, version: "2.0.0" });
    expect(fleet.stats().flashesByComponent[C.revive]).toBe(2);
    fleet.setConfig(config);
  });

  it("query: status with the current version", async () => {
    await publisher.publish(at(C.succeed), { v: 1, type: "query", requestId: "q-succeed" });
    await until("status", () => (trace(C.succeed, "q-succeed").length > 0 ? true : undefined));
    expect(trace(C.succeed, "q-succeed")).toEqual(["status:2.0.0"]);
  });
});

describe("bmc fleet: idempotency on requestId", () => {
  it("a duplicate after the result re-sends the stored result and does not flash twice", async () => {
    await publisher.publish(at(C.dup), updateCmd("r-dup", "3.0.0", "task-dup"));
    await resultOf(C.dup, "r-dup");
    await publisher.publish(at(C.dup), updateCmd("r-dup", "3.0.0", "task-dup"));
    await until("the re-sent result", () =>
      eventsOf(C.dup).filter((e) => e.type === "result").length === 2 ? true : undefined,
    );
    expect(trace(C.dup, "r-dup")).toEqual([
      "ack",
      "progress:25",
      "progress:50",
      "progress:75",
      "result:ok:3.0.0",
      "result:ok:3.0.0",
    ]);
    const stats = fleet.stats();
    expect(stats.updatesByRequest["r-dup"]).toBe(2);
    expect(stats.updatesByComponent[C.dup]).toBe(2);
    expect(stats.flashesByComponent[C.dup]).toBe(1);
    expect(stats.flashesByTask["task-dup"]).toBe(1);
    expect(firmwareChanges.filter((c) => c.componentId === C.dup)).toHaveLength(1);
  });

  it("a duplicate while flashing re-sends ack; a different request while flashing gets BUSY", async () => {
    await publisher.publish(at(C.slowSucceed), updateCmd("r-slow"));
    await until("ack", () => (trace(C.slowSucceed, "r-slow").length > 0 ? true : undefined));
    await publisher.publish(at(C.slowSucceed), updateCmd("r-slow"));
    await publisher.publish(at(C.slowSucceed), updateCmd("r-other", "9.9.9"));
    const busy = await resultOf(C.slowSucceed, "r-other");
    expect(busy).toEqual({
      v: 1,
      type: "result",
      requestId: "r-other",
      ok: false,
      version: "1.0.0",
      error: { code: "BUSY", message: "update r-slow is in progress" },
    });
    await resultOf(C.slowSucceed, "r-slow");
    expect(trace(C.slowSucceed, "r-slow").filter((t) => t === "ack")).toHaveLength(2);
    expect(trace(C.slowSucceed, "r-slow").at(-1)).toBe("result:ok:2.0.0");
    expect(fleet.stats().flashesByComponent[C.slowSucceed]).toBe(1);
  });

  it("an update without image.sha256 or image.size is refused before its ack (IMAGE_INVALID) and not remembered", async () => {
    const bare = { ...updateCmd("r-bare"), image: { uri: "https://images.example/x" } };
    const version = fleet.versionOf(C.succeed);
    const rejected = fleet.stats().imageRejections;
    await publisher.publish(at(C.succeed), bare);
    expect(await resultOf(C.succeed, "r-bare")).toEqual({
      v: 1,
      type: "result",
      requestId: "r-bare",
      ok: false,
      version,
      error: { code: "IMAGE_INVALID", message: "update command carries no image.sha256 and image.size" },
    });
    expect(trace(C.succeed, "r-bare")).toEqual([`result:failed:${version}:IMAGE_INVALID`]);
    // Not remembered: the same request id with a complete image flashes.
    await publisher.publish(at(C.succeed), updateCmd("r-bare"));
    await until("the flash", () => trace(C.succeed, "r-bare").includes("result:ok:2.0.0"));
    expect(fleet.stats().imageRejections).toBe(rejected + 1);
  });

  it("garbage and unknown components are ignored and counted, never answered", async () => {
    const before = fleet.stats();
    await sdk.send(
      new PublishCommand({ topic: bmcCmdTopic(at(C.succeed)), qos: 1, payload: Buffer.from("{not json") }),
    );
    await sdk.send(
      new PublishCommand({
        topic: bmcCmdTopic(at(C.succeed)),
        qos: 1,
        payload: Buffer.from('{"v":4,"type":"query","requestId":"x"}'),
      }),
    );
    const stranger = "7a000000-0000-4000-8000-00000000ffff";
    await publisher.publish(at(stranger), { v: 1, type: "query", requestId: "q-stranger" });
    await until("all three counted", () =>
      fleet.stats().commands - before.commands >= 3 ? true : undefined,
    );
    // Done with the stranger's query, and it was ignored: nothing was or will be published for it.
    await doneWith("q-stranger");
    expect(eventsOf(stranger)).toEqual([]);
    const after = fleet.stats();
    expect(after.ignored.malformed - before.ignored.malformed).toBe(2);
    expect(after.ignored.unknownComponent - before.ignored.unknownComponent).toBe(1);
    expect(
      logs.some((l) => l.includes("v: unsupported protocol version 4 (this codec speaks 1, 2 and 3)")),
    ).toBe(true);
    // The auth blob of any update never reaches a log line.
    expect(logs.join("\n")).not.toContain("c2VjcmV0");
  });
});

describe("bmc fleet: rack-scoped topics (protocol v4)", () => {
  it("a command on another rack's topic is not heard by the BMC: counted as an unknown component", async () => {
    const before = fleet.stats();
    await publisher.publish(
      { rackId: HANG_RACK, componentId: C.succeed },
      { v: 1, type: "query", requestId: "q-astray" },
    );
    await doneWith("q-astray");
    expect(fleet.stats().ignored.unknownComponent - before.ignored.unknownComponent).toBe(1);
    expect(trace(C.succeed, "q-astray")).toEqual([]);
  });

  it("with legacyTopics the publisher sends each command on the rack's topic and on the v1-v3 one", async () => {
    const legacy = new IotPublisher({ client: sdk, legacyTopics: true });
    const heard: string[] = [];
    const unsubscribe = await broker.subscribe("flow/bmc/+/cmd", (topic) => {
      heard.push(topic);
    });
    try {
      await legacy.publish(at(C.succeed), { v: 1, type: "query", requestId: "q-both" });
      await until("the v1-v3 copy", () => (heard.length > 0 ? true : undefined));
      await until("the rack's copy answered", () =>
        trace(C.succeed, "q-both").length > 0 ? true : undefined,
      );
      expect(heard).toEqual([legacyBmcCmdTopic(C.succeed)]);
      expect(trace(C.succeed, "q-both")).toEqual([`status:${fleet.versionOf(C.succeed)}`]);
    } finally {
      await unsubscribe();
    }
  });
});

describe("bmc fleet: reports through Basic Ingest", () => {
  it("with reportsRule every report goes to $aws/rules/<rule>/flow/rack/...; none to the plain topic", async () => {
    const rule = "Flow_test_rack_bmc_events";
    // A component of its own: the suite's fleet answers on the same broker.
    const only = id(13);
    const rack: InventoryRack = { id: RACK, name: "rack-t01", components: [{ id: only, type: "COMPUTE" }] };
    const ingested: { topic: string; type: string }[] = [];
    const plain: string[] = [];
    const removals = [
      await broker.subscribe(basicIngestEvtTopicFilter(rule), (topic, payload) => {
        const decoded = decodeBmcEvent(payload);
        ingested.push({ topic, type: decoded.ok ? decoded.value.type : "undecodable" });
      }),
      await broker.subscribe(BMC_EVT_TOPIC_FILTER, (topic) => {
        if (parseBmcTopic(topic)?.componentId === only) plain.push(topic);
      }),
    ];
    const local = await startBmcFleet({
      brokerUrl: broker.url,
      racks: [rack],
      config: { defaults: { outcome: "succeed", updateMs: UPDATE_MS }, racks: {}, components: {} },
      reportsRule: rule,
    });
    try {
      await publisher.publish(at(only), updateCmd("r-ingest"));
      await until("the result", () => (ingested.some((m) => m.type === "result") ? true : undefined));
      const topic = basicIngestEvtTopic(rule, { rackId: RACK, componentId: only });
      expect(ingested).toEqual(
        ["ack", "progress", "progress", "progress", "result"].map((type) => ({ topic, type })),
      );
      expect(plain).toEqual([]);
    } finally {
      await local.stop();
      for (const remove of removals) await remove();
    }
  });
});

describe("bmc fleet: a flash's schedule", () => {
  it("runs from the ack, not from the broker's acknowledgements: with every PUBACK withheld the result still goes out", async () => {
    // Between this fleet and the broker, a proxy that holds back every PUBACK the broker sends
    // (MQTT packet type 4) until the result is in: a fleet that waited for each report's PUBACK
    // before the next would send the ack and then nothing.
    const held: Buffer[] = [];
    let toFleet: Socket | undefined;
    let holding = true;
    const proxy = createServer((client) => {
      toFleet = client;
      const upstream = connect(broker.port, "127.0.0.1");
      client.pipe(upstream);
      let pending = Buffer.alloc(0);
      upstream.on("data", (chunk: Buffer) => {
        pending = Buffer.concat([pending, chunk]);
        for (;;) {
          // Fixed header: type byte, then the remaining length as a base-128 varint.
          let length = 0;
          let i = 1;
          for (let shift = 0; i < pending.length; i++, shift += 7) {
            length += (pending[i]! & 0x7f) << shift;
            if ((pending[i]! & 0x80) === 0) break;
          }
          if (i >= pending.length || pending.length < i + 1 + length) return;
          const packet = pending.subarray(0, i + 1 + length);
          pending = pending.subarray(i + 1 + length);
          if (holding && packet[0]! >> 4 === 4) held.push(Buffer.from(packet));
          else client.write(packet);
        }
      });
      for (const socket of [client, upstream]) socket.on("error", () => {});
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    // A component of its own: the suite's fleet answers on the same broker.
    const only = id(12);
    const rack: InventoryRack = { id: RACK, name: "rack-t01", components: [{ id: only, type: "COMPUTE" }] };
    const local = await startBmcFleet({
      brokerUrl: `mqtt://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
      racks: [rack],
      config: { defaults: { outcome: "succeed", updateMs: UPDATE_MS }, racks: {}, components: {} },
    });
    try {
      await publisher.publish(at(only), updateCmd("r-held"));
      await resultOf(only, "r-held");
      expect(trace(only, "r-held")).toEqual([
        "ack",
        "progress:25",
        "progress:50",
        "progress:75",
        "result:ok:2.0.0",
      ]);
      // Four reports sent, none of them acknowledged to the fleet yet (the result's may be in flight).
      expect(held.length).toBeGreaterThanOrEqual(4);
    } finally {
      holding = false;
      for (const packet of held) toFleet?.write(packet);
      await local.stop();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });
});

describe("bmc fleet: exactly once per task at demo scale", () => {
  it("195 components updated twice each (at-least-once delivery) flash exactly once each", async () => {
    const demo = generateDemoFleet({ seed: "it-scale", racks: 5 });
    const changed: string[] = [];
    const events = new Map<string, BmcMessage[]>();
    const local = await startBmcFleet({
      brokerUrl: broker.url,
      racks: demo,
      config: { defaults: { outcome: "succeed", updateMs: 20 }, racks: {}, components: {} },
      onFirmwareChanged: (componentId) => {
        changed.push(componentId);
      },
    });
    try {
      const components = demo.flatMap((r) => r.components.map((c) => ({ rackId: r.id, id: c.id })));
      const ids = new Set(components.map((c) => c.id));
      const unsubscribe = await broker.subscribe(BMC_EVT_TOPIC_FILTER, (topic, payload) => {
        const where = parseBmcTopic(topic);
        const decoded = decodeBmcEvent(payload);
        if (where && decoded.ok && ids.has(where.componentId)) {
          events.set(where.componentId, [...(events.get(where.componentId) ?? []), decoded.value]);
        }
      });
      const send = (c: { rackId: string; id: string }) =>
        publisher.publish(
          { rackId: c.rackId, componentId: c.id },
          updateCmd(`scale-${c.id}`, "5.0.0", `task-${c.rackId}`),
        );
      await Promise.all(components.map(send));
      await Promise.all(components.map(send));
      // The duplicate lands either while the flash runs (answered with a second ack) or after it
      // (answered with the stored result): either way three answers, and one flash.
      const answers = (componentId: string) =>
        (events.get(componentId) ?? []).filter((e) => e.type === "ack" || e.type === "result").length;
      await until(
        "a result and three answers per component",
        () =>
          components.every((c) => answers(c.id) === 3 && events.get(c.id)?.some((e) => e.type === "result"))
            ? true
            : undefined,
        15_000,
      );
      await unsubscribe();
      const stats = local.stats();
      expect(stats.components).toBe(195);
      expect(stats.updateCommands).toBe(390);
      expect(stats.flashes).toBe(195);
      expect(Object.values(stats.flashesByComponent).every((n) => n === 1)).toBe(true);
      expect(Object.keys(stats.flashesByComponent)).toHaveLength(195);
      expect(Object.values(stats.flashesByTask)).toEqual([39, 39, 39, 39, 39]);
      expect(new Set(changed).size).toBe(195);
      expect(changed).toHaveLength(195);
    } finally {
      await local.stop();
    }
  });
});
