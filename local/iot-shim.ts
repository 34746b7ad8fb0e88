/**
 * The local stand-in for the AWS IoT data plane's `Publish` call, in front of the local broker, so
 * the real `IoTDataPlaneClient` (src/adapters/iot/publisher.ts) runs unchanged with its `endpoint`
 * pointed here.
 *
 * The wire shape, as the SDK sends it:
 *   POST /topics/{topic, fully URL-encoded}?qos=1[&retain=true][&contentType=...]
 *   body: the raw payload
 * and expects 200 with an empty JSON body. Errors come back the way the SDK parses them: a status
 * and an `x-amzn-ErrorType` header plus `{ "message": ... }`.
 *
 * Signatures are not checked: this listens on loopback only and stands in for a service whose
 * credentials are dummies locally.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { LocalMqttBroker } from "./mqtt-broker.js";

export interface IotShim {
  /** `http://127.0.0.1:<port>`: the `endpoint` for `IoTDataPlaneClient`. */
  readonly endpoint: string;
  readonly port: number;
  /** How many publishes reached the broker (a cheap figure for benchmarks). */
  published(): number;
  stop(): Promise<void>;
}

/** IoT Core's own limit; larger bodies are refused as IoT would refuse them. */
const MAX_PAYLOAD_BYTES = 128 * 1024;

export async function startIotShim(
  broker: Pick<LocalMqttBroker, "publish">,
  options: { port?: number; host?: string } = {},
): Promise<IotShim> {
  const host = options.host ?? "127.0.0.1";
  let count = 0;

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      reply(res, 500, "InternalFailureException", (err as Error).message);
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://shim");
    const match = /^\/topics\/([^/]+)$/.exec(url.pathname);
    if (match === null)
      return reply(res, 404, "ResourceNotFoundException", `no such resource: ${url.pathname}`);
    if (req.method !== "POST") {
      return reply(res, 405, "MethodNotAllowedException", `${req.method} is not allowed on /topics`);
    }
    let topic: string;
    try {
      topic = decodeURIComponent(match[1]!);
    } catch {
      return reply(res, 400, "InvalidRequestException", "topic is not valid URL encoding");
    }
    if (topic === "" || topic.includes("+") || topic.includes("#")) {
      return reply(res, 400, "InvalidRequestException", `topic must be a concrete topic name (got ${topic})`);
    }
    const qosText = url.searchParams.get("qos") ?? "0";
    if (qosText !== "0" && qosText !== "1") {
      return reply(res, 400, "InvalidRequestException", `qos must be 0 or 1 (got ${qosText})`);
    }
    const body = await readBody(req);
    if (body === undefined) {
      return reply(res, 413, "RequestEntityTooLargeException", `payload exceeds ${MAX_PAYLOAD_BYTES} bytes`);
    }
    await broker.publish(topic, body, {
      qos: qosText === "1" ? 1 : 0,
      retain: url.searchParams.get("retain") === "true",
    });
    count += 1;
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  let stopping: Promise<void> | undefined;
  return {
    endpoint: `http://${host}:${port}`,
    port,
    published: () => count,
    stop() {
      stopping ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return stopping;
    },
  };
}

function reply(res: ServerResponse, status: number, errorType: string, message: string): void {
  res
    .writeHead(status, { "content-type": "application/json", "x-amzn-ErrorType": errorType })
    .end(JSON.stringify({ message }));
}

/** The body, or undefined when it is larger than IoT Core accepts. */
async function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  // Read to the end even when too large: leaving the loop early would destroy the socket before
  // the 413 is written.
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.byteLength;
    if (size <= MAX_PAYLOAD_BYTES) chunks.push(buf);
  }
  return size > MAX_PAYLOAD_BYTES ? undefined : Buffer.concat(chunks);
}
