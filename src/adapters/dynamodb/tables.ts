/** Creates and deletes the tables of schema.ts through the API (local stack and tests). */
import {
  type AttributeDefinition,
  CreateTableCommand,
  DeleteTableCommand,
  type DynamoDBClient,
  type Projection,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
} from "@aws-sdk/client-dynamodb";
import {
  type IndexDefinition,
  TABLES,
  type TableDefinition,
  type TableNames,
  tableNameOf,
} from "./schema.js";

export async function createTables(client: DynamoDBClient, names: TableNames): Promise<void> {
  await Promise.all(TABLES.map((def) => createTable(client, tableNameOf(names, def), def)));
}

export async function deleteTables(client: DynamoDBClient, names: TableNames): Promise<void> {
  await Promise.all(
    TABLES.map((def) =>
      client.send(new DeleteTableCommand({ TableName: tableNameOf(names, def) })).catch(() => undefined),
    ),
  );
}

async function createTable(client: DynamoDBClient, name: string, def: TableDefinition): Promise<void> {
  const attributes = new Map<string, AttributeDefinition>();
  const add = (k: { name: string; type: "S" | "N" } | undefined) => {
    if (k !== undefined) attributes.set(k.name, { AttributeName: k.name, AttributeType: k.type });
  };
  add(def.partitionKey);
  add(def.sortKey);
  for (const g of def.globalSecondaryIndexes) {
    add(g.partitionKey);
    add(g.sortKey);
  }
  for (const l of def.localSecondaryIndexes) add(l.sortKey);

  const keySchema = (pk: string, sk?: string) => [
    { AttributeName: pk, KeyType: "HASH" as const },
    ...(sk === undefined ? [] : [{ AttributeName: sk, KeyType: "RANGE" as const }]),
  ];
  await client.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: "PAY_PER_REQUEST",
      AttributeDefinitions: [...attributes.values()],
      KeySchema: keySchema(def.partitionKey.name, def.sortKey?.name),
      GlobalSecondaryIndexes:
        def.globalSecondaryIndexes.length === 0
          ? undefined
          : def.globalSecondaryIndexes.map((g) => ({
              IndexName: g.name,
              KeySchema: keySchema(g.partitionKey.name, g.sortKey?.name),
              Projection: projection(g.projection),
            })),
      LocalSecondaryIndexes:
        def.localSecondaryIndexes.length === 0
          ? undefined
          : def.localSecondaryIndexes.map((l) => ({
              IndexName: l.name,
              KeySchema: keySchema(def.partitionKey.name, l.sortKey.name),
              Projection: projection(l.projection),
            })),
      StreamSpecification:
        def.stream === undefined ? undefined : { StreamEnabled: true, StreamViewType: def.stream },
    }),
  );
  await waitUntilTableExists({ client, maxWaitTime: 30, minDelay: 0.1, maxDelay: 1 }, { TableName: name });
  if (def.ttlAttribute !== undefined) {
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: name,
        TimeToLiveSpecification: { AttributeName: def.ttlAttribute, Enabled: true },
      }),
    );
  }
}

function projection(p: IndexDefinition["projection"]): Projection {
  return p.type === "INCLUDE"
    ? { ProjectionType: "INCLUDE", NonKeyAttributes: p.attributes }
    : { ProjectionType: p.type };
}
