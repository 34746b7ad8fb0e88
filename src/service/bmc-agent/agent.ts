/**
 * The BMC agent's composition root: one MQTT connection to the broker (AWS IoT Core with the
 * agent's X.509 certificate, or the local stack's aedes), subscribed to its rack's command topics
 * (`flow/rack/<rackId>/bmc/+/cmd`; without a rackId, the v1–v3 `cmd` topic of each BMC it lists); per BMC one Redfish client (one session) and one BmcWorker; one image
 * cache, one image server, one journal for all of them. Commands for every BMC run at once (a
 * rack's 39 BMCs update together); a BMC's own commands are answered as its worker says. Their
 * reports go out one message per rack per moment (ReportBatcher: every report of a
 * `reportFlushMs` window in one message on `flow/rack/<rackId>/reports`), or, with a window of 0
 * or no rack, each alone on its component's evt topic.
 *
 * stop() (SIGTERM): unsubscribes (no new work), lets running updates finish their reporting for
 * up to shutdownGraceMs, then ends the rest's waits (their journal says "pushed", so a restarted
 * agent resumes them from the inventory instead of flashing again), sends the reports held, logs out of every BMC, and
 * closes the broker connection once its last publish is acknowledged.
 */
import { readFileSync } from "node:fs";
import { connectAsync, type IClientOptions, type MqttClient } from "mqtt";
import { iotCredentials, kmsCommandAuth } from "../../adapters/bmc-agent/command-auth.js";
import { DiskImageCache } from "../../adapters/bmc-agent/image-cache.js";
import { HttpImageServer } from "../../adapters/bmc-agent/image-server.js";
import { FileJournal } from "../../adapters/bmc-agent/journal.js";
import { RedfishClient } from "../../adapters/redfish/client.js";
import { BmcWorker } from "../../app/bmc-agent/bmc-worker.js";
import { ReportBatcher } from "../../app/bmc-agent/report-batcher.js";
import type { AgentClock, CommandAuthOpener, EventSink } from "../../app/ports/bmc-agent.js";
import { describeBmcMessage, encodeBmcMessage } from "../../domain/bmc-protocol.js";
import { decodeBmcCommand } from "../../domain/bmc-protocol-decode.js";
import {
  basicIngestEvtTopic,
  basicIngestRackReportsTopic,
  bmcEvtTopic,
  legacyBmcCmdTopic,
  legacyBmcEvtTopic,
  parseBmcTopic,
  rackCmdTopicFilter,
  rackReportsTopic,
} from "../../domain/bmc-topics.js";
import type { AgentConfig } from "./config.js";

export interface BmcAgent {
  /** Redfish sessions created so far, per component id. */
  sessions(): Record<string, number>;
  downloads(): { count: number; bytes: number };
  /**
   * Reports sent: MQTT messages and the events they carried (equal when each event is its own),
   * and the events held for the rack's next message.
   */
  reports(): { messages: number; events: number; held: number };
  stop(): Promise<void>;
}

export interface BmcAgentOptions {
  log?: (line: string) => void;
  clock?: AgentClock;
}

export const realClock: AgentClock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(new Error("stopping"));
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(new Error("stopping"));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    }),
};

/** The `auth` blob opener the config asks for (docs/agent.md, "Credentials"), or none. */
function commandAuthOpener(config: Readonly<AgentConfig>): CommandAuthOpener | undefined {
  const auth = config.commandAuth;
  if (auth === undefined) return undefined;
  const endpoint = auth.kmsEndpoint === undefined ? {} : { endpoint: auth.kmsEndpoint };
  if (auth.credentials === "environment") return kmsCommandAuth({ region: auth.region, ...endpoint });
  const { certFile, keyFile, caFile } = config.mqtt;
  return kmsCommandAuth({
    region: auth.region,
    ...endpoint,
    credentials: iotCredentials({
      endpoint: auth.credentialsEndpoint,
      roleAlias: auth.roleAlias,
      thingName: config.mqtt.clientId,
      cert: readFileSync(certFile as string),
      key: readFileSync(keyFile as string),
      ...(caFile === undefined ? {} : { ca: readFileSync(caFile) }),
    }),
  });
}

