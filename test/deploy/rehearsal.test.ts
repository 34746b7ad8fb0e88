/**
 * The deploy rehearsal as a test: the CDK app bootstrapped, deployed with the real CDK CLI to a
 * local endpoint (a moto spawned for it, or AWS_ENDPOINT_URL), the deployed resources read back
 * through the services' own APIs and held against what the code expects, then destroyed. The same
 * functions as `npm run deploy:local` (deploy/rehearsal.ts); its report (outputs, what was
 * deployed, what the endpoint did not create) is printed.
 *
 * Expected values come from the code, not from the template: the tables from schema.ts, each
 * function's environment from its composition root's reader (src/service/config.ts), the state
 * machine from state-machines/child-task.asl.json. The template is only used to find resources.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GetTemplateCommand } from "@aws-sdk/client-cloudformation";
import {
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  ListTablesCommand,
  type TableDescription,
} from "@aws-sdk/client-dynamodb";
import {
  GetRoleCommand,
  GetRolePolicyCommand,
  IAMClient,
  ListAttachedRolePoliciesCommand,
  ListRolePoliciesCommand,
} from "@aws-sdk/client-iam";
import { KMSClient, ListKeysCommand } from "@aws-sdk/client-kms";
import {
  GetFunctionConfigurationCommand,
  LambdaClient,
  ListEventSourceMappingsCommand,
  ListFunctionsCommand,
} from "@aws-sdk/client-lambda";
import { DescribeStateMachineCommand, ListStateMachinesCommand, SFNClient } from "@aws-sdk/client-sfn";
import { GetParameterCommand, SSMClient } from "@aws-sdk/client-ssm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bootstrapIfNeeded,
  type CdkRun,
  cdkInvocation,
  cloudFormation,
  type Deployment,
  deployStack,
  describeDeployment,
  destroyStack,
  formatReport,
  openEndpoint,
  REHEARSAL_ACCOUNT,
  REHEARSAL_REGION,
  type RehearsalRun,
  rehearsalContext,
  stackExists,
  stackNameOf,
} from "../../deploy/rehearsal.js";
import { type KeyAttribute, TABLES, type TableDefinition } from "../../src/adapters/dynamodb/schema.js";
// The definition file as the local runner reads it (the construct's module would load aws-cdk-lib here).
import { loadChildTaskDefinition, TASK_STEPS_PLACEHOLDER } from "../../src/adapters/stepfunctions/asl.js";
import {
  BUILD_FACTS,
  ENV,
  readBmcResultConfig,
  readDispatchConfig,
  readEventPublisherConfig,
  readTaskStepsConfig,
} from "../../src/service/config.js";
import type { ConfigReader } from "../../src/service/env-reader.js";
import { EXAMPLE_POLICY } from "../fixtures/access-policy-example.js";

const STAGE = "rehearsal";
const PREFIX = `Flow-${STAGE}-`;
const ARN = `${REHEARSAL_REGION}:${REHEARSAL_ACCOUNT}`;

let run: RehearsalRun;
/** `cdk bootstrap`'s run (none when the endpoint was bootstrapped already), and what it left in outdir. */
let bootstrapped: CdkRun | undefined;
let afterBootstrap: string[];
let deployment: Deployment;
/** The template as the endpoint holds it (GetTemplate). */
let deployedTemplate: { Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }> };
let clients: {
  ddb: DynamoDBClient;
  lambda: LambdaClient;
  sfn: SFNClient;
  iam: IAMClient;
  kms: KMSClient;
  ssm: SSMClient;
};

beforeAll(async () => {
  const endpoint = await openEndpoint();
  const outdir = mkdtempSync(join(tmpdir(), "flow-rehearsal-"));
  // With the example access policy: its SSM parameter is deployed and read back below.
  run = {
    endpoint,
    outdir,
    context: await rehearsalContext(endpoint.url, { stage: STAGE, accessPolicyFile: EXAMPLE_POLICY }),
  };
  const config = {
    endpoint: endpoint.url,
    region: REHEARSAL_REGION,
    credentials: { accessKeyId: "rehearsal", secretAccessKey: "rehearsal" },
  };
  clients = {
    ddb: new DynamoDBClient(config),
    lambda: new LambdaClient(config),
    sfn: new SFNClient(config),
    iam: new IAMClient(config),
    kms: new KMSClient(config),
    ssm: new SSMClient(config),
  };
  bootstrapped = await bootstrapIfNeeded(run);
  afterBootstrap = readdirSync(outdir);
  await deployStack(run);
  deployment = await describeDeployment(endpoint.url, outdir, stackNameOf(run.context));
  const { TemplateBody } = await cloudFormation(endpoint.url).send(
    new GetTemplateCommand({ StackName: stackNameOf(run.context) }),
  );
  deployedTemplate = JSON.parse(TemplateBody ?? "{}");
  console.log(formatReport(deployment, endpoint));
}, 600_000);

