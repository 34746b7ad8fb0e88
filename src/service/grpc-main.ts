/**
 * The gRPC front on ECS Fargate: reads its configuration once (src/config.ts), builds the stores,
 * the Step Functions task service and the run use cases, serves gRPC, and drains on SIGTERM (ECS
 * sends it before stopping a task; the load balancer's health check sees NOT_SERVING first).
 */
import { randomUUID } from "node:crypto";
import { startGrpcServer } from "../adapters/grpc/server.js";
import { composeChildTasks } from "../adapters/stepfunctions/compose-aws.js";
import { createControls } from "../app/controls.js";
import { createPolicyService } from "../app/firmware-policy.js";
import { jsonLogger } from "../app/observability.js";
import { createRunService } from "../app/runs.js";
import { ENV, optionalEnv } from "../config.js";
import { composeFlowApi } from "./flow-api.js";

const env = process.env;

async function main(): Promise<void> {
  const port = Number(optionalEnv(env, ENV.port) ?? "50051");
  const host = optionalEnv(env, ENV.host) ?? "127.0.0.1";
  const cert = optionalEnv(env, ENV.tlsCert);
  const key = optionalEnv(env, ENV.tlsKey);
  const clientCa = optionalEnv(env, ENV.tlsClientCa);
  const protoDir = optionalEnv(env, ENV.protoDir);

  const child = composeChildTasks(env, "grpc");
  const { stores } = child;
  const tasks = child.service();
  const clock = () => Date.now();
  const api = composeFlowApi({
    runs: createRunService({
      runs: stores.runs,
      inventory: stores.inventory,
      policy: stores.policy,
      clock,
      newId: randomUUID,
    }),
    // No dispatch pass here: the runs table's stream wakes the dispatcher after resume and advance.
    controls: createControls({ runs: stores.runs, submitter: tasks.submitter, clock, logger: jsonLogger }),
    tasks: tasks.api,
    inventory: stores.inventory,
    policy: createPolicyService({
      policy: stores.policy,
      readiness: stores.readiness,
      clock,
      newId: randomUUID,
    }),
    buildInfo: {
      version: optionalEnv(env, ENV.version) ?? "0.0.0",
      buildTime: optionalEnv(env, ENV.buildTime) ?? "",
      gitCommit: optionalEnv(env, ENV.gitCommit) ?? "",
    },
  });

  const server = await startGrpcServer({
    api,
    host,
    port,
    ...(cert && key
      ? { tls: { certFile: cert, keyFile: key, ...(clientCa ? { clientCaFile: clientCa } : {}) } }
      : {}),
    allowInsecureNonLoopback: optionalEnv(env, ENV.plaintextBehindLoadBalancer) === "true",
    logger: jsonLogger,
    ...(protoDir ? { protoDir } : {}),
    // The ALB polls health every few seconds: give it time to see NOT_SERVING before we refuse calls.
    drainMs: 5_000,
  });
  jsonLogger.info("flow gRPC front listening", { host, port: server.port });

  const stop = (signal: string) => {
    jsonLogger.info("stopping", { signal });
    server.shutdown(20_000).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}

main().catch((error: unknown) => {
  jsonLogger.error("flow gRPC front failed to start", { error: (error as Error).message });
  process.exit(1);
});