export async function startBmcAgent(
  config: Readonly<AgentConfig>,
  options: BmcAgentOptions = {},
): Promise<BmcAgent> {
  const log = options.log ?? ((line: string) => console.error(line));
  const clock = options.clock ?? realClock;
  for (const warning of config.warnings) log(`flow-bmc-agent: WARNING: ${warning}`);

  const journal = await FileJournal.open(config.stateDir);
  const images = new DiskImageCache({ dir: config.cacheDir });
  const imageServer = new HttpImageServer(config.imageServer);
  await imageServer.start();
  const abort = new AbortController();

  const mqttOptions: IClientOptions = {
    protocolVersion: 4, // AWS IoT Core and aedes 1.2.0 both speak MQTT 3.1.1
    clientId: config.mqtt.clientId,
    clean: true,
    reconnectPeriod: 1000,
  };
  if (config.mqtt.caFile !== undefined) mqttOptions.ca = readFileSync(config.mqtt.caFile);
  if (config.mqtt.certFile !== undefined) mqttOptions.cert = readFileSync(config.mqtt.certFile);
  if (config.mqtt.keyFile !== undefined) mqttOptions.key = readFileSync(config.mqtt.keyFile);
  const mqtt: MqttClient = await connectAsync(config.mqtt.url, mqttOptions);
  mqtt.on("error", (err) => log(`flow-bmc-agent: mqtt: ${err.message}`));

  const rackId = config.rackId;
  const reportsRule = config.reportsRule;
  const single = { messages: 0, events: 0 };
  const oneByOne: EventSink = {
    async publish(componentId, event) {
      // With reportsRule, straight to the rule (Basic Ingest); the config allows it with rackId only.
      const topic =
        rackId === undefined
          ? legacyBmcEvtTopic(componentId)
          : reportsRule === undefined
            ? bmcEvtTopic({ rackId, componentId })
            : basicIngestEvtTopic(reportsRule, { rackId, componentId });
      await mqtt.publishAsync(topic, encodeBmcMessage(event), { qos: 1 });
      single.messages += 1;
      single.events += 1;
    },
  };
  // With a flush window (the config gives one with rackId only), one message per rack per moment.
  const batcher =
    rackId === undefined || config.reportFlushMs === 0
      ? undefined
      : new ReportBatcher({
          clock,
          flushMs: config.reportFlushMs,
          log,
          send: async (payload) => {
            const topic =
              reportsRule === undefined
                ? rackReportsTopic(rackId)
                : basicIngestRackReportsTopic(reportsRule, rackId);
            await mqtt.publishAsync(topic, payload, { qos: 1 });
          },
        });
  const events: EventSink = batcher ?? oneByOne;

  const auth = commandAuthOpener(config);
  const clients = new Map<string, RedfishClient>();
  const workers = new Map<string, BmcWorker>();
  for (const bmc of config.bmcs) {
    const client = new RedfishClient({
      url: bmc.url,
      username: bmc.username,
      password: bmc.password,
      tls: bmc.tls,
      allowBasicAuth: bmc.allowBasicAuth,
      requestTimeoutMs: config.requestTimeoutMs,
    });
    clients.set(bmc.componentId, client);
    const settings = {
      componentId: bmc.componentId,
      ...(rackId === undefined ? {} : { rackId }),
      subTargets: bmc.subTargets,
      applyTime: bmc.applyTime,
      ...(bmc.firmwareMember === undefined ? {} : { firmwareMember: bmc.firmwareMember }),
    };
    workers.set(
      bmc.componentId,
      new BmcWorker(settings, {
        bmc: client,
        images,
        imageServer,
        events,
        journal,
        clock,
        timings: config.timings,
        signal: abort.signal,
        log,
        ...(auth === undefined ? {} : { auth }),
      }),
    );
  }

  const handling = new Set<Promise<void>>();
  let accepting = true;
  mqtt.on("message", (topic, payload) => {
    if (!accepting) return;
    const where = parseBmcTopic(topic);
    // Only its own rack's topics (or, without a rack, the per-component ones) are the agent's.
    const ours = where?.channel === "cmd" && where.rackId?.toLowerCase() === rackId;
    const worker = ours ? workers.get(where.componentId.toLowerCase()) : undefined;
    if (worker === undefined) return;
    const decoded = decodeBmcCommand(payload);
    if (!decoded.ok) {
      // Names fields and rules only, never values (the auth blob stays out of logs).
      log(`flow-bmc-agent: ignoring a command for ${worker.componentId}: ${decoded.message}`);
      return;
    }
    const command = decoded.value;
    const work =
      command.type === "query"
        ? worker.query(command)
        : command.type === "reset"
          ? worker.reset(command)
          : worker.update(command);
    const tracked = work.catch((err: unknown) =>
      log(`flow-bmc-agent: ${describeBmcMessage(command)} failed: ${(err as Error).message}`),
    );
    handling.add(tracked);
    void tracked.finally(() => handling.delete(tracked));
  });
  // One subscription for the whole rack (all its IoT policy allows), else one per BMC.
  const topics =
    rackId === undefined
      ? config.bmcs.map((b) => legacyBmcCmdTopic(b.componentId))
      : [rackCmdTopicFilter(rackId)];
  await mqtt.subscribeAsync(topics, { qos: 1 });
  log(`flow-bmc-agent: serving ${config.bmcs.length} BMCs over ${config.mqtt.url}`);

  let stopping: Promise<void> | undefined;
  return {
    sessions: () => Object.fromEntries([...clients].map(([id, c]) => [id, c.sessions])),
    downloads: () => images.downloads,
    reports: () => batcher?.stats() ?? { ...single, held: 0 },
    stop() {
      stopping ??= (async () => {
        accepting = false;
        await mqtt.unsubscribeAsync(topics).catch(() => {});
        const all = Promise.allSettled([...handling]);
        const grace = clock.sleep(config.shutdownGraceMs).then(() => "late" as const);
        if ((await Promise.race([all.then(() => "done" as const), grace])) === "late") {
          log(
            "flow-bmc-agent: updates still running at shutdown; a restarted agent resumes them from the journal",
          );
        }
        abort.abort();
        await all;
        // Events held for the rack's next message go now, while the connection is open.
        await batcher?.flush();
        await Promise.allSettled([...clients.values()].map((c) => c.close()));
        await imageServer.stop();
        await journal.close();
        await mqtt.endAsync();
      })();
      return stopping;
    },
  };
}
