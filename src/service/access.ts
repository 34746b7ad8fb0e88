/**
 * The gRPC server's access control from its parts, the same for the front on Fargate
 * (grpc-front.ts) and the local stack: the policy source (absent: open), and the lookups of the
 * racks a run or a task acts on, read from the front's own stores.
 */
import type { AccessPolicySource } from "../adapters/grpc/access-policy-source.js";
import type { AccessControl } from "../adapters/grpc/authorize.js";
import { createAccessLookups } from "../app/access.js";
import type { Logger, Metrics } from "../app/observability.js";
import type { Clock, InventoryStore, RunStore, TaskStore } from "../app/ports.js";

export function accessControl(
  source: Pick<AccessPolicySource, "current"> | undefined,
  deps: {
    stores: { runs: RunStore; tasks: TaskStore; inventory: InventoryStore };
    logger: Logger;
    metrics: Metrics;
    /** When a refusal is recorded in a run's history. */
    clock: Pick<Clock, "now">;
  },
): AccessControl | undefined {
  if (source === undefined) return undefined;
  return {
    policy: () => source.current(),
    lookups: createAccessLookups({ ...deps.stores, clock: deps.clock }),
    logger: deps.logger,
    metrics: deps.metrics,
  };
}
