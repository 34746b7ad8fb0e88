/**
 * The whole deployment in one stack, per stage (`Flow-dev`, `Flow-prod`):
 *
 *   gRPC clients ─► internal ALB ─► Fargate (grpc-main) ─► DynamoDB (schema.ts)
 *   Runs, Targets streams ─► stream-evaluator (dispatch pass per woken run) ─► child task (Standard)
 *   Scheduler (1 min) ─► ticker (Express, 6 × 10 s) ─► dispatcher ─► child task ─► task-steps ─► IoT cmd
 *   task-steps, bmc-result: a run child's outcome recorded ─► dispatcher {runId} (async wake-up)
 *   IoT rule flow/bmc/+/evt ─► reports queue (SQS) ─► bmc-result, in batches
 *                              bmc-result ◄─ EventBridge: child task ABORTED | TIMED_OUT | FAILED
 *   RunEvents stream ─► event-publisher ─► EventBridge bus (run history, source flow.operation-runs)
 *   CloudWatch: dashboard + alarms (+ SNS)
 *
 * Permissions are granted here, by name, per principal: what each one's code is known to call
 * (the composition roots: src/service/grpc-front.ts and src/service/lambdas/*.ts, on the building
 * blocks of src/service/aws.ts; each reads the environment set here through its reader in
 * src/service/config.ts, and test/unit/infra-env.test.ts keeps the two in step).
 *
 * | principal        | tables                                           | other                                                    |
 * |------------------|--------------------------------------------------|----------------------------------------------------------|
 * | front (Fargate)  | read/write all (inventory import writes)         | child task: start, stop; secrets key: GenerateDataKey for run:* / task:*; image bucket: put/get/delete uploads/*, put/get images/*, list |
 * | dispatcher       | read/write Runs, Targets, RunEvents, Tasks, RackLocks | child task: start, stop                             |
 * | stream-evaluator | read/write Runs, Targets, RunEvents, Tasks, RackLocks | child task: start, stop; Runs + Targets streams; DLQ send |
 * | task-steps       | read/write Runs, Targets, Tasks, RackLocks; Inventory: GetItem, BatchGetItem (image records) + UpdateItem | image bucket: get images/* (presigned GETs); iot:Publish on flow/bmc/<id>/cmd; secrets key: Decrypt run:* / task:*, GenerateDataKey bmc:*; invoke the dispatcher (wake-up) |
 * | bmc-result       | read/write Runs, Targets, Tasks, RackLocks       | reports queue: receive, delete; DLQ send (async invoke failures); invoke the dispatcher (wake-up) |
 * | event-publisher  | none (the RunEvents stream record is the event)  | RunEvents stream; events:PutEvents on the one configured bus; DLQ send |
 *
 * "read/write" is DynamoDB data-plane access (GetItem … TransactWriteItems) on the table and its
 * indexes, never table management. The secrets-key grants are conditioned on the KMS encryption
 * context (`kms:EncryptionContext:context`), so each principal handles only its own kind of blob:
 * `run:<runId>` / `task:<taskId>` (credentials at rest) and `bmc:<componentId>:<requestId>` (one
 * credential re-sealed for one BMC command). RunEvents is written only with the run changes it
 * records (front: create and the controls; dispatcher and stream-evaluator: their passes); task-steps
 * and bmc-result move targets and counters only. No statement anywhere has a `*` action.
 */
