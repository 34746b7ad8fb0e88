/**
 * The store-health probe on DynamoDB (src/app/store-health.ts): DescribeTable on one table, on a
 * client of its own that tries once with short timeouts, so a dead store is seen in about a
 * second instead of after the stores' client's retries. Any answer counts as reachable (even
 * ResourceNotFoundException: the store answered); only what `unavailability` calls unavailable
 * rejects.
 */
import { DescribeTableCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { StoreProbe } from "../../app/ports.js";
import { type AwsOptions, createDynamoDbClient } from "../aws-config.js";
import { unavailability } from "./db.js";

export class DynamoStoreProbe implements StoreProbe {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async probe(): Promise<void> {
    try {
      await this.client.send(new DescribeTableCommand({ TableName: this.tableName }));
    } catch (error) {
      if (unavailability(error) !== undefined) throw error;
    }
  }
}

/** One attempt, 1 s to connect, 3 s to answer. */
export function storeProbe(aws: AwsOptions, tableName: string): DynamoStoreProbe {
  return new DynamoStoreProbe(
    createDynamoDbClient(
      { ...aws, maxAttempts: 1 },
      { requestHandler: { connectionTimeout: 1_000, requestTimeout: 3_000 } },
    ),
    tableName,
  );
}
