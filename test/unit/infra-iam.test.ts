/**
 * Least privilege and cdk-nag over the synthesized stack, in three shapes: no context (dev, new
 * VPC, IoT endpoint looked up by a custom resource), prod with every option, and an existing VPC.
 */
import type { Template } from "aws-cdk-lib/assertions";
import { AwsSolutionsChecks } from "cdk-nag";
import { beforeAll, describe, expect, it } from "vitest";
import { type BuiltStack, buildStack } from "../fixtures/infra-stack.js";

/**
 * The only actions allowed on Resource "*", each because the service offers no resource-level
 * permission for it:
 * - X-Ray tracing (Lambda `tracing: ACTIVE`, Step Functions `tracingEnabled`);
 * - CloudWatch Logs vended delivery for Step Functions logging;
 * - dynamodb:ListStreams (the stream event source mapping);
 * - ecr:GetAuthorizationToken (the task execution role pulling the image);
 * - iot:DescribeEndpoint (the custom resource that finds the IoT data endpoint).
 * No cloudwatch:PutMetricData at all: metrics are EMF lines in the logs.
 */
const STAR_RESOURCE_ACTIONS = new Set([
  "xray:PutTraceSegments",
  "xray:PutTelemetryRecords",
  "xray:GetSamplingRules",
  "xray:GetSamplingTargets",
  "logs:CreateLogDelivery",
  "logs:GetLogDelivery",
  "logs:UpdateLogDelivery",
  "logs:DeleteLogDelivery",
  "logs:ListLogDeliveries",
  "logs:PutResourcePolicy",
  "logs:DescribeResourcePolicies",
  "logs:DescribeLogGroups",
  "dynamodb:ListStreams",
  "ecr:GetAuthorizationToken",
  "iot:DescribeEndpoint",
]);

interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
}

function iamStatements(template: Template): { owner: string; statement: Statement }[] {
  const out: { owner: string; statement: Statement }[] = [];
  for (const [id, policy] of Object.entries(template.findResources("AWS::IAM::Policy"))) {
    for (const statement of policy.Properties.PolicyDocument.Statement) out.push({ owner: id, statement });
  }
  for (const [id, role] of Object.entries(template.findResources("AWS::IAM::Role"))) {
    for (const inline of role.Properties.Policies ?? []) {
      for (const statement of inline.PolicyDocument.Statement) out.push({ owner: id, statement });
    }
  }
  return out;
}

const list = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);

const BUILD_TIMEOUT = 120_000;
const shapes: Record<string, BuiltStack> = {};

beforeAll(() => {
  shapes.dev = buildStack();
  shapes.prod = buildStack({
    stage: "prod",
    account: "123456789012",
    region: "eu-west-1",
    certificateArn: "arn:aws:acm:eu-west-1:123456789012:certificate/abc",
    alarmEmail: "ops@example.com",
    clientCidr: "10.20.0.0/16",
    iotDataEndpoint: "abc123-ats.iot.eu-west-1.amazonaws.com",
  });
  shapes.existingVpc = buildStack({
    account: "123456789012",
    region: "eu-west-1",
    vpcId: "vpc-0123456789abcdef0",
    alarmTopicArn: "arn:aws:sns:eu-west-1:123456789012:ops",
  });
}, BUILD_TIMEOUT * 2);

describe.each(["dev", "prod", "existingVpc"])("infra least privilege (%s)", (shape) => {
  it("no IAM statement has a wildcard action (no `*`, no `service:*`, no `kms:GenerateDataKey*`)", () => {
    const wild = iamStatements(shapes[shape]!.template).flatMap(({ owner, statement }) =>
      list(statement.Action)
        .filter((a) => a.includes("*"))
        .map((a) => `${owner}: ${a}`),
    );
    expect(wild).toEqual([]);
  });

  it("Resource * only for the actions that have no resource-level permissions", () => {
    const offenders = iamStatements(shapes[shape]!.template)
      .filter(({ statement }) => list(statement.Resource).includes("*"))
      .flatMap(({ owner, statement }) =>
        list(statement.Action)
          .filter((a) => !STAR_RESOURCE_ACTIONS.has(a))
          .map((a) => `${owner}: ${a}`),
      );
    expect(offenders).toEqual([]);
  });

  it("no Deny-less managed policy except on aws-cdk-lib's own custom-resource providers", () => {
    const roles = Object.entries(shapes[shape]!.template.findResources("AWS::IAM::Role"));
    const withManaged = roles.filter(([, r]) => r.Properties.ManagedPolicyArns).map(([id]) => id);
    for (const id of withManaged)
      expect(id).toMatch(/^(AWS679f53fac002430cb0da5b7982bd2287|CustomVpcRestrictDefaultSG)/);
  });

  it("cdk-nag AwsSolutions: no finding left unacknowledged", () => {
    const { stack } = shapes[shape]!;
    const report = new AwsSolutionsChecks(stack).validateScope(stack);
    const findings = report.violations.map(
      (v) => `${v.ruleName} at ${v.violatingResources.map((r) => r.constructPath).join(", ")}`,
    );
    expect(findings).toEqual([]);
  });
});

describe("infra least privilege: grants by principal", () => {
  it("only task-steps may publish to IoT, and only the front may encrypt with the secrets key", () => {
    const { template } = shapes.dev!;
    const publishers = iamStatements(template)
      .filter(({ statement }) => list(statement.Action).includes("iot:Publish"))
      .map(({ owner }) => owner);
    expect(publishers.every((o) => o.startsWith("TaskStepsRole"))).toBe(true);
    expect(publishers.length).toBeGreaterThan(0);
    const onSecretsKey = (ownerPrefix: string) =>
      iamStatements(template)
        .filter(
          ({ owner, statement }) =>
            owner.startsWith(ownerPrefix) && JSON.stringify(statement.Resource).includes('"SecretsKey'),
        )
        .flatMap(({ statement }) => list(statement.Action))
        .sort();
    expect(onSecretsKey("FrontTaskTaskRole")).toEqual(["kms:Encrypt", "kms:GenerateDataKey"]);
    expect(onSecretsKey("TaskStepsRole")).toEqual(["kms:Decrypt"]);
    for (const other of ["DispatcherRole", "StreamEvaluatorRole", "BmcResultRole"]) {
      expect(onSecretsKey(other), other).toEqual([]);
    }
  });

  it("inventory is read-only for dispatcher, stream-evaluator and bmc-result", () => {
    const { template } = shapes.dev!;
    const inventoryLogicalId = Object.entries(template.findResources("AWS::DynamoDB::Table")).find(
      ([, t]) => t.Properties.TableName === "Flow-dev-Inventory",
    )![0];
    for (const owner of ["DispatcherRole", "StreamEvaluatorRole", "BmcResultRole"]) {
      const writesInventory = iamStatements(template).some(
        ({ owner: o, statement }) =>
          o.startsWith(owner) &&
          list(statement.Action).includes("dynamodb:PutItem") &&
          JSON.stringify(statement.Resource).includes(inventoryLogicalId),
      );
      expect(writesInventory, owner).toBe(false);
    }
  });

  it("no principal gets DynamoDB table management", () => {
    const all = iamStatements(shapes.dev!.template).flatMap(({ statement }) => list(statement.Action));
    for (const action of ["dynamodb:DeleteTable", "dynamodb:CreateTable", "dynamodb:UpdateTable"]) {
      expect(all).not.toContain(action);
    }
  });
});
