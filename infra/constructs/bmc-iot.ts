/**
 * AWS IoT Core for the BMC protocol (docs/bmc-protocol.md, src/domain/bmc-topics.ts).
 *
 * Protocol v4, the rack's agent: one IoT thing per rack, named by the rack id, whose topics are
 * `flow/rack/{rackId}/bmc/{componentId}/cmd` and `/evt`.
 * - The agent policy lets an agent connect only as its own thing name (with a certificate attached
 *   to that thing), subscribe only to its rack's command filter, receive only its rack's commands
 *   and publish only its rack's reports. Policy variables are resolved by IoT at connect time;
 *   CloudFormation passes `${iot:Connection.Thing.ThingName}` through untouched. Example: thing
 *   `3f2a…` may publish `flow/rack/3f2a…/bmc/7c1e…/evt`, never `flow/rack/other/bmc/7c1e…/evt`.
 *   One policy serves every rack, whatever its BMC count (flow agent provision attaches it).
 * - The topic rule `flow/rack/+/bmc/+/evt` puts every report, with the rack (`topic(3)`) and the
 *   component (`topic(5)`) from the topic added to the payload, on the reports queue, from which the
 *   bmc-result Lambda takes them in batches (one invocation per batch, not per report).
 * - Basic Ingest: an agent may also publish its reports to `$aws/rules/<that rule>/flow/rack/...`
 *   (its `reportsRule`, the stack's output BmcReportsRuleName), which IoT hands straight to the
 *   rule without the message broker's charge; the rule's SQL is the same (the prefix is not counted
 *   by `topic(N)`). The agent policy allows that form for the same topics, its own rack's only.
 * - A rack's batched reports (one message per rack per moment, src/domain/bmc-rack-reports.ts) on
 *   `flow/rack/{rackId}/reports`, which only that rack's agent may publish: through the broker, the
 *   rule `flow/rack/+/reports` puts each on the same queue with its rack (`topic(3)`); through
 *   Basic Ingest, the agent sends them to the rack reports' rule above
 *   (`$aws/rules/<it>/flow/rack/{rackId}/reports`), which IoT hands to that rule whatever its FROM
 *   (a FROM filters broker messages only), `topic(3)` again the rack and no `topic(5)`. The
 *   receiver reads each batch's components and stores their reports only on that rack's commands.
 *
 * Protocol v1–v3, one thing per component BMC named by the component id, on `flow/bmc/{id}/cmd`
 * and `/evt`: the BMC policy and the rule `flow/bmc/+/evt` (component `topic(3)`) stay, so such
 * BMCs keep reporting; they hear commands when the deployment keeps the legacy topics.
 * Failed rule deliveries of either rule go to one error log group.
 */
