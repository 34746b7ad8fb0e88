/**
 * The local stand-in for AWS IoT Core's message broker: aedes 1.2.0 (MQTT 3.1.1 only; an MQTT 5
 * client is refused, so connect with `protocolVersion: 4`) on a loopback TCP port.
 *
 * Besides TCP clients (the simulated BMC fleet), in-process code can publish and subscribe directly
 * through `publish` / `subscribe`, which is how the IoT shim injects commands and how the local
 * stack plays the part of the IoT rule on `flow/bmc/+/evt`.
 */
import { randomUUID } from "node:crypto";
import { type AddressInfo, createServer, type Server, type Socket } from "node:net";
import { Aedes, type AedesPublishPacket } from "aedes";
import { connectAsync } from "mqtt";

export interface LocalMqttBroker {
  /** `mqtt://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** Publishes into the broker as if a client had; resolves once the broker has routed it. */
  publish(
    topic: string,
    payload: Uint8Array | string,
    options?: { qos?: 0 | 1; retain?: boolean },
  ): Promise<void>;
  /**
   * Delivers every message matching `filter` (MQTT wildcards `+`, `#`) to `handler`, in the
   * broker's order. Resolves once the subscription is active; the returned function removes it.
   */
  subscribe(
    filter: string,
    handler: (topic: string, payload: Buffer) => void | Promise<void>,
  ): Promise<() => Promise<void>>;
  /** Closes every client connection and the listener. Idempotent. */
  stop(): Promise<void>;
}

export interface MqttBrokerOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  host?: string;
}

export async function startMqttBroker(options: MqttBrokerOptions = {}): Promise<LocalMqttBroker> {
  const host = options.host ?? "127.0.0.1";
  const broker = await Aedes.createBroker();
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    broker.handle(socket);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => broker.close(() => resolve()));
      await closed;
    })();
    return stopping;
  };

  return {
    url: `mqtt://${host}:${port}`,
    port,
    publish(topic, payload, opts = {}) {
      return new Promise<void>((resolve, reject) => {
        broker.publish(
          {
            cmd: "publish",
            topic,
            payload: typeof payload === "string" ? Buffer.from(payload, "utf8") : Buffer.from(payload),
            qos: opts.qos ?? 1,
            retain: opts.retain ?? false,
            dup: false,
          },
          (err) => (err ? reject(err) : resolve()),
        );
      });
    },
    async subscribe(filter, handler) {
      const deliver = (packet: AedesPublishPacket, done: () => void): void => {
        // aedes also routes its own $SYS heartbeats; only application topics reach the handler.
        if (packet.topic.startsWith("$SYS/")) {
          done();
          return;
        }
        const payload = typeof packet.payload === "string" ? Buffer.from(packet.payload) : packet.payload;
        Promise.resolve()
          .then(() => handler(packet.topic, payload))
          .catch((err: unknown) => {
            console.error(`mqtt-broker: handler for ${filter} failed on ${packet.topic}:`, err);
          })
          .finally(done);
      };
      await new Promise<void>((resolve) => broker.subscribe(filter, deliver, resolve));
      return () => new Promise<void>((resolve) => broker.unsubscribe(filter, deliver, resolve));
    },
    stop,
  };
}

/**
 * `publish` into a broker that runs elsewhere, over one MQTT 3.1.1 connection: the IoT shim's
 * broker when the BMCs and their broker are outside this process (LocalStackOptions.bmcBroker).
 */
export async function connectMqttPublisher(url: string): Promise<Pick<LocalMqttBroker, "publish" | "stop">> {
  const client = await connectAsync(url, {
    protocolVersion: 4, // aedes 1.2.0 refuses MQTT 5
    clientId: `flow-iot-shim-${process.pid}-${randomUUID().slice(0, 8)}`,
    clean: true,
    reconnectPeriod: 1000,
  });
  return {
    async publish(topic, payload, opts = {}) {
      await client.publishAsync(topic, typeof payload === "string" ? payload : Buffer.from(payload), {
        qos: opts.qos ?? 1,
        retain: opts.retain ?? false,
      });
    },
    stop: () => client.endAsync(true),
  };
}