import { readFileSync } from "node:fs";
import {
  Annotations,
  ArnFormat,
  CfnOutput,
  Duration,
  RemovalPolicy,
  Stack,
  type StackProps,
} from "aws-cdk-lib";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import { Platform } from "aws-cdk-lib/aws-ecr-assets";
import * as ecs from "aws-cdk-lib/aws-ecs";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as lambdaDestinations from "aws-cdk-lib/aws-lambda-destinations";
import * as eventSources from "aws-cdk-lib/aws-lambda-event-sources";
import * as sns from "aws-cdk-lib/aws-sns";
import * as subscriptions from "aws-cdk-lib/aws-sns-subscriptions";
import * as sqs from "aws-cdk-lib/aws-sqs";
import * as cr from "aws-cdk-lib/custom-resources";
import type { Construct } from "constructs";
import { readAccessPolicyText } from "../../src/adapters/grpc/access-policy-source.js";
import { type ExternalCheckConfig, parseExternalChecks } from "../../src/domain/external-check.js";
import { CHILD_TASK_ENV, ENV } from "../../src/service/config.js";
import { DeployConfigError, type FlowDeployConfig, isProd, PROJECT_ROOT } from "../config.js";
import { BmcIot } from "../constructs/bmc-iot.js";
import { ChildTaskStateMachine } from "../constructs/child-task.js";
import { FlowData } from "../constructs/data.js";
import { FlowFunction } from "../constructs/flow-function.js";
import { GRPC_PORT, GrpcFront } from "../constructs/grpc-front.js";
import { FirmwareImageBucket } from "../constructs/image-bucket.js";
import { adminOnlyKeyPolicy, allowInKeyPolicy, allowKeyUse } from "../constructs/key-policies.js";
import { Observability } from "../constructs/observability.js";
import { Ticker } from "../constructs/ticker.js";
import { acknowledge, acknowledgeWildcardResources } from "../nag.js";

/** The construct id aws-cdk-lib gives the AwsCustomResource singleton provider. */
const PROVIDER_ID = "AWS679f53fac002430cb0da5b7982bd2287";

/** Used when context certificateArn is absent: synth works, a deploy fails at the listener. */
export const PLACEHOLDER_CERTIFICATE_ID = "00000000-0000-0000-0000-000000000000";

export interface FlowStackProps extends StackProps {
  readonly config: FlowDeployConfig;
}

export class FlowStack extends Stack {
  readonly data: FlowData;
  readonly dispatcher: FlowFunction;
  readonly streamEvaluator: FlowFunction;
  readonly taskSteps: FlowFunction;
  readonly bmcResult: FlowFunction;
  readonly eventPublisher: FlowFunction;
  readonly childTask: ChildTaskStateMachine;
  readonly ticker: Ticker;
  readonly front: GrpcFront;
  readonly iot: BmcIot;
  readonly observability: Observability;
  readonly streamDlq: sqs.Queue;
  readonly bmcResultDlq: sqs.Queue;
  /** BMC reports from the IoT rule, consumed by bmc-result in batches. */
  readonly bmcReports: sqs.Queue;
  readonly secretsKey: kms.Key;
  /** HMAC key of idempotent creates' credentials: the front may GenerateMac with it, nothing else. */
  readonly requestMacKey: kms.Key;
  /** The firmware image catalog's bytes (the records are Inventory items). */
  readonly images: FirmwareImageBucket;

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

    // The product's own reader checks the policy now, so a bad one fails the synth, not the front.
    const accessPolicy =
      config.accessPolicyFile === undefined ? undefined : checkedPolicy(config.accessPolicyFile);
    if (accessPolicy === undefined) {
      Annotations.of(this).addWarningV2(
        "flow:no-access-policy",
        "context accessPolicyFile is not set: the gRPC front will refuse to start without an access policy; set -c accessPolicyFile=… (docs/security.md)",
      );
    }

    // The external health checks, checked by the product's own reader now (a bad file fails the synth).
    const externalChecks =
      config.externalChecksFile === undefined ? undefined : checkedExternalChecks(config.externalChecksFile);
    const checksEnvironment: Record<string, string> =
      externalChecks === undefined ? {} : { [ENV.externalChecks]: externalChecks.text };

