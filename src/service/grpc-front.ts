/**
 * Composition root of the gRPC front on ECS Fargate (the process is src/service/grpc-main.ts):
 * from its configuration, the stores, the Step Functions task service and the run use cases, as
 * the FlowApi and the options its server starts with, and the store-health monitor behind its
 * health service (NOT_SERVING while DynamoDB cannot be reached; calls answered UNAVAILABLE at once
 * meanwhile), all logging and counting through the front's one Powertools logger and metrics
 * (service `grpc`). Builds clients, binds nothing, starts nothing: grpc-main starts the monitor. No
 * tracer: X-Ray on Fargate needs a daemon sidecar and a segment per call, which the front has not.
 */
import { randomUUID } from "node:crypto";
import { tableNames } from "../adapters/dynamodb/schema.js";
import { storeProbe } from "../adapters/dynamodb/store-probe.js";
import {
  type AccessPolicySource,
  accessPolicySource,
  fixedAccessPolicy,
} from "../adapters/grpc/access-policy-source.js";
import { selfSignedCertificate } from "../adapters/grpc/self-signed.js";
import type { GrpcServerOptions } from "../adapters/grpc/server.js";
import {
  type PowertoolsObservability,
  powertoolsObservability,
} from "../adapters/observability/powertools.js";
import { createS3Client, S3ImageObjectStore } from "../adapters/s3/image-bucket.js";
import {
  type ParameterPolicySource,
  parameterPolicySource,
} from "../adapters/ssm/access-policy-parameter.js";
import { systemClock } from "../adapters/system-clock.js";
import type { FlowApi } from "../app/api.js";
import { createStoreHealth, failFastWhileUnreachable, type StoreHealth } from "../app/store-health.js";
import { accessControl } from "./access.js";
import { awsChildTasks, awsOptions, awsRequestMac, awsSsm, stepFunctionsExecutor } from "./aws.js";
import { childTaskService } from "./child-tasks.js";
import { ENV } from "./config.js";
import type { GrpcFrontConfig } from "./config-front.js";
import { assembleFlowApi } from "./flow-api.js";

export interface GrpcFront {
  api: FlowApi;
  server: GrpcServerOptions;
  storeHealth: StoreHealth;
}

type PolicySource = Pick<AccessPolicySource | ParameterPolicySource, "current" | "close">;

/**
 * The access policy the configuration names, read now: a file or the document at once, an SSM
 * parameter by a first GetParameter. Rejects (the front does not start) when it cannot be read or
 * is bad, every problem named. A file or parameter is polled for changes from then on.
 */
export async function openAccessPolicy(
  config: GrpcFrontConfig,
  obs: PowertoolsObservability,
): Promise<PolicySource> {
  if (!("parameter" in config.accessPolicy)) return localAccessPolicy(config, obs);
  return parameterPolicySource(awsSsm(config, obs), config.accessPolicy.parameter, {
    logger: obs.logger,
    metrics: obs.metrics,
    pollMs: config.accessPolicyPollSeconds * 1000,
  });
}

/** A file or the document: read without a network call. */
function localAccessPolicy(config: GrpcFrontConfig, obs: PowertoolsObservability): PolicySource {
  if ("parameter" in config.accessPolicy) {
    throw new Error(`${ENV.authzPolicyParameter}: read the parameter with openAccessPolicy first`);
  }
  return "file" in config.accessPolicy
    ? accessPolicySource(config.accessPolicy.file, {
        logger: obs.logger,
        metrics: obs.metrics,
        pollMs: config.accessPolicyPollSeconds * 1000,
      })
    : fixedAccessPolicy(ENV.authzPolicyText, config.accessPolicy.text);
}

/** `policy`: from openAccessPolicy; without it a file or document policy is read here. */
export function composeGrpcFront(
  config: GrpcFrontConfig,
  obs: PowertoolsObservability = powertoolsObservability("grpc"),
  // First: a bad policy stops the front before it builds anything (InputFileError, every problem).
  policy: PolicySource = localAccessPolicy(config, obs),
): GrpcFront {
  // The probe runs on a single-attempt client of its own (src/adapters/dynamodb/store-probe.ts).
  const storeHealth = createStoreHealth({
    probe: storeProbe(awsOptions(config), tableNames(config.tablePrefix).runs),
    logger: obs.logger,
    clock: systemClock,
  });
  const { stores, parts } = awsChildTasks(config, obs, {
    dynamoProfile: "front",
    onUnavailable: () => storeHealth.suspect(),
  });
  const tasks = childTaskService(parts, {
    inventory: stores.inventory,
    policy: stores.policy,
    images: stores.images,
    executor: stepFunctionsExecutor(config, awsOptions(config), obs),
    newId: randomUUID,
  });
  const requestMac = awsRequestMac(config.secrets, config.requestMacKmsKeyId, awsOptions(config), obs);
  const api = failFastWhileUnreachable(
    assembleFlowApi({
      stores,
      imageObjects: new S3ImageObjectStore(createS3Client(awsOptions(config)), config.imageBucket),
      tasks,
      clock: systemClock,
      newId: randomUUID,
      logger: obs.logger,
      buildInfo: config.build,
      externalChecks: config.externalChecks,
      ...(requestMac === undefined ? {} : { requestMac }),
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
      // Behind the load balancer: TLS on its hop too, with a key this task makes (self-signed.ts).
      ...(config.tlsSelfSigned
        ? { tls: selfSignedCertificate("flow-front", systemClock.now()) }
        : config.tls === undefined
          ? {}
          : { tls: config.tls }),
      allowInsecureNonLoopback: config.plaintextBehindLoadBalancer,
      trustLoadBalancerClientCert: config.trustLoadBalancerClientCert,
      logger: obs.logger,
      // Reflection lists every service, the admin one too: only where the deployment asks for it.
      ...(!config.serverReflection
        ? { protoDir: false as const }
        : config.protoDir === undefined
          ? {}
          : { protoDir: config.protoDir }),
      admission: config.admission,
      access: accessControl(policy, {
        stores,
        logger: obs.logger,
        metrics: obs.metrics,
        clock: systemClock,
      }),
      // The ALB polls health every few seconds: give it time to see NOT_SERVING before we refuse calls.
      drainMs: 5_000,
      storeHealth,
    },
  };
}