afterAll(async () => {
  await run?.endpoint.spawned?.stop();
  if (run) rmSync(run.outdir, { recursive: true, force: true });
});

/** The endpoint's id of the one deployed resource of `type` whose logical id starts with `prefix`. */
function physical(type: string, prefix: string): string {
  const found = deployment.deployed.filter((r) => r.type === type && r.logicalId.startsWith(prefix));
  expect(
    found.map((r) => r.logicalId),
    `${type} ${prefix}*`,
  ).toHaveLength(1);
  return found[0]!.physicalId;
}

describe("deploy rehearsal: the app synthesized once", () => {
  it("cdk bootstrap bootstraps the environment without running the app: nothing is synthesized into the assembly directory", () => {
    // An endpoint given by AWS_ENDPOINT_URL may be bootstrapped already; a spawned moto never is.
    if (run.endpoint.spawned !== undefined) {
      expect(bootstrapped?.output).toContain(
        `Environment aws://${REHEARSAL_ACCOUNT}/${REHEARSAL_REGION} bootstrapped.`,
      );
    }
    expect(afterBootstrap).toEqual([]);
  });

  it("cdk deploy writes the stack's cloud assembly there, synthesized without the built-in CloudFormation validation, and cdk destroy will read it", () => {
    expect(readdirSync(run.outdir)).toEqual(
      expect.arrayContaining(["manifest.json", `${stackNameOf(run.context)}.template.json`]),
    );
    // The validation only warns here (synthEnvironment): its report has no part from it.
    const report = JSON.parse(readFileSync(join(run.outdir, "validation-report.json"), "utf8"));
    expect(report.pluginReports.map((r: { pluginName: string }) => r.pluginName)).not.toContain(
      "CloudFormation Validate",
    );
    expect(cdkInvocation("destroy", run).args).toEqual([
      "destroy",
      stackNameOf(run.context),
      "--force",
      "--app",
      run.outdir,
    ]);
  });
});

describe("deploy rehearsal: the stack and what the endpoint created", () => {
  it("the stack is created, and nothing the product runs on was skipped", () => {
    expect(deployment.status).toBe("CREATE_COMPLETE");
    const runsOn = [
      "AWS::DynamoDB::Table",
      "AWS::Lambda::Function",
      "AWS::Lambda::EventSourceMapping",
      "AWS::Lambda::Permission",
      "AWS::StepFunctions::StateMachine",
      "AWS::IAM::Role",
      "AWS::IAM::Policy",
      "AWS::KMS::Key",
      "AWS::SQS::Queue",
      "AWS::Events::Rule",
      "AWS::Logs::LogGroup",
      "AWS::S3::Bucket",
      "AWS::SSM::Parameter",
    ];
    expect(deployment.skipped.filter((r) => runsOn.includes(r.type))).toEqual([]);
    expect(deployment.deployed.filter((r) => r.type === "AWS::Lambda::Function")).toHaveLength(5);
  });

  it("each function deploys a bundle of its own entry: five functions, five code assets in the bootstrap bucket", () => {
    const codes = Object.values(deployedTemplate.Resources)
      .filter((r) => r.Type === "AWS::Lambda::Function")
      .map((r) => r.Properties?.Code as { S3Bucket: unknown; S3Key: string });
    expect(codes).toHaveLength(5);
    expect(new Set(codes.map((c) => c.S3Key)).size).toBe(5);
    for (const code of codes) expect(code.S3Key).toMatch(/^[0-9a-f]{64}\.zip$/);
  });

  it("outputs: the names the runtime and the operator use", () => {
    expect(deployment.outputs).toEqual({
      GrpcEndpoint: expect.stringMatching(/^\S+:443$/),
      TablePrefix: PREFIX,
      FirmwareImageBucket: expect.stringMatching(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/),
      ChildTaskStateMachineArn: `arn:aws:states:${ARN}:stateMachine:${PREFIX}child-task`,
      BmcIotPolicyName: `Flow_${STAGE}_bmc`,
      BmcThingTypeName: `Flow_${STAGE}_bmc`,
      BmcAgentPolicyName: `Flow_${STAGE}_bmc_agent`,
      BmcAgentRoleAlias: `Flow_${STAGE}_bmc_agent`,
      BmcReportsRuleName: `Flow_${STAGE}_rack_bmc_events`,
      IotDataEndpoint: `https://${run.context.iotDataEndpoint}`,
      DashboardName: `Flow-${STAGE}`,
    });
  });
});

