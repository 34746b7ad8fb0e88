/**
 * The gRPC front's process on ECS Fargate (the Dockerfile's entry): reads its configuration once
 * (src/service/config-front.ts), composes (src/service/grpc-front.ts), serves gRPC, and drains on
 * SIGTERM (ECS sends it before stopping a task; the load balancer's health check sees NOT_SERVING
 * first). A configuration problem stops it at once, naming every variable at fault.
 */
import { startGrpcServer } from "../adapters/grpc/server.js";
import { powertoolsObservability } from "../adapters/observability/powertools.js";
import { readGrpcFrontConfig } from "./config-front.js";
import { composeGrpcFront, openAccessPolicy } from "./grpc-front.js";

// The front's one logger and metrics, built before the configuration is read so that a
// configuration problem is logged like everything else.
const obs = powertoolsObservability("grpc");

async function main(): Promise<void> {
  const config = readGrpcFrontConfig(process.env);
  // The policy first: the front does not start without one it can read (secure by default).
  const front = composeGrpcFront(config, obs, await openAccessPolicy(config, obs));
  const server = await startGrpcServer(front.server);
  front.storeHealth.start();
  obs.logger.info("flow gRPC front listening", { host: front.server.host, port: server.port });

  const stop = (signal: string) => {
    obs.logger.info("stopping", { signal });
    void front.storeHealth.stop();
    server.shutdown(20_000).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}

main().catch((error: unknown) => {
  obs.logger.error("flow gRPC front failed to start", { error: (error as Error).message });
  process.exit(1);
});
