/**
 * Composition root of the gRPC front on ECS Fargate (the process is src/service/grpc-main.ts):
 * from its configuration, the stores, the Step Functions task service and the run use cases, as
 * the FlowApi and the options its server starts with. Builds clients, binds nothing.
 */
import { randomUUID } from "node:crypto";
import type { GrpcServerOptions } from "../adapters/grpc/server.js";
import type { FlowApi } from "../app/api.js";
import { jsonLogger } from "../app/observability.js";
import { awsChildTasks, awsOptions, log, stepFunctionsExecutor } from "./aws.js";
import { childTaskService } from "./child-tasks.js";
import type { GrpcFrontConfig } from "./config.js";
import { assembleFlowApi } from "./flow-api.js";

export interface GrpcFront {
  api: FlowApi;
  server: GrpcServerOptions;
}

export function composeGrpcFront(config: GrpcFrontConfig): GrpcFront {
  const { stores, parts } = awsChildTasks(config, "grpc");
  const tasks = childTaskService(parts, {
    inventory: stores.inventory,
    executor: stepFunctionsExecutor(config.childTaskStateMachineArn, awsOptions(config)),
    newId: randomUUID,
    log,
  });
  const api = assembleFlowApi({
    stores,
    tasks,
    clock: Date.now,
    newId: randomUUID,
    logger: jsonLogger,
    buildInfo: config.build,
  });
  return {
    api,
    server: {
      api,
      host: config.host,
      port: config.port,
      ...(config.tls === undefined ? {} : { tls: config.tls }),
      allowInsecureNonLoopback: config.plaintextBehindLoadBalancer,
      logger: jsonLogger,
      ...(config.protoDir === undefined ? {} : { protoDir: config.protoDir }),
      admission: config.admission,
      // The ALB polls health every few seconds: give it time to see NOT_SERVING before we refuse calls.
      drainMs: 5_000,
    },
  };
}
