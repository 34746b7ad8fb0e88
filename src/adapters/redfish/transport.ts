/**
 * HTTP(S) to one BMC: TLS as its config says, kept-alive connections for GETs and a new one for
 * each request that must not be sent twice, request bodies as streams (an image is never held in
 * memory), JSON answers parsed, and the transport's failures sorted into the three kinds the agent
 * decides on:
 *
 *   RedfishUnreachableError  no answer: refused, reset, dropped mid-request (a BMC rebooting), timed out
 *   RedfishHttpError         an answer with a status the caller did not expect (its Redfish message kept)
 *   RedfishTlsError          the BMC's certificate is not the one configured (never retried)
 *
 * TLS, per BMC, exactly one of:
 *   caFile       verify the chain against this CA (the BMC's own or the site's)
 *   fingerprint  pin: the leaf certificate's SHA-256 must be this, whatever signed it; checked
 *                right after the handshake and before the socket is handed to the request, so no
 *                byte of a request (credentials, image) reaches a BMC that failed the pin
 *   insecure     no verification at all (the caller warns)
 * and plain http:// only to a loopback address (the config refuses it elsewhere).
 */
import { readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import type { Readable } from "node:stream";
import tls from "node:tls";

export interface TlsPolicy {
  caFile?: string;
  /** SHA-256 of the leaf certificate, hex, with or without colons, any case. */
  fingerprint?: string;
  insecure?: boolean;
}

export class RedfishUnreachableError extends Error {
  readonly code = "UNREACHABLE";
  constructor(message: string) {
    super(message);
    this.name = "RedfishUnreachableError";
  }
}

export class RedfishTlsError extends Error {
  readonly code = "TLS";
  constructor(message: string) {
    super(message);
    this.name = "RedfishTlsError";
  }
}

export class RedfishHttpError extends Error {
  readonly code = "HTTP";
  constructor(
    readonly status: number,
    readonly method: string,
    readonly path: string,
    readonly detail: string,
    readonly retryAfterMs?: number,
  ) {
    super(`${method} ${path} answered ${status}${detail === "" ? "" : `: ${detail}`}`);
    this.name = "RedfishHttpError";
  }
}

export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The parsed JSON body; undefined when empty or not JSON. */
  body: unknown;
}

export interface HttpRequest {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  headers?: Record<string, string>;
  json?: unknown;
  /** A streamed body: called once per attempt, so a retried request gets a fresh stream. */
  stream?: { open: () => Readable; length: number; contentType: string };
}

/** `"AB:CD:…"` or `"abcd…"` → `"ABCD…"`. */
export function normalizeFingerprint(text: string): string {
  return text.replace(/:/g, "").toUpperCase();
}

/** Retry-After in milliseconds (seconds or an HTTP date); undefined when absent or unreadable. */
export function retryAfterMs(value: string | string[] | undefined, now: number): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || text.trim() === "") return undefined;
  if (/^\d+$/.test(text.trim())) return Number(text.trim()) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

const MAX_JSON_BYTES = 4 * 1024 * 1024;

export class BmcTransport {
  /** Kept-alive connections, for GETs (safe to send again when a reused one was closed under them). */
  private readonly agent: http.Agent;
  /**
   * A new connection for each request that must never be sent twice (POST, PATCH, DELETE: a push,
   * a session, an action): a kept-alive one the BMC closed as it idled would fail it, and it cannot
   * be retried, so it never rides a reused socket.
   */
  private readonly once: http.Agent;
  private readonly base: URL;

  constructor(
    baseUrl: string,
    tlsPolicy: TlsPolicy,
    private readonly timeoutMs: number,
  ) {
    this.base = new URL(baseUrl);
    this.agent = makeAgent(this.base, tlsPolicy, true);
    this.once = makeAgent(this.base, tlsPolicy, false);
  }

  get origin(): string {
    return this.base.origin;
  }

  send(request: HttpRequest): Promise<HttpAnswer> {
    return this.sendOnce(request, true);
  }

