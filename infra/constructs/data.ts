/**
 * The tables, built FROM src/adapters/dynamodb/schema.ts (the same plain data the local stack
 * creates its tables from), so keys, indexes, streams and TTL cannot differ between laptop and AWS.
 *
 * Names are explicit, `<prefix><logicalName>` (e.g. `Flow-prod-Runs`), because the runtime finds
 * its tables from FLOW_TABLE_PREFIX alone (`tableNames(prefix)` in schema.ts).
 */
import { DefaultStackSynthesizer, Fn, RemovalPolicy, Stack } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import { Construct } from "constructs";
import {
  type IndexDefinition,
  type KeyAttribute,
  TABLES,
  type TableDefinition,
  tableNameOf,
  tableNames,
} from "../../src/adapters/dynamodb/schema.js";
import { acknowledgeWildcardResources } from "../nag.js";
import { adminOnlyKeyPolicy, allowInKeyPolicy, allowKeyUse } from "./key-policies.js";

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
 * What the table key's policy lets DynamoDB itself do: read the key's metadata (the "Allow
 * DynamoDB to get information about the key" statement of AWS's key policy for a customer managed
 * key, whose `kms:Describe*`, `kms:Get*`, `kms:List*` are spelled out here for a symmetric key made
 * in KMS), never use it.
 */
export const TABLE_KEY_SERVICE_ACTIONS = [
  "kms:DescribeKey",
  "kms:GetKeyPolicy",
  "kms:GetKeyRotationStatus",
  "kms:ListAliases",
  "kms:ListGrants",
  "kms:ListKeyPolicies",
  "kms:ListKeyRotations",
  "kms:ListResourceTags",
] as const;
/**
 * What whoever creates, updates or deletes the tables (CloudFormation, under the deploy role) may
 * do with the key, through DynamoDB only: DynamoDB describes the key, makes the table key with it
 * and creates the grant it uses for the table's background work, on that caller's behalf.
 */
export const TABLE_KEY_DEPLOY_ACTIONS = [...TABLE_KEY_WRITE_ACTIONS, "kms:CreateGrant"] as const;

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
  /** Customer-managed key for every table (and its stream records). */
  readonly key: kms.Key;
  readonly tables: ReadonlyMap<TableDefinition["logicalName"], dynamodb.Table>;
  /** Tables whose schema asks for a stream (the stack chooses which ones the evaluator consumes). */
  readonly streamTables: readonly dynamodb.Table[];
  /** Tables with at least one secondary index (only these get `<arn>/index/*` in grants). */
  private readonly indexed = new Set<dynamodb.Table>();
  /** `kms:ViaService` of a call DynamoDB (tables and streams) makes to KMS in this region. */
  private get viaDynamoDb(): string {
    return `dynamodb.${Stack.of(this).region}.amazonaws.com`;
  }

  constructor(scope: Construct, id: string, props: FlowDataProps) {
    super(scope, id);
    const removalPolicy = props.protect ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    this.key = new kms.Key(this, "TableKey", {
      description: "Flow operation runs: DynamoDB tables and their streams",
      enableKeyRotation: true,
      removalPolicy,
      // Named uses only (key-policies.ts), each through DynamoDB: the deploy role makes the
      // tables, the roles granted tables below use them, DynamoDB reads the key's metadata.
      policy: adminOnlyKeyPolicy(),
    });
    this.key.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: "DynamoDBReadsKeyMetadata",
        principals: [new iam.ServicePrincipal("dynamodb.amazonaws.com")],
        actions: [...TABLE_KEY_SERVICE_ACTIONS],
        resources: ["*"],
      }),
    );
    allowInKeyPolicy(this.key, "DeployManagesTables", deployRole(this), [...TABLE_KEY_DEPLOY_ACTIONS], {
      StringEquals: { "kms:ViaService": this.viaDynamoDb },
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
    grantee: iam.Role,
    access: Partial<Record<TableAccess, readonly dynamodb.Table[]>>,
    use: string,
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
    this.allowTableKey(grantee, use, writes ? TABLE_KEY_WRITE_ACTIONS : TABLE_KEY_READ_ACTIONS);
    acknowledgeWildcardResources(
      grantee,
      "Scoped wildcard: <table ARN>/index/* is the table's own indexes (the queries in schema.ts), nothing else.",
      indexed.filter((t) => this.indexed.has(t)).map((t) => `${t.tableArn}/index/*`),
    );
  }

  /**
   * The key's use for a role that reads streams only (a stream event source's function: the
   * mapping reads the records with the function's role), through DynamoDB.
   */
  grantStreamKey(role: iam.Role, use: string): void {
    this.allowTableKey(role, use, TABLE_KEY_READ_ACTIONS);
  }

  /**
   * `actions` on the table key for `role`, in the key policy and the role's policy, only when
   * DynamoDB makes the call (`kms:ViaService`): the role cannot use the key directly.
   *   allowTableKey(dispatcherRole, "Dispatcher", TABLE_KEY_WRITE_ACTIONS) → sid DispatcherUsesTables
   */
  private allowTableKey(role: iam.Role, use: string, actions: readonly string[]): void {
    allowKeyUse(this.key, `${use}UsesTables`, role, [...actions], {
      StringEquals: { "kms:ViaService": this.viaDynamoDb },
    });
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

/**
 * The role CloudFormation deploys the stack with: the bootstrap's execution role under the default
 * synthesizer (`cdk-<qualifier>-cfn-exec-role-<account>-<region>`); the account otherwise (a
 * synthesizer without one deploys with the caller's own credentials).
 */
function deployRole(scope: Construct): iam.IPrincipal {
  const synthesizer = Stack.of(scope).synthesizer;
  if (synthesizer instanceof DefaultStackSynthesizer) {
    return new iam.ArnPrincipal(Fn.sub(synthesizer.cloudFormationExecutionRoleArn));
  }
  return new iam.AccountRootPrincipal();
}
