/**
 * What authorization costs per call: the same calls, over mutual TLS on a real socket, to two gRPC
 * servers started in this process with the same application stub behind them (it answers at once,
 * so the difference is the server's own work), one open and one under an access policy of 50
 * bindings. Calls alternate between the two, so both see the same machine. Printed: the median
 * and p99 of each, the difference of the medians, and their ratio; and the pure decision alone
 * (decide + the rack check), in microseconds.
 *
 *   GetOperationRun     read: the permission only, nothing read
 *   PauseOperationRun   operate on a run of 100 racks: the permission, then the racks' scope (the
 *                       racks come from an in-memory lookup here; on AWS that is three reads of
 *                       the front's tables, the cost of which the API benchmark shows)
 *
 *   npx tsx bench/authz.ts            2,000 calls of each kind per server
 *   npx tsx bench/authz.ts --quick    400
 */
import { parseArgs } from "node:util";
import { parseAccessPolicy } from "../src/adapters/grpc/access-policy-source.js";
import type { AccessControl } from "../src/adapters/grpc/authorize.js";
import { createFlowClient } from "../src/adapters/grpc/client.js";
import { startGrpcServer } from "../src/adapters/grpc/server.js";
import { clientCredentials } from "../src/adapters/grpc/tls.js";
import type { FlowApi } from "../src/app/api.js";
import { noopMetrics, silentLogger } from "../src/app/observability.js";
import type { Principal, RackPlace } from "../src/domain/access-policy.js";
import { checkRacks, decide } from "../src/domain/authorization.js";
import type { Run } from "../src/domain/model.js";
import { makeCertificates } from "./lib/certificates.js";
import { elapsedMs, median, percentile } from "./lib/stats.js";

const { values } = parseArgs({ options: { quick: { type: "boolean" } } });
const CALLS = values.quick ? 400 : 2_000;
const RUN_ID = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";

const RACKS: RackPlace[] = Array.from({ length: 100 }, (_, i) => ({
  name: `dc1-r${i}`,
  datacenter: "dc1",
  row: String.fromCharCode(65 + (i % 4)),
}));

/** 49 other teams' bindings first, so the caller's is found last. */
const POLICY = [
  "bindings:",
  ...Array.from(
    { length: 49 },
    (_, i) => `  - subjects: ["uri:spiffe://example.org/team-${i}/*", "cn:team-${i}"]
    roles: [operator]
    scope: { datacenters: [dc${i + 2}] }`,
  ),
  `  - subjects: ["uri:spiffe://example.org/ops/*"]
    roles: [operator]
    scope: { datacenters: [dc1], rows: [A, B, C, D] }`,
].join("\n");

const RUN = {
  id: RUN_ID,
  name: "bench",
  description: "",
  status: "PAUSED",
  reason: "OPERATOR_PAUSED",
  statusMessage: "",
  phaseSizes: [100],
  currentPhaseIndex: 0,
  counters: [{ completed: 0, failed: 0, terminated: 0, skipped: 0 }],
  inFlight: 0,
  createdAt: 1_800_000_000_000,
  updatedAt: 1_800_000_000_000,
  config: {
    selector: { kind: "percentage", percentage: 100, seed: "s" },
    maxConcurrentTargets: 2,
    safetyGates: [],
    conflictRetry: { retryTimeoutMs: 3_600_000, initialRetryDelayMs: 30_000, maxRetryDelayMs: 300_000 },
    ordering: { kind: "random", seed: "o" },
    phasePlan: { kind: "equal", phaseCount: 1 },
    autoAdvance: false,
    operation: {
      kind: "upgradeFirmware",
      firmware: {
        description: "",
        subTargets: [],
        overrideReadinessCheck: false,
        overrideVersionCheck: false,
      },
    },
    targetScope: { excludeOperationRunIds: [] },
  },
} satisfies Run;

const api = {
  getRun: async () => ({ run: RUN }),
  pauseRun: async () => RUN,
} as unknown as FlowApi;