const keySchema = (pk: KeyAttribute, sk?: KeyAttribute) => [
  { AttributeName: pk.name, KeyType: "HASH" },
  ...(sk === undefined ? [] : [{ AttributeName: sk.name, KeyType: "RANGE" }]),
];
const projection = (p: TableDefinition["globalSecondaryIndexes"][number]["projection"]) =>
  p.type === "INCLUDE"
    ? { ProjectionType: "INCLUDE", NonKeyAttributes: p.attributes }
    : { ProjectionType: p.type };
const byName = <T extends { IndexName?: string }>(list: T[] | undefined) =>
  [...(list ?? [])].sort((a, b) => (a.IndexName ?? "").localeCompare(b.IndexName ?? ""));

describe("deploy rehearsal: tables as src/adapters/dynamodb/schema.ts defines them", () => {
  it.each(TABLES.map((def) => [def.logicalName, def] as const))(
    "%s: keys, indexes, stream and TTL",
    async (_, def) => {
      const name = `${PREFIX}${def.logicalName}`;
      const { Table } = await clients.ddb.send(new DescribeTableCommand({ TableName: name }));
      const table = Table as TableDescription;
      expect(table.KeySchema).toEqual(keySchema(def.partitionKey, def.sortKey));
      expect(
        byName(table.GlobalSecondaryIndexes).map((g) => ({
          IndexName: g.IndexName,
          KeySchema: g.KeySchema,
          Projection: g.Projection,
        })),
      ).toEqual(
        byName(
          def.globalSecondaryIndexes.map((g) => ({
            IndexName: g.name,
            KeySchema: keySchema(g.partitionKey, g.sortKey),
            Projection: projection(g.projection),
          })),
        ),
      );
      expect(
        byName(table.LocalSecondaryIndexes).map((l) => ({
          IndexName: l.IndexName,
          KeySchema: l.KeySchema,
          Projection: l.Projection,
        })),
      ).toEqual(
        byName(
          def.localSecondaryIndexes.map((l) => ({
            IndexName: l.name,
            KeySchema: keySchema(def.partitionKey, l.sortKey),
            Projection: projection(l.projection),
          })),
        ),
      );
      if (def.stream === undefined) expect(table.StreamSpecification?.StreamEnabled ?? false).toBe(false);
      else expect(table.StreamSpecification).toEqual({ StreamEnabled: true, StreamViewType: def.stream });
      const ttl = await clients.ddb.send(new DescribeTimeToLiveCommand({ TableName: name }));
      if (run.endpoint.moto) {
        // moto 5.2's CloudFormation does not apply TimeToLiveSpecification (its tables always say
        // DISABLED): there, what the endpoint was given to deploy is checked instead.
        const given = Object.values(deployedTemplate.Resources).find(
          (r) => r.Type === "AWS::DynamoDB::Table" && r.Properties?.TableName === name,
        );
        expect(given?.Properties?.TimeToLiveSpecification).toEqual(
          def.ttlAttribute === undefined ? undefined : { AttributeName: def.ttlAttribute, Enabled: true },
        );
      } else if (def.ttlAttribute === undefined) {
        expect(ttl.TimeToLiveDescription?.TimeToLiveStatus).not.toBe("ENABLED");
      } else {
        expect(ttl.TimeToLiveDescription).toMatchObject({
          AttributeName: def.ttlAttribute,
          TimeToLiveStatus: "ENABLED",
        });
      }
    },
  );
});

