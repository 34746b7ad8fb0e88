/**
 * The synthesized template of the CDK app (bundling skipped, a registry image instead of the
 * Docker build): every resource of the deployment with its key properties.
 */
import { readFileSync } from "node:fs";
import { Match, type Template } from "aws-cdk-lib/assertions";
import { beforeAll, describe, expect, it } from "vitest";
import {
  CHILD_TASK_ASL_PATH,
  EXECUTION_STATUS_CHANGE,
  UNRECORDED_EXECUTION_ENDS,
} from "../../infra/constructs/child-task.js";
import { FLOW_METRIC_SERVICES, FLOW_METRICS } from "../../infra/constructs/observability.js";
import { TABLES } from "../../src/adapters/dynamodb/schema.js";
import { FLOW_METRIC_NAMES } from "../../src/app/observability.js";
import { CHILD_TASK_ENV, ENV } from "../../src/service/config.js";
import { type BuiltStack, PROD_CONTEXT, sharedStack } from "../fixtures/infra-stack.js";

type Resource = { Type: string; Properties: Record<string, unknown>; DeletionPolicy?: string };

const resources = (template: Template, type: string): [string, Resource][] =>
  Object.entries(template.findResources(type)) as [string, Resource][];

const only = (template: Template, type: string): [string, Resource] => {
  const found = resources(template, type);
  expect(found, type).toHaveLength(1);
  return found[0]!;
};

/** A Fn::Join of strings and GetAtt/Ref → a string with `<Logical.Attr>` in place of each token. */
const joined = (value: unknown): string => {
  if (typeof value === "string") return value;
  const v = value as { "Fn::Join"?: [string, unknown[]]; "Fn::GetAtt"?: [string, string]; Ref?: string };
  if (v["Fn::Join"]) return v["Fn::Join"][1].map(joined).join(v["Fn::Join"][0]);
  if (v["Fn::GetAtt"]) return `<${v["Fn::GetAtt"][0]}.${v["Fn::GetAtt"][1]}>`;
  return `<${v.Ref}>`;
};

const BUILD_TIMEOUT = 60_000;
let dev: BuiltStack;
let prod: BuiltStack;

beforeAll(() => {
  dev = sharedStack();
  prod = sharedStack(PROD_CONTEXT);
}, BUILD_TIMEOUT);

/** The logical id of the table `Flow-<stage>-<name>`. */
const tableId = (template: Template, name: string): string =>
  resources(template, "AWS::DynamoDB::Table").find(([, t]) =>
    (t.Properties.TableName as string).endsWith(`-${name}`),
  )![0];