async function main(): Promise<void> {
  const certs = makeCertificates({
    clients: { ops: { cn: "ops", san: "URI:spiffe://example.org/ops/bench" } },
  });
  const policy = parseAccessPolicy("bench-policy.yaml", POLICY);
  const access: AccessControl = {
    policy: () => policy,
    lookups: {
      runRacks: async () => ({ reason: "OPERATOR_PAUSED", racks: RACKS }),
      taskRacks: async () => [],
      recordDenial: async () => {},
    },
    logger: silentLogger,
    metrics: noopMetrics,
  };
  const tls = {
    certFile: certs.file("server.crt"),
    keyFile: certs.file("server.key"),
    clientCaFile: certs.file("ca.crt"),
  };
  const common = { api, host: "127.0.0.1", port: 0, logger: silentLogger, protoDir: false as const, tls };
  const open = await startGrpcServer(common);
  const guarded = await startGrpcServer({ ...common, access });
  const credentials = () =>
    clientCredentials({
      caFile: certs.file("ca.crt"),
      certFile: certs.file("ops.crt"),
      keyFile: certs.file("ops.key"),
    });
  const clients = {
    open: createFlowClient(`127.0.0.1:${open.port}`, credentials()),
    guarded: createFlowClient(`127.0.0.1:${guarded.port}`, credentials()),
  };
  try {
    const calls = {
      GetOperationRun: (c: typeof clients.open) =>
        c.getOperationRun({ id: { id: RUN_ID }, includeStats: false }),
      PauseOperationRun: (c: typeof clients.open) => c.pauseOperationRun({ id: { id: RUN_ID } }),
    };
    console.log(
      `authorization per call, over mutual TLS on 127.0.0.1; ${CALLS} calls of each kind per server`,
    );
    console.log("call                 open p50   guarded p50   difference   ratio   open p99   guarded p99");
    for (const [name, call] of Object.entries(calls)) {
      // Warm both channels and the JIT first.
      for (let i = 0; i < 50; i++) await Promise.all([call(clients.open), call(clients.guarded)]);
      const samples = { open: [] as number[], guarded: [] as number[] };
      for (let i = 0; i < CALLS; i++) {
        for (const which of i % 2 === 0 ? (["open", "guarded"] as const) : (["guarded", "open"] as const)) {
          const start = process.hrtime.bigint();
          await call(clients[which]);
          samples[which].push(elapsedMs(start));
        }
      }
      const [o, g] = [median(samples.open), median(samples.guarded)];
      console.log(
        [
          name.padEnd(20),
          `${o.toFixed(3)} ms`.padStart(9),
          `${g.toFixed(3)} ms`.padStart(13),
          `${(g - o).toFixed(3)} ms`.padStart(12),
          (g / o).toFixed(2).padStart(7),
          `${percentile(samples.open, 99).toFixed(3)} ms`.padStart(10),
          `${percentile(samples.guarded, 99).toFixed(3)} ms`.padStart(13),
        ].join(" "),
      );
    }

    // The pure decision alone: permission for PauseOperationRun, then 100 racks against the scopes.
    const who: Principal = {
      authenticated: true,
      commonName: "ops",
      subjectAltNames: ["URI:spiffe://example.org/ops/bench"],
    };
    const decisions: number[] = [];
    for (let i = 0; i < CALLS; i++) {
      const start = process.hrtime.bigint();
      const decision = decide(policy, who, "/v1.Flow/PauseOperationRun", false);
      if (!decision.allowed || checkRacks(who, decision, RACKS) !== undefined)
        throw new Error("bench: denied");
      decisions.push(elapsedMs(start));
    }
    console.log(
      `decision alone (50 bindings, 100 racks): median ${(median(decisions) * 1000).toFixed(1)} µs, p99 ${(percentile(decisions, 99) * 1000).toFixed(1)} µs`,
    );
  } finally {
    clients.open.close();
    clients.guarded.close();
    await Promise.all([open.shutdown(1000), guarded.shutdown(1000)]);
    certs.remove();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
