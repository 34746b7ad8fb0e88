/**
 * A rack's traffic with the BMC agent as the agent benchmarks (bench/bmc-agent.ts,
 * agent-progress.ts) drive it over the local broker: every BMC's events heard until each has its
 * result (on the evt topics, or in the rack's batches), with the MQTT messages they came in, and
 * one update per BMC published on its command topic.
 */
import type { LocalMqttBroker } from "../../local/mqtt-broker.js";
import { type BmcEvent, encodeBmcMessage } from "../../src/domain/bmc-protocol.js";
import { decodeBmcEvent } from "../../src/domain/bmc-protocol-decode.js";
import { readRackReports } from "../../src/domain/bmc-rack-reports.js";
import {
  BMC_EVT_TOPIC_FILTER,
  bmcCmdTopic,
  parseBmcTopic,
  RACK_REPORTS_TOPIC_FILTER,
} from "../../src/domain/bmc-topics.js";

export interface RackResults {
  /** Result ok per BMC, as they come. */
  results: Map<string, boolean>;
  /** performance.now() at the last result. */
  lastResultAt(): number;
  /** Resolves once every BMC has a result. */
  done: Promise<void>;
  /** The reports heard, and the MQTT messages they came in: one by one (evt) and in rack batches. */
  counts(): { reports: number; evt: number; rack: number };
}

/** Listens on every BMC's evt topic; `onEvent` sees each event before it is counted. */
export async function listenForResults(
  broker: LocalMqttBroker,
  ids: readonly string[],
  onEvent: (componentId: string, event: BmcEvent) => void = () => {},
): Promise<RackResults> {
  const results = new Map<string, boolean>();
  let lastResultAt = 0;
  let allDone: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    allDone = resolve;
  });
  const counts = { reports: 0, evt: 0, rack: 0 };
  const heard = (componentId: string, event: BmcEvent) => {
    counts.reports += 1;
    onEvent(componentId, event);
    if (event.type !== "result") return;
    results.set(componentId, event.ok);
    lastResultAt = performance.now();
    if (results.size === ids.length) allDone();
  };
  await broker.subscribe(BMC_EVT_TOPIC_FILTER, (topic, payload) => {
    const decoded = decodeBmcEvent(payload);
    const where = parseBmcTopic(topic);
    if (!decoded.ok || where === undefined) return;
    counts.evt += 1;
    heard(where.componentId, decoded.value);
  });
  await broker.subscribe(RACK_REPORTS_TOPIC_FILTER, (_topic, payload) => {
    const read = readRackReports(JSON.parse(payload.toString("utf8")) as Record<string, unknown>);
    if (!read.ok) return;
    counts.rack += 1;
    for (const item of read.value) if (item.ok) heard(item.value.componentId, item.value.event);
  });
  return { results, lastResultAt: () => lastResultAt, done, counts: () => ({ ...counts }) };
}

/** One update per BMC (request ids `<prefix>-<i>`) to `version`, the image at `uri`. */
export async function publishUpdates(
  broker: LocalMqttBroker,
  rackId: string,
  ids: readonly string[],
  update: { prefix: string; version: string; uri: string; sha256: string },
): Promise<void> {
  await Promise.all(
    ids.map((componentId, i) =>
      broker.publish(
        bmcCmdTopic({ rackId, componentId }),
        encodeBmcMessage({
          v: 1,
          type: "update",
          requestId: `${update.prefix}-${i}`,
          taskId: "7f000000-0000-4000-8000-00000000bbbb",
          targetVersion: update.version,
          image: { uri: update.uri, sha256: update.sha256 },
          issuedAt: Date.now(),
        }),
      ),
    ),
  );
}
