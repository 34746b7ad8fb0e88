/**
 * AWS IoT Core for the BMC protocol: one IoT thing per component BMC, named by the component id,
 * so `flow/bmc/{componentId}/cmd` and `/evt` are the thing's own topics.
 *
 * - The topic rule `flow/bmc/+/evt` puts every report, with the component id from the topic
 *   (`topic(3)`) added to the payload, on the reports queue, from which the bmc-result Lambda takes
 *   them in batches (one invocation per batch, not per report: docs/bmc-protocol.md). Failed
 *   deliveries go to an error log group.
 * - The policy lets a BMC connect only as its own thing name (with a certificate attached to that
 *   thing) and publish/subscribe only on its own two topics. Policy variables are resolved by IoT at
 *   connect time; CloudFormation passes `${iot:Connection.Thing.ThingName}` through untouched.
 *   Example: thing `7c1e…` may publish `flow/bmc/7c1e…/evt`, never `flow/bmc/other/evt`.
 */
import { Aws, RemovalPolicy, Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as iot from "aws-cdk-lib/aws-iot";
import * as logs from "aws-cdk-lib/aws-logs";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";

export const BMC_EVT_TOPIC_FILTER = "flow/bmc/+/evt";
// An IoT policy variable, resolved by IoT Core per connection (not a template placeholder).
// biome-ignore lint/suspicious/noTemplateCurlyInString: IoT policy variable, literal by design
const THING = "${iot:Connection.Thing.ThingName}";

export interface BmcIotProps {
  /** Where the rule puts every report (bmc-result consumes it in batches). */
  readonly reports: sqs.IQueue;
  /** Prefix for the IoT names (policy, rule, thing type), e.g. `Flow-prod`. */
  readonly namePrefix: string;
  readonly retainLogs: boolean;
}

export class BmcIot extends Construct {
  readonly topicRule: iot.CfnTopicRule;
  readonly bmcPolicy: iot.CfnPolicy;
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
        description: "BMC reports (progress and results) to the reports queue, read by the bmc-result Lambda",
        awsIotSqlVersion: "2016-03-23",
        sql: `SELECT *, topic(3) AS componentId FROM '${BMC_EVT_TOPIC_FILTER}'`,
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
  }

  /** The topic ARN pattern the child task publishes commands on (`iot:Publish`). */
  static commandTopicsArn(): string {
    return `arn:${Aws.PARTITION}:iot:${Aws.REGION}:${Aws.ACCOUNT_ID}:topic/flow/bmc/*/cmd`;
  }
}