/** Set by the Lambda construct for the runtime (source maps), read by no root. */
const RUNTIME = ["NODE_OPTIONS"];

const functions: [string, ConfigReader<object>][] = [
  ["Dispatcher", readDispatchConfig],
  ["StreamEvaluator", readDispatchConfig],
  ["TaskSteps", readTaskStepsConfig],
  ["BmcResult", readBmcResultConfig],
  ["EventPublisher", readEventPublisherConfig],
];

describe("deploy rehearsal: functions as their composition roots read them", () => {
  it.each(functions)(
    "%s: handler, runtime, its own role, an environment its reader accepts",
    async (id, reader) => {
      const config = await clients.lambda.send(
        new GetFunctionConfigurationCommand({
          FunctionName: physical("AWS::Lambda::Function", `${id}Function`),
        }),
      );
      expect(config.Handler).toBe("index.handler");
      expect(config.Runtime).toBe("nodejs22.x");

      const { Role } = await clients.iam.send(
        new GetRoleCommand({ RoleName: physical("AWS::IAM::Role", `${id}Role`) }),
      );
      expect(config.Role).toBe(Role?.Arn);
      const trust = JSON.parse(decodeURIComponent(Role?.AssumeRolePolicyDocument ?? "{}"));
      expect(trust.Statement.map((s: { Principal: unknown }) => s.Principal)).toEqual([
        { Service: "lambda.amazonaws.com" },
      ]);

      const env = config.Environment?.Variables ?? {};
      const unread = Object.keys(env).filter(
        (n) =>
          !reader.names.includes(n) &&
          !(BUILD_FACTS as readonly string[]).includes(n) &&
          !RUNTIME.includes(n),
      );
      expect(unread).toEqual([]);
      expect(() => reader(env)).not.toThrow();
      // Every reference CloudFormation resolved names something the endpoint has. The event
      // publisher reads no table (its stream records are the events): no prefix, its bus.
      if (id === "EventPublisher") {
        expect(env).not.toHaveProperty(ENV.tablePrefix);
        expect(env[ENV.eventBusName]).toBe("default");
      } else expect(env[ENV.tablePrefix]).toBe(PREFIX);
      if (ENV.childTaskStateMachineArn in env) {
        expect(env[ENV.childTaskStateMachineArn]).toBe(deployment.outputs.ChildTaskStateMachineArn);
      }
      if (ENV.secretsKmsKeyId in env) {
        // ListKeys, not DescribeKey: moto 5.2 fails DescribeKey on a key CloudFormation created.
        const { Keys } = await clients.kms.send(new ListKeysCommand({}));
        const key = Keys?.find((k) => k.KeyArn === env[ENV.secretsKmsKeyId]);
        expect(key?.KeyId).toBe(physical("AWS::KMS::Key", "SecretsKey"));
      }
      if (ENV.dispatcherFunctionName in env) {
        expect(env[ENV.dispatcherFunctionName]).toBe(physical("AWS::Lambda::Function", "DispatcherFunction"));
      }
      if (ENV.iotDataEndpoint in env)
        expect(env[ENV.iotDataEndpoint]).toBe(deployment.outputs.IotDataEndpoint);
    },
  );
});

