/**
 * The whole deployment in one stack, per stage (`Flow-dev`, `Flow-prod`):
 *
 *   gRPC clients ─► internal ALB ─► Fargate (grpc-main) ─► DynamoDB (schema.ts) ──stream──► stream-evaluator
 *   Scheduler (1 min) ─► ticker (Express, 6 × 10 s) ─► dispatcher ─► child task (Standard) ─► task-steps
 *   IoT rule flow/bmc/+/evt ─► bmc-result                         (BMCs over MQTT, one thing each)
 *   CloudWatch: dashboard + alarms (+ SNS)
 *
 * Permissions are granted here, by name, per principal (what each one is known to call):
 *
 * | principal        | tables                       | other                                                       |
 * |------------------|------------------------------|-------------------------------------------------------------|
 * | front (Fargate)  | read/write all               | child task: start, stop, describe; invoke dispatcher; secrets key: encrypt |
 * | dispatcher       | read/write; inventory read   | child task: start, describe                                 |
 * | stream-evaluator | read/write; inventory read   | stream read (via the mapping); invoke dispatcher; child task: stop; DLQ send |
 * | task-steps       | read/write all               | iot:Publish on flow/bmc/<id>/cmd; secrets key: decrypt      |
 * | bmc-result       | read/write; inventory read   | none: it records reports; the child task polls for them     |
 *
 * "read/write" is DynamoDB data-plane access (GetItem … TransactWriteItems) on the table and its
 * indexes, never table management. No statement anywhere has a `*` action.
 */
import { Annotations, CfnOutput, Duration, RemovalPolicy, Stack, type StackProps } from "aws-cdk-lib";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import { Platform } from "aws-cdk-lib/aws-ecr-assets";
import * as ecs from "aws-cdk-lib/aws-ecs";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as eventSources from "aws-cdk-lib/aws-lambda-event-sources";
import * as sns from "aws-cdk-lib/aws-sns";
import * as subscriptions from "aws-cdk-lib/aws-sns-subscriptions";
import * as sqs from "aws-cdk-lib/aws-sqs";
import * as cr from "aws-cdk-lib/custom-resources";
import type { Construct, IConstruct } from "constructs";
import { ENV } from "../../src/config.js";
import { type FlowDeployConfig, isProd, PROJECT_ROOT } from "../config.js";
import { BmcIot } from "../constructs/bmc-iot.js";
import { ChildTaskStateMachine } from "../constructs/child-task.js";
import { FlowData } from "../constructs/data.js";
import { FlowFunction } from "../constructs/flow-function.js";
import { GRPC_PORT, GrpcFront } from "../constructs/grpc-front.js";
import { Observability } from "../constructs/observability.js";
import { Ticker } from "../constructs/ticker.js";
import { acknowledge, acknowledgeWildcardResources } from "../nag.js";

/** The construct id aws-cdk-lib gives the AwsCustomResource singleton provider. */
const PROVIDER_ID = "AWS679f53fac002430cb0da5b7982bd2287";

/** Used when context certificateArn is absent: synth works, a deploy fails at the listener. */
export const PLACEHOLDER_CERTIFICATE_ID = "00000000-0000-0000-0000-000000000000";

export interface FlowStackProps extends StackProps {
  readonly config: FlowDeployConfig;
  /** Lambda entry directory (default `<root>/lambdas`); tests may point it at fixtures. */
  readonly lambdaEntryDir?: string;
  /** child-task ASL (default `<root>/state-machines/child-task.asl.json`); tests use a fixture. */
  readonly childTaskDefinitionPath?: string;
}

export class FlowStack extends Stack {
  readonly data: FlowData;
  readonly dispatcher: FlowFunction;
  readonly streamEvaluator: FlowFunction;
  readonly taskSteps: FlowFunction;
  readonly bmcResult: FlowFunction;
  readonly childTask: ChildTaskStateMachine;
  readonly ticker: Ticker;
  readonly front: GrpcFront;
  readonly iot: BmcIot;
  readonly observability: Observability;
  readonly streamDlq: sqs.Queue;
  readonly secretsKey: kms.Key;

