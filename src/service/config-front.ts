/**
 * The gRPC front's configuration (the Fargate task, run by src/service/grpc-main.ts): what only
 * the front reads (its listener and TLS, admission, the access policy's forms, reflection, build
 * facts) on the rules and settings it shares with the Lambdas' readers (src/service/config.ts,
 * where every variable's name is). Read once at start, validated, frozen; every error names the
 * variable and the rule, all problems at once.
 */

import type { AdmissionLimits } from "../adapters/grpc/admission.js";
import { DEFAULT_ADMISSION_LIMITS } from "../adapters/grpc/admission.js";
import type { BuildInfo } from "../app/api.js";
import type { DeploymentChildTaskSettings } from "../app/child-task/settings.js";
import {
  bucketName,
  CHILD_TASK,
  childTask,
  ENV,
  externalChecks,
  SECRETS,
  type SecretsConfig,
  STORES,
  type StoresConfig,
  secrets,
  stateMachineArn,
  stores,
} from "./config.js";
import {
  boolean,
  configReader,
  integerFrom,
  matching,
  optional,
  port,
  type Report,
  required,
  text,
  withDefault,
} from "./env-reader.js";

const admissionLimit = integerFrom(1, 100_000);

export interface GrpcFrontConfig extends StoresConfig {
  /** The TasksApi and the run controls start and stop child-task executions. */
  childTaskStateMachineArn: string;
  /** What each execution it starts is told (its input's settings). */
  childTask: DeploymentChildTaskSettings;
  /** The firmware image catalog's bucket: the admin service presigns uploads into it. */
  imageBucket: string;
  secrets: SecretsConfig;
  host: string;
  port: number;
  /** PEM files; both or neither, and a client CA only with them (mutual TLS). */
  tls?: { certFile: string; keyFile: string; clientCaFile?: string };
  plaintextBehindLoadBalancer: boolean;
  /** Serve TLS with a key and certificate made at start (ENV.tlsSelfSigned). */
  tlsSelfSigned: boolean;
  /** Read the caller from the certificate the load balancer forwards (needs the front behind it). */
  trustLoadBalancerClientCert: boolean;
  protoDir?: string;
  /** Serve gRPC server reflection (ENV.serverReflection); off by default on the front. */
  serverReflection: boolean;
  /** What the server admits at once; the rest is shed with RESOURCE_EXHAUSTED. */
  admission: AdmissionLimits;
  build: BuildInfo;
  /**
   * Who may do what: a file or an SSM parameter (both polled for changes every `pollSeconds`), or
   * the document itself. Required: secure by default.
   */
  accessPolicy: { file: string } | { text: string } | { parameter: string };
  /** How often the policy's file or parameter is looked at for a change. */
  accessPolicyPollSeconds: number;
  /** The external health checks' names: a rule may name only these. */
  externalChecks: string[];
  /** The KMS HMAC key of idempotent creates' credentials; absent off AWS (derived from the local key). */
  requestMacKmsKeyId?: string;
}

/** The admission settings, with the front's defaults or another deployment's (the local stack's). */
export function admissionSettings(defaults: AdmissionLimits) {
  return {
    maxInFlightCalls: withDefault(ENV.maxInFlightCalls, admissionLimit, defaults.maxInFlightCalls),
    maxConcurrentCreates: withDefault(
      ENV.maxConcurrentCreates,
      admissionLimit,
      defaults.maxConcurrentCreates,
    ),
  };
}

/** Creates are calls too: a creates limit above the calls limit could never be reached. */
export function admissionLimits(
  v: { maxInFlightCalls: number; maxConcurrentCreates: number },
  report: Report,
): AdmissionLimits {
  if (v.maxConcurrentCreates > v.maxInFlightCalls) {
    report(ENV.maxConcurrentCreates, `must be at most ${ENV.maxInFlightCalls} (${v.maxInFlightCalls})`);
  }
  return { maxInFlightCalls: v.maxInFlightCalls, maxConcurrentCreates: v.maxConcurrentCreates };
}

/** An SSM parameter's name or ARN: what GetParameter takes (letters, digits, `_.-/`, at most 2048). */
const ssmParameterName = matching(
  /^(arn:[a-z-]+:ssm:[a-z0-9-]+:\d{12}:parameter)?[A-Za-z0-9_.\-/]{1,2048}$/,
  "an SSM parameter name or ARN (letters, digits, _ . - /)",
);