describe("deploy rehearsal: the child task and the streams", () => {
  it("the child-task definition is state-machines/child-task.asl.json with task-steps' ARN substituted", async () => {
    const taskStepsArn = `arn:aws:lambda:${ARN}:function:${physical("AWS::Lambda::Function", "TaskStepsFunction")}`;
    const machine = await clients.sfn.send(
      new DescribeStateMachineCommand({ stateMachineArn: deployment.outputs.ChildTaskStateMachineArn }),
    );
    const substitute = (text: string) => text.split(TASK_STEPS_PLACEHOLDER).join(taskStepsArn);
    // moto stores DefinitionString without applying DefinitionSubstitutions (AWS applies them);
    // substituting the deployed text as well makes the check the same on both: the file, and
    // nothing but the placeholder changed. The binding itself is in test/unit/infra-stack.test.ts.
    expect(JSON.parse(substitute(machine.definition ?? ""))).toEqual(loadChildTaskDefinition(taskStepsArn));
    const { Role } = await clients.iam.send(
      new GetRoleCommand({ RoleName: physical("AWS::IAM::Role", "ChildTaskStateMachineRole") }),
    );
    expect(machine.roleArn).toBe(Role?.Arn);
  });

  it("stream-evaluator consumes the Runs and Targets streams with the settings event-routes.ts gives", async () => {
    const streamArn = async (name: string) =>
      (await clients.ddb.send(new DescribeTableCommand({ TableName: `${PREFIX}${name}` }))).Table
        ?.LatestStreamArn;
    const dlqUrl = physical("AWS::SQS::Queue", "StreamDlq");
    const dlqArn = `arn:aws:sqs:${ARN}:${dlqUrl.split("/").pop()}`;
    const { EventSourceMappings } = await clients.lambda.send(
      new ListEventSourceMappingsCommand({
        FunctionName: physical("AWS::Lambda::Function", "StreamEvaluatorFunction"),
      }),
    );
    const mappings = EventSourceMappings ?? [];
    expect(mappings.map((m) => m.EventSourceArn).sort()).toEqual(
      [await streamArn("Runs"), await streamArn("Targets")].sort(),
    );
    for (const m of mappings) {
      expect(m).toMatchObject({
        StartingPosition: "TRIM_HORIZON",
        BatchSize: 100,
        BisectBatchOnFunctionError: true,
        MaximumRetryAttempts: 5,
        MaximumRecordAgeInSeconds: 86_400,
        FunctionResponseTypes: ["ReportBatchItemFailures"],
        DestinationConfig: { OnFailure: { Destination: dlqArn } },
      });
    }
  });

  it("event-publisher consumes the RunEvents stream (NEW_IMAGE) with the settings event-routes.ts gives", async () => {
    const table = (await clients.ddb.send(new DescribeTableCommand({ TableName: `${PREFIX}RunEvents` })))
      .Table;
    expect(table?.StreamSpecification).toEqual({ StreamEnabled: true, StreamViewType: "NEW_IMAGE" });
    const dlqUrl = physical("AWS::SQS::Queue", "StreamDlq");
    const { EventSourceMappings } = await clients.lambda.send(
      new ListEventSourceMappingsCommand({
        FunctionName: physical("AWS::Lambda::Function", "EventPublisherFunction"),
      }),
    );
    expect(EventSourceMappings).toHaveLength(1);
    expect(EventSourceMappings?.[0]).toMatchObject({
      EventSourceArn: table?.LatestStreamArn,
      StartingPosition: "TRIM_HORIZON",
      BatchSize: 100,
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 10,
      MaximumRecordAgeInSeconds: 86_400,
      FunctionResponseTypes: ["ReportBatchItemFailures"],
      DestinationConfig: { OnFailure: { Destination: `arn:aws:sqs:${ARN}:${dlqUrl.split("/").pop()}` } },
    });
  });

  it("bmc-result takes the BMC reports from their queue in batches (1,000, 1 s window, batch item failures)", async () => {
    const queueUrl = physical("AWS::SQS::Queue", "BmcReports");
    const { EventSourceMappings } = await clients.lambda.send(
      new ListEventSourceMappingsCommand({
        FunctionName: physical("AWS::Lambda::Function", "BmcResultFunction"),
      }),
    );
    expect(EventSourceMappings).toHaveLength(1);
    expect(EventSourceMappings?.[0]).toMatchObject({
      EventSourceArn: `arn:aws:sqs:${ARN}:${queueUrl.split("/").pop()}`,
      BatchSize: 1000,
      MaximumBatchingWindowInSeconds: 1,
      FunctionResponseTypes: ["ReportBatchItemFailures"],
    });
  });
});

interface Statement {
  Effect: string;
  Action: string | string[];
  Resource?: unknown;
}

const parseDocument = (text: string): { Statement: Statement[] } => {
  const document = JSON.parse(text.trimStart().startsWith("{") ? text : decodeURIComponent(text));
  return { Statement: [document.Statement].flat() };
};

