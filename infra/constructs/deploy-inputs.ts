/**
 * What the deployment's context brings into the stack, checked or looked up: the access policy and
 * the external checks file (read by the product's own readers, so a bad file fails the synth), the
 * IoT data endpoint, the event bus, the alarm topic. Each builds its resources (if any) in the
 * stack's own scope, under the ids the stack has always given them.
 */
import { readFileSync } from "node:fs";
import { ArnFormat, Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import * as sns from "aws-cdk-lib/aws-sns";
import * as subscriptions from "aws-cdk-lib/aws-sns-subscriptions";
import * as ssm from "aws-cdk-lib/aws-ssm";
import * as cr from "aws-cdk-lib/custom-resources";
import type { Construct } from "constructs";
import { readAccessPolicyText } from "../../src/adapters/grpc/access-policy-source.js";
import { type ExternalCheckConfig, parseExternalChecks } from "../../src/domain/external-check.js";
import { DeployConfigError, type FlowDeployConfig } from "../config.js";
import { acknowledge } from "../nag.js";

/** The construct id aws-cdk-lib gives the AwsCustomResource singleton provider. */
const PROVIDER_ID = "AWS679f53fac002430cb0da5b7982bd2287";

/** The external checks file's text and checks, once the product's own reader accepts them. */
export function checkedExternalChecks(file: string): { text: string; checks: ExternalCheckConfig[] } {
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
export function checkedPolicy(file: string): string {
  try {
    return readAccessPolicyText(file);
  } catch (error) {
    throw new DeployConfigError(`context accessPolicyFile: ${(error as Error).message}`);
  }
}

/** A Standard-tier parameter's value limit: 4 KB. */
export const POLICY_PARAMETER_MAX_BYTES = 4096;

/**
 * The access policy's SSM parameter (`/<namePrefix>/access-policy`, Standard tier, a String): the
 * front reads it at start and polls it (src/adapters/ssm/access-policy-parameter.ts), so a changed
 * policy is a new parameter version, not a new task definition. A policy over the tier's 4 KB
 * fails the synth. Standard, not Advanced: free, and an Advanced parameter can never go back.
 */
export function accessPolicyParameter(stack: Stack, namePrefix: string, text: string): ssm.StringParameter {
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > POLICY_PARAMETER_MAX_BYTES) {
    throw new DeployConfigError(
      `context accessPolicyFile: the policy is ${bytes} bytes; its SSM parameter (Standard tier) holds at most ${POLICY_PARAMETER_MAX_BYTES}: bind subject patterns (a trailing *) instead of one subject per binding, or drop comments`,
    );
  }
  return new ssm.StringParameter(stack, "AccessPolicy", {
    parameterName: `/${namePrefix}/access-policy`,
    description: "Flow operation runs: the gRPC front's access policy (YAML or JSON, docs/security.md)",
    stringValue: text,
    tier: ssm.ParameterTier.STANDARD,
  });
}

/**
 * The account's IoT data endpoint (`https://xxxx-ats.iot.<region>.amazonaws.com`): from context
 * when given, else looked up at deploy time by a custom resource calling iot:DescribeEndpoint.
 */
export function iotDataEndpoint(stack: Stack, config: FlowDeployConfig): string {
  if (config.iotDataEndpoint) {
    return config.iotDataEndpoint.startsWith("https://")
      ? config.iotDataEndpoint
      : `https://${config.iotDataEndpoint}`;
  }
  const lookup = new cr.AwsCustomResource(stack, "IotDataEndpointLookup", {
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

/** The AwsCustomResource provider function is aws-cdk-lib's, shared by the stack. */
export function acknowledgeCustomResourceProvider(stack: Stack): void {
  const provider = stack.node.tryFindChild(PROVIDER_ID);
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

/** `default` → this account's default bus in this region; an ARN stays as given. */
export function eventBusArn(scope: Construct, nameOrArn: string): string {
  if (nameOrArn.startsWith("arn:")) return nameOrArn;
  return Stack.of(scope).formatArn({
    service: "events",
    resource: "event-bus",
    resourceName: nameOrArn,
    arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
  });
}

/** The alarms' topic: the one context names, or a new encrypted one mailing `alarmEmail`, or none. */
export function alarmTopic(stack: Stack, config: FlowDeployConfig): sns.ITopic | undefined {
  if (config.alarmTopicArn) return sns.Topic.fromTopicArn(stack, "AlarmTopic", config.alarmTopicArn);
  if (!config.alarmEmail) return undefined;
  const key = new kms.Key(stack, "AlarmTopicKey", {
    description: "Flow operation runs: alarm topic encryption",
    enableKeyRotation: true,
  });
  // CloudWatch alarms publish to an encrypted topic only if the service may use its key.
  key.grant(new iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey");
  const topic = new sns.Topic(stack, "AlarmTopic", { masterKey: key, enforceSSL: true });
  topic.addSubscription(new subscriptions.EmailSubscription(config.alarmEmail));
  return topic;
}
