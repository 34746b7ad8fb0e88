/**
 * Composition root of the gRPC front on ECS Fargate (the process is src/service/grpc-main.ts):
 * from its configuration, the stores, the Step Functions task service and the run use cases, as
 * the FlowApi and the options its server starts with, and the store-health monitor behind its
 * health service (NOT_SERVING while DynamoDB cannot be reached; calls answered UNAVAILABLE at once
 * meanwhile). Builds clients, binds nothing, starts nothing: grpc-main starts the monitor.
 */
import { randomUUID } from "node:crypto";
import { tableNames } from "../adapters/dynamodb/schema.js";
import { storeProbe } from "../adapters/dynamodb/store-probe.js";
import type { GrpcServerOptions } from "../adapters/grpc/server.js";
import type { FlowApi } from "../app/api.js";
import { jsonLogger } from "../app/observability.js";
import { createStoreHealth, failFastWhileUnreachable, type StoreHealth } from "../app/store-health.js";
import { awsChildTasks, awsOptions, log, stepFunctionsExecutor } from "./aws.js";
import { childTaskService } from "./child-tasks.js";
import type { GrpcFrontConfig } from "./config.js";
import { assembleFlowApi } from "./flow-api.js";

export interface GrpcFront {
  api: FlowApi;
  server: GrpcServerOptions;
  storeHealth: StoreHealth;
}

export function composeGrpcFront(config: GrpcFrontConfig): GrpcFront {
  // The probe runs on a single-attempt client of its own (src/adapters/dynamodb/store-probe.ts).
  const storeHealth = createStoreHealth({
    probe: storeProbe(awsOptions(config), tableNames(config.tablePrefix).runs),
    logger: jsonLogger,
  });
  const { stores, parts } = awsChildTasks(config, "grpc", () => storeHealth.suspect());
  const tasks = childTaskService(parts, {
    inventory: stores.inventory,
    executor: stepFunctionsExecutor(config.childTaskStateMachineArn, awsOptions(config)),
    newId: randomUUID,
    log,
  });
  const api = failFastWhileUnreachable(
    assembleFlowApi({
      stores,
      tasks,
      clock: Date.now,
      newId: randomUUID,
      logger: jsonLogger,
      buildInfo: config.build,
    }),
    storeHealth,
  );
  return {
    api,
    storeHealth,
    server: {
      api,
      host: config.host,
      port: config.port,
      ...(config.tls === undefined ? {} : { tls: config.tls }),
      allowInsecureNonLoopback: config.plaintextBehindLoadBalancer,
      logger: jsonLogger,
      ...(config.protoDir === undefined ? {} : { protoDir: config.protoDir }),
      // The ALB polls health every few seconds: give it time to see NOT_SERVING before we refuse calls.
      drainMs: 5_000,
      storeHealth,
    },
  };
}