describe("deploy rehearsal: IAM as deployed", () => {
  it("every role of the stack has its statements, and no statement a wildcard action", async () => {
    const roles = deployment.deployed.filter((r) => r.type === "AWS::IAM::Role").map((r) => r.physicalId);
    const statements: { role: string; statement: Statement }[] = [];
    for (const role of roles) {
      const { PolicyNames } = await clients.iam.send(new ListRolePoliciesCommand({ RoleName: role }));
      for (const policyName of PolicyNames ?? []) {
        const { PolicyDocument } = await clients.iam.send(
          new GetRolePolicyCommand({ RoleName: role, PolicyName: policyName }),
        );
        for (const statement of parseDocument(PolicyDocument ?? "{}").Statement)
          statements.push({ role, statement });
      }
      const { AttachedPolicies } = await clients.iam.send(
        new ListAttachedRolePoliciesCommand({ RoleName: role }),
      );
      // Every permission is granted by name in the stack (flow-function.ts): no managed policy.
      expect(AttachedPolicies ?? [], role).toEqual([]);
    }
    const withoutStatements = roles.filter((role) => !statements.some((s) => s.role === role));
    expect(withoutStatements).toEqual([]);
    const wildcards = statements.flatMap(({ role, statement }) =>
      [statement.Action]
        .flat()
        .filter((a) => a.includes("*"))
        .map((a) => `${role}: ${a}`),
    );
    expect(wildcards).toEqual([]);

    // The references in the policies resolved to this deployment's names, e.g. the dispatcher's.
    const dispatcherRole = physical("AWS::IAM::Role", "DispatcherRole");
    expect(
      statements.filter(
        ({ role, statement }) =>
          role === dispatcherRole && [statement.Action].flat().includes("states:StartExecution"),
      ),
    ).toEqual([
      {
        role: dispatcherRole,
        statement: expect.objectContaining({ Resource: deployment.outputs.ChildTaskStateMachineArn }),
      },
    ]);
  });
});

describe("deploy rehearsal: the access policy", () => {
  it("the policy file's text is in its SSM parameter, named by the front's environment, readable with GetParameter", async () => {
    const name = physical("AWS::SSM::Parameter", "AccessPolicy");
    expect(name).toBe(`/Flow-${STAGE}/access-policy`);
    const { Parameter } = await clients.ssm.send(new GetParameterCommand({ Name: name }));
    expect(Parameter).toMatchObject({
      Type: "String",
      Value: readFileSync(EXAMPLE_POLICY, "utf8"),
      Version: 1,
    });
    const [task] = Object.values(deployedTemplate.Resources).filter(
      (r) => r.Type === "AWS::ECS::TaskDefinition",
    );
    const [container] = (task?.Properties?.ContainerDefinitions ?? []) as {
      Environment: { Name: string; Value: unknown }[];
    }[];
    const environment = Object.fromEntries(container!.Environment.map((e) => [e.Name, e.Value]));
    expect(environment).toHaveProperty(ENV.authzPolicyParameter);
    expect(environment).not.toHaveProperty(ENV.authzPolicyText);
  });
});

describe("deploy rehearsal: destroy", () => {
  it("cdk destroy, from the deploy's assembly (not a file of it rewritten), deletes the stack and the tables, functions and state machines it had", async () => {
    const files = () =>
      readdirSync(run.outdir).map((name) => [name, statSync(join(run.outdir, name)).mtimeMs] as const);
    const assembly = files();
    const destroyed = await destroyStack(run);
    expect(files()).toEqual(assembly);
    if (destroyed.incomplete !== undefined)
      console.log(`destroy: the endpoint left behind: ${destroyed.incomplete}`);
    expect(await stackExists(run.endpoint.url, stackNameOf(run.context))).toBe(false);
    const ids = (type: string) => deployment.deployed.filter((r) => r.type === type).map((r) => r.physicalId);
    const tables = (await clients.ddb.send(new ListTablesCommand({}))).TableNames ?? [];
    expect(tables.filter((t) => ids("AWS::DynamoDB::Table").includes(t))).toEqual([]);
    const fns = (await clients.lambda.send(new ListFunctionsCommand({}))).Functions ?? [];
    expect(
      fns.map((f) => f.FunctionName).filter((n) => ids("AWS::Lambda::Function").includes(n ?? "")),
    ).toEqual([]);
    const machines = (await clients.sfn.send(new ListStateMachinesCommand({}))).stateMachines ?? [];
    expect(
      machines
        .map((m) => m.stateMachineArn)
        .filter((a) => ids("AWS::StepFunctions::StateMachine").includes(a ?? "")),
    ).toEqual([]);
  }, 300_000);
});
