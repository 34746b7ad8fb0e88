/**
 * The access policy in AWS (infra/constructs/deploy-inputs.ts, flow-stack.ts): an SSM parameter
 * (Standard tier) holding the checked policy file's text, which the front's task role alone may
 * read (ssm:GetParameter on that parameter), named to the front by its environment. A changed
 * policy changes the parameter only: the task definition holds no policy, so ECS replaces no
 * task. A policy over the tier's 4 KB fails the synth.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CfnElement } from "aws-cdk-lib";
import type * as iam from "aws-cdk-lib/aws-iam";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { POLICY_PARAMETER_MAX_BYTES } from "../../infra/constructs/deploy-inputs.js";
import {
  type BuiltStack,
  buildStack,
  EXAMPLE_POLICY,
  PROD_CONTEXT,
  sharedStack,
} from "../fixtures/infra-stack.js";

type Resource = { Type: string; Properties: Record<string, unknown> };
interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: unknown;
}

const dir = mkdtempSync(join(tmpdir(), "flow-policy-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function policyFile(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

let prod: BuiltStack;
beforeAll(() => {
  prod = sharedStack(PROD_CONTEXT);
}, 60_000);

const parameterId = (built: BuiltStack): string =>
  built.stack.getLogicalId(built.stack.node.findChild("AccessPolicy").node.defaultChild as CfnElement);

function resourcesOf(built: BuiltStack, type: string): Record<string, Resource> {
  return built.template.findResources(type) as Record<string, Resource>;
}

/** Every statement of the front's task role's policies. */
function taskRoleStatements(built: BuiltStack): Statement[] {
  const role = built.stack.front.taskDefinition.taskRole as iam.Role;
  const roleId = built.stack.getLogicalId(role.node.defaultChild as CfnElement);
  return Object.values(resourcesOf(built, "AWS::IAM::Policy"))
    .filter((p) => (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === roleId))
    .flatMap((p) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}

const ssmStatements = (statements: Statement[]) =>
  statements.filter((s) => [s.Action].flat().some((a) => a.startsWith("ssm:")));

describe("infra: the access policy's SSM parameter", () => {
  it("a Standard-tier String parameter /Flow-<stage>/access-policy holding the policy file's text", () => {
    expect(resourcesOf(prod, "AWS::SSM::Parameter")).toEqual({
      [parameterId(prod)]: {
        Type: "AWS::SSM::Parameter",
        Properties: {
          Name: "/Flow-prod/access-policy",
          Type: "String",
          Tier: "Standard",
          Value: readFileSync(EXAMPLE_POLICY, "utf8"),
          Description: "Flow operation runs: the gRPC front's access policy (YAML or JSON, docs/security.md)",
        },
      },
    });
  });

  it("the front's task role may ssm:GetParameter on that parameter, nothing else of SSM; no other role may", () => {
    const statements = ssmStatements(taskRoleStatements(prod));
    expect(statements).toEqual([
      {
        Effect: "Allow",
        Action: "ssm:GetParameter",
        // The parameter's Ref is its name, which starts with "/".
        Resource: {
          "Fn::Join": [
            "",
            [
              "arn:",
              { Ref: "AWS::Partition" },
              ":ssm:eu-west-1:123456789012:parameter",
              { Ref: parameterId(prod) },
            ],
          ],
        },
      },
    ]);
    const everyStatement = Object.values(resourcesOf(prod, "AWS::IAM::Policy")).flatMap(
      (p) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement,
    );
    expect(ssmStatements(everyStatement)).toEqual(statements);
  });

  it("a changed policy changes the parameter only: the task definition holds no policy and stays the same", () => {
    const extra = `${readFileSync(EXAMPLE_POLICY, "utf8")}  - subjects: ["cn:second-auditor"]\n    roles: [viewer]\n`;
    // The same build time for both: it is in the task's environment.
    const context = { ...PROD_CONTEXT, buildTime: "2026-01-02T03:04:05Z" };
    const before = buildStack(context);
    const changed = buildStack({ ...context, accessPolicyFile: policyFile("changed.yaml", extra) });
    const taskDefinitions = (b: BuiltStack) => resourcesOf(b, "AWS::ECS::TaskDefinition");
    expect(taskDefinitions(changed)).toEqual(taskDefinitions(before));
    expect(JSON.stringify(taskDefinitions(before))).not.toContain("cn:auditor");
    expect(resourcesOf(changed, "AWS::SSM::Parameter")[parameterId(changed)]?.Properties.Value).toBe(extra);
  });

  it(`a policy over ${POLICY_PARAMETER_MAX_BYTES} bytes fails the synth, saying its size and the tier's limit`, () => {
    const binding = (i: number) =>
      `  - subjects: ["cn:operator-${String(i).padStart(4, "0")}"]\n    roles: [operator]\n`;
    const text = `bindings:\n${Array.from({ length: 80 }, (_, i) => binding(i)).join("")}`;
    const bytes = Buffer.byteLength(text, "utf8");
    expect(bytes).toBeGreaterThan(POLICY_PARAMETER_MAX_BYTES);
    expect(() => buildStack({ ...PROD_CONTEXT, accessPolicyFile: policyFile("big.yaml", text) })).toThrow(
      `context accessPolicyFile: the policy is ${bytes} bytes; its SSM parameter (Standard tier) holds at most 4096: bind subject patterns (a trailing *) instead of one subject per binding, or drop comments`,
    );
  });
});
