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
 * src/service/config.ts or config-front.ts, and test/unit/infra-env.test.ts keeps the two in step).
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
 *
 * The parts are built by infra/constructs/, each in the stack's own scope (so the template's
 * logical ids are the stack's): the context's inputs (deploy-inputs.ts), the tables and their key
 * (data.ts), the credentials' keys (credential-keys.ts), the functions and the child task
 * (functions.ts), the streams, queues and dead letters (event-routes.ts), the front
 * (front-service.ts), IoT, the ticker, observability. This file wires them and grants each
 * principal what it calls.
 */
import { Annotations, CfnOutput, RemovalPolicy, Stack, type StackProps } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as kms from "aws-cdk-lib/aws-kms";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import type { Construct } from "constructs";
import { ENV } from "../../src/service/config.js";
import { type FlowDeployConfig, isProd } from "../config.js";
import { BmcIot } from "../constructs/bmc-iot.js";
import type { ChildTaskStateMachine } from "../constructs/child-task.js";
import { allowSecretsKeyUse, credentialKeys } from "../constructs/credential-keys.js";
import { FlowData } from "../constructs/data.js";
import {
  accessPolicyParameter,
  acknowledgeCustomResourceProvider,
  alarmTopic,
  checkedExternalChecks,
  checkedPolicy,
  iotDataEndpoint as iotDataEndpointOf,
} from "../constructs/deploy-inputs.js";
import { eventRoutes } from "../constructs/event-routes.js";
import type { FlowFunction } from "../constructs/flow-function.js";
import { frontService } from "../constructs/front-service.js";
import { flowFunctions } from "../constructs/functions.js";
import type { GrpcFront } from "../constructs/grpc-front.js";
import { FirmwareImageBucket } from "../constructs/image-bucket.js";
import { allowInKeyPolicy, allowKeyUse } from "../constructs/key-policies.js";
import { Observability } from "../constructs/observability.js";
import { Ticker } from "../constructs/ticker.js";
import { acknowledgeWildcardResources } from "../nag.js";

export { PLACEHOLDER_CERTIFICATE_ID } from "../constructs/front-service.js";

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
      config.accessPolicyFile === undefined
        ? undefined
        : accessPolicyParameter(this, namePrefix, checkedPolicy(config.accessPolicyFile));
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
    ({ secretsKey: this.secretsKey, requestMacKey: this.requestMacKey } = credentialKeys(this, keep));
    const iotDataEndpoint = iotDataEndpointOf(this, config);
    this.images = new FirmwareImageBucket(this, "FirmwareImages", { retain: prod });
    const imageBucket = { [ENV.imageBucket]: this.images.bucket.bucketName };

    // ---- Lambdas and the child-task state machine
    const fns = flowFunctions(this, {
      config,
      namePrefix,
      tablePrefix,
      prod,
      iotDataEndpoint,
      secretsKeyArn: this.secretsKey.keyArn,
      imageBucket,
      checksEnvironment,
      externalChecks,
    });
    ({
      taskSteps: this.taskSteps,
      childTask: this.childTask,
      dispatcher: this.dispatcher,
      streamEvaluator: this.streamEvaluator,
      bmcResult: this.bmcResult,
      eventPublisher: this.eventPublisher,
    } = fns);
    const { build, childTaskSettings, dispatcherArn } = fns;
    const childTaskArn = this.childTask.stateMachine.stateMachineArn;

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
    // The receiver keeps a wave's wait alive while its BMCs report (AwaitWave's heartbeat).
    this.childTask.grantWaveHeartbeats(this.bmcResult.role);
    // A judging wait that sends no next step ends itself (OutcomeRecorded, StepHandedOver).
    this.childTask.grantWaitEnds(this.taskSteps.role);
    // Every update command carries a presigned GET of its image (signed with this role).
    this.images.grantDownloads(this.taskSteps.role);
    allowSecretsKeyUse(
      this.secretsKey,
      this.taskSteps.role,
      "OpenStoredCredentials",
      ["kms:Decrypt"],
      ["run:*", "task:*"],
    );
    allowSecretsKeyUse(
      this.secretsKey,
      this.taskSteps.role,
      "SealBmcCredentials",
      ["kms:GenerateDataKey"],
      ["bmc:*"],
    );
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

    // ---- streams, queues and dead letters (event-routes.ts)
    ({
      streamDlq: this.streamDlq,
      bmcResultDlq: this.bmcResultDlq,
      bmcReports: this.bmcReports,
    } = eventRoutes(this, {
      data: this.data,
      streamEvaluator: this.streamEvaluator,
      eventPublisher: this.eventPublisher,
      bmcResult: this.bmcResult,
      childTask: this.childTask,
      eventBusName: config.eventBusName,
    }));

    // ---- the ticker
    this.ticker = new Ticker(this, "Ticker", {
      dispatcher: this.dispatcher.fn,
      intervalSeconds: config.tickIntervalSeconds,
      retainLogs: prod,
    });

    // ---- the gRPC front (front-service.ts) and what its task role may call
    this.front = frontService(this, {
      config,
      prod,
      build,
      childTaskArn,
      childTaskSettings,
      secretsKeyArn: this.secretsKey.keyArn,
      requestMacKeyArn: this.requestMacKey.keyArn,
      imageBucket,
      accessPolicyParameter: accessPolicy?.parameterName,
      checksEnvironment,
    });
    const taskRole = this.front.taskDefinition.taskRole as iam.Role;
    // Runs (create, controls), tasks (UpgradeFirmware, CancelTask), inventory import: all tables.
    this.data.grantData(taskRole, { readWrite: this.data.allTables }, "Front");
    this.grantChildTaskExecutions(taskRole);
    // Credentials of a new run (`run:<id>`) or UpgradeFirmware task (`task:<id>`) are sealed here
    // (KmsEnvelopeCipher.encrypt = GenerateDataKey); the front never opens them again.
    allowSecretsKeyUse(
      this.secretsKey,
      taskRole,
      "SealStoredCredentials",
      ["kms:GenerateDataKey"],
      ["run:*", "task:*"],
    );
    // A retried create's credentials are compared by their MAC (src/adapters/kms/request-mac.ts).
    allowKeyUse(this.requestMacKey, "DigestRetriedCredentials", taskRole, ["kms:GenerateMac"], {
      StringEquals: { "kms:MacAlgorithm": "HMAC_SHA_256" },
    });
    // Image uploads: presigned PUTs into uploads/, the verified copy into images/.
    this.images.grantUploads(taskRole);
    // The access policy: read at start and polled (GetParameter), that parameter alone.
    if (accessPolicy !== undefined) {
      taskRole.addToPrincipalPolicy(
        new iam.PolicyStatement({ actions: ["ssm:GetParameter"], resources: [accessPolicy.parameterArn] }),
      );
    }

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
      alarmTopic: alarmTopic(this, config),
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
    // What an agent's reportsRule names (its reports through Basic Ingest, no messaging charge).
    new CfnOutput(this, "BmcReportsRuleName", { value: this.iot.rackTopicRuleName });
    new CfnOutput(this, "IotDataEndpoint", { value: iotDataEndpoint });
    new CfnOutput(this, "DashboardName", { value: namePrefix });

    acknowledgeCustomResourceProvider(this);
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
}
