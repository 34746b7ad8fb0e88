/**
 * The local stack over mutual TLS under an access policy file, with certificates the test makes
 * (certificates.ts): the server trusts every CA made (`client-cas.crt`), each client is a name of
 * `clients`. For the e2e suites on who may do what:
 *
 *   const s = await startMtlsStack({ label: "authz", policy, clients: { viewer: { cn: "viewer-1" } }, groups: [DC1] });
 *   await s.as("viewer").flow.listOperationRuns(…);  await s.flowctl("viewer", "whoami");
 *   writeFileSync(s.policyFile, other); s.local.accessPolicy?.reload();
 *   await s.stop();
 */
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import type { BmcBehaviour } from "../../local/fleet-file.js";
import { type LocalStack, startLocalStack } from "../../local/stack.js";
import {
  createFlowAdminClient,
  createFlowClient,
  type FlowAdminClient,
  type FlowClient,
} from "../../src/adapters/grpc/client.js";
import { clientCredentials } from "../../src/adapters/grpc/tls.js";
import { type Certificates, type ClientCertificateSpec, makeCertificates } from "./certificates.js";
import { fleetOf, HANG, inventoryOf, type RackGroup } from "./fixtures-inventory.js";
import { type FlowctlResult, flowctlAs } from "./flowctl.js";
import { SHARED_IMAGE_BUCKET } from "./stack.js";
import { testEndpoint } from "./test-endpoint.js";

export interface MtlsStack {
  local: LocalStack;
  certs: Certificates;
  /** Every line the stack logged. */
  logs: string[];
  /** The policy file the stack reads (write it, then `local.accessPolicy?.reload()`). */
  policyFile: string;
  /** Clients presenting `who`'s certificate (closed by stop). */
  as(who: string): { flow: FlowClient; admin: FlowAdminClient };
  /** flowctl in this process, as `who`. */
  flowctl(who: string, ...args: string[]): Promise<FlowctlResult>;
  stop(): Promise<void>;
}

export async function startMtlsStack(options: {
  /** Names the suite's tables. */
  label: string;
  policy: string;
  clients: Record<string, ClientCertificateSpec>;
  /** More CAs than the main one (a client names its CA with `ca`). */
  cas?: Record<string, { cn: string }>;
  groups: readonly RackGroup[];
  /** The fleet's BMCs; default: they hang (runs stay in flight). */
  behaviour?: BmcBehaviour;
}): Promise<MtlsStack> {
  const certs = makeCertificates({
    clients: options.clients,
    ...(options.cas === undefined ? {} : { cas: options.cas }),
  });
  const policyFile = certs.file("policy.yaml");
  writeFileSync(policyFile, options.policy);
  const logs: string[] = [];
  const clients: { flow: FlowClient; admin: FlowAdminClient }[] = [];
  let local: LocalStack | undefined;
  try {
    local = await startLocalStack({
      port: 0,
      inventory: inventoryOf(options.groups),
      fleet: fleetOf(options.groups, options.behaviour ?? HANG),
      tickMs: 150,
      awsEndpoint: testEndpoint(),
      imageBucket: SHARED_IMAGE_BUCKET,
      tablePrefix: `e2e-${options.label}-${randomUUID().slice(0, 8)}-`,
      log: (line) => logs.push(line),
      childTaskWaitMs: 200,
      tls: {
        certFile: certs.file("server.crt"),
        keyFile: certs.file("server.key"),
        clientCaFile: certs.file("client-cas.crt"),
      },
      authzPolicyFile: policyFile,
    });
  } catch (error) {
    certs.remove();
    throw error;
  }
  const started = local;
  return {
    local: started,
    certs,
    logs,
    policyFile,
    as(who) {
      const address = `127.0.0.1:${started.port}`;
      const credentials = clientCredentials({
        caFile: certs.file("ca.crt"),
        certFile: certs.file(`${who}.crt`),
        keyFile: certs.file(`${who}.key`),
      });
      const pair = {
        flow: createFlowClient(address, credentials),
        admin: createFlowAdminClient(address, credentials),
      };
      clients.push(pair);
      return pair;
    },
    flowctl: (who, ...args) => flowctlAs(started.port, certs, who, ...args),
    async stop() {
      for (const c of clients) {
        c.flow.close();
        c.admin.close();
      }
      await started.stop();
      certs.remove();
    },
  };
}
