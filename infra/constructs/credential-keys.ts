/**
 * The KMS keys that guard firmware credentials, each with a key policy naming its uses
 * (key-policies.ts): the secrets key (envelope encryption of credentials at rest, `run:`/`task:`,
 * and of one credential per BMC command, `bmc:`) and the request MAC key (an idempotent create's
 * credentials remembered by digest). Built in the stack's own scope, under the ids the stack has
 * always given them.
 */
import type { RemovalPolicy } from "aws-cdk-lib";
import type * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import type { Construct } from "constructs";
import { adminOnlyKeyPolicy, allowKeyUse } from "./key-policies.js";

export interface CredentialKeys {
  readonly secretsKey: kms.Key;
  /** HMAC key of idempotent creates' credentials: the front may GenerateMac with it, nothing else. */
  readonly requestMacKey: kms.Key;
}

export function credentialKeys(scope: Construct, removalPolicy: RemovalPolicy): CredentialKeys {
  const secretsKey = new kms.Key(scope, "SecretsKey", {
    description:
      "Flow operation runs: envelope key for firmware credentials (front seals run:/task:, task-steps opens them and seals bmc:)",
    enableKeyRotation: true,
    removalPolicy,
    // Named uses only (infra/constructs/key-policies.ts): the front seals, task-steps opens.
    policy: adminOnlyKeyPolicy(),
  });
  // KMS rotates no HMAC key; what it signs lives a day (the client request id's memory).
  const requestMacKey = new kms.Key(scope, "RequestMacKey", {
    description:
      "Flow operation runs: HMAC key remembering an idempotent create's credentials by digest (front GenerateMac only)",
    keySpec: kms.KeySpec.HMAC_256,
    keyUsage: kms.KeyUsage.GENERATE_VERIFY_MAC,
    removalPolicy,
    policy: adminOnlyKeyPolicy(),
  });
  return { secretsKey, requestMacKey };
}

/**
 * `actions` on the secrets key, only for blobs whose KMS encryption context `context` matches one
 * of `contexts` (KmsEnvelopeCipher passes `{ context: "<kind>:<id>" }` on every call).
 * Example: contexts ["bmc:*"] let task-steps seal `bmc:7c1e…:req-1` but not mint a `run:` blob.
 */
export function allowSecretsKeyUse(
  secretsKey: kms.Key,
  role: iam.Role,
  sid: string,
  actions: string[],
  contexts: string[],
): void {
  allowKeyUse(secretsKey, sid, role, actions, {
    StringLike: { "kms:EncryptionContext:context": contexts },
  });
}
