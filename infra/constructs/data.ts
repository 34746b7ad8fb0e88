/**
 * The tables, built FROM src/adapters/dynamodb/schema.ts (the same plain data the local stack
 * creates its tables from), so keys, indexes, streams and TTL cannot differ between laptop and AWS.
 *
 * Names are explicit, `<prefix><logicalName>` (e.g. `Flow-prod-Runs`), because the runtime finds
 * its tables from FLOW_TABLE_PREFIX alone (`tableNames(prefix)` in schema.ts).
 */
import { RemovalPolicy } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import { Construct, type IConstruct } from "constructs";
import {
  type IndexDefinition,
  type KeyAttribute,
  TABLES,
  type TableDefinition,
  tableNameOf,
  tableNames,
} from "../../src/adapters/dynamodb/schema.js";
import { acknowledgeWildcardResources } from "../nag.js";

export interface FlowDataProps {
  /** FLOW_TABLE_PREFIX: every table is named `${tablePrefix}${logicalName}`. */
  readonly tablePrefix: string;
  /** Production: deletion protection on, and the tables and key survive a stack deletion. */
  readonly protect: boolean;
}

/**
 * Data-plane actions only, never table management. Transactions need no action of their own:
 * TransactWriteItems is authorized per item as PutItem / UpdateItem / DeleteItem / ConditionCheckItem,
 * TransactGetItems as GetItem.
 */
export const TABLE_READ_ACTIONS = [
  "dynamodb:BatchGetItem",
  "dynamodb:ConditionCheckItem",
  "dynamodb:DescribeTable",
  "dynamodb:GetItem",
  "dynamodb:Query",
  "dynamodb:Scan",
] as const;
export const TABLE_WRITE_ACTIONS = [
  "dynamodb:BatchWriteItem",
  "dynamodb:DeleteItem",
  "dynamodb:PutItem",
  "dynamodb:UpdateItem",
] as const;
/**
 * What a caller needs on the table key: DynamoDB uses the caller's permission on the CMK when it
 * refreshes the table key (about every 5 minutes per caller). Spelled out instead of CDK's
 * `kms:GenerateDataKey*` / `kms:ReEncrypt*` so no statement carries a wildcard action.
 */
export const TABLE_KEY_READ_ACTIONS = ["kms:Decrypt", "kms:DescribeKey"] as const;
export const TABLE_KEY_WRITE_ACTIONS = [
  ...TABLE_KEY_READ_ACTIONS,
  "kms:Encrypt",
  "kms:GenerateDataKey",
  "kms:GenerateDataKeyWithoutPlaintext",
  "kms:ReEncryptFrom",
  "kms:ReEncryptTo",
] as const;

/**
 * - `read`: every read action, on the table and its indexes;
 * - `readWrite`: reads plus item writes, on the table and its indexes;
 * - `updateInPlace`: GetItem, BatchGetItem and UpdateItem on the table's items only (no index, no
 *   put, no delete). Example: the child task records verified firmware versions on the
 *   inventory's rack item (`SET rack.components[3].firmwareVersion = :v`) and may change nothing
 *   else there; it reads the firmware image records of a wave in one BatchGetItem.
 */
export type TableAccess = "read" | "readWrite" | "updateInPlace";
export const TABLE_UPDATE_IN_PLACE_ACTIONS = [
  "dynamodb:BatchGetItem",
  "dynamodb:GetItem",
  "dynamodb:UpdateItem",
] as const;

const attribute = (key: KeyAttribute): dynamodb.Attribute => ({
  name: key.name,
  type: key.type === "S" ? dynamodb.AttributeType.STRING : dynamodb.AttributeType.NUMBER,
});

function projection(index: Pick<IndexDefinition, "projection">): {
  projectionType: dynamodb.ProjectionType;
  nonKeyAttributes?: string[];
} {
  switch (index.projection.type) {
    case "ALL":
      return { projectionType: dynamodb.ProjectionType.ALL };
    case "KEYS_ONLY":
      return { projectionType: dynamodb.ProjectionType.KEYS_ONLY };
    case "INCLUDE":
      return {
        projectionType: dynamodb.ProjectionType.INCLUDE,
        nonKeyAttributes: index.projection.attributes,
      };
  }
}

