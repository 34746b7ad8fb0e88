/**
 * The gRPC server with TLS and mutual TLS, with certificates made by openssl
 * (test/support/certificates.ts; fake application: test/support/grpc-fake-api.ts).
 */
import * as grpc from "@grpc/grpc-js";
import { afterAll, describe, expect, it } from "vitest";
import { createFlowClient } from "../../src/adapters/grpc/client.js";
import { type RunningGrpcServer, startGrpcServer } from "../../src/adapters/grpc/server.js";
import { clientCredentials } from "../../src/adapters/grpc/tls.js";
import { makeCertificates } from "../support/certificates.js";
import { BUILD, FakeFlowApi, failure, RUN_ID, recordingLogger, soon } from "../support/grpc-fake-api.js";

describe("grpc server e2e: TLS and mutual TLS", () => {
  const servers: RunningGrpcServer[] = [];
  /** A CA, a server certificate for 127.0.0.1/localhost and a client certificate, all P-256. */
  const certs = makeCertificates({
    clients: { client: { cn: "flowctl", san: "DNS:ops.example.com,URI:spiffe://flow/ops" } },
  });
  const file = certs.file;

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.shutdown(500)));
    certs.remove();
  });

  async function serve(clientCaFile?: string, api = new FakeFlowApi()): Promise<string> {
    const server = await startGrpcServer({
      api,
      host: "127.0.0.1",
      port: 0,
      logger: recordingLogger(),
      protoDir: false,
      tls: { certFile: file("server.crt"), keyFile: file("server.key"), clientCaFile },
    });
    servers.push(server);
    return `127.0.0.1:${server.port}`;
  }

  it("TLS: a client trusting the CA is served; a plaintext client is not", async () => {
    const address = await serve();
    const trusted = createFlowClient(address, clientCredentials({ caFile: file("ca.crt") }));
    expect(await trusted.version({}, soon())).toEqual(BUILD);
    trusted.close();

    const plain = createFlowClient(address, clientCredentials());
    expect((await failure(plain.version({}, soon(2000)))).code).toBe(grpc.status.UNAVAILABLE);
    plain.close();
  });

  it("mutual TLS: a client without a certificate is refused; one with a CA-signed certificate is served", async () => {
    const address = await serve(file("ca.crt"));
    const anonymous = createFlowClient(address, clientCredentials({ caFile: file("ca.crt") }));
    expect((await failure(anonymous.version({}, soon(2000)))).code).toBe(grpc.status.UNAVAILABLE);
    anonymous.close();

    const identified = createFlowClient(
      address,
      clientCredentials({
        caFile: file("ca.crt"),
        certFile: file("client.crt"),
        keyFile: file("client.key"),
      }),
    );
    expect(await identified.version({}, soon())).toEqual(BUILD);
    identified.close();
  });

  it("mutual TLS: the verified client certificate is the caller (CN, SANs), whatever name it also declares", async () => {
    const api = new FakeFlowApi();
    const address = await serve(file("ca.crt"), api);
    const identified = createFlowClient(
      address,
      clientCredentials({
        caFile: file("ca.crt"),
        certFile: file("client.crt"),
        keyFile: file("client.key"),
      }),
    );
    const metadata = new grpc.Metadata();
    metadata.set("x-flow-actor", "alice");
    await identified.cancelOperationRun({ id: { id: RUN_ID }, reason: "x" }, { ...soon(), metadata });
    await identified.pauseOperationRun({ id: { id: RUN_ID } }, soon());
    identified.close();
    const certificate = {
      name: "flowctl",
      source: "CLIENT_CERTIFICATE",
      authenticated: true,
      subjectAltNames: ["DNS:ops.example.com", "URI:spiffe://flow/ops"],
      issuer: "CN=flow-test-ca",
    };
    expect(api.actors).toEqual([
      { method: "cancelRun", actor: { ...certificate, declaredName: "alice" } },
      { method: "pauseRun", actor: certificate },
    ]);
  });

  it("TLS without a client CA: no certificate is asked for; the declared name is the caller", async () => {
    const api = new FakeFlowApi();
    const address = await serve(undefined, api);
    const client = createFlowClient(
      address,
      clientCredentials({
        caFile: file("ca.crt"),
        certFile: file("client.crt"),
        keyFile: file("client.key"),
      }),
    );
    const metadata = new grpc.Metadata();
    metadata.set("x-flow-actor", "alice");
    await client.pauseOperationRun({ id: { id: RUN_ID } }, { ...soon(), metadata });
    client.close();
    expect(api.actors).toEqual([
      {
        method: "pauseRun",
        actor: { name: "alice", source: "DECLARED", authenticated: false, subjectAltNames: [] },
      },
    ]);
  });

  it("a missing key file fails at start, naming the setting and the file", async () => {
    await expect(
      startGrpcServer({
        api: new FakeFlowApi(),
        host: "127.0.0.1",
        port: 0,
        logger: recordingLogger(),
        protoDir: false,
        tls: { certFile: file("server.crt"), keyFile: file("nope.key") },
      }),
    ).rejects.toThrow(`tls.keyFile: cannot read ${file("nope.key")}: file not found`);
  });
});