describe("infra data: tables from schema.ts", () => {
  it("one table per schema definition, named <prefix><logicalName>, keys as in the schema", () => {
    const tables = resources(dev.template, "AWS::DynamoDB::Table");
    expect(tables).toHaveLength(TABLES.length);
    for (const def of TABLES) {
      const keySchema = [{ AttributeName: def.partitionKey.name, KeyType: "HASH" }];
      if (def.sortKey) keySchema.push({ AttributeName: def.sortKey.name, KeyType: "RANGE" });
      dev.template.hasResourceProperties("AWS::DynamoDB::Table", {
        TableName: `Flow-dev-${def.logicalName}`,
        KeySchema: keySchema,
        GlobalSecondaryIndexes: def.globalSecondaryIndexes.length
          ? def.globalSecondaryIndexes.map((g) => Match.objectLike({ IndexName: g.name }))
          : Match.absent(),
        LocalSecondaryIndexes: def.localSecondaryIndexes.length
          ? def.localSecondaryIndexes.map((l) => Match.objectLike({ IndexName: l.name }))
          : Match.absent(),
      });
    }
  });

  it("on-demand, SSE with the customer-managed key, PITR on, for every table", () => {
    const [keyId, key] = resources(dev.template, "AWS::KMS::Key").find(([id]) =>
      id.startsWith("DataTableKey"),
    )!;
    expect(key.Properties.EnableKeyRotation).toBe(true);
    for (const [, table] of resources(dev.template, "AWS::DynamoDB::Table")) {
      expect(table.Properties.BillingMode).toBe("PAY_PER_REQUEST");
      expect(table.Properties.SSESpecification).toEqual({
        SSEEnabled: true,
        SSEType: "KMS",
        KMSMasterKeyId: { "Fn::GetAtt": [keyId, "Arn"] },
      });
      expect(table.Properties.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    }
  });

  it("streams (NEW_AND_OLD_IMAGES; RunEvents NEW_IMAGE) and TTL attributes exactly where the schema asks", () => {
    for (const def of TABLES) {
      const [, table] = resources(dev.template, "AWS::DynamoDB::Table").find(
        ([, t]) => t.Properties.TableName === `Flow-dev-${def.logicalName}`,
      )!;
      expect(table.Properties.StreamSpecification, def.logicalName).toEqual(
        def.stream ? { StreamViewType: def.stream } : undefined,
      );
      expect(table.Properties.TimeToLiveSpecification, def.logicalName).toEqual(
        def.ttlAttribute ? { AttributeName: def.ttlAttribute, Enabled: true } : undefined,
      );
    }
  });

  it("TTL: Tasks on `ttl` (the child task's cmds# command sets), RackLocks on `ttl`, Targets on `expiresAt`", () => {
    const ttlOf = (name: string) =>
      resources(dev.template, "AWS::DynamoDB::Table").find(([id]) => id === tableId(dev.template, name))![1]
        .Properties.TimeToLiveSpecification;
    expect(ttlOf("Tasks")).toEqual({ AttributeName: "ttl", Enabled: true });
    expect(ttlOf("RackLocks")).toEqual({ AttributeName: "ttl", Enabled: true });
    expect(ttlOf("Targets")).toEqual({ AttributeName: "expiresAt", Enabled: true });
    expect(ttlOf("Runs")).toBeUndefined();
    expect(ttlOf("Inventory")).toBeUndefined();
  });

  it("prod: deletion protection on and RETAIN; dev: neither", () => {
    for (const [, table] of resources(prod.template, "AWS::DynamoDB::Table")) {
      expect(table.Properties.DeletionProtectionEnabled).toBe(true);
      expect(table.DeletionPolicy).toBe("Retain");
    }
    for (const [, table] of resources(dev.template, "AWS::DynamoDB::Table")) {
      expect(table.Properties.DeletionProtectionEnabled).toBe(false);
      expect(table.DeletionPolicy).toBe("Delete");
    }
  });
});

describe("infra compute: Lambdas, stream, ticker, child task", () => {
  const flowFunctions = (template: Template) =>
    resources(template, "AWS::Lambda::Function").filter(([id]) =>
      /^(Dispatcher|StreamEvaluator|TaskSteps|BmcResult|EventPublisher)Function/.test(id),
    );

  it("five functions: Node.js 22 on ARM64, handler `handler`, X-Ray active, source maps on", () => {
    const fns = flowFunctions(dev.template);
    expect(fns.map(([id]) => id.replace(/Function.*/, "")).sort()).toEqual([
      "BmcResult",
      "Dispatcher",
      "EventPublisher",
      "StreamEvaluator",
      "TaskSteps",
    ]);
    for (const [id, fn] of fns) {
      expect(fn.Properties.Runtime).toBe("nodejs22.x");
      expect(fn.Properties.Architectures).toEqual(["arm64"]);
      expect(fn.Properties.Handler).toBe("index.handler");
      expect(fn.Properties.TracingConfig).toEqual({ Mode: "Active" });
      const env = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      // The event publisher reads no table: the stream records it is handed are the events.
      expect(env[ENV.tablePrefix], id).toBe(id.startsWith("EventPublisher") ? undefined : "Flow-dev-");
      expect(env.NODE_OPTIONS).toBe("--enable-source-maps");
    }
  });

  it("a deploy updates bmc-result before task-steps: a new request-id form is never sent before its receiver is live", () => {
    const fns = flowFunctions(dev.template);
    const id = (name: string) => fns.find(([logical]) => logical.startsWith(name))?.[0];
    const steps = fns.find(([logical]) => logical.startsWith("TaskSteps"))?.[1] as { DependsOn?: string[] };
    expect(steps.DependsOn).toContain(id("BmcResult"));
  });

  it("a deploy updates bmc-result before the child-task definition: a wait's resume is never stored before a receiver that hands it back is live", () => {
    const fns = flowFunctions(dev.template);
    const receiver = fns.find(([logical]) => logical.startsWith("BmcResult"))?.[0];
    const machines = Object.entries(dev.template.findResources("AWS::StepFunctions::StateMachine"));
    const child = machines.filter(([logical]) => logical.startsWith("ChildTask"));
    expect(child).toHaveLength(1);
    expect(receiver).toBeDefined();
    const [, machine] = child[0] as [string, { DependsOn?: string[] }];
    expect(machine.DependsOn).toContain(receiver);
  });

  it("each function gets exactly the ENV names its composition reads", () => {
    const envOf = (prefix: string) =>
      (
        flowFunctions(prod.template).find(([id]) => id.startsWith(prefix))![1].Properties.Environment as {
          Variables: Record<string, unknown>;
        }
      ).Variables;
    const build = [ENV.tablePrefix, ENV.version, ENV.gitCommit, ENV.buildTime, "NODE_OPTIONS"];
    const settings = Object.values(CHILD_TASK_ENV);
    const names = (prefix: string) => Object.keys(envOf(prefix)).sort();
    // awsDispatcher (src/service/aws.ts): the machine's ARN and what its executions are told, no
    // credentials.
    expect(names("Dispatcher")).toEqual([...build, ENV.childTaskStateMachineArn, ...settings].sort());
    expect(names("StreamEvaluator")).toEqual([...build, ENV.childTaskStateMachineArn, ...settings].sort());
    // composeTaskStepsLambda: IoT endpoint, the secrets key and the image bucket (presigned
    // GETs); both record run children's outcomes and then wake the dispatcher for the run by its name.
    expect(names("TaskSteps")).toEqual(
      [
        ...build,
        ENV.iotDataEndpoint,
        ENV.secretsKmsKeyId,
        ENV.imageBucket,
        ENV.dispatcherFunctionName,
      ].sort(),
    );
    // composeBmcResultLambda, stores only: reports and execution ends need the tables alone.
    expect(names("BmcResult")).toEqual([...build, ENV.dispatcherFunctionName].sort());
    // composeEventPublisherLambda: the bus alone (no table, no prefix).
    expect(names("EventPublisher")).toEqual(
      [ENV.version, ENV.gitCommit, ENV.buildTime, "NODE_OPTIONS", ENV.eventBusName].sort(),
    );
    expect(envOf("EventPublisher")[ENV.eventBusName]).toBe("flow-rollouts");
    // The name the wakers invoke is the dispatcher's own physical name.
    const dispatcherName = flowFunctions(prod.template).find(([id]) => id.startsWith("Dispatcher"))![1]
      .Properties.FunctionName;
    expect(dispatcherName).toBe("Flow-prod-dispatcher");
    expect(envOf("TaskSteps")[ENV.dispatcherFunctionName]).toBe(dispatcherName);
    expect(envOf("BmcResult")[ENV.dispatcherFunctionName]).toBe(dispatcherName);

    const [machineId] = resources(prod.template, "AWS::StepFunctions::StateMachine").find(([id]) =>
      id.startsWith("ChildTask"),
    )!;
    const [keyId] = resources(prod.template, "AWS::KMS::Key").find(([id]) => id.startsWith("SecretsKey"))!;
    expect(envOf("Dispatcher")[ENV.childTaskStateMachineArn]).toEqual({ Ref: machineId });
    expect(envOf("StreamEvaluator")[ENV.childTaskStateMachineArn]).toEqual({ Ref: machineId });
    expect(envOf("TaskSteps")[ENV.secretsKmsKeyId]).toEqual({ "Fn::GetAtt": [keyId, "Arn"] });
    expect(envOf("TaskSteps")[ENV.iotDataEndpoint]).toBe("https://abc123-ats.iot.eu-west-1.amazonaws.com");
    expect(envOf("Dispatcher")[ENV.tablePrefix]).toBe("Flow-prod-");
  });

  it("the evaluator consumes the Runs and Targets streams only: batch 100, bisect, 5 retries, max age, DLQ, batch item failures", () => {
    const [dlqId] = resources(dev.template, "AWS::SQS::Queue").find(([id]) => id.startsWith("StreamDlq"))!;
    const mappings = resources(dev.template, "AWS::Lambda::EventSourceMapping").filter(([, m]) =>
      (m.Properties.FunctionName as { Ref: string }).Ref.startsWith("StreamEvaluatorFunction"),
    );
    expect(mappings.map(([, m]) => m.Properties.EventSourceArn)).toEqual([
      { "Fn::GetAtt": [tableId(dev.template, "Runs"), "StreamArn"] },
      { "Fn::GetAtt": [tableId(dev.template, "Targets"), "StreamArn"] },
    ]);
    for (const [, mapping] of mappings) {
      expect(mapping.Properties).toMatchObject({
        BatchSize: 100,
        BisectBatchOnFunctionError: true,
        MaximumRetryAttempts: 5,
        MaximumRecordAgeInSeconds: 86400,
        StartingPosition: "TRIM_HORIZON",
        FunctionResponseTypes: ["ReportBatchItemFailures"],
        DestinationConfig: { OnFailure: { Destination: { "Fn::GetAtt": [dlqId, "Arn"] } } },
      });
      expect((mapping.Properties.FunctionName as { Ref: string }).Ref).toMatch(/^StreamEvaluatorFunction/);
    }
  });

  it("the event publisher consumes the RunEvents stream only: batch 100, bisect, 10 retries, max age, the stream DLQ, batch item failures", () => {
    const [dlqId] = resources(dev.template, "AWS::SQS::Queue").find(([id]) => id.startsWith("StreamDlq"))!;
    const mappings = resources(dev.template, "AWS::Lambda::EventSourceMapping").filter(([, m]) =>
      (m.Properties.FunctionName as { Ref: string }).Ref.startsWith("EventPublisherFunction"),
    );
    expect(mappings).toHaveLength(1);
    expect(mappings[0]![1].Properties).toMatchObject({
      EventSourceArn: { "Fn::GetAtt": [tableId(dev.template, "RunEvents"), "StreamArn"] },
      BatchSize: 100,
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 10,
      MaximumRecordAgeInSeconds: 86400,
      StartingPosition: "TRIM_HORIZON",
      FunctionResponseTypes: ["ReportBatchItemFailures"],
      DestinationConfig: { OnFailure: { Destination: { "Fn::GetAtt": [dlqId, "Arn"] } } },
    });
    const all = resources(dev.template, "AWS::Lambda::EventSourceMapping");
    expect(all).toHaveLength(4); // + bmc-result on the reports queue
  });

  it("EventBridge: this child-task machine's ABORTED, TIMED_OUT, FAILED executions → bmc-result, undeliverable ones → its DLQ", () => {
    const [ruleId, rule] = only(dev.template, "AWS::Events::Rule");
    const [machineId] = resources(dev.template, "AWS::StepFunctions::StateMachine").find(([id]) =>
      id.startsWith("ChildTask"),
    )!;
    const [dlqId] = resources(dev.template, "AWS::SQS::Queue").find(([id]) => id.startsWith("BmcResultDlq"))!;
    expect(rule.Properties.EventPattern).toEqual({
      source: ["aws.states"],
      "detail-type": ["Step Functions Execution Status Change"],
      detail: { stateMachineArn: [{ Ref: machineId }], status: ["ABORTED", "TIMED_OUT", "FAILED"] },
    });
    expect(EXECUTION_STATUS_CHANGE).toBe("Step Functions Execution Status Change");
    expect([...UNRECORDED_EXECUTION_ENDS]).toEqual(["ABORTED", "TIMED_OUT", "FAILED"]);
    const targets = rule.Properties.Targets as {
      Arn: unknown;
      DeadLetterConfig: unknown;
      RetryPolicy: unknown;
    }[];
    expect(targets).toHaveLength(1);
    expect(joined(targets[0]!.Arn)).toMatch(/^<BmcResultFunction\w+\.Arn>$/);
    expect(targets[0]!.DeadLetterConfig).toEqual({ Arn: { "Fn::GetAtt": [dlqId, "Arn"] } });
    expect(targets[0]!.RetryPolicy).toEqual({ MaximumRetryAttempts: 185, MaximumEventAgeInSeconds: 86400 });
    dev.template.hasResourceProperties("AWS::Lambda::Permission", {
      Action: "lambda:InvokeFunction",
      Principal: "events.amazonaws.com",
      SourceArn: { "Fn::GetAtt": [ruleId, "Arn"] },
    });
  });

  it("bmc-result's failed async invocations (reports, execution ends) go to the same DLQ after 2 retries; the dispatcher has no async config", () => {
    const [dlqId] = resources(dev.template, "AWS::SQS::Queue").find(([id]) => id.startsWith("BmcResultDlq"))!;
    const [, config] = only(dev.template, "AWS::Lambda::EventInvokeConfig");
    expect((config.Properties.FunctionName as { Ref: string }).Ref).toMatch(/^BmcResultFunction/);
    expect(config.Properties).toMatchObject({
      MaximumRetryAttempts: 2,
      DestinationConfig: { OnFailure: { Destination: { "Fn::GetAtt": [dlqId, "Arn"] } } },
    });
  });

  it("ticker: Scheduler every minute starts an EXPRESS machine that invokes the dispatcher 6 times, 10 s apart", () => {
    const [tickerId, ticker] = resources(dev.template, "AWS::StepFunctions::StateMachine").find(([id]) =>
      id.startsWith("Ticker"),
    )!;
    expect(ticker.Properties.StateMachineType).toBe("EXPRESS");
    const [, schedule] = only(dev.template, "AWS::Scheduler::Schedule");
    expect(schedule.Properties.ScheduleExpression).toBe("rate(1 minute)");
    expect(schedule.Properties.Target).toMatchObject({
      Arn: { Ref: tickerId },
      Input: "{}",
      RetryPolicy: { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 },
    });
    const asl = JSON.parse(joined(ticker.Properties.DefinitionString));
    expect(asl.States.Dispatch).toMatchObject({ Type: "Task", Parameters: {}, ResultPath: null });
    expect(asl.States.Dispatch.Resource).toMatch(/^<DispatcherFunction\w+\.Arn>$/);
    expect(asl.States.Wait).toEqual({ Type: "Wait", Seconds: 10, Next: "Dispatch" });
    expect(asl.States.MoreTicks.Choices).toEqual([{ Variable: "$.tick", NumericLessThan: 6, Next: "Wait" }]);
  });

  it("ticker interval 7 s → 9 passes, 7 s waits", () => {
    const [, ticker] = resources(prod.template, "AWS::StepFunctions::StateMachine").find(([id]) =>
      id.startsWith("Ticker"),
    )!;
    const asl = JSON.parse(joined(ticker.Properties.DefinitionString));
    expect(asl.States.Wait.Seconds).toBe(7);
    expect(asl.States.MoreTicks.Choices[0].NumericLessThan).toBe(9);
  });

  it("child task: STANDARD, logging ALL, X-Ray on, the placeholder bound to task-steps", () => {
    const [, machine] = resources(dev.template, "AWS::StepFunctions::StateMachine").find(([id]) =>
      id.startsWith("ChildTask"),
    )!;
    expect(machine.Properties).toMatchObject({
      StateMachineType: "STANDARD",
      StateMachineName: "Flow-dev-child-task",
      TracingConfiguration: { Enabled: true },
      LoggingConfiguration: { Level: "ALL", IncludeExecutionData: true },
    });
    const substitutions = machine.Properties.DefinitionSubstitutions as Record<
      string,
      { "Fn::GetAtt": string[] }
    >;
    expect(Object.keys(substitutions)).toEqual(["TaskStepsFunctionArn"]);
    expect(substitutions.TaskStepsFunctionArn!["Fn::GetAtt"][0]).toMatch(/^TaskStepsFunction/);
    const [, prodMachine] = resources(prod.template, "AWS::StepFunctions::StateMachine").find(([id]) =>
      id.startsWith("ChildTask"),
    )!;
    expect(prodMachine.Properties.LoggingConfiguration).toMatchObject({ IncludeExecutionData: false });
  });

  const deployedDefinition = (built: BuiltStack): unknown => {
    const [, machine] = resources(built.template, "AWS::StepFunctions::StateMachine").find(([id]) =>
      id.startsWith("ChildTask"),
    )!;
    return JSON.parse(machine.Properties.DefinitionString as string);
  };

  it("the deployed child-task definition is state-machines/child-task.asl.json, placeholder and all", () => {
    expect(deployedDefinition(dev)).toEqual(JSON.parse(readFileSync(CHILD_TASK_ASL_PATH, "utf8")));
  });

  it("the child task's role may invoke task-steps (and its versions) only", () => {
    const policies = resources(dev.template, "AWS::IAM::Policy").filter(([id]) =>
      id.startsWith("ChildTaskStateMachineRole"),
    );
    const invoke = policies
      .flatMap(
        ([, p]) =>
          (p.Properties.PolicyDocument as { Statement: { Action: unknown; Resource: unknown }[] }).Statement,
      )
      .filter((s) => s.Action === "lambda:InvokeFunction");
    expect(invoke).toHaveLength(1);
    const targets = (invoke[0]!.Resource as unknown[]).map(joined);
    expect(targets).toHaveLength(2);
    for (const t of targets) expect(t).toMatch(/^<TaskStepsFunction\w+\.Arn>(:\*)?$/);
  });
});

describe("infra front: gRPC on Fargate behind an internal ALB", () => {
  it("internal ALB, HTTPS 443 listener with the certificate from context, TLS 1.3 policy", () => {
    prod.template.hasResourceProperties("AWS::ElasticLoadBalancingV2::LoadBalancer", { Scheme: "internal" });
    prod.template.hasResourceProperties("AWS::ElasticLoadBalancingV2::Listener", {
      Port: 443,
      Protocol: "HTTPS",
      Certificates: [{ CertificateArn: "arn:aws:acm:eu-west-1:123456789012:certificate/abc" }],
    });
  });

  it("target group speaks gRPC over TLS to IP targets on 50051 and checks grpc.health.v1 with status 0 over TLS", () => {
    const [, tg] = only(dev.template, "AWS::ElasticLoadBalancingV2::TargetGroup");
    expect(tg.Properties).toMatchObject({
      ProtocolVersion: "GRPC",
      Protocol: "HTTPS",
      HealthCheckProtocol: "HTTPS",
      Port: 50051,
      TargetType: "ip",
      HealthCheckPath: "/grpc.health.v1.Health/Check",
      Matcher: { GrpcCode: "0" },
    });
  });

  it("load balancer ingress only from the client CIDR on 443", () => {
    prod.template.hasResourceProperties("AWS::EC2::SecurityGroup", {
      SecurityGroupIngress: [Match.objectLike({ CidrIp: "10.20.0.0/16", FromPort: 443, ToPort: 443 })],
    });
  });

  it("ARM64 task, environment from ENV, CPU auto-scaling 2..6 in prod", () => {
    const [, task] = only(prod.template, "AWS::ECS::TaskDefinition");
    expect(task.Properties.RuntimePlatform).toEqual({
      CpuArchitecture: "ARM64",
      OperatingSystemFamily: "LINUX",
    });
    const container = (
      task.Properties.ContainerDefinitions as { Environment: { Name: string; Value: unknown }[] }[]
    )[0]!;
    const env = Object.fromEntries(container.Environment.map((e) => [e.Name, e.Value]));
    expect(Object.keys(env).sort()).toEqual(
      [
        ENV.tablePrefix,
        ENV.version,
        ENV.gitCommit,
        ENV.buildTime,
        ENV.childTaskStateMachineArn,
        ...Object.values(CHILD_TASK_ENV),
        ENV.secretsKmsKeyId,
        ENV.requestMacKmsKeyId,
        ENV.imageBucket,
        ENV.port,
        ENV.host,
        ENV.tlsSelfSigned,
        ENV.trustLoadBalancerClientCert,
        ENV.protoDir,
        ENV.authzPolicyParameter,
      ].sort(),
    );
    // Listens on every interface in plaintext, behind the ALB; reflection reads the image's protos;
    // prod's context has a trust store, so the front reads the ALB's verified client certificate.
    expect(env).toMatchObject({
      [ENV.port]: "50051",
      [ENV.host]: "0.0.0.0",
      [ENV.tlsSelfSigned]: "true",
      [ENV.trustLoadBalancerClientCert]: "true",
      [ENV.protoDir]: "/app/proto",
      [ENV.tablePrefix]: "Flow-prod-",
    });
    prod.template.hasResourceProperties("AWS::ApplicationAutoScaling::ScalableTarget", {
      MinCapacity: 2,
      MaxCapacity: 6,
    });
    prod.template.hasResourceProperties("AWS::ApplicationAutoScaling::ScalingPolicy", {
      TargetTrackingScalingPolicyConfiguration: Match.objectLike({
        PredefinedMetricSpecification: { PredefinedMetricType: "ECSServiceAverageCPUUtilization" },
      }),
    });
  });

  it("dev with no context: a new VPC, and a placeholder certificate (warned about)", () => {
    only(dev.template, "AWS::EC2::VPC");
    const [, listener] = only(dev.template, "AWS::ElasticLoadBalancingV2::Listener");
    const [certificate] = listener.Properties.Certificates as { CertificateArn: unknown }[];
    expect(joined(certificate!.CertificateArn)).toBe(
      "arn:<AWS::Partition>:acm:us-east-1:000000000000:certificate/00000000-0000-0000-0000-000000000000",
    );
  });
});

describe("infra IoT: BMC reports in, BMC policy", () => {
  it.each([
    [
      "Flow_dev_rack_bmc_events",
      "SELECT *, topic(3) AS rackId, topic(5) AS componentId FROM 'flow/rack/+/bmc/+/evt'",
    ],
    ["Flow_dev_bmc_events", "SELECT *, topic(3) AS componentId FROM 'flow/bmc/+/evt'"],
    ["Flow_dev_rack_reports", "SELECT *, topic(3) AS rackId FROM 'flow/rack/+/reports'"],
  ])(
    "topic rule %s (%s) → the reports queue (its own send role), which bmc-result reads in batches",
    (name, sql) => {
      const rules = resources(dev.template, "AWS::IoT::TopicRule");
      expect(rules.map(([, r]) => r.Properties.RuleName).sort()).toEqual([
        "Flow_dev_bmc_events",
        "Flow_dev_rack_bmc_events",
        "Flow_dev_rack_reports",
      ]);
      const [, rule] = rules.find(([, r]) => r.Properties.RuleName === name)!;
      const payload = rule.Properties.TopicRulePayload as {
        Sql: string;
        Actions: { Sqs: { QueueUrl: unknown; RoleArn: unknown; UseBase64: boolean } }[];
      };
      expect(payload.Sql).toBe(sql);
      const [queueId, queue] = resources(dev.template, "AWS::SQS::Queue").find(([id]) =>
        id.startsWith("BmcReports"),
      )!;
      const [dlqId] = resources(dev.template, "AWS::SQS::Queue").find(([id]) =>
        id.startsWith("BmcResultDlq"),
      )!;
      expect(payload.Actions).toHaveLength(1);
      expect(payload.Actions[0]!.Sqs.QueueUrl).toEqual({ Ref: queueId });
      expect(payload.Actions[0]!.Sqs.UseBase64).toBe(false);
      expect(joined(payload.Actions[0]!.Sqs.RoleArn)).toMatch(/^<IotRuleSendRole\w+\.Arn>$/);
      expect(queue.Properties).toMatchObject({
        SqsManagedSseEnabled: true,
        VisibilityTimeout: 90,
        MessageRetentionPeriod: 86400,
        RedrivePolicy: { deadLetterTargetArn: { "Fn::GetAtt": [dlqId, "Arn"] }, maxReceiveCount: 5 },
      });
      // IoT no longer invokes the function: the queue's event source mapping does.
      expect(
        resources(dev.template, "AWS::Lambda::Permission").filter(
          ([, p]) => p.Properties.Principal === "iot.amazonaws.com",
        ),
      ).toEqual([]);
      const mappings = resources(dev.template, "AWS::Lambda::EventSourceMapping").filter(([, m]) =>
        (m.Properties.FunctionName as { Ref: string }).Ref.startsWith("BmcResultFunction"),
      );
      expect(mappings).toHaveLength(1);
      expect(mappings[0]![1].Properties).toMatchObject({
        EventSourceArn: { "Fn::GetAtt": [queueId, "Arn"] },
        BatchSize: 1000,
        MaximumBatchingWindowInSeconds: 1,
        FunctionResponseTypes: ["ReportBatchItemFailures"],
      });
    },
  );

  /** A policy's statements, exactly, with the account's ARN prefix cut off. */
  function policyStatements(name: string) {
    const policies = resources(dev.template, "AWS::IoT::Policy");
    expect(policies.map(([, p]) => p.Properties.PolicyName).sort()).toEqual([
      "Flow_dev_bmc",
      "Flow_dev_bmc_agent",
    ]);
    const [, policy] = policies.find(([, p]) => p.Properties.PolicyName === name)!;
    return (
      policy.Properties.PolicyDocument as {
        Statement: { Effect: string; Action: unknown; Resource: unknown; Condition?: unknown }[];
      }
    ).Statement.map((s) => ({
      effect: s.Effect,
      action: s.Action,
      resource: joined(s.Resource).replace("arn:<AWS::Partition>:iot:<AWS::Region>:<AWS::AccountId>:", ""),
      ...(s.Condition === undefined ? {} : { condition: s.Condition }),
    }));
  }
  // biome-ignore lint/suspicious/noTemplateCurlyInString: an IoT policy variable, literal by design
  const thing = "${iot:Connection.Thing.ThingName}";
  const attached = { Bool: { "iot:Connection.Thing.IsAttached": "true" } };

  it("a rack agent connects as its own thing (the rack id) and uses only its own rack's topics, its reports (one by one or its rack's batches) also through Basic Ingest to the rack reports' rule", () => {
    expect(policyStatements("Flow_dev_bmc_agent")).toEqual([
      { effect: "Allow", action: "iot:Connect", resource: `client/${thing}`, condition: attached },
      { effect: "Allow", action: "iot:Subscribe", resource: `topicfilter/flow/rack/${thing}/bmc/+/cmd` },
      { effect: "Allow", action: "iot:Receive", resource: `topic/flow/rack/${thing}/bmc/*/cmd` },
      { effect: "Allow", action: "iot:Publish", resource: `topic/flow/rack/${thing}/bmc/*/evt` },
      {
        effect: "Allow",
        action: "iot:Publish",
        resource: `topic/$aws/rules/Flow_dev_rack_bmc_events/flow/rack/${thing}/bmc/*/evt`,
      },
      { effect: "Allow", action: "iot:Publish", resource: `topic/flow/rack/${thing}/reports` },
      {
        effect: "Allow",
        action: "iot:Publish",
        resource: `topic/$aws/rules/Flow_dev_rack_bmc_events/flow/rack/${thing}/reports`,
      },
      { effect: "Allow", action: "iot:AssumeRoleWithCertificate", resource: "rolealias/Flow_dev_bmc_agent" },
    ]);
    expect(dev.template.toJSON().Outputs.BmcAgentPolicyName.Value).toBe("Flow_dev_bmc_agent");
    expect(dev.template.toJSON().Outputs.BmcAgentRoleAlias.Value).toBe("Flow_dev_bmc_agent");
    // The rule the agent's reportsRule names, the one its Basic Ingest statement allows.
    expect(dev.template.toJSON().Outputs.BmcReportsRuleName.Value).toBe("Flow_dev_rack_bmc_events");
  });

  it("the agent's role (IoT credentials provider, an hour) may Decrypt only its own rack's BMC credentials", () => {
    const [, alias] = only(dev.template, "AWS::IoT::RoleAlias");
    expect(alias.Properties).toMatchObject({
      RoleAlias: "Flow_dev_bmc_agent",
      CredentialDurationSeconds: 3600,
    });
    const roleId = (alias.Properties.RoleArn as { "Fn::GetAtt": [string, string] })["Fn::GetAtt"][0];
    const [, role] = resources(dev.template, "AWS::IAM::Role").find(([id]) => id === roleId)!;
    expect(role.Properties.AssumeRolePolicyDocument).toMatchObject({
      Statement: [
        {
          Action: "sts:AssumeRole",
          Effect: "Allow",
          Principal: { Service: "credentials.iot.amazonaws.com" },
        },
      ],
    });
    expect(role.Properties.MaxSessionDuration).toBe(3600);
    const policies = resources(dev.template, "AWS::IAM::Policy").filter(([, p]) =>
      (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === roleId),
    );
    expect(policies).toHaveLength(1);
    const statements = (policies[0]![1].Properties.PolicyDocument as { Statement: { Resource: unknown }[] })
      .Statement;
    expect(statements.map((s) => ({ ...s, Resource: joined(s.Resource) }))).toEqual([
      {
        Sid: "OpenOwnRackBmcCredentials",
        Effect: "Allow",
        Action: "kms:Decrypt",
        Resource: expect.stringMatching(/^<SecretsKey\w+\.Arn>$/),
        // biome-ignore lint/suspicious/noTemplateCurlyInString: an IAM policy variable, literal by design
        Condition: { StringLike: { "kms:EncryptionContext:context": "bmc:${credentials-iot:ThingName}:*" } },
      },
    ]);
  });

  it("a v1-v3 BMC connects as its own thing and uses only its own two topics", () => {
    const statements = policyStatements("Flow_dev_bmc").map(({ action, resource }) => ({ action, resource }));
    expect(statements).toEqual([
      { action: "iot:Connect", resource: `client/${thing}` },
      { action: "iot:Publish", resource: `topic/flow/bmc/${thing}/evt` },
      { action: "iot:Subscribe", resource: `topicfilter/flow/bmc/${thing}/cmd` },
      { action: "iot:Receive", resource: `topic/flow/bmc/${thing}/cmd` },
    ]);
  });
});

describe("infra observability: dashboard and alarms", () => {
  it("the dashboard graphs exactly the Flow metrics the runtime emits (src/app/observability.ts)", () => {
    const [, dashboard] = only(dev.template, "AWS::CloudWatch::Dashboard");
    const body = joined(dashboard.Properties.DashboardBody);
    const graphed = new Set([...body.matchAll(/"Flow","(\w+)"/g)].map((m) => m[1]));
    expect([...graphed].sort()).toEqual([...FLOW_METRIC_NAMES].sort());
    expect(Object.values(FLOW_METRICS).sort()).toEqual([...FLOW_METRIC_NAMES].sort());
    for (const name of [
      "IteratorAge",
      "ApproximateNumberOfMessagesVisible",
      "ExecutionsFailed",
      "Errors",
      "Duration",
    ]) {
      expect(body).toContain(name);
    }
  });

  /** The metric an alarm watches: its MetricName, or the names its metric-math expression sums. */
  const watched = (alarm: Record<string, unknown>): string => {
    if (alarm.MetricName) return alarm.MetricName as string;
    const names = (alarm.Metrics as { MetricStat?: { Metric: { MetricName: string } } }[])
      .filter((q) => q.MetricStat)
      .map((q) => q.MetricStat!.Metric.MetricName);
    return [...new Set(names)].join(",");
  };

  it("six alarms: gate tripped, stream DLQ and bmc-result DLQ not empty, dispatcher errors, tick overrun, iterator age", () => {
    const alarms = resources(dev.template, "AWS::CloudWatch::Alarm").map(([, a]) => a.Properties);
    expect(alarms.map(watched).sort()).toEqual(
      [
        "ApproximateNumberOfMessagesVisible",
        "ApproximateNumberOfMessagesVisible",
        "Errors",
        "GateTrips",
        "IteratorAge",
        "TickOverrunMs",
      ].sort(),
    );
    const queues = alarms
      .filter((a) => a.MetricName === "ApproximateNumberOfMessagesVisible")
      .map((a) => joined((a.Dimensions as { Value: unknown }[])[0]!.Value))
      .sort();
    expect(queues).toEqual([
      expect.stringMatching(/^<BmcResultDlq\w+\.QueueName>$/),
      expect.stringMatching(/^<StreamDlq\w+\.QueueName>$/),
    ]);
    expect(alarms.every((a) => a.TreatMissingData === "notBreaching")).toBe(true);
    expect(alarms.every((a) => a.AlarmActions === undefined)).toBe(true);
  });

  /** The alarm on Flow metric `name`: its properties, its expression and the per-service queries. */
  const flowAlarm = (built: BuiltStack, name: string) => {
    const alarm = resources(built.template, "AWS::CloudWatch::Alarm")
      .map(([, a]) => a.Properties)
      .find((a) => watched(a) === name)!;
    const queries = alarm.Metrics as {
      Id: string;
      Expression?: string;
      MetricStat?: {
        Metric: { Namespace: string; Dimensions: { Name: string; Value: string }[] };
        Stat: string;
        Period: number;
      };
    }[];
    const stats = queries.filter((q) => q.MetricStat).map((q) => ({ id: q.Id, ...q.MetricStat! }));
    return { alarm, expression: queries.find((q) => q.Expression)!.Expression, stats };
  };

  it("Flow metrics are summed over every emitting Service (FILL to 0), e.g. the gate-trip alarm", () => {
    const { alarm, expression, stats } = flowAlarm(dev, "GateTrips");
    expect(stats.map((q) => q.Metric.Dimensions)).toEqual(
      FLOW_METRIC_SERVICES.map((service) => [{ Name: "Service", Value: service }]),
    );
    expect(stats.every((q) => q.Metric.Namespace === "Flow" && q.Stat === "Sum")).toBe(true);
    expect(expression).toBe(stats.map((q) => `FILL(${q.id}, 0)`).join(" + "));
    expect(alarm.Threshold).toBe(1);
  });

  it("TickOverrun: the Maximum of TickOverrunMs over the services, ≥ one tick interval in ms, 3 minutes running", () => {
    for (const [built, intervalSeconds] of [
      [dev, 10],
      [prod, PROD_CONTEXT.tickIntervalSeconds],
    ] as const) {
      const { alarm, expression, stats } = flowAlarm(built, "TickOverrunMs");
      // The dispatcher Lambda emits it (Service "dispatcher", src/app/dispatcher.ts tick()).
      expect(stats.map((q) => q.Metric.Dimensions)).toContainEqual([
        { Name: "Service", Value: "dispatcher" },
      ]);
      expect(stats.every((q) => q.Metric.Namespace === "Flow")).toBe(true);
      expect(stats.every((q) => q.Stat === "Maximum" && q.Period === 60)).toBe(true);
      expect(expression).toBe(`MAX([${stats.map((q) => `FILL(${q.id}, 0)`).join(", ")}])`);
      expect(alarm).toMatchObject({
        Threshold: intervalSeconds * 1000,
        ComparisonOperator: "GreaterThanOrEqualToThreshold",
        EvaluationPeriods: 3,
        DatapointsToAlarm: 3,
      });
    }
  });

  it("with alarmEmail: an encrypted SNS topic, subscribed, on every alarm", () => {
    const [topicId, topic] = only(prod.template, "AWS::SNS::Topic");
    expect(topic.Properties.KmsMasterKeyId).toBeDefined();
    prod.template.hasResourceProperties("AWS::SNS::Subscription", {
      Protocol: "email",
      Endpoint: "ops@example.com",
    });
    for (const [, alarm] of resources(prod.template, "AWS::CloudWatch::Alarm")) {
      expect(alarm.Properties.AlarmActions).toEqual([{ Ref: topicId }]);
    }
  });
});

describe("infra customResources=false: nothing that needs a Lambda invoked while deploying", () => {
  // cdk.json turns the VPC's default-security-group lock-down on (a custom resource); so do these.
  const flagged = { "@aws-cdk/aws-ec2:restrictDefaultSecurityGroup": true };
  const customTypes = (template: Template): string[] =>
    Object.values(template.toJSON().Resources as Record<string, Resource>)
      .map((r) => r.Type)
      .filter((type) => type.startsWith("Custom::") || type === "AWS::CloudFormation::CustomResource");

  it("by default: the IoT endpoint look-up and the default-security-group lock-down are custom resources", () => {
    expect(customTypes(sharedStack(flagged).template).sort()).toEqual([
      "Custom::AWS",
      "Custom::VpcRestrictDefaultSG",
    ]);
  });

  it("customResources=false (as -c gives it) with the IoT endpoint: no custom resource, only the five Lambdas", () => {
    const { template } = sharedStack({
      ...flagged,
      customResources: "false",
      iotDataEndpoint: "abc-ats.iot.us-east-1.amazonaws.com",
    });
    expect(customTypes(template)).toEqual([]);
    expect(resources(template, "AWS::Lambda::Function")).toHaveLength(5);
    expect(template.toJSON().Outputs.IotDataEndpoint.Value).toBe(
      "https://abc-ats.iot.us-east-1.amazonaws.com",
    );
  });
});
