/**
 * cdk-nag 3 acknowledgments, each with its reason.
 *
 * cdk-nag 3 runs as a CDK validation plugin (`Validations.of(app).addPlugins(new AwsSolutionsChecks(app))`)
 * and matches an acknowledgment by exact id on the resource or any ancestor: a whole rule
 * (`AwsSolutions-L1`) or one finding of a multi-finding rule (`AwsSolutions-IAM5[Resource::*]`).
 * There are no patterns, so the ids of findings that name a resource are computed here from the
 * very token the policy uses, flattened the way cdk-nag flattens it:
 *   { "Fn::GetAtt": ["DataRuns1A2B", "Arn"] } + "/index/*"  →  "Resource::<DataRuns1A2B.Arn>/index/*"
 */
import { Stack, Validations } from "aws-cdk-lib";
import type { IConstruct } from "constructs";

export function acknowledge(scope: IConstruct, reason: string, ...ids: string[]): void {
  Validations.of(scope).acknowledge(...ids.map((id) => ({ id, reason })));
}

/** Acknowledges AwsSolutions-IAM5 for these exact wildcard resources (strings that may hold tokens). */
export function acknowledgeWildcardResources(
  scope: IConstruct,
  reason: string,
  resources: readonly string[],
): void {
  const stack = Stack.of(scope);
  acknowledge(
    scope,
    reason,
    ...resources.map((r) => `AwsSolutions-IAM5[Resource::${flattenCfnReference(stack.resolve(r))}]`),
  );
}

/** Mirrors cdk-nag's own flattening (src/utils/flatten-cfn-reference.ts) so ids match its findings. */
export function flattenCfnReference(node: unknown): string {
  if (node === undefined) return "";
  if (typeof node === "string") return node.replace(/\$\{/g, "<").replace(/}/g, ">");
  if (typeof node === "object" && node !== null) {
    const o = node as Record<string, unknown>;
    if (o["Fn::Join"]) {
      const [delimiter, items] = o["Fn::Join"] as [string, unknown[]];
      return items.map(flattenCfnReference).join(delimiter);
    }
    if (o["Fn::Sub"]) return flattenCfnReference(o["Fn::Sub"]);
    if (o["Fn::GetAtt"]) {
      const [resource, attribute] = o["Fn::GetAtt"] as [unknown, unknown];
      return `<${flattenCfnReference(resource)}.${flattenCfnReference(attribute)}>`;
    }
    if (o["Fn::ImportValue"]) return flattenCfnReference(o["Fn::ImportValue"]);
    if (o.Ref) return `<${flattenCfnReference(o.Ref)}>`;
  }
  return JSON.stringify(node);
}
