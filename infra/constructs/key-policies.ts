/**
 * Key policies that name who may use a key, instead of KMS's default (the account root with
 * kms:*, which lets any IAM policy in the account grant encrypt and decrypt).
 *
 * - The account keeps administration only (describe, enable, rotate, change the policy, schedule
 *   deletion, tags): the deployment can still update and delete the key, but no IAM policy in
 *   the account can grant a cryptographic use of it.
 * - Each use is one statement naming the role, its actions and its conditions, added beside the
 *   role's own IAM grant (both must allow: a role's policy cannot reach further than the key's).
 *
 * The secrets key and the request MAC key are called directly by the roles (the AWS SDK), not by
 * another AWS service on their behalf, so their statements carry the encryption context as the
 * condition and no kms:ViaService (which a direct call never has: a condition on it would refuse
 * every call). The tables' key is the other way round: only DynamoDB calls KMS with it, on the
 * caller's behalf, so each of its uses has kms:ViaService `dynamodb.<region>.amazonaws.com`
 * (data.ts).
 */
import { Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as kms from "aws-cdk-lib/aws-kms";

/** What the account may do with a key whose use is named role by role: manage it, not use it. */
export const KEY_ADMIN_ACTIONS = [
  "kms:CancelKeyDeletion",
  "kms:CreateAlias",
  "kms:DeleteAlias",
  "kms:DescribeKey",
  "kms:DisableKey",
  "kms:DisableKeyRotation",
  "kms:EnableKey",
  "kms:EnableKeyRotation",
  "kms:GetKeyPolicy",
  "kms:GetKeyRotationStatus",
  "kms:ListAliases",
  "kms:ListKeyPolicies",
  "kms:ListResourceTags",
  "kms:PutKeyPolicy",
  "kms:RotateKeyOnDemand",
  "kms:ScheduleKeyDeletion",
  "kms:TagResource",
  "kms:UntagResource",
  "kms:UpdateAlias",
  "kms:UpdateKeyDescription",
] as const;

/** The key policy a named-use key starts with: the account administers it, nobody uses it yet. */
export function adminOnlyKeyPolicy(): iam.PolicyDocument {
  return new iam.PolicyDocument({
    statements: [
      new iam.PolicyStatement({
        sid: "AccountAdministersNotUses",
        principals: [new iam.AccountRootPrincipal()],
        actions: [...KEY_ADMIN_ACTIONS],
        resources: ["*"],
      }),
    ],
  });
}

/**
 * `role` may `actions` on `key` under `conditions`: in the key policy and in the role's policy.
 *   allowKeyUse(secretsKey, "SealStoredCredentials", frontRole, ["kms:GenerateDataKey"],
 *     { StringLike: { "kms:EncryptionContext:context": ["run:*", "task:*"] } })
 */
export function allowKeyUse(
  key: kms.Key,
  sid: string,
  role: iam.Role,
  actions: string[],
  conditions: Record<string, Record<string, unknown>>,
): void {
  allowInKeyPolicy(key, sid, role, actions, conditions);
  role.addToPrincipalPolicy(new iam.PolicyStatement({ sid, actions, resources: [key.keyArn], conditions }));
}

/**
 * The key-policy half of allowKeyUse alone, for a role whose own policy grants a narrower use
 * itself (the BMC agents' role: the key allows it every `bmc:` blob, its policy only its own rack's;
 * both must allow, so the narrower wins).
 */
export function allowInKeyPolicy(
  key: kms.Key,
  sid: string,
  role: iam.IRole | iam.IPrincipal,
  actions: string[],
  conditions: Record<string, Record<string, unknown>>,
): void {
  key.addToResourcePolicy(
    new iam.PolicyStatement({
      sid,
      principals: ["roleArn" in role ? new iam.ArnPrincipal(role.roleArn) : role],
      actions,
      resources: ["*"],
      conditions: {
        ...conditions,
        StringEquals: { ...conditions.StringEquals, "kms:CallerAccount": Stack.of(key).account },
      },
    }),
  );
}
