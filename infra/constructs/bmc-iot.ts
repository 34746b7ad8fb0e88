/**
 * AWS IoT Core for the BMC protocol: one IoT thing per component BMC, named by the component id,
 * so `flow/bmc/{componentId}/cmd` and `/evt` are the thing's own topics.
 *
 * - The topic rule `flow/bmc/+/evt` hands every report to the bmc-result Lambda, with the component
 *   id from the topic (`topic(3)`) added to the payload. Failed deliveries go to an error log group.
 * - The policy lets a BMC connect only as its own thing name (with a certificate attached to that
 *   thing) and publish/subscribe only on its own two topics. Policy variables are resolved by IoT at
 *   connect time; CloudFormation passes `${iot:Connection.Thing.ThingName}` through untouched.
 *   Example: thing `7c1e…` may publish `flow/bmc/7c1e…/evt`, never `flow/bmc/other/evt`.
 */
import { Aws, RemovalPolicy, Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as iot from "aws-cdk-lib/aws-iot";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import * as logs from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";

export const BMC_EVT_TOPIC_FILTER = "flow/bmc/+/evt";
// An IoT policy variable, resolved by IoT Core per connection (not a template placeholder).
// biome-ignore lint/suspicious/noTemplateCurlyInString: IoT policy variable, literal by design
const THING = "${iot:Connection.Thing.ThingName}";

export interface BmcIotProps {
  readonly bmcResult: lambda.IFunction;
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

    const ruleName = `${safe}_bmc_events`;
    this.topicRule = new iot.CfnTopicRule(this, "BmcEvents", {
      ruleName,
      topicRulePayload: {
        description: "BMC reports (progress and results) to the bmc-result Lambda",
        awsIotSqlVersion: "2016-03-23",
        sql: `SELECT *, topic(3) AS componentId FROM '${BMC_EVT_TOPIC_FILTER}'`,
        ruleDisabled: false,
        actions: [{ lambda: { functionArn: props.bmcResult.functionArn } }],
        errorAction: { cloudwatchLogs: { logGroupName: errorLogs.logGroupName, roleArn: errorRole.roleArn } },
      },
    });
    props.bmcResult.addPermission("InvokeFromIotRule", {
      principal: new iam.ServicePrincipal("iot.amazonaws.com"),
      // Built from the rule's name, not `attrArn`: the same ARN, and the permission does not need
      // the rule to exist first (an emulator without IoT rules can still create it).
      sourceArn: iotArn(`rule/${ruleName}`),
      sourceAccount: Stack.of(this).account,
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