export class FlowData extends Construct {
  /** Customer-managed key for every table (and the stream records, and the DLQ). */
  readonly key: kms.Key;
  readonly tables: ReadonlyMap<TableDefinition["logicalName"], dynamodb.Table>;
  /** Tables whose schema asks for a stream (the stack chooses which ones the evaluator consumes). */
  readonly streamTables: readonly dynamodb.Table[];
  /** Tables with at least one secondary index (only these get `<arn>/index/*` in grants). */
  private readonly indexed = new Set<dynamodb.Table>();

  constructor(scope: Construct, id: string, props: FlowDataProps) {
    super(scope, id);
    const removalPolicy = props.protect ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    this.key = new kms.Key(this, "TableKey", {
      description: "Flow operation runs: DynamoDB tables, streams and the stream DLQ",
      enableKeyRotation: true,
      removalPolicy,
    });

    const names = tableNames(props.tablePrefix);
    const tables = new Map<TableDefinition["logicalName"], dynamodb.Table>();
    const streamTables: dynamodb.Table[] = [];
    for (const def of TABLES) {
      const table = new dynamodb.Table(this, def.logicalName, {
        tableName: tableNameOf(names, def),
        partitionKey: attribute(def.partitionKey),
        sortKey: def.sortKey ? attribute(def.sortKey) : undefined,
        billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
        encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED,
        encryptionKey: this.key,
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        stream: def.stream === undefined ? undefined : dynamodb.StreamViewType[def.stream],
        timeToLiveAttribute: def.ttlAttribute,
        deletionProtection: props.protect,
        removalPolicy,
      });
      for (const gsi of def.globalSecondaryIndexes) {
        table.addGlobalSecondaryIndex({
          indexName: gsi.name,
          partitionKey: attribute(gsi.partitionKey),
          sortKey: gsi.sortKey ? attribute(gsi.sortKey) : undefined,
          ...projection(gsi),
        });
      }
      for (const lsi of def.localSecondaryIndexes) {
        table.addLocalSecondaryIndex({
          indexName: lsi.name,
          sortKey: attribute(lsi.sortKey),
          ...projection(lsi),
        });
      }
      tables.set(def.logicalName, table);
      if (def.globalSecondaryIndexes.length + def.localSecondaryIndexes.length > 0) this.indexed.add(table);
      if (def.stream) streamTables.push(table);
    }
    this.tables = tables;
    this.streamTables = streamTables;
  }

  /**
   * Grants data-plane access to the named tables (and their indexes, for read and readWrite) plus
   * the key actions that access needs; acknowledges the one scoped wildcard this yields per
   * indexed table, `<table>/index/*`.
   */
  grantData(
    grantee: iam.IGrantable & IConstruct,
    access: Partial<Record<TableAccess, readonly dynamodb.Table[]>>,
  ): void {
    const read = access.read ?? [];
    const readWrite = access.readWrite ?? [];
    const updateInPlace = access.updateInPlace ?? [];
    const resources = (tables: readonly dynamodb.Table[]) =>
      tables.flatMap((t) => (this.indexed.has(t) ? [t.tableArn, `${t.tableArn}/index/*`] : [t.tableArn]));
    const indexed = [...read, ...readWrite];
    if (indexed.length > 0) {
      iam.Grant.addToPrincipal({
        grantee,
        actions: [...TABLE_READ_ACTIONS],
        resourceArns: resources(indexed),
      });
    }
    if (readWrite.length > 0) {
      iam.Grant.addToPrincipal({
        grantee,
        actions: [...TABLE_WRITE_ACTIONS],
        resourceArns: resources(readWrite),
      });
    }
    if (updateInPlace.length > 0) {
      iam.Grant.addToPrincipal({
        grantee,
        actions: [...TABLE_UPDATE_IN_PLACE_ACTIONS],
        resourceArns: updateInPlace.map((t) => t.tableArn),
      });
    }
    if (indexed.length + updateInPlace.length === 0) return;
    const writes = readWrite.length + updateInPlace.length > 0;
    this.key.grant(grantee, ...(writes ? TABLE_KEY_WRITE_ACTIONS : TABLE_KEY_READ_ACTIONS));
    acknowledgeWildcardResources(
      grantee,
      "Scoped wildcard: <table ARN>/index/* is the table's own indexes (the queries in schema.ts), nothing else.",
      indexed.filter((t) => this.indexed.has(t)).map((t) => `${t.tableArn}/index/*`),
    );
  }

  table(name: TableDefinition["logicalName"]): dynamodb.Table {
    const table = this.tables.get(name);
    if (!table) throw new Error(`no table ${name} in schema.ts`);
    return table;
  }

  get allTables(): dynamodb.Table[] {
    return [...this.tables.values()];
  }
}