  constructor(scope: Construct, id: string, props: FlowStackProps) {
    super(scope, id, props);
    const config = props.config;
    const prod = isProd(config);
    const namePrefix = `Flow-${config.stage}`;
    const tablePrefix = `${namePrefix}-`;
    const keep = prod ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    for (const key of config.placeholders) {
      Annotations.of(this).addWarningV2(
        `flow:placeholder:${key}`,
        `context ${key} is not set: synthesized with a placeholder; set -c ${key}=… before cdk deploy (docs/deploy.md)`,
      );
    }

    // ---- data and keys
    this.data = new FlowData(this, "Data", { tablePrefix, protect: prod });
    this.secretsKey = new kms.Key(this, "SecretsKey", {
      description:
        "Flow operation runs: envelope key for firmware credentials (front encrypts, task-steps decrypts)",
      enableKeyRotation: true,
      removalPolicy: keep,
    });
    const iotDataEndpoint = this.iotDataEndpoint(config);

    // ---- Lambdas
    const build = {
      [ENV.tablePrefix]: tablePrefix,
      [ENV.version]: config.version,
      [ENV.gitCommit]: config.gitCommit,
    };
    const fnDefaults = { entryDir: props.lambdaEntryDir, retainLogs: prod };
    this.taskSteps = new FlowFunction(this, "TaskSteps", {
      ...fnDefaults,
      entryFile: "task-steps.ts",
      description: "Every Task state of the child-task state machine (switch on event.step)",
      timeout: Duration.seconds(30),
      environment: {
        ...build,
        [ENV.iotDataEndpoint]: iotDataEndpoint,
        [ENV.secretsKmsKeyId]: this.secretsKey.keyArn,
      },
    });
    this.childTask = new ChildTaskStateMachine(this, "ChildTask", {
      taskSteps: this.taskSteps.fn,
      stateMachineName: `${namePrefix}-child-task`,
      definitionPath: props.childTaskDefinitionPath,
      retainLogs: prod,
      includeExecutionData: !prod,
    });
    const childTaskArn = this.childTask.stateMachine.stateMachineArn;

    this.dispatcher = new FlowFunction(this, "Dispatcher", {
      ...fnDefaults,
      entryFile: "dispatcher.ts",
      description:
        "Claims ready targets under the concurrency limit and starts child tasks ({} = full pass, {runId} = one run)",
      timeout: Duration.seconds(30),
      environment: {
        ...build,
        [ENV.childTaskStateMachineArn]: childTaskArn,
        [ENV.tick]: `${config.tickIntervalSeconds}s`,
      },
    });
    // Wake-ups are an optimisation over the next tick (≤ one interval away): a stale one is
    // worthless, so one retry and a one-minute age limit instead of the default 2 retries / 6 h.
    this.dispatcher.fn.configureAsyncInvoke({ retryAttempts: 1, maxEventAge: Duration.minutes(1) });

    this.streamEvaluator = new FlowFunction(this, "StreamEvaluator", {
      ...fnDefaults,
      entryFile: "stream-evaluator.ts",
      description:
        "DynamoDB stream: counters, safety gates, phase boundaries, run completion; wakes the dispatcher",
      timeout: Duration.seconds(60),
      environment: {
        ...build,
        [ENV.dispatcherFunctionName]: this.dispatcher.fn.functionName,
        [ENV.childTaskStateMachineArn]: childTaskArn,
      },
    });
    this.bmcResult = new FlowFunction(this, "BmcResult", {
      ...fnDefaults,
      entryFile: "bmc-result.ts",
      description:
        "IoT rule target for flow/bmc/+/evt: records BMC reports where the child task looks for them",
      timeout: Duration.seconds(15),
      environment: { ...build, [ENV.childTaskStateMachineArn]: childTaskArn },
    });

    // ---- grants (see the table at the top)
    const inventory = this.data.table("Inventory");
    const operational = this.data.allTables.filter((t) => t !== inventory);
    for (const fn of [this.dispatcher, this.streamEvaluator, this.bmcResult]) {
      this.data.grantData(fn.role, { read: [inventory], readWrite: operational });
    }
    this.data.grantData(this.taskSteps.role, { read: [], readWrite: this.data.allTables });
    this.childTask.stateMachine.grantStartExecution(this.dispatcher.role);
    this.childTask.grantExecutionActions(this.dispatcher.role, "states:DescribeExecution");
    this.childTask.grantExecutionActions(this.streamEvaluator.role, "states:StopExecution");
    this.grantInvokeDispatcher(this.streamEvaluator.role);
    this.secretsKey.grant(this.taskSteps.role, "kms:Decrypt");
    this.taskSteps.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: "PublishBmcCommands",
        actions: ["iot:Publish"],
        resources: [BmcIot.commandTopicsArn()],
      }),
    );
    acknowledgeWildcardResources(
      this.taskSteps.role,
      "iot:Publish on flow/bmc/*/cmd: the child task commands whichever component's BMC it drives, and only on command topics.",
      [BmcIot.commandTopicsArn()],
    );

    // ---- the stream: every table whose schema asks for one feeds the evaluator
    // The DLQ holds failure metadata (shard, sequence numbers), not item images: SQS-managed SSE.
    this.streamDlq = new sqs.Queue(this, "StreamDlq", {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    for (const table of this.data.streamTables) {
      this.streamEvaluator.fn.addEventSource(
        new eventSources.DynamoEventSource(table, {
          startingPosition: lambda.StartingPosition.TRIM_HORIZON,
          batchSize: 100,
          bisectBatchOnError: true,
          retryAttempts: 5,
          // Records older than a day are past any useful gate decision; they go to the DLQ.
          maxRecordAge: Duration.days(1),
          reportBatchItemFailures: true,
          onFailure: new eventSources.SqsDlq(this.streamDlq),
        }),
      );
    }

    acknowledge(
      this.streamEvaluator.role,
      "Resource * is required by the services: dynamodb:ListStreams (stream event source) and X-Ray have no resource-level permissions.",
      "AwsSolutions-IAM5[Resource::*]",
    );
    acknowledge(
      this.streamDlq,
      "This queue IS the on-failure destination of the stream event source mappings; a DLQ for the DLQ adds nothing. Its depth alarms.",
      "AwsSolutions-SQS3",
    );

    // ---- the ticker
    this.ticker = new Ticker(this, "Ticker", {
      dispatcher: this.dispatcher.fn,
      intervalSeconds: config.tickIntervalSeconds,
      retainLogs: prod,
    });

    // ---- the gRPC front
    const vpc = config.vpcId ? ec2.Vpc.fromLookup(this, "Vpc", { vpcId: config.vpcId }) : this.newVpc(prod);
    const image = config.containerImage
      ? ecs.ContainerImage.fromRegistry(config.containerImage)
      : ecs.ContainerImage.fromAsset(PROJECT_ROOT, {
          file: "Dockerfile",
          platform: Platform.LINUX_ARM64,
          buildArgs: { FLOW_VERSION: config.version, FLOW_GIT_COMMIT: config.gitCommit },
        });
    this.front = new GrpcFront(this, "Front", {
      vpc,
      image,
      certificateArn:
        config.certificateArn ??
        `arn:${this.partition}:acm:${config.region}:${config.account}:certificate/${PLACEHOLDER_CERTIFICATE_ID}`,
      clientCidr: config.clientCidr ?? vpc.vpcCidrBlock,
      environment: {
        ...build,
        [ENV.childTaskStateMachineArn]: childTaskArn,
        [ENV.dispatcherFunctionName]: this.dispatcher.fn.functionName,
        [ENV.secretsKmsKeyId]: this.secretsKey.keyArn,
        [ENV.port]: String(GRPC_PORT),
        [ENV.host]: "0.0.0.0",
        // The internal ALB terminates TLS with the deployment's certificate and reaches the task
        // over the VPC; the task's security group admits only the load balancer.
        [ENV.plaintextBehindLoadBalancer]: "true",
        [ENV.protoDir]: "/app/proto",
        [ENV.tick]: `${config.tickIntervalSeconds}s`,
      },
      minTasks: config.serviceMinTasks,
      maxTasks: config.serviceMaxTasks,
      retain: prod,
    });
    const taskRole = this.front.taskDefinition.taskRole as iam.Role;
    this.data.grantData(taskRole, { read: [], readWrite: this.data.allTables });
    this.childTask.stateMachine.grantStartExecution(taskRole);
    this.childTask.grantExecutionActions(taskRole, "states:StopExecution", "states:DescribeExecution");
    this.grantInvokeDispatcher(taskRole);
    this.secretsKey.grant(taskRole, "kms:Encrypt", "kms:GenerateDataKey");

    // ---- IoT
    this.iot = new BmcIot(this, "Iot", { bmcResult: this.bmcResult.fn, namePrefix, retainLogs: prod });

    // ---- observability
    this.observability = new Observability(this, "Observability", {
      dashboardName: namePrefix,
      dispatcher: this.dispatcher.fn,
      streamEvaluator: this.streamEvaluator.fn,
      taskSteps: this.taskSteps.fn,
      bmcResult: this.bmcResult.fn,
      streamDlq: this.streamDlq,
      childTask: this.childTask.stateMachine,
      ticker: this.ticker.stateMachine,
      alarmTopic: this.alarmTopic(config),
      tickIntervalSeconds: config.tickIntervalSeconds,
    });

    new CfnOutput(this, "GrpcEndpoint", {
      value: `${this.front.loadBalancer.loadBalancerDnsName}:443`,
      description: "flowctl --endpoint (TLS; use a DNS name your certificate covers, CNAME'd to this)",
    });
    new CfnOutput(this, "TablePrefix", { value: tablePrefix });
    new CfnOutput(this, "ChildTaskStateMachineArn", { value: childTaskArn });
    new CfnOutput(this, "BmcIotPolicyName", { value: this.iot.bmcPolicy.ref });
    new CfnOutput(this, "BmcThingTypeName", { value: this.iot.thingType.ref });
    new CfnOutput(this, "IotDataEndpoint", { value: iotDataEndpoint });
    new CfnOutput(this, "DashboardName", { value: namePrefix });

    this.acknowledgeCustomResourceProvider();
  }

  private newVpc(prod: boolean): ec2.Vpc {
    const vpc = new ec2.Vpc(this, "Vpc", {
      maxAzs: 2,
      natGateways: prod ? 2 : 1,
      subnetConfiguration: [
        { name: "public", subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24 },
        { name: "private", subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS, cidrMask: 22 },
      ],
      // DynamoDB traffic from the tasks stays off the NAT gateways (cheaper, and no internet hop).
      gatewayEndpoints: { DynamoDb: { service: ec2.GatewayVpcEndpointAwsService.DYNAMODB } },
    });
    vpc.addFlowLog("FlowLog", { trafficType: ec2.FlowLogTrafficType.REJECT });
    return vpc;
  }

  /**
   * The account's IoT data endpoint (`https://xxxx-ats.iot.<region>.amazonaws.com`): from context
   * when given, else looked up at deploy time by a custom resource calling iot:DescribeEndpoint.
   */
  /** The AwsCustomResource provider function is aws-cdk-lib's, shared by the stack. */
  private acknowledgeCustomResourceProvider(): void {
    const provider = this.node.tryFindChild(PROVIDER_ID);
    if (!provider) return;
    acknowledge(
      provider,
      "aws-cdk-lib's AwsCustomResource provider uses AWSLambdaBasicExecutionRole; it runs once per deploy to read the IoT endpoint.",
      "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
    );
    acknowledge(
      provider,
      "aws-cdk-lib chooses the AwsCustomResource provider's runtime, not this app.",
      "AwsSolutions-L1",
    );
  }

  private iotDataEndpoint(config: FlowDeployConfig): string {
    if (config.iotDataEndpoint) {
      return config.iotDataEndpoint.startsWith("https://")
        ? config.iotDataEndpoint
        : `https://${config.iotDataEndpoint}`;
    }
    const lookup = new cr.AwsCustomResource(this, "IotDataEndpointLookup", {
      onUpdate: {
        service: "Iot",
        action: "describeEndpoint",
        parameters: { endpointType: "iot:Data-ATS" },
        physicalResourceId: cr.PhysicalResourceId.of("iot-data-ats-endpoint"),
      },
      // iot:DescribeEndpoint has no resource-level permissions.
      policy: cr.AwsCustomResourcePolicy.fromSdkCalls({ resources: cr.AwsCustomResourcePolicy.ANY_RESOURCE }),
      installLatestAwsSdk: false,
    });
    acknowledge(
      lookup,
      "iot:DescribeEndpoint supports no resource-level permissions (Resource *).",
      "AwsSolutions-IAM5[Resource::*]",
    );
    return `https://${lookup.getResponseField("endpointAddress")}`;
  }

  private alarmTopic(config: FlowDeployConfig): sns.ITopic | undefined {
    if (config.alarmTopicArn) return sns.Topic.fromTopicArn(this, "AlarmTopic", config.alarmTopicArn);
    if (!config.alarmEmail) return undefined;
    const key = new kms.Key(this, "AlarmTopicKey", {
      description: "Flow operation runs: alarm topic encryption",
      enableKeyRotation: true,
    });
    // CloudWatch alarms publish to an encrypted topic only if the service may use its key.
    key.grant(new iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey");
    const topic = new sns.Topic(this, "AlarmTopic", { masterKey: key, enforceSSL: true });
    topic.addSubscription(new subscriptions.EmailSubscription(config.alarmEmail));
    return topic;
  }

  private grantInvokeDispatcher(grantee: iam.IGrantable & IConstruct): void {
    this.dispatcher.fn.grantInvoke(grantee);
    acknowledgeWildcardResources(
      grantee,
      "Scoped wildcard: <dispatcher ARN>:* is that one function's versions and aliases (grantInvoke).",
      [`${this.dispatcher.fn.functionArn}:*`],
    );
  }
}