export const readGrpcFrontConfig = configReader(
  {
    ...STORES,
    childTaskStateMachineArn: required(ENV.childTaskStateMachineArn, stateMachineArn),
    ...CHILD_TASK,
    imageBucket: required(ENV.imageBucket, bucketName),
    ...SECRETS,
    host: withDefault(ENV.host, text, "127.0.0.1"),
    port: withDefault(ENV.port, port, 50_051),
    tlsCert: optional(ENV.tlsCert, text),
    tlsKey: optional(ENV.tlsKey, text),
    tlsClientCa: optional(ENV.tlsClientCa, text),
    plaintextBehindLoadBalancer: withDefault(ENV.plaintextBehindLoadBalancer, boolean, false),
    tlsSelfSigned: withDefault(ENV.tlsSelfSigned, boolean, false),
    trustLoadBalancerClientCert: withDefault(ENV.trustLoadBalancerClientCert, boolean, false),
    protoDir: optional(ENV.protoDir, text),
    serverReflection: withDefault(ENV.serverReflection, boolean, false),
    ...admissionSettings(DEFAULT_ADMISSION_LIMITS),
    version: withDefault(ENV.version, text, "0.0.0"),
    gitCommit: withDefault(ENV.gitCommit, text, ""),
    buildTime: withDefault(ENV.buildTime, text, ""),
    authzPolicyFile: optional(ENV.authzPolicy, text),
    authzPolicyText: optional(ENV.authzPolicyText, text),
    authzPolicyParameter: optional(ENV.authzPolicyParameter, ssmParameterName),
    authzPolicyPollSeconds: withDefault(ENV.authzPolicyPollSeconds, integerFrom(5, 3600), 30),
    externalChecks: withDefault(ENV.externalChecks, externalChecks, []),
    requestMacKmsKeyId: optional(ENV.requestMacKmsKeyId, text),
  },
  (v, report): GrpcFrontConfig => {
    const tls = tlsFiles(v, report);
    if (v.secretsKmsKeyId !== undefined && v.requestMacKmsKeyId === undefined) {
      report(
        ENV.requestMacKmsKeyId,
        `is required with ${ENV.secretsKmsKeyId}: a retried create's credentials are compared by their MAC under this HMAC key`,
      );
    }
    const policy = accessPolicyOf(v, report);
    if (v.trustLoadBalancerClientCert && !v.plaintextBehindLoadBalancer && !v.tlsSelfSigned) {
      // A front reachable directly could be sent the header by anyone.
      report(
        ENV.trustLoadBalancerClientCert,
        `needs ${ENV.tlsSelfSigned}=true or ${ENV.plaintextBehindLoadBalancer}=true (the front behind the load balancer, reachable only through it)`,
      );
    }
    if (v.tlsSelfSigned && tls !== undefined) {
      report(ENV.tlsSelfSigned, `and ${ENV.tlsCert} are exclusive: give one certificate`);
    }
    return {
      ...stores(v),
      childTaskStateMachineArn: v.childTaskStateMachineArn,
      childTask: childTask(v),
      imageBucket: v.imageBucket,
      secrets: secrets(v),
      host: v.host,
      port: v.port,
      ...(tls === undefined ? {} : { tls }),
      plaintextBehindLoadBalancer: v.plaintextBehindLoadBalancer,
      tlsSelfSigned: v.tlsSelfSigned,
      trustLoadBalancerClientCert: v.trustLoadBalancerClientCert,
      ...(v.protoDir === undefined ? {} : { protoDir: v.protoDir }),
      serverReflection: v.serverReflection,
      admission: admissionLimits(v, report),
      build: { version: v.version, gitCommit: v.gitCommit, buildTime: v.buildTime },
      accessPolicy: policy,
      accessPolicyPollSeconds: v.authzPolicyPollSeconds,
      externalChecks: v.externalChecks.map((c) => c.name),
      ...(v.requestMacKmsKeyId === undefined ? {} : { requestMacKmsKeyId: v.requestMacKmsKeyId }),
    };
  },
);

/** Exactly one of the policy's three forms; the front serves no call without one. */
function accessPolicyOf(
  v: {
    authzPolicyFile: string | undefined;
    authzPolicyText: string | undefined;
    authzPolicyParameter: string | undefined;
  },
  report: Report,
): GrpcFrontConfig["accessPolicy"] {
  const given = [
    v.authzPolicyFile === undefined ? [] : [ENV.authzPolicy],
    v.authzPolicyText === undefined ? [] : [ENV.authzPolicyText],
    v.authzPolicyParameter === undefined ? [] : [ENV.authzPolicyParameter],
  ].flat();
  if (given.length === 0) {
    report(
      ENV.authzPolicy,
      `is required (or ${ENV.authzPolicyText}, or ${ENV.authzPolicyParameter}): the front serves no call without an access policy`,
    );
  }
  if (given.length > 1)
    report(given[0] ?? "", `and ${given.slice(1).join(", ")} are exclusive: give one policy`);
  if (v.authzPolicyParameter !== undefined) return { parameter: v.authzPolicyParameter };
  if (v.authzPolicyFile !== undefined) return { file: v.authzPolicyFile };
  return { text: v.authzPolicyText ?? "" };
}

/** A certificate without its key (or the reverse) would otherwise fall back to plaintext. */
function tlsFiles(
  v: { tlsCert: string | undefined; tlsKey: string | undefined; tlsClientCa: string | undefined },
  report: Report,
): GrpcFrontConfig["tls"] {
  if (v.tlsCert !== undefined && v.tlsKey === undefined)
    report(ENV.tlsKey, `is required with ${ENV.tlsCert}`);
  if (v.tlsKey !== undefined && v.tlsCert === undefined)
    report(ENV.tlsCert, `is required with ${ENV.tlsKey}`);
  if (v.tlsClientCa !== undefined && (v.tlsCert === undefined || v.tlsKey === undefined)) {
    report(ENV.tlsClientCa, `needs ${ENV.tlsCert} and ${ENV.tlsKey} (mutual TLS is TLS first)`);
  }
  if (v.tlsCert === undefined || v.tlsKey === undefined) return undefined;
  return {
    certFile: v.tlsCert,
    keyFile: v.tlsKey,
    ...(v.tlsClientCa === undefined ? {} : { clientCaFile: v.tlsClientCa }),
  };
}
