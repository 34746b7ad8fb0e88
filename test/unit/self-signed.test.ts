/**
 * The task's own certificate for the load balancer's hop (src/adapters/grpc/self-signed.ts): a
 * well-formed X.509 certificate for a fresh P-256 key, self-signed, valid now, and one a real TLS
 * handshake serves (the load balancer, like this client, does not verify it).
 */
import { createPrivateKey, X509Certificate } from "node:crypto";
import { connect, createServer, type TLSSocket } from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { selfSignedCertificate } from "../../src/adapters/grpc/self-signed.js";
import { serverCredentials } from "../../src/adapters/grpc/tls.js";

const NOW = Date.UTC(2026, 11, 5, 3, 0, 0);

describe("the task's self-signed certificate", () => {
  it("parses, names the task, is signed by its own key, and is valid from an hour before now for 397 days", () => {
    const { certPem, keyPem } = selfSignedCertificate("flow-front", NOW);
    const cert = new X509Certificate(certPem);
    expect(cert.subject).toBe("CN=flow-front");
    expect(cert.issuer).toBe("CN=flow-front");
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(cert.publicKey.asymmetricKeyDetails).toEqual({ namedCurve: "prime256v1" });
    expect(new Date(cert.validFrom).getTime()).toBe(NOW - 3_600_000);
    expect(new Date(cert.validTo).getTime()).toBe(NOW + 397 * 86_400_000);
    expect(keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(cert.checkPrivateKey(createPrivateKey(keyPem))).toBe(true);
  });

  it("each call makes a new key", () => {
    expect(selfSignedCertificate("a", NOW).keyPem).not.toBe(selfSignedCertificate("a", NOW).keyPem);
  });

  it("a TLS server serves it: the handshake completes and the client sees exactly this certificate", async () => {
    const { certPem, keyPem } = selfSignedCertificate("flow-front", Date.now());
    const server = createServer({ cert: certPem, key: keyPem }, (socket) => socket.end("ok"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const peer = await new Promise<Buffer>((resolve, reject) => {
        const socket: TLSSocket = connect({ host: "127.0.0.1", port, rejectUnauthorized: false }, () => {
          resolve(socket.getPeerCertificate().raw);
          socket.end();
        });
        socket.on("error", reject);
      });
      expect(peer.equals(new X509Certificate(certPem).raw)).toBe(true);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("the gRPC server serves it (serverCredentials with PEM in memory): a client trusting it connects", async () => {
    const { certPem, keyPem } = selfSignedCertificate("flow-front", Date.now());
    const server = new grpc.Server();
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(
        "127.0.0.1:0",
        serverCredentials({ host: "127.0.0.1", tls: { certPem, keyPem } }),
        (error, bound) => (error ? reject(error) : resolve(bound)),
      ),
    );
    const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createSsl(Buffer.from(certPem)), {
      "grpc.ssl_target_name_override": "flow-front",
    });
    try {
      await new Promise<void>((resolve, reject) =>
        client.waitForReady(Date.now() + 10_000, (error) => (error ? reject(error) : resolve())),
      );
    } finally {
      client.close();
      server.forceShutdown();
    }
  });
});
