/**
 * Server (and client) credentials from PEM files.
 *
 * Plaintext is allowed only on a loopback address, where nothing but this machine can listen in:
 * the local stack and the tests. Anything else needs TLS or an explicit `allowInsecureNonLoopback`
 * (for a deployment behind a load balancer that terminates TLS itself), so a missing setting fails
 * at start instead of silently serving credentials-bearing requests in the clear.
 *
 * With `clientCaFile` the server requires and verifies a client certificate (mutual TLS).
 */
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { ChannelCredentials, ServerCredentials } from "@grpc/grpc-js";

export interface ServerTlsFiles {
  /** PEM certificate chain of the server. */
  certFile: string;
  /** PEM private key of the server. */
  keyFile: string;
  /** PEM CA bundle; when set, clients must present a certificate it signed. */
  clientCaFile?: string;
}

/** A certificate and key held in memory (the Fargate task's own, self-signed.ts); no client certificates. */
export interface ServerTlsPem {
  certPem: string;
  keyPem: string;
}

export interface ClientTlsFiles {
  /** PEM CA bundle that signed the server's certificate; absent = the system's roots. */
  caFile?: string;
  /** For mutual TLS: the client's certificate chain and key, both or neither. */
  certFile?: string;
  keyFile?: string;
}

export class TlsConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TlsConfigError";
  }
}

/** `127.0.0.1`, `127.8.9.10`, `::1`, `[::1]`, `localhost` → true; `0.0.0.0`, `::`, `10.0.0.5` → false. */
export function isLoopbackHost(host: string): boolean {
  const h = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  if (h.toLowerCase() === "localhost") return true;
  if (isIP(h) === 4) return h.startsWith("127.");
  if (isIP(h) === 6)
    return h === "::1" || h === "0:0:0:0:0:0:0:1" || h.toLowerCase().startsWith("::ffff:127.");
  return false;
}

/** Reads one PEM file; the error names the setting and the path, and says what is wrong. */
function readPem(setting: string, path: string): Buffer {
  let content: Buffer;
  try {
    content = readFileSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === "ENOENT" ? "file not found" : code === "EACCES" ? "permission denied" : String(err);
    throw new TlsConfigError(`${setting}: cannot read ${path}: ${why}`);
  }
  if (!content.toString("utf8").includes("-----BEGIN ")) {
    throw new TlsConfigError(`${setting}: ${path} is not a PEM file (no "-----BEGIN" line)`);
  }
  return content;
}

export function serverCredentials(options: {
  host: string;
  tls?: ServerTlsFiles | ServerTlsPem;
  allowInsecureNonLoopback?: boolean;
}): ServerCredentials {
  const { host, tls } = options;
  if (tls === undefined) {
    if (!isLoopbackHost(host) && options.allowInsecureNonLoopback !== true) {
      throw new TlsConfigError(
        `refusing to serve plaintext gRPC on non-loopback host ${host}: configure tls.certFile and tls.keyFile, or set allowInsecureNonLoopback`,
      );
    }
    return ServerCredentials.createInsecure();
  }
  if ("certPem" in tls) {
    return ServerCredentials.createSsl(null, [
      { cert_chain: Buffer.from(tls.certPem), private_key: Buffer.from(tls.keyPem) },
    ]);
  }
  const cert = readPem("tls.certFile", tls.certFile);
  const key = readPem("tls.keyFile", tls.keyFile);
  const clientCa = tls.clientCaFile === undefined ? null : readPem("tls.clientCaFile", tls.clientCaFile);
  return ServerCredentials.createSsl(clientCa, [{ cert_chain: cert, private_key: key }], clientCa !== null);
}

export function clientCredentials(tls?: ClientTlsFiles): ChannelCredentials {
  if (tls === undefined) return ChannelCredentials.createInsecure();
  if ((tls.certFile === undefined) !== (tls.keyFile === undefined)) {
    throw new TlsConfigError("tls.certFile and tls.keyFile must be given together");
  }
  const ca = tls.caFile === undefined ? null : readPem("tls.caFile", tls.caFile);
  const key = tls.keyFile === undefined ? null : readPem("tls.keyFile", tls.keyFile);
  const cert = tls.certFile === undefined ? null : readPem("tls.certFile", tls.certFile);
  return ChannelCredentials.createSsl(ca, key, cert);
}
