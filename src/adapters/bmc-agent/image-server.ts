/**
 * The agent's own short-lived image URLs (the ImageServer port), for BMCs that pull their image
 * (Redfish SimpleUpdate with an ImageURI): a plain HTTP server on the management network serving
 * cached, already verified images, each under an unguessable path that exists only while its
 * update runs. The BMC's copy is verified by the BMC's own image checks; the agent verified the
 * bytes against the command's sha256 before offering them.
 */
import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ImageServer, LocalImage } from "../../app/ports/bmc-agent.js";

export interface HttpImageServerOptions {
  /** Where to listen. */
  host: string;
  port: number;
  /** The host name or address BMCs reach the agent at; default `host`. */
  advertiseHost?: string;
}

export class HttpImageServer implements ImageServer {
  private readonly offers = new Map<string, LocalImage>();
  private server?: Server;
  private baseUrl = "";

  constructor(private readonly options: HttpImageServerOptions) {}

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      const file = req.method === "GET" ? this.offers.get(req.url ?? "") : undefined;
      if (file === undefined) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { "Content-Type": "application/octet-stream", "Content-Length": file.size });
      const body = createReadStream(file.path);
      body.on("error", () => res.destroy());
      body.pipe(res);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.options.port, this.options.host, () => resolve());
    });
    this.server = server;
    const { port } = server.address() as AddressInfo;
    const host = this.options.advertiseHost ?? this.options.host;
    this.baseUrl = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  }

  offer(file: LocalImage): { url: string; protocol: "HTTP"; release: () => void } {
    if (this.server === undefined) throw new Error("the image server is not started");
    const path = `/images/${randomBytes(18).toString("hex")}/${file.sha256.slice(0, 12)}.bin`;
    this.offers.set(path, file);
    return { url: `${this.baseUrl}${path}`, protocol: "HTTP", release: () => this.offers.delete(path) };
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
