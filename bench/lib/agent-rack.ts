/**
 * A rack's traffic with the BMC agent as the agent benchmarks (bench/bmc-agent.ts,
 * agent-progress.ts) drive it over the local broker: every BMC's events heard until each has its
 * result, and one update per BMC published on its command topic.
 */
import type { LocalMqttBroker } from "../../local/mqtt-broker.js";
import { type BmcEvent, encodeBmcMessage } from "../../src/domain/bmc-protocol.js";
import { decodeBmcEvent } from "../../src/domain/bmc-protocol-decode.js";
import { BMC_EVT_TOPIC_FILTER, bmcCmdTopic, parseBmcTopic } from "../../src/domain/bmc-topics.js";

export interface RackResults {
  /** Result ok per BMC, as they come. */
  results: Map<string, boolean>;
  /** performance.now() at the last result. */
  lastResultAt(): number;
  /** Resolves once every BMC has a result. */
  done: Promise<void>;
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
  await broker.subscribe(BMC_EVT_TOPIC_FILTER, (topic, payload) => {
    const decoded = decodeBmcEvent(payload);
    const where = parseBmcTopic(topic);
    if (!decoded.ok || where === undefined) return;
    onEvent(where.componentId, decoded.value);
    if (decoded.value.type !== "result") return;
    results.set(where.componentId, decoded.value.ok);
    lastResultAt = performance.now();
    if (results.size === ids.length) allDone();
  });
  return { results, lastResultAt: () => lastResultAt, done };
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
