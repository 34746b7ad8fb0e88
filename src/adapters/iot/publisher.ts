/**
 * The production command path: publishes BMC commands through the AWS IoT data plane
 * (`Publish`, QoS 1). Locally the same client is pointed at local/iot-shim.ts, so this file is the
 * code that runs in both places.
 *
 * QoS 1 is at-least-once: a BMC may see a command twice. That is safe because the protocol is
 * idempotent on `requestId` (see docs/bmc-protocol.md), and it is why this publisher never needs
 * to know whether an earlier attempt got through.
 *
 * Commands go to the rack-scoped topic (protocol v4, src/domain/bmc-topics.ts), and with
 * `legacyTopics` also to the component's v1–v3 topic, for BMCs that still listen there.
 */
import { IoTDataPlaneClient, PublishCommand } from "@aws-sdk/client-iot-data-plane";
import type { BmcCommandPublisher } from "../../app/ports.js";
import { type BmcCommand, encodeBmcMessage } from "../../domain/bmc-protocol.js";
import { type BmcAddress, bmcCmdTopic, legacyBmcCmdTopic } from "../../domain/bmc-topics.js";

export interface IotPublisherOptions {
  /** A ready client; when given, `endpoint` and `region` are ignored. */
  client?: IoTDataPlaneClient;
  /**
   * The account's IoT data endpoint (`https://xxxx-ats.iot.eu-west-1.amazonaws.com`), or the
   * local shim's URL. Absent: the SDK's default resolution (AWS_ENDPOINT_URL_IOT_DATA_PLANE etc.).
   */
  endpoint?: string;
  region?: string;
  /**
   * Also publish every command on the v1–v3 per-component topic (`flow/bmc/{id}/cmd`), for a fleet
   * whose BMCs are not all on rack-scoped agents yet. Each command is then published twice.
   */
  legacyTopics?: boolean;
}

/**
 * A publish that did not reach IoT Core. Its `name` is stable because Step Functions matches Retry
 * on it. The message names the topic and request id only: never the payload, which may carry
 * encrypted credentials.
 */
export class BmcPublishError extends Error {
  constructor(
    readonly topic: string,
    readonly requestId: string,
    readonly causeName: string,
    detail: string,
  ) {
    super(`publishing ${requestId} to ${topic} failed: ${causeName}: ${detail}`);
    this.name = "BmcPublishError";
  }
}

export class IotPublisher implements BmcCommandPublisher {
  private readonly client: IoTDataPlaneClient;
  private readonly legacyTopics: boolean;

  constructor(options: IotPublisherOptions = {}) {
    this.legacyTopics = options.legacyTopics ?? false;
    this.client =
      options.client ??
      new IoTDataPlaneClient({
        ...(options.endpoint !== undefined ? { endpoint: options.endpoint } : {}),
        ...(options.region !== undefined ? { region: options.region } : {}),
      });
  }

  async publish(to: BmcAddress, command: BmcCommand): Promise<void> {
    const payload = Buffer.from(encodeBmcMessage(command), "utf8");
    const topics = [bmcCmdTopic(to), ...(this.legacyTopics ? [legacyBmcCmdTopic(to.componentId)] : [])];
    await Promise.all(topics.map((topic) => this.send(topic, command.requestId, payload)));
  }

  private async send(topic: string, requestId: string, payload: Buffer): Promise<void> {
    try {
      await this.client.send(new PublishCommand({ topic, qos: 1, payload, contentType: "application/json" }));
    } catch (err) {
      const e = err as Error;
      throw new BmcPublishError(topic, requestId, e.name || "Error", e.message);
    }
  }
}
