/**
 * The store each part of the dispatcher benchmark (bench/dispatch.ts) runs on, metered.
 */

import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { type LocalMoto, startLocalMoto } from "../../local/moto.js";
import { awsClientConfig } from "../../src/adapters/aws-config.js";
import {
  createDynamoStores,
  createTables,
  type DynamoStores,
  deleteTables,
  tableNames,
} from "../../src/adapters/dynamodb/index.js";
import { type CapacityMeter, type CapacityMeterOptions, installCapacityMeter } from "./capacity-meter.js";

/**
 * Each part on its own store: a fresh moto_server, or, when AWS_ENDPOINT_URL names a running
 * endpoint (LocalStack on a machine with a container engine), fresh tables there, deleted after.
 * The meter counts every call of the stores from the start.
 */
export async function environment(
  label: string,
  meterOptions: CapacityMeterOptions = {},
): Promise<{
  client: DynamoDBClient;
  stores: DynamoStores;
  meter: CapacityMeter;
  names: ReturnType<typeof tableNames>;
  stop(): Promise<void>;
}> {
  const external = process.env.AWS_ENDPOINT_URL;
  const moto: LocalMoto | undefined = external === undefined ? await startLocalMoto() : undefined;
  const client = new DynamoDBClient(
    awsClientConfig({
      endpoint: external ?? moto?.endpoint,
      region: process.env.AWS_REGION ?? "us-east-1",
      credentials: {
        accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? "bench",
        secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY ?? "bench",
      },
    }),
  );
  const names = tableNames(`bench-${label}-${external === undefined ? "" : `${Date.now()}-`}`);
  await createTables(client, names);
  const meter = installCapacityMeter(client, meterOptions);
  return {
    client,
    stores: createDynamoStores(client, names),
    meter,
    names,
    async stop() {
      if (moto === undefined) await deleteTables(client, names);
      client.destroy();
      await moto?.stop();
    },
  };
}

export function uuidFor(prefix: string, n: number): string {
  return `${prefix}-0000-4000-8000-${String(n).padStart(12, "0")}`;
}

export type DispatchEnv = Awaited<ReturnType<typeof environment>>;
