/**
 * A harness for the BMC agent's contract tests: the real local MQTT broker, the Redfish BMC
 * emulator over HTTPS (certificates made by openssl for the run), an image store on loopback HTTP
 * (standing in for the catalog's presigned URLs) that counts its downloads, and the agent itself,
 * in this process, configured through the same validation as `flow-bmc-agent --config`.
 *
 *   const h = await startAgentHarness([{ id: C1, behaviour: { fail: true } }]);
 *   const image = h.images.add("1.3.0");
 *   await h.send(C1, h.update("r1", "1.3.0", image));
 *   expect(await h.eventsUntilResult(C1, "r1")).toEqual([...]);
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type LocalMqttBroker, startMqttBroker } from "../../local/mqtt-broker.js";
import {
  type EmulatedBmcSpec,
  firmwareImageHeader,
  type RedfishEmulator,
  type RedfishEmulatorOptions,
  startRedfishEmulator,
} from "../../local/redfish-emulator.js";
import type { AgentClock } from "../../src/app/ports/bmc-agent.js";
import {
  type BmcCommand,
  type BmcEvent,
  encodeBmcMessage,
  type UpdateCommand,
} from "../../src/domain/bmc-protocol.js";
import { decodeBmcEvent } from "../../src/domain/bmc-protocol-decode.js";
import { readRackReports } from "../../src/domain/bmc-rack-reports.js";
import {
  BMC_EVT_TOPIC_FILTER,
  bmcCmdTopic,
  LEGACY_BMC_EVT_TOPIC_FILTER,
  legacyBmcCmdTopic,
  parseBmcTopic,
  parseRackReportsTopic,
  RACK_REPORTS_TOPIC_FILTER,
} from "../../src/domain/bmc-topics.js";
import { type BmcAgent, startBmcAgent } from "../../src/service/bmc-agent/agent.js";
import { parseAgentConfig } from "../../src/service/bmc-agent/config.js";
import { type Certificates, makeCertificates } from "./certificates.js";
import { until } from "./poll.js";

export const USERNAME = "flow";
export const PASSWORD = "s3cret-bmc-password";

/** Timings small enough for tests; nothing asserts on them. Progress unpaced: every rise is sent. */
export const TEST_TIMINGS = {
  pollIntervalMs: 10,
  maxRetryAfterMs: 50,
  noProgressTimeoutMs: 300,
  rebootTimeoutMs: 15_000,
  settleTimeoutMs: 300,
  busyTimeoutMs: 5_000,
  progressIntervalMs: 0,
};

/** The harness agent's flush window (with a rackId): batched like the default, but quickly. */
export const TEST_REPORT_FLUSH_MS = 20;

export interface ImageRef {
  uri: string;
  sha256: string;
  size: number;
}

