/**
 * The production command path: publishes BMC commands through the AWS IoT data plane
 * (`Publish`, QoS 1). Locally the same client is pointed at local/iot-shim.ts, so this file is the
 * code that runs in both places.
 *
 * QoS 1 is at-least-once: a BMC may see a command twice. That is safe because the protocol is
 * idempotent on `requestId` (see docs/bmc-protocol.md), and it is why this publisher never needs
 * to know whether an earlier attempt got through.
 */
import { IoTDataPlaneClient, PublishCommand } from "@aws-sdk/client-iot-data-plane";
import type { BmcCommandPublisher } from "../../app/ports.js";
import { type BmcCommand, bmcCmdTopic, encodeBmcMessage } from "../../domain/bmc-protocol.js";

export interface IotPublisherOptions {
  /** A ready client; when given, `endpoint` and `region` are ignored. */
  client?: IoTDataPlaneClient;
  /**
   * The account's IoT data endpoint (`https://xxxx-ats.iot.eu-west-1.amazonaws.com`), or the
   * local shim's URL. Absent: the SDK's default resolution (AWS_ENDPOINT_URL_IOT_DATA_PLANE etc.).
   */
  endpoint?: string;
  region?: string;
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

  constructor(options: IotPublisherOptions = {}) {
    this.client =
      options.client ??
      new IoTDataPlaneClient({
        ...(options.endpoint !== undefined ? { endpoint: options.endpoint } : {}),
        ...(options.region !== undefined ? { region: options.region } : {}),
      });
  }

  async publish(componentId: string, command: BmcCommand): Promise<void> {
    const topic = bmcCmdTopic(componentId);
    try {
      await this.client.send(
        new PublishCommand({
          topic,
          qos: 1,
          payload: Buffer.from(encodeBmcMessage(command), "utf8"),
          contentType: "application/json",
        }),
      );
    } catch (err) {
      const e = err as Error;
      throw new BmcPublishError(topic, command.requestId, e.name || "Error", e.message);
    }
  }
}