    // ---- data and keys
    this.data = new FlowData(this, "Data", { tablePrefix, protect: prod });
    this.secretsKey = new kms.Key(this, "SecretsKey", {
      description:
        "Flow operation runs: envelope key for firmware credentials (front seals run:/task:, task-steps opens them and seals bmc:)",
      enableKeyRotation: true,
      removalPolicy: keep,
      // Named uses only (infra/constructs/key-policies.ts): the front seals, task-steps opens.
      policy: adminOnlyKeyPolicy(),
    });
    // KMS rotates no HMAC key; what it signs lives a day (the client request id's memory).
    this.requestMacKey = new kms.Key(this, "RequestMacKey", {
      description:
        "Flow operation runs: HMAC key remembering an idempotent create's credentials by digest (front GenerateMac only)",
      keySpec: kms.KeySpec.HMAC_256,
      keyUsage: kms.KeyUsage.GENERATE_VERIFY_MAC,
      removalPolicy: keep,
      policy: adminOnlyKeyPolicy(),
    });
    const iotDataEndpoint = this.iotDataEndpoint(config);
    this.images = new FirmwareImageBucket(this, "FirmwareImages", { retain: prod });
    const imageBucket = { [ENV.imageBucket]: this.images.bucket.bucketName };

    // ---- Lambdas
    const build = {
      [ENV.tablePrefix]: tablePrefix,
      [ENV.version]: config.version,
      [ENV.gitCommit]: config.gitCommit,
      [ENV.buildTime]: config.buildTime,
    };
    const fnDefaults = { retainLogs: prod };
    // Whoever records a run child's outcome (task-steps, bmc-result) wakes the dispatcher for the
    // run with an asynchronous invocation, so a freed slot refills without waiting for the stream.
    // By a physical name and an ARN built from it, not by reference: the dispatcher's role refers
    // to the child-task machine, which refers to task-steps, so a reference back would be a cycle.
    const dispatcherName = `${namePrefix}-dispatcher`;
    const dispatcherArn = Stack.of(this).formatArn({
      service: "lambda",
      resource: "function",
      resourceName: dispatcherName,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    const wakesDispatcher = { [ENV.dispatcherFunctionName]: dispatcherName };
    this.taskSteps = new FlowFunction(this, "TaskSteps", {
      ...fnDefaults,
      entryFile: "task-steps.ts",
      description: "Every Task state of the child-task state machine (switch on event.step)",
      timeout: Duration.seconds(30),
      environment: {
        ...build,
        ...wakesDispatcher,
        [ENV.iotDataEndpoint]: iotDataEndpoint,
        ...(config.legacyBmcTopics ? { [ENV.legacyBmcTopics]: "true" } : {}),
        [ENV.secretsKmsKeyId]: this.secretsKey.keyArn,
        ...imageBucket,
        ...checksEnvironment,
      },
    });
    // It hands racks to the Lambda checks (asynchronous invocations); an HTTPS check needs no grant.
    const checkFunctions = (externalChecks?.checks ?? []).flatMap((c) =>
      c.target.kind === "lambda" ? [c.target.functionArn] : [],
    );
    if (checkFunctions.length > 0) {
      this.taskSteps.fn.addToRolePolicy(
        new iam.PolicyStatement({
          sid: "InvokeExternalHealthChecks",
          actions: ["lambda:InvokeFunction"],
          resources: checkFunctions,
        }),
      );
    }
    this.childTask = new ChildTaskStateMachine(this, "ChildTask", {
      taskSteps: this.taskSteps.fn,
      stateMachineName: `${namePrefix}-child-task`,
      retainLogs: prod,
      includeExecutionData: !prod,
    });
    const childTaskArn = this.childTask.stateMachine.stateMachineArn;

    // Both build the Step Functions task service (awsDispatcher in src/service/aws.ts), which needs
    // the machine's ARN at cold start. Neither touches credentials: run children read
    // theirs in task-steps, so no secrets key id (and no grant) here.
    // Whoever starts executions (these two and the front) tells each the deployment's settings.
    const childTaskSettings = Object.fromEntries(
      Object.entries(CHILD_TASK_ENV).map(([key, name]) => [
        name,
        String(config.childTask[key as keyof typeof CHILD_TASK_ENV]),
      ]),
    );
    const dispatchEnvironment = {
      ...build,
      [ENV.childTaskStateMachineArn]: childTaskArn,
      ...childTaskSettings,
    };
    this.dispatcher = new FlowFunction(this, "Dispatcher", {
      ...fnDefaults,
      functionName: dispatcherName,
      entryFile: "dispatcher.ts",
      description:
        "Claims ready targets under the concurrency limit and starts child tasks ({} = full pass, {runId} = one run)",
      timeout: Duration.seconds(30),
      environment: dispatchEnvironment,
    });
    this.streamEvaluator = new FlowFunction(this, "StreamEvaluator", {
      ...fnDefaults,
      entryFile: "stream-evaluator.ts",
      description:
        "Runs and Targets streams: one dispatch pass per run a batch may need a decision for (gates, phases, completion, refill)",
      timeout: Duration.seconds(60),
      environment: dispatchEnvironment,
    });
    this.bmcResult = new FlowFunction(this, "BmcResult", {
      ...fnDefaults,
      entryFile: "bmc-result.ts",
      description:
        "BMC reports (flow/bmc/+/evt, in batches from the reports queue) onto their command sets; child-task executions that ended unrecorded",
      timeout: Duration.seconds(15),
      environment: { ...build, ...wakesDispatcher },
    });
    // A deploy updates the receiver before the steps, so a request id of a new form (the update
    // set's parts) is never sent while the receiver live is one that cannot parse it.
    this.taskSteps.fn.node.addDependency(this.bmcResult.fn);

    this.eventPublisher = new FlowFunction(this, "EventPublisher", {
      ...fnDefaults,
      entryFile: "event-publisher.ts",
      description: "RunEvents stream: every run history event to EventBridge (source flow.operation-runs)",
      timeout: Duration.seconds(30),
      // No table prefix: it reads no table, only the stream records it is handed.
      environment: {
        [ENV.version]: config.version,
        [ENV.gitCommit]: config.gitCommit,
        [ENV.buildTime]: config.buildTime,
        [ENV.eventBusName]: config.eventBusName,
      },
    });

    // ---- grants (see the table at the top)
    const t = (name: Parameters<FlowData["table"]>[0]) => this.data.table(name);
    const operational = [t("Runs"), t("Targets"), t("Tasks"), t("RackLocks")];
    for (const fn of [this.dispatcher, this.streamEvaluator]) {
      // A pass's run write carries the history events it records (RunEvents, same transaction).
      this.data.grantData(fn.role, { readWrite: [...operational, t("RunEvents")] }, fn.node.id);
      this.grantChildTaskExecutions(fn.role);
    }
    // The report recorder writes cmds# command sets (Tasks); reconcileExecutionEnd ends the task, its run
    // target (Runs, Targets) and releases the rack lock.
    this.data.grantData(this.bmcResult.role, { readWrite: operational }, "BmcResult");
    this.data.grantData(
      this.taskSteps.role,
      { readWrite: operational, updateInPlace: [t("Inventory")] },
      "TaskSteps",
    );
    for (const fn of [this.taskSteps, this.bmcResult]) {
      fn.role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          sid: "WakeDispatcher",
          actions: ["lambda:InvokeFunction"],
          resources: [dispatcherArn],
        }),
      );
      // A wave's last result (AwaitWave), the preflight's last answer (AwaitPreflight) wakes its
      // execution: the receiver, or the step itself.
      this.childTask.grantWaveWakeUps(fn.role);
    }
    // Every update command carries a presigned GET of its image (signed with this role).
    this.images.grantDownloads(this.taskSteps.role);
    this.grantSecretsKey(this.taskSteps.role, "OpenStoredCredentials", ["kms:Decrypt"], ["run:*", "task:*"]);
    this.grantSecretsKey(this.taskSteps.role, "SealBmcCredentials", ["kms:GenerateDataKey"], ["bmc:*"]);
    const commandTopics = BmcIot.commandTopicsArns(config.legacyBmcTopics);
    this.taskSteps.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: "PublishBmcCommands",
        actions: ["iot:Publish"],
        resources: commandTopics,
      }),
    );
    acknowledgeWildcardResources(
      this.taskSteps.role,
      "iot:Publish on flow/rack/*/bmc/*/cmd (and flow/bmc/*/cmd with legacyBmcTopics): the child task commands whichever rack's BMCs it drives, and only on command topics.",
      commandTopics,
    );

    // ---- the streams: Runs and Targets only. The evaluator wakes a run on a target reaching a
    // terminal status (or CLAIMED → BLOCKED) and on a run inserted or moved into PENDING/RUNNING
    // (src/app/stream-evaluator.ts); task items never decide anything there, their outcome reaches
    // the run through its target. The Tasks table has no stream.
    // The DLQ holds failure metadata (shard, sequence numbers), not item images: SQS-managed SSE.
    this.streamDlq = new sqs.Queue(this, "StreamDlq", {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    for (const table of [t("Runs"), t("Targets")]) {
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

    // ---- the run history out: RunEvents stream → event-publisher → the one bus it may write to.
    // At least once (src/app/run-event-relay.ts): records whose events the bus refused are retried
    // from the lowest failed one; after the retries, or a day, the DLQ gets their metadata.
    this.eventPublisher.fn.addEventSource(
      new eventSources.DynamoEventSource(t("RunEvents"), {
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
        batchSize: 100,
        bisectBatchOnError: true,
        retryAttempts: 10,
        maxRecordAge: Duration.days(1),
        reportBatchItemFailures: true,
        onFailure: new eventSources.SqsDlq(this.streamDlq),
      }),
    );
    this.data.grantStreamKey(this.eventPublisher.role, "EventPublisher");
    this.eventPublisher.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: "PublishRunEvents",
        actions: ["events:PutEvents"],
        resources: [this.eventBusArn(config.eventBusName)],
      }),
    );
    acknowledge(
      this.eventPublisher.role,
      "Resource * is required by the services: dynamodb:ListStreams (stream event source) and X-Ray have no resource-level permissions.",
      "AwsSolutions-IAM5[Resource::*]",
    );

    // ---- execution ends the machine could not record → bmc-result
    // What bmc-result could not take lands here: EventBridge deliveries that failed for a day, and
    // invocations (execution ends and BMC reports alike) that still failed after Lambda's two
    // retries. The messages are the events themselves (task ids, statuses, report fields; BMC
    // reports carry no credentials), so SQS-managed SSE; a redrive replays them to bmc-result.
    this.bmcResultDlq = new sqs.Queue(this, "BmcResultDlq", {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    this.bmcResult.fn.configureAsyncInvoke({
      retryAttempts: 2,
      onFailure: new lambdaDestinations.SqsDestination(this.bmcResultDlq),
    });
    this.childTask.routeUnrecordedEnds(this.bmcResult.fn, this.bmcResultDlq);

    // ---- BMC reports: IoT rule → this queue → bmc-result, in batches
    // One invocation per batch (up to 1,000 reports gathered for at most 1 s) and one conditional
    // write per command set a batch touches (src/app/child-task/receiving.ts), instead of one
    // invocation and one write per report. Reports the receiver could not store are handed back
    // (batch item failures) and delivered again; after 5 receives they go to the bmc-result DLQ.
    // Visibility: 6× the function's timeout, as Lambda asks of an SQS source.
    this.bmcReports = new sqs.Queue(this, "BmcReports", {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: Duration.seconds(90),
      retentionPeriod: Duration.days(1),
      deadLetterQueue: { queue: this.bmcResultDlq, maxReceiveCount: 5 },
    });
    this.bmcResult.fn.addEventSource(
      new eventSources.SqsEventSource(this.bmcReports, {
        batchSize: 1000,
        maxBatchingWindow: Duration.seconds(1),
        reportBatchItemFailures: true,
      }),
    );

    acknowledge(
      this.streamEvaluator.role,
      "Resource * is required by the services: dynamodb:ListStreams (stream event source) and X-Ray have no resource-level permissions.",
      "AwsSolutions-IAM5[Resource::*]",
    );
    for (const dlq of [this.streamDlq, this.bmcResultDlq]) {
      acknowledge(
        dlq,
        "This queue IS a dead-letter destination (stream mappings; bmc-result's EventBridge target, async failures and the reports queue); a DLQ for the DLQ adds nothing. Its depth alarms.",
        "AwsSolutions-SQS3",
      );
    }

    // ---- the ticker
    this.ticker = new Ticker(this, "Ticker", {
      dispatcher: this.dispatcher.fn,
      intervalSeconds: config.tickIntervalSeconds,
      retainLogs: prod,
    });

    // ---- the gRPC front
    const vpc = config.vpcId
      ? ec2.Vpc.fromLookup(this, "Vpc", { vpcId: config.vpcId })
      : this.newVpc(prod, config.customResources);
    const image = config.containerImage
      ? ecs.ContainerImage.fromRegistry(config.containerImage)
      : ecs.ContainerImage.fromAsset(PROJECT_ROOT, {
          file: "Dockerfile",
          platform: Platform.LINUX_ARM64,
          buildArgs: {
            FLOW_VERSION: config.version,
            FLOW_GIT_COMMIT: config.gitCommit,
            FLOW_BUILD_TIME: config.buildTime,
          },
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
        ...childTaskSettings,
        [ENV.secretsKmsKeyId]: this.secretsKey.keyArn,
        [ENV.requestMacKmsKeyId]: this.requestMacKey.keyArn,
        ...imageBucket,
        [ENV.port]: String(GRPC_PORT),
        [ENV.host]: "0.0.0.0",
        // The internal ALB terminates the client's TLS with the deployment's certificate and
        // speaks TLS again to the task, which makes its own key and certificate at start; the
        // task's security group admits only the load balancer.
        [ENV.tlsSelfSigned]: "true",
        // Server reflection reads the .proto files the image ships (Dockerfile: WORKDIR /app, COPY proto).
        [ENV.protoDir]: "/app/proto",
        // Off unless the deployment asks (context serverReflection=true): it advertises the admin service.
        ...(config.serverReflection ? { [ENV.serverReflection]: "true" } : {}),
        // With a trust store the listener verifies client certificates and forwards the verified
        // one; only then may the task read it as the caller (it is reachable through the ALB alone).
        ...(config.mtlsTrustStoreArn === undefined ? {} : { [ENV.trustLoadBalancerClientCert]: "true" }),
        // Who may do what; without it the front refuses to start (secure by default).
        ...(accessPolicy === undefined ? {} : { [ENV.authzPolicyText]: accessPolicy }),
        // The external health checks a rule may name (the front checks the names at create).
        ...checksEnvironment,
      },
      minTasks: config.serviceMinTasks,
      maxTasks: config.serviceMaxTasks,
      retain: prod,
      ...(config.mtlsTrustStoreArn === undefined ? {} : { trustStoreArn: config.mtlsTrustStoreArn }),
    });
    const taskRole = this.front.taskDefinition.taskRole as iam.Role;
    // Runs (create, controls), tasks (UpgradeFirmware, CancelTask), inventory import: all tables.
    this.data.grantData(taskRole, { readWrite: this.data.allTables }, "Front");
    this.grantChildTaskExecutions(taskRole);
    // Credentials of a new run (`run:<id>`) or UpgradeFirmware task (`task:<id>`) are sealed here
    // (KmsEnvelopeCipher.encrypt = GenerateDataKey); the front never opens them again.
    this.grantSecretsKey(taskRole, "SealStoredCredentials", ["kms:GenerateDataKey"], ["run:*", "task:*"]);
    // A retried create's credentials are compared by their MAC (src/adapters/kms/request-mac.ts).
    allowKeyUse(this.requestMacKey, "DigestRetriedCredentials", taskRole, ["kms:GenerateMac"], {
      StringEquals: { "kms:MacAlgorithm": "HMAC_SHA_256" },
    });
    // Image uploads: presigned PUTs into uploads/, the verified copy into images/.
    this.images.grantUploads(taskRole);

    // ---- IoT
    this.iot = new BmcIot(this, "Iot", {
      reports: this.bmcReports,
      namePrefix,
      retainLogs: prod,
      secretsKeyArn: this.secretsKey.keyArn,
    });
    allowInKeyPolicy(this.secretsKey, "AgentsOpenBmcCredentials", this.iot.agentRole, ["kms:Decrypt"], {
      StringLike: { "kms:EncryptionContext:context": ["bmc:*"] },
    });

    // ---- observability
    this.observability = new Observability(this, "Observability", {
      dashboardName: namePrefix,
      dispatcher: this.dispatcher.fn,
      streamEvaluator: this.streamEvaluator.fn,
      taskSteps: this.taskSteps.fn,
      bmcResult: this.bmcResult.fn,
      eventPublisher: this.eventPublisher.fn,
      streamDlq: this.streamDlq,
      bmcResultDlq: this.bmcResultDlq,
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
    new CfnOutput(this, "FirmwareImageBucket", {
      value: this.images.bucket.bucketName,
      description: "the firmware image catalog's bucket (flowctl firmware upload writes through the front)",
    });
    new CfnOutput(this, "ChildTaskStateMachineArn", { value: childTaskArn });
    // The names the construct gave them (what Ref returns in AWS; moto's Ref returns no name).
    new CfnOutput(this, "BmcIotPolicyName", { value: this.iot.policyName });
    new CfnOutput(this, "BmcThingTypeName", { value: this.iot.thingTypeName });
    // What `flowctl agent provision` attaches to each rack agent's certificate.
    new CfnOutput(this, "BmcAgentPolicyName", { value: this.iot.agentPolicyName });
    // What an agent's commandAuth.roleAlias names (its credentials for opening update credentials).
    new CfnOutput(this, "BmcAgentRoleAlias", { value: this.iot.agentRoleAliasName });
    new CfnOutput(this, "IotDataEndpoint", { value: iotDataEndpoint });
    new CfnOutput(this, "DashboardName", { value: namePrefix });

    this.acknowledgeCustomResourceProvider();
  }

  /** `default` → this account's default bus in this region; an ARN stays as given. */
  private eventBusArn(nameOrArn: string): string {
    if (nameOrArn.startsWith("arn:")) return nameOrArn;
    return Stack.of(this).formatArn({
      service: "events",
      resource: "event-bus",
      resourceName: nameOrArn,
      arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
    });
  }

  private newVpc(prod: boolean, customResources: boolean): ec2.Vpc {
    const vpc = new ec2.Vpc(this, "Vpc", {
      maxAzs: 2,
      // A Lambda-backed custom resource (the feature flag in cdk.json turns it on).
      restrictDefaultSecurityGroup: customResources,
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

  /**
   * The child-task service's Step Functions calls (StepFunctionsTaskExecutor): StartExecution on
   * the machine (named by the task id, so a retry starts nothing new) and StopExecution on its
   * executions (cancels: CancelTask, a run's cancel, a tripped gate terminating in-flight targets).
   */
  private grantChildTaskExecutions(role: iam.Role): void {
    this.childTask.stateMachine.grantStartExecution(role);
    this.childTask.grantExecutionActions(role, "states:StopExecution");
  }

  /**
   * `actions` on the secrets key, only for blobs whose KMS encryption context `context` matches one
   * of `contexts` (KmsEnvelopeCipher passes `{ context: "<kind>:<id>" }` on every call).
   * Example: contexts ["bmc:*"] let task-steps seal `bmc:7c1e…:req-1` but not mint a `run:` blob.
   */
  private grantSecretsKey(role: iam.Role, sid: string, actions: string[], contexts: string[]): void {
    allowKeyUse(this.secretsKey, sid, role, actions, {
      StringLike: { "kms:EncryptionContext:context": contexts },
    });
  }
}

/** The external checks file's text and checks, once the product's own reader accepts them. */
function checkedExternalChecks(file: string): { text: string; checks: ExternalCheckConfig[] } {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new DeployConfigError(`context externalChecksFile: ${(error as Error).message}`);
  }
  const parsed = parseExternalChecks(text, false);
  if ("problem" in parsed)
    throw new DeployConfigError(`context externalChecksFile ${file}: ${parsed.problem}`);
  return { text: JSON.stringify(JSON.parse(text)), checks: parsed.value };
}

/** The policy file's text, once the product's own reader accepts it. */
function checkedPolicy(file: string): string {
  try {
    return readAccessPolicyText(file);
  } catch (error) {
    throw new DeployConfigError(`context accessPolicyFile: ${(error as Error).message}`);
  }
}