/** Firmware images on loopback HTTP; counts GETs per path. */
export class ImageStore {
  readonly gets = new Map<string, number>();
  private readonly files = new Map<string, Buffer>();
  private server?: http.Server;
  private base = "";

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => {
      const path = (req.url ?? "").split("?")[0]!;
      this.gets.set(path, (this.gets.get(path) ?? 0) + 1);
      const file = this.files.get(path);
      if (file === undefined) return void res.writeHead(404).end();
      res.writeHead(200, { "Content-Length": file.length }).end(file);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", () => resolve()));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** An image for `version` of `size` bytes; `tampered`: the bytes served differ from the digest given. */
  add(version: string, options: { size?: number; tampered?: boolean } = {}): ImageRef {
    const header = firmwareImageHeader(version);
    const body = Buffer.alloc(Math.max(options.size ?? 4096, header.length), 0x5a);
    header.copy(body);
    const sha256 = createHash("sha256").update(body).digest("hex");
    const path = `/firmware/${version}-${this.files.size}.bin`;
    const served = Buffer.from(body);
    if (options.tampered) served[served.length - 1] = 0x00;
    this.files.set(path, served);
    return { uri: `${this.base}${path}?X-Amz-Signature=secret`, sha256, size: body.length };
  }

  /** The image's bytes as served. */
  bytesOf(image: ImageRef): Buffer {
    return this.files.get(new URL(image.uri).pathname)!;
  }

  getsOf(image: ImageRef): number {
    return this.gets.get(new URL(image.uri).pathname) ?? 0;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

export interface AgentHarness {
  broker: LocalMqttBroker;
  emulator: RedfishEmulator;
  images: ImageStore;
  certs: Certificates;
  agent: BmcAgent;
  stateDir: string;
  logs: string[];
  /**
   * Every event the agent sent, per component, in arrival order: on its evt topics (its rack's, or
   * v1–v3's) and in its rack's batches.
   */
  events: Map<string, BmcEvent[]>;
  /** MQTT messages the agent's reports came in, on the broker: one by one (evt) and its rack's batches. */
  messages: { evt: number; rack: number };
  send(componentId: string, command: BmcCommand): Promise<void>;
  update(
    requestId: string,
    targetVersion: string,
    image: ImageRef,
    extra?: Partial<UpdateCommand>,
  ): UpdateCommand;
  /** Waits for the `result` (or `status`) of `requestId`, then returns every event for it so far. */
  eventsUntilResult(componentId: string, requestId: string, count?: number): Promise<BmcEvent[]>;
  /** Stops the running agent (as SIGTERM does) and starts a new one with the same state directory. */
  restartAgent(): Promise<void>;
  stopAgent(): Promise<void>;
  stop(): Promise<void>;
}

export interface HarnessOptions {
  emulator?: Omit<RedfishEmulatorOptions, "bmcs" | "tls" | "username" | "password">;
  /** Per BMC (by id): config fields to add or replace, e.g. `{ allowBasicAuth: true }`; a function gets the run's certificates. */
  bmcConfig?:
    | Record<string, Record<string, unknown>>
    | ((certs: Certificates) => Record<string, Record<string, unknown>>);
  /** Fields to add or replace; `rackId: undefined` runs the agent on the v1–v3 per-component topics. */
  agentConfig?: Record<string, unknown>;
  /** The agent's clock (default: the real one), e.g. steppingClock() to run minutes of a flash at once. */
  clock?: AgentClock;
}

/** The rack the harness's agent serves unless `agentConfig.rackId` says otherwise. */
export const TEST_RACK_ID = "7a000000-0000-4000-8000-0000000000a1";

export async function startAgentHarness(
  bmcs: EmulatedBmcSpec[],
  options: HarnessOptions = {},
): Promise<AgentHarness> {
  const certs = makeCertificates({ clients: {} });
  const stateDir = mkdtempSync(join(tmpdir(), "flow-bmc-agent-"));
  const broker = await startMqttBroker();
  const images = new ImageStore();
  await images.start();
  const emulator = await startRedfishEmulator({
    ...options.emulator,
    bmcs,
    tls: { cert: certs.pem("server.crt"), key: certs.pem("server.key") },
    username: USERNAME,
    password: PASSWORD,
  });
  const events = new Map<string, BmcEvent[]>();
  const rackId = (
    options.agentConfig !== undefined && "rackId" in options.agentConfig
      ? options.agentConfig.rackId
      : TEST_RACK_ID
  ) as string | undefined;
  const messages = { evt: 0, rack: 0 };
  const add = (componentId: string, event: BmcEvent) =>
    events.set(componentId, [...(events.get(componentId) ?? []), event]);
  const onEvent = (topic: string, payload: Buffer) => {
    const where = parseBmcTopic(topic);
    const decoded = decodeBmcEvent(payload);
    if (where === undefined || !decoded.ok) throw new Error(`undecodable event on ${topic}`);
    messages.evt += 1;
    add(where.componentId, decoded.value);
  };
  const onBatch = (topic: string, payload: Buffer) => {
    const read = readRackReports(JSON.parse(payload.toString("utf8")) as Record<string, unknown>);
    if (parseRackReportsTopic(topic) === undefined || !read.ok)
      throw new Error(`undecodable batch on ${topic}`);
    messages.rack += 1;
    for (const item of read.value) {
      if (!item.ok) throw new Error(`undecodable report on ${topic}: ${item.message}`);
      add(item.value.componentId, item.value.event);
    }
  };
  await broker.subscribe(BMC_EVT_TOPIC_FILTER, onEvent);
  await broker.subscribe(LEGACY_BMC_EVT_TOPIC_FILTER, onEvent);
  await broker.subscribe(RACK_REPORTS_TOPIC_FILTER, onBatch);
  const logs: string[] = [];
  const perBmc =
    typeof options.bmcConfig === "function" ? options.bmcConfig(certs) : (options.bmcConfig ?? {});
  const config = () =>
    parseAgentConfig(
      {
        rackId,
        mqtt: { url: broker.url, clientId: `agent-test-${process.pid}` },
        stateDir,
        timings: TEST_TIMINGS,
        requestTimeoutMs: 5_000,
        shutdownGraceMs: 0,
        // Its rack's reports batched as the product's default does, in a window short for tests.
        ...(rackId === undefined ? {} : { reportFlushMs: TEST_REPORT_FLUSH_MS }),
        ...options.agentConfig,
        bmcs: bmcs.map((b) => ({
          componentId: b.id,
          url: emulator.urlOf(b.id),
          username: USERNAME,
          passwordEnv: "FLOW_TEST_BMC_PASSWORD",
          caFile: certs.file("ca.crt"),
          ...perBmc[b.id],
        })),
      },
      { baseDir: stateDir, env: { FLOW_TEST_BMC_PASSWORD: PASSWORD } },
    );
  const start = () =>
    startBmcAgent(config(), {
      log: (line) => logs.push(line),
      ...(options.clock === undefined ? {} : { clock: options.clock }),
    });
  let agent = await start();
  let stopped = false;

  const h: AgentHarness = {
    broker,
    emulator,
    images,
    certs,
    get agent() {
      return agent;
    },
    stateDir,
    logs,
    events,
    messages,
    send: (componentId, command) =>
      broker.publish(
        rackId === undefined ? legacyBmcCmdTopic(componentId) : bmcCmdTopic({ rackId, componentId }),
        encodeBmcMessage(command),
      ),
    update: (requestId, targetVersion, image, extra = {}) => ({
      v: 1,
      type: "update",
      requestId,
      taskId: "7a000000-0000-4000-8000-00000000aaaa",
      targetVersion,
      image: { uri: image.uri, sha256: image.sha256 },
      issuedAt: 1_767_225_600_000,
      ...extra,
    }),
    async eventsUntilResult(componentId, requestId, count = 1) {
      const mine = () => (events.get(componentId) ?? []).filter((e) => e.requestId === requestId);
      return until(
        `${count} result(s) for ${requestId} on ${componentId}`,
        () => {
          const got = mine();
          const ends = got.filter((e) => e.type === "result" || e.type === "status").length;
          return ends >= count ? got : undefined;
        },
        20_000,
      );
    },
    async stopAgent() {
      if (!stopped) await agent.stop();
      stopped = true;
    },
    async restartAgent() {
      await h.stopAgent();
      agent = await start();
      stopped = false;
    },
    async stop() {
      await h.stopAgent();
      await emulator.stop();
      await images.stop();
      await broker.stop();
      certs.remove();
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
  return h;
}

// The events a child task receives, as the agent must send them.

export const ok = (requestId: string, version: string): BmcEvent => ({
  v: 1,
  type: "result",
  requestId,
  ok: true,
  version,
});
export const ack = (requestId: string): BmcEvent => ({ v: 1, type: "ack", requestId });
export const progress = (requestId: string, percent: number): BmcEvent => ({
  v: 1,
  type: "progress",
  requestId,
  percent,
});
export const failed = (requestId: string, version: string, code: string, message: string): BmcEvent => ({
  v: 1,
  type: "result",
  requestId,
  ok: false,
  version,
  error: { code, message },
});