  /**
   * One request. A GET on a kept-alive socket that the BMC closed while it idled (its keep-alive
   * timeout, a reset) fails with ECONNRESET before any answer: it is sent once more on a new
   * connection (`again`), as reads are safe to repeat; anything else is never re-sent.
   */
  private sendOnce(request: HttpRequest, again: boolean): Promise<HttpAnswer> {
    const url = new URL(request.path, this.base);
    const headers: Record<string, string | number> = { Accept: "application/json", ...request.headers };
    let payload: Buffer | undefined;
    if (request.json !== undefined) {
      payload = Buffer.from(JSON.stringify(request.json));
      headers["Content-Type"] = "application/json";
      headers["Content-Length"] = payload.length;
    } else if (request.stream !== undefined) {
      headers["Content-Type"] = request.stream.contentType;
      headers["Content-Length"] = request.stream.length;
    }
    const lib = url.protocol === "http:" ? http : https;
    return new Promise<HttpAnswer>((resolve, reject) => {
      let settled = false;
      const fail = (err: Error) => {
        if (settled) return;
        settled = true;
        const stale = req.reusedSocket && (err as NodeJS.ErrnoException).code === "ECONNRESET";
        if (again && stale && request.method === "GET") {
          resolve(this.sendOnce(request, false));
          return;
        }
        if (err instanceof RedfishTlsError || err instanceof RedfishHttpError) return reject(err);
        const tlsProblem = (err as NodeJS.ErrnoException).code ?? "";
        if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(tlsProblem)) {
          return reject(new RedfishTlsError(`TLS to ${this.base.host} failed: ${err.message}`));
        }
        reject(new RedfishUnreachableError(`${request.method} ${request.path}: ${err.message}`));
      };
      const agent = request.method === "GET" ? this.agent : this.once;
      const req = lib.request(url, { method: request.method, headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size <= MAX_JSON_BYTES) chunks.push(chunk);
        });
        res.on("error", fail);
        res.on("aborted", () => fail(new Error("the BMC dropped the connection")));
        res.on("end", () => {
          if (settled) return;
          settled = true;
          const text = Buffer.concat(chunks).toString("utf8");
          let body: unknown;
          try {
            body = text.trim() === "" ? undefined : JSON.parse(text);
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
        });
      });
      req.setTimeout(this.timeoutMs, () => req.destroy(new Error(`no answer within ${this.timeoutMs} ms`)));
      req.on("error", fail);
      if (payload !== undefined) req.end(payload);
      else if (request.stream !== undefined) {
        const body = request.stream.open();
        body.on("error", (err) => req.destroy(err));
        body.pipe(req);
      } else req.end();
    });
  }

  close(): void {
    this.agent.destroy();
    this.once.destroy();
  }
}

/** An agent for one BMC, TLS as its policy says; `keepAlive` false: a new connection per request. */
function makeAgent(base: URL, tlsPolicy: TlsPolicy, keepAlive: boolean): http.Agent {
  if (base.protocol === "http:") return new http.Agent({ keepAlive, maxSockets: 4 });
  const ca = tlsPolicy.caFile === undefined ? undefined : readFileSync(tlsPolicy.caFile);
  const pin = tlsPolicy.fingerprint === undefined ? undefined : normalizeFingerprint(tlsPolicy.fingerprint);
  if (pin === undefined) {
    return new https.Agent({
      keepAlive,
      maxSockets: 4,
      ...(ca === undefined ? {} : { ca }),
      rejectUnauthorized: tlsPolicy.insecure !== true,
    });
  }
  const agent = new https.Agent({ keepAlive, maxSockets: 4, rejectUnauthorized: false });
  // The pin is checked before the socket is given to the request (the callback form of
  // createConnection), so a request never writes to a peer that failed it.
  (agent as unknown as { createConnection: unknown }).createConnection = (
    options: tls.ConnectionOptions,
    done: (err: Error | null, socket?: tls.TLSSocket) => void,
  ) => {
    const socket = tls.connect({ ...options, rejectUnauthorized: false });
    socket.once("secureConnect", () => {
      const seen = normalizeFingerprint(socket.getPeerCertificate().fingerprint256 ?? "");
      if (seen === pin) return done(null, socket);
      socket.destroy();
      done(new RedfishTlsError(`certificate fingerprint ${seen} is not the pinned one`));
    });
    socket.once("error", (err) => done(err));
    return undefined;
  };
  return agent;
}
