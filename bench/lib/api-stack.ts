/**
 * The product's gRPC API on its real adapters, in-process, for API benchmarks: moto (serialized,
 * as the local stack runs it), the DynamoDB stores with a capacity meter, the run service and
 * the gRPC server, exactly as local/stack.ts composes them, WITHOUT the parts that act on their
 * own: dispatcher, stream poller, ticker, child tasks, MQTT broker and BMC fleet.
 *
 * Why not `startLocalStack({ tickMs: <huge> })`: a huge tick stops the periodic pass only. The
 * stream poller still wakes every inserted run item ("a new run starts at once", see
 * stream-evaluator.ts), so each created run would claim targets and start child tasks against the
 * simulated fleet in the background: DynamoDB calls the meter would add to whatever call is being
 * measured, and load on the one moto process (it serves one request at a time) that DynamoDB does
 * not have. `startBenchStack({ full: true })` starts the real local stack anyway, for comparison.
 */

import { randomUUID } from "node:crypto";
import { generateDemoFleet } from "../../local/demo-fleet.js";
import { startLocalMoto } from "../../local/moto.js";
import { startLocalStack } from "../../local/stack.js";
import { createDynamoDbClient } from "../../src/adapters/aws-config.js";
import {
  createDynamoStores,
  createTables,
  type DynamoStores,
  type TableNames,
  tableNames,
} from "../../src/adapters/dynamodb/index.js";
import type { AdmissionLimits } from "../../src/adapters/grpc/admission.js";
import { startGrpcServer } from "../../src/adapters/grpc/server.js";
import { systemClock } from "../../src/adapters/system-clock.js";
import { lineLogger } from "../../src/app/observability.js";
import { createRunService } from "../../src/app/runs.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import { composeFlowApi } from "../../src/service/flow-api.js";
import { registerBenchImages } from "./bench-images.js";
import { CapacityMeter, installCapacityMeter } from "./capacity-meter.js";

export interface BenchStackOptions {
  /** Racks of the generated demo fleet (local/demo-fleet.ts) loaded into the inventory. */
  racks: number;
  /** The full local stack (dispatcher, stream poller, child tasks, BMC fleet) instead. */
  full?: boolean;
  /** The gRPC server's admission limits (default: the product's). */
  admission?: AdmissionLimits;
  /**
   * false: no capacity meter on the client (the load benchmark: the meter remembers up to 2,000
   * items, memory the product would not hold); `meter` then counts nothing. Default true.
   */
  metered?: boolean;
  log?: (line: string) => void;
}

export interface BenchStack {
  /** `127.0.0.1:<port>`, plaintext. */
  address: string;
  stores: DynamoStores;
  /** Every DynamoDB call of the stack, estimated: moto's own figures are placeholders. */
  meter: CapacityMeter;
  tables: TableNames;
  inventory: InventoryRack[];
  /** Whether moto serializes requests (it does unless the serialized launcher could not start). */
  serialized: boolean | undefined;
  stop(): Promise<void>;
}

export async function startBenchStack(options: BenchStackOptions): Promise<BenchStack> {
  const log = options.log ?? (() => {});
  const inventory = generateDemoFleet({ racks: options.racks });
  if (options.full) {
    let meter: CapacityMeter | undefined;
    const stack = await startLocalStack({
      port: 0,
      tickMs: 1_000_000_000,
      inventory,
      log,
      ...(options.admission === undefined ? {} : { admission: options.admission }),
      onDynamoDbClient: (client) => {
        meter = installCapacityMeter(client, { reportedFigures: "ignore" });
      },
    });
    return {
      address: stack.endpoint,
      stores: stack.stores,
      meter: meter!,
      tables: stack.tables,
      inventory,
      serialized: undefined,
      stop: () => stack.stop(),
    };
  }

  const moto = await startLocalMoto();
  try {
    // The gRPC front's client configuration (socket pool, timeouts, retries), as on Fargate.
    const client = createDynamoDbClient({ endpoint: moto.endpoint, profile: "front" });
    const tables = tableNames(`bench-${randomUUID().slice(0, 8)}-`);
    await createTables(client, tables);
    // moto's capacity figures are placeholders: size every call, starting with the inventory load,
    // so the meter knows the inventory's item sizes before anything scans it.
    const meter =
      options.metered === false
        ? new CapacityMeter()
        : installCapacityMeter(client, { reportedFigures: "ignore" });
    const stores = createDynamoStores(client, tables);
    await stores.inventory.upsertRacks(inventory);
    await registerBenchImages(stores.images);
    const api = composeFlowApi({
      runs: createRunService({
        runs: stores.runs,
        inventory: stores.inventory,
        images: stores.images,
        clock: systemClock,
        newId: randomUUID,
      }),
      inventory: stores.inventory,
      buildInfo: { version: "bench", buildTime: "", gitCommit: "" },
    });
    const server = await startGrpcServer({
      api,
      host: "127.0.0.1",
      port: 0,
      logger: lineLogger(log),
      ...(options.admission === undefined ? {} : { admission: options.admission }),
    });
    return {
      address: `127.0.0.1:${server.port}`,
      stores,
      meter,
      tables,
      inventory,
      serialized: moto.serialized,
      async stop() {
        await server.shutdown(5_000).catch(() => {});
        client.destroy();
        await moto.stop();
      },
    };
  } catch (error) {
    await moto.stop();
    throw error;
  }
}