import { Aws, Duration, RemovalPolicy, Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as iot from "aws-cdk-lib/aws-iot";
import * as logs from "aws-cdk-lib/aws-logs";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";

import {
  BMC_EVT_TOPIC_FILTER,
  basicIngestEvtTopic,
  basicIngestRackReportsTopic,
  LEGACY_BMC_EVT_TOPIC_FILTER,
  RACK_REPORTS_TOPIC_FILTER,
  rackReportsTopic,
} from "../../src/domain/bmc-topics.js";

// An IoT policy variable, resolved by IoT Core per connection (not a template placeholder).
// biome-ignore lint/suspicious/noTemplateCurlyInString: IoT policy variable, literal by design
const THING = "${iot:Connection.Thing.ThingName}";
// The same thing name as an IAM policy variable of a session from the IoT credentials provider.
// biome-ignore lint/suspicious/noTemplateCurlyInString: IAM policy variable, literal by design
const CREDENTIALS_THING = "${credentials-iot:ThingName}";

export interface BmcIotProps {
  /** Where the rule puts every report (bmc-result consumes it in batches). */
  readonly reports: sqs.IQueue;
  /** Prefix for the IoT names (policy, rule, thing type), e.g. `Flow-prod`. */
  readonly namePrefix: string;
  readonly retainLogs: boolean;
  /** The key update commands' credentials are sealed with: a rack's agent may open its own rack's. */
  readonly secretsKeyArn: string;
}

export class BmcIot extends Construct {
  /** The v1–v3 per-component reports' rule. */
  readonly topicRule: iot.CfnTopicRule;
  /** The rack-scoped (v4) reports' rule. */
  readonly rackTopicRule: iot.CfnTopicRule;
  /** Its name: what an agent's `reportsRule` names to send its reports through Basic Ingest. */
  readonly rackTopicRuleName: string;
  /** Rack agents' batched reports through the broker (`flow/rack/+/reports`). */
  readonly rackReportsRule: iot.CfnTopicRule;
  /** A v1–v3 BMC thing's policy (thing name = component id). */
  readonly bmcPolicy: iot.CfnPolicy;
  /** A rack agent's policy (thing name = rack id). */
  readonly agentPolicy: iot.CfnPolicy;
  readonly agentPolicyName: string;
  /** What an agent's certificate is exchanged for at the IoT credentials provider. */
  readonly agentRole: iam.Role;
  readonly agentRoleAliasName: string;
  readonly thingType: iot.CfnThingType;
  readonly policyName: string;
  readonly thingTypeName: string;

  constructor(scope: Construct, id: string, props: BmcIotProps) {
    super(scope, id);
    const { partition, region, account } = {
      partition: Aws.PARTITION,
      region: Aws.REGION,
      account: Aws.ACCOUNT_ID,
    };
    const iotArn = (resource: string) => `arn:${partition}:iot:${region}:${account}:${resource}`;
    // IoT rule and policy names allow [a-zA-Z0-9_] only (rules) / more for policies; keep both safe.
    const safe = props.namePrefix.replace(/[^A-Za-z0-9_]/g, "_");

    const errorLogs = new logs.LogGroup(this, "RuleErrors", {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: props.retainLogs ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    const errorRole = new iam.Role(this, "RuleErrorRole", {
      assumedBy: new iam.ServicePrincipal("iot.amazonaws.com", {
        conditions: { StringEquals: { "aws:SourceAccount": Stack.of(this).account } },
      }),
      description: "IoT rule error action: write failed BMC report deliveries to one log group",
    });
    errorLogs.grantWrite(errorRole);
    const sendRole = new iam.Role(this, "RuleSendRole", {
      assumedBy: new iam.ServicePrincipal("iot.amazonaws.com", {
        conditions: { StringEquals: { "aws:SourceAccount": Stack.of(this).account } },
      }),
      description: "IoT rule action: put BMC reports on the reports queue",
    });
    props.reports.grantSendMessages(sendRole);

    const ruleName = `${safe}_bmc_events`;
    this.topicRule = new iot.CfnTopicRule(this, "BmcEvents", {
      ruleName,
      topicRulePayload: {
        description:
          "v1-v3 BMC reports (per-component topics) to the reports queue, read by the bmc-result Lambda",
        awsIotSqlVersion: "2016-03-23",
        sql: `SELECT *, topic(3) AS componentId FROM '${LEGACY_BMC_EVT_TOPIC_FILTER}'`,
        ruleDisabled: false,
        actions: [{ sqs: { queueUrl: props.reports.queueUrl, roleArn: sendRole.roleArn, useBase64: false } }],
        errorAction: { cloudwatchLogs: { logGroupName: errorLogs.logGroupName, roleArn: errorRole.roleArn } },
      },
    });

    this.rackTopicRuleName = `${safe}_rack_bmc_events`;
    this.rackTopicRule = new iot.CfnTopicRule(this, "RackBmcEvents", {
      ruleName: this.rackTopicRuleName,
      topicRulePayload: {
        description: "Rack agents' BMC reports to the reports queue, read by the bmc-result Lambda",
        awsIotSqlVersion: "2016-03-23",
        sql: `SELECT *, topic(3) AS rackId, topic(5) AS componentId FROM '${BMC_EVT_TOPIC_FILTER}'`,
        ruleDisabled: false,
        actions: [{ sqs: { queueUrl: props.reports.queueUrl, roleArn: sendRole.roleArn, useBase64: false } }],
        errorAction: { cloudwatchLogs: { logGroupName: errorLogs.logGroupName, roleArn: errorRole.roleArn } },
      },
    });

    this.rackReportsRule = new iot.CfnTopicRule(this, "RackReports", {
      ruleName: `${safe}_rack_reports`,
      topicRulePayload: {
        description: "Rack agents' batched BMC reports to the reports queue, read by the bmc-result Lambda",
        awsIotSqlVersion: "2016-03-23",
        sql: `SELECT *, topic(3) AS rackId FROM '${RACK_REPORTS_TOPIC_FILTER}'`,
        ruleDisabled: false,
        actions: [{ sqs: { queueUrl: props.reports.queueUrl, roleArn: sendRole.roleArn, useBase64: false } }],
        errorAction: { cloudwatchLogs: { logGroupName: errorLogs.logGroupName, roleArn: errorRole.roleArn } },
      },
    });

    this.thingTypeName = `${safe}_bmc`;
    this.policyName = `${safe}_bmc`;
    this.thingType = new iot.CfnThingType(this, "BmcThingType", {
      thingTypeName: this.thingTypeName,
      thingTypeProperties: {
        thingTypeDescription: "A component BMC driven by Flow; thing name = component id",
        searchableAttributes: ["rackId", "componentType"],
      },
    });

    this.bmcPolicy = new iot.CfnPolicy(this, "BmcPolicy", {
      policyName: this.policyName,
      policyDocument: {
        Version: "2012-10-17",
        Statement: [
          {
            Effect: "Allow",
            Action: "iot:Connect",
            Resource: iotArn(`client/${THING}`),
            // The client id must be the thing name, and the certificate must be attached to it.
            Condition: { Bool: { "iot:Connection.Thing.IsAttached": "true" } },
          },
          { Effect: "Allow", Action: "iot:Publish", Resource: iotArn(`topic/flow/bmc/${THING}/evt`) },
          { Effect: "Allow", Action: "iot:Subscribe", Resource: iotArn(`topicfilter/flow/bmc/${THING}/cmd`) },
          { Effect: "Allow", Action: "iot:Receive", Resource: iotArn(`topic/flow/bmc/${THING}/cmd`) },
        ],
      },
    });

    // In a policy, `+` is a literal character (only `*` and `?` match): the Subscribe statement
    // allows exactly the one filter the agent subscribes with, `flow/rack/<its rack>/bmc/+/cmd`.
    // The `*` in the topic ARNs stands for the component id, inside the agent's own rack.
    // The agent's AWS identity without keys on the rack: its certificate buys an hour of this role
    // at the IoT credentials provider (role alias), and the role opens only blobs sealed for the
    // agent's own rack (context bmc:<rack id>:<component>:<request>, the thing name being the rack).
    this.agentRole = new iam.Role(this, "AgentRole", {
      assumedBy: new iam.ServicePrincipal("credentials.iot.amazonaws.com"),
      description:
        "Rack BMC agents, through the IoT credentials provider: open their own rack's BMC credentials",
      maxSessionDuration: Duration.hours(1),
    });
    this.agentRole.addToPolicy(
      new iam.PolicyStatement({
        sid: "OpenOwnRackBmcCredentials",
        actions: ["kms:Decrypt"],
        resources: [props.secretsKeyArn],
        conditions: { StringLike: { "kms:EncryptionContext:context": `bmc:${CREDENTIALS_THING}:*` } },
      }),
    );
    this.agentRoleAliasName = `${safe}_bmc_agent`;
    new iot.CfnRoleAlias(this, "AgentRoleAlias", {
      roleAlias: this.agentRoleAliasName,
      roleArn: this.agentRole.roleArn,
      credentialDurationSeconds: 3600,
    });

    this.agentPolicyName = `${safe}_bmc_agent`;
    this.agentPolicy = new iot.CfnPolicy(this, "AgentPolicy", {
      policyName: this.agentPolicyName,
      policyDocument: {
        Version: "2012-10-17",
        Statement: [
          {
            Effect: "Allow",
            Action: "iot:Connect",
            Resource: iotArn(`client/${THING}`),
            Condition: { Bool: { "iot:Connection.Thing.IsAttached": "true" } },
          },
          {
            Effect: "Allow",
            Action: "iot:Subscribe",
            Resource: iotArn(`topicfilter/flow/rack/${THING}/bmc/+/cmd`),
          },
          { Effect: "Allow", Action: "iot:Receive", Resource: iotArn(`topic/flow/rack/${THING}/bmc/*/cmd`) },
          { Effect: "Allow", Action: "iot:Publish", Resource: iotArn(`topic/flow/rack/${THING}/bmc/*/evt`) },
          // The same reports through Basic Ingest, to the rack reports' rule only.
          {
            Effect: "Allow",
            Action: "iot:Publish",
            Resource: iotArn(
              `topic/${basicIngestEvtTopic(this.rackTopicRuleName, { rackId: THING, componentId: "*" })}`,
            ),
          },
          // Its rack's batched reports, through the broker or Basic Ingest: its own rack's topic only.
          { Effect: "Allow", Action: "iot:Publish", Resource: iotArn(`topic/${rackReportsTopic(THING)}`) },
          {
            Effect: "Allow",
            Action: "iot:Publish",
            Resource: iotArn(`topic/${basicIngestRackReportsTopic(this.rackTopicRuleName, THING)}`),
          },
          {
            Effect: "Allow",
            Action: "iot:AssumeRoleWithCertificate",
            Resource: iotArn(`rolealias/${this.agentRoleAliasName}`),
          },
        ],
      },
    });
  }

  /**
   * The topic ARN patterns the child task publishes commands on (`iot:Publish`): every rack's
   * command topics, and with `legacy` every component's v1–v3 one.
   */
  static commandTopicsArns(legacy: boolean): string[] {
    const arn = (topic: string) => `arn:${Aws.PARTITION}:iot:${Aws.REGION}:${Aws.ACCOUNT_ID}:topic/${topic}`;
    return [arn("flow/rack/*/bmc/*/cmd"), ...(legacy ? [arn("flow/bmc/*/cmd")] : [])];
  }
}
