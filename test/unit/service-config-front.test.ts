/**
 * The gRPC front's configuration reader (src/service/config-front.ts on src/service/env-reader.ts): every
 * rule with its exact message, every problem at once, defaults, blank = unset, frozen.
 */
import { describe, expect, it } from "vitest";
import { ENV } from "../../src/service/config.js";
import { readGrpcFrontConfig } from "../../src/service/config-front.js";
import {
  ARN,
  CHILD_TASK_NAMES,
  DEPLOYMENT_DEFAULTS,
  front,
  KEY_HEX,
  POLICY,
  problems,
} from "../support/service-config-cases.js";

describe("service config: the gRPC front", () => {
  it("the minimum: defaults for everything else", () => {
    expect(readGrpcFrontConfig(front)).toEqual({
      tablePrefix: "Flow-prod-",
      childTaskStateMachineArn: ARN,
      childTask: DEPLOYMENT_DEFAULTS,
      imageBucket: "flow-prod-images",
      secrets: undefined,
      host: "127.0.0.1",
      port: 50_051,
      plaintextBehindLoadBalancer: false,
      tlsSelfSigned: false,
      admission: { maxInFlightCalls: 64, maxConcurrentCreates: 8 },
      trustLoadBalancerClientCert: false,
      serverReflection: false,
      build: { version: "0.0.0", gitCommit: "", buildTime: "" },
      accessPolicy: { text: POLICY },
      accessPolicyPollSeconds: 30,
      externalChecks: [],
    });
  });

  it("an access policy is required, as a file or as text, not both: secure by default", () => {
    const { FLOW_AUTHZ_POLICY_TEXT: _, ...open } = front;
    expect(problems(() => readGrpcFrontConfig(open))).toEqual([
      "FLOW_AUTHZ_POLICY: is required (or FLOW_AUTHZ_POLICY_TEXT, or FLOW_AUTHZ_POLICY_PARAMETER): the front serves no call without an access policy",
    ]);
    expect(readGrpcFrontConfig({ ...open, FLOW_AUTHZ_POLICY: "/etc/flow/policy.yaml" }).accessPolicy).toEqual(
      {
        file: "/etc/flow/policy.yaml",
      },
    );
    expect(
      problems(() => readGrpcFrontConfig({ ...front, FLOW_AUTHZ_POLICY: "/etc/flow/policy.yaml" })),
    ).toEqual(["FLOW_AUTHZ_POLICY: and FLOW_AUTHZ_POLICY_TEXT are exclusive: give one policy"]);
  });

  it("admission limits: read, whole and positive, and creates at most the calls in flight", () => {
    expect(
      readGrpcFrontConfig({ ...front, FLOW_MAX_IN_FLIGHT_CALLS: "200", FLOW_MAX_CONCURRENT_CREATES: "20" })
        .admission,
    ).toEqual({ maxInFlightCalls: 200, maxConcurrentCreates: 20 });
    expect(
      problems(() =>
        readGrpcFrontConfig({ ...front, FLOW_MAX_IN_FLIGHT_CALLS: "0", FLOW_MAX_CONCURRENT_CREATES: "2.5" }),
      ),
    ).toEqual([
      'FLOW_MAX_IN_FLIGHT_CALLS: must be an integer from 1 to 100000 (got "0")',
      'FLOW_MAX_CONCURRENT_CREATES: must be an integer from 1 to 100000 (got "2.5")',
    ]);
    expect(
      problems(() =>
        readGrpcFrontConfig({ ...front, FLOW_MAX_IN_FLIGHT_CALLS: "4", FLOW_MAX_CONCURRENT_CREATES: "5" }),
      ),
    ).toEqual(["FLOW_MAX_CONCURRENT_CREATES: must be at most FLOW_MAX_IN_FLIGHT_CALLS (4)"]);
  });

  it("the load balancer's client certificate is trusted only behind the load balancer", () => {
    const behind = { ...front, FLOW_PLAINTEXT_BEHIND_LB: "true", FLOW_HOST: "0.0.0.0" };
    expect(
      readGrpcFrontConfig({ ...behind, FLOW_TRUST_LB_CLIENT_CERT: "true" }).trustLoadBalancerClientCert,
    ).toBe(true);
    expect(problems(() => readGrpcFrontConfig({ ...front, FLOW_TRUST_LB_CLIENT_CERT: "true" }))).toEqual([
      "FLOW_TRUST_LB_CLIENT_CERT: needs FLOW_TLS_SELF_SIGNED=true or FLOW_PLAINTEXT_BEHIND_LB=true (the front behind the load balancer, reachable only through it)",
    ]);
    expect(problems(() => readGrpcFrontConfig({ ...behind, FLOW_TRUST_LB_CLIENT_CERT: "on" }))).toEqual([
      'FLOW_TRUST_LB_CLIENT_CERT: must be "true" or "false" (got "on")',
    ]);
  });

  it("a KMS secrets key needs the request MAC key beside it", () => {
    expect(problems(() => readGrpcFrontConfig({ ...front, FLOW_SECRETS_KMS_KEY_ID: "alias/flow" }))).toEqual([
      "FLOW_REQUEST_MAC_KMS_KEY_ID: is required with FLOW_SECRETS_KMS_KEY_ID: a retried create's credentials are compared by their MAC under this HMAC key",
    ]);
    expect(readGrpcFrontConfig(front)).not.toHaveProperty("requestMacKmsKeyId");
  });

  it("what the Fargate task is given", () => {
    const config = readGrpcFrontConfig({
      ...front,
      FLOW_SECRETS_KMS_KEY_ID: "arn:aws:kms:eu-west-1:123456789012:key/k",
      FLOW_REQUEST_MAC_KMS_KEY_ID: "arn:aws:kms:eu-west-1:123456789012:key/m",
      FLOW_PORT: "50051",
      FLOW_HOST: "0.0.0.0",
      FLOW_TLS_SELF_SIGNED: "true",
      FLOW_PROTO_DIR: "/app/proto",
      FLOW_VERSION: "1.4.0",
      FLOW_GIT_COMMIT: "abc1234",
      FLOW_BUILD_TIME: "2025-01-01T00:00:00Z",
    });
    expect(config).toMatchObject({
      secrets: { kind: "kms", keyId: "arn:aws:kms:eu-west-1:123456789012:key/k" },
      host: "0.0.0.0",
      port: 50_051,
      plaintextBehindLoadBalancer: false,
      tlsSelfSigned: true,
      protoDir: "/app/proto",
      serverReflection: false,
      build: { version: "1.4.0", gitCommit: "abc1234", buildTime: "2025-01-01T00:00:00Z" },
    });
  });

  it("the task's own certificate: trusts the load balancer's header like plaintext behind it; never with certificate files", () => {
    const own = { ...front, FLOW_TLS_SELF_SIGNED: "true", FLOW_HOST: "0.0.0.0" };
    expect(
      readGrpcFrontConfig({ ...own, FLOW_TRUST_LB_CLIENT_CERT: "true" }).trustLoadBalancerClientCert,
    ).toBe(true);
    expect(
      problems(() => readGrpcFrontConfig({ ...own, FLOW_TLS_CERT: "c.pem", FLOW_TLS_KEY: "k.pem" })),
    ).toEqual(["FLOW_TLS_SELF_SIGNED: and FLOW_TLS_CERT are exclusive: give one certificate"]);
  });

  it("TLS: both files give TLS, a client CA with them mutual TLS", () => {
    expect(readGrpcFrontConfig({ ...front, FLOW_TLS_CERT: "c.pem", FLOW_TLS_KEY: "k.pem" }).tls).toEqual({
      certFile: "c.pem",
      keyFile: "k.pem",
    });
    expect(
      readGrpcFrontConfig({
        ...front,
        FLOW_TLS_CERT: "c.pem",
        FLOW_TLS_KEY: "k.pem",
        FLOW_TLS_CLIENT_CA: "ca.pem",
      }).tls,
    ).toEqual({ certFile: "c.pem", keyFile: "k.pem", clientCaFile: "ca.pem" });
  });

  it.each([
    [{ FLOW_TLS_CERT: "c.pem" }, ["FLOW_TLS_KEY: is required with FLOW_TLS_CERT"]],
    [{ FLOW_TLS_KEY: "k.pem" }, ["FLOW_TLS_CERT: is required with FLOW_TLS_KEY"]],
    [
      { FLOW_TLS_CLIENT_CA: "ca.pem" },
      ["FLOW_TLS_CLIENT_CA: needs FLOW_TLS_CERT and FLOW_TLS_KEY (mutual TLS is TLS first)"],
    ],
    [
      { FLOW_TLS_CERT: "c.pem", FLOW_TLS_CLIENT_CA: "ca.pem" },
      [
        "FLOW_TLS_KEY: is required with FLOW_TLS_CERT",
        "FLOW_TLS_CLIENT_CA: needs FLOW_TLS_CERT and FLOW_TLS_KEY (mutual TLS is TLS first)",
      ],
    ],
  ])("TLS half-configured %j is refused, not served in plaintext", (tls, expected) => {
    expect(problems(() => readGrpcFrontConfig({ ...front, ...tls }))).toEqual(expected);
  });

  it.each([
    ["FLOW_PORT", "abc", 'FLOW_PORT: must be an integer from 0 to 65535 (got "abc")'],
    ["FLOW_PORT", "65536", 'FLOW_PORT: must be an integer from 0 to 65535 (got "65536")'],
    ["FLOW_PORT", "-1", 'FLOW_PORT: must be an integer from 0 to 65535 (got "-1")'],
    ["FLOW_PORT", "1e3", 'FLOW_PORT: must be an integer from 0 to 65535 (got "1e3")'],
    ["FLOW_PORT", "50051.5", 'FLOW_PORT: must be an integer from 0 to 65535 (got "50051.5")'],
    ["FLOW_PLAINTEXT_BEHIND_LB", "yes", 'FLOW_PLAINTEXT_BEHIND_LB: must be "true" or "false" (got "yes")'],
    [
      "FLOW_TABLE_PREFIX",
      "Flow prod",
      'FLOW_TABLE_PREFIX: must be at most 246 letters, digits, "_", "-" or "." (got "Flow prod")',
    ],
    [
      "FLOW_TABLE_PREFIX",
      "x".repeat(247),
      `FLOW_TABLE_PREFIX: must be at most 246 letters, digits, "_", "-" or "." (got "${"x".repeat(247)}")`,
    ],
    [
      "FLOW_CHILD_TASK_STATE_MACHINE_ARN",
      "child-task",
      'FLOW_CHILD_TASK_STATE_MACHINE_ARN: must be a state machine ARN (arn:aws:states:<region>:<account>:stateMachine:<name>) (got "child-task")',
    ],
    [
      "AWS_ENDPOINT_URL",
      "localhost:5000",
      'AWS_ENDPOINT_URL: must be an http:// or https:// URL (got "localhost:5000")',
    ],
    ["AWS_ENDPOINT_URL", "ftp://x", 'AWS_ENDPOINT_URL: must be an http:// or https:// URL (got "ftp://x")'],
    ["FLOW_LOCAL_SECRETS_KEY", "abc", "FLOW_LOCAL_SECRETS_KEY: must be 64 hexadecimal digits"],
    ["FLOW_LOCAL_SECRETS_KEY", `${KEY_HEX}00`, "FLOW_LOCAL_SECRETS_KEY: must be 64 hexadecimal digits"],
    [
      "FLOW_LOCAL_SECRETS_KEY",
      `${KEY_HEX.slice(1)}g`,
      "FLOW_LOCAL_SECRETS_KEY: must be 64 hexadecimal digits",
    ],
  ])("%s=%s → %s", (name, value, message) => {
    expect(problems(() => readGrpcFrontConfig({ ...front, [name]: value }))).toEqual([message]);
  });

  it("accepts the edges of each rule", () => {
    expect(readGrpcFrontConfig({ ...front, FLOW_PORT: "0" }).port).toBe(0);
    expect(readGrpcFrontConfig({ ...front, FLOW_PORT: "65535" }).port).toBe(65_535);
    expect(
      readGrpcFrontConfig({ ...front, FLOW_PLAINTEXT_BEHIND_LB: "false" }).plaintextBehindLoadBalancer,
    ).toBe(false);
    expect(readGrpcFrontConfig({ ...front, FLOW_TABLE_PREFIX: "x".repeat(246) }).tablePrefix).toHaveLength(
      246,
    );
    expect(readGrpcFrontConfig({ ...front, AWS_ENDPOINT_URL: "http://127.0.0.1:5000" }).awsEndpoint).toBe(
      "http://127.0.0.1:5000",
    );
    const govCloud = "arn:aws-us-gov:states:us-gov-west-1:123456789012:stateMachine:Flow_x-1";
    expect(
      readGrpcFrontConfig({ ...front, FLOW_CHILD_TASK_STATE_MACHINE_ARN: govCloud }).childTaskStateMachineArn,
    ).toBe(govCloud);
  });

  it("a secret is never echoed in a message", () => {
    const secret = `${KEY_HEX.slice(2)}zz`;
    expect(
      problems(() => readGrpcFrontConfig({ ...front, FLOW_LOCAL_SECRETS_KEY: secret })).join(),
    ).not.toContain(secret);
  });

  it("every problem at once, in declaration order, cross-setting ones last", () => {
    expect(
      problems(() =>
        readGrpcFrontConfig({
          FLOW_PORT: "abc",
          FLOW_TLS_CERT: "c.pem",
          AWS_ENDPOINT_URL: "moto",
        }),
      ),
    ).toEqual([
      "FLOW_TABLE_PREFIX: is required",
      'AWS_ENDPOINT_URL: must be an http:// or https:// URL (got "moto")',
      "FLOW_CHILD_TASK_STATE_MACHINE_ARN: is required",
      "FLOW_IMAGE_BUCKET: is required",
      'FLOW_PORT: must be an integer from 0 to 65535 (got "abc")',
      "FLOW_TLS_KEY: is required with FLOW_TLS_CERT",
      "FLOW_AUTHZ_POLICY: is required (or FLOW_AUTHZ_POLICY_TEXT, or FLOW_AUTHZ_POLICY_PARAMETER): the front serves no call without an access policy",
    ]);
  });

  it("a blank variable is unset: a required one is missing, an optional one takes its default", () => {
    expect(problems(() => readGrpcFrontConfig({ ...front, FLOW_TABLE_PREFIX: "  " }))).toEqual([
      "FLOW_TABLE_PREFIX: is required",
    ]);
    expect(readGrpcFrontConfig({ ...front, FLOW_PORT: "", FLOW_HOST: " " })).toMatchObject({
      port: 50_051,
      host: "127.0.0.1",
    });
  });

  it("values are trimmed", () => {
    expect(
      readGrpcFrontConfig({ ...front, FLOW_PORT: " 8080 ", FLOW_TABLE_PREFIX: "Flow-dev- " }),
    ).toMatchObject({
      port: 8080,
      tablePrefix: "Flow-dev-",
    });
  });

  it("server reflection: off unless FLOW_SERVER_REFLECTION=true; not a boolean, refused naming it", () => {
    expect(readGrpcFrontConfig(front).serverReflection).toBe(false);
    expect(readGrpcFrontConfig({ ...front, FLOW_SERVER_REFLECTION: "true" }).serverReflection).toBe(true);
    expect(() => readGrpcFrontConfig({ ...front, FLOW_SERVER_REFLECTION: "on" })).toThrow(
      /FLOW_SERVER_REFLECTION/,
    );
  });

  it("the configuration is frozen, nested parts too", () => {
    const config = readGrpcFrontConfig({ ...front, FLOW_TLS_CERT: "c.pem", FLOW_TLS_KEY: "k.pem" });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.build)).toBe(true);
    expect(Object.isFrozen(config.tls)).toBe(true);
    expect(() => {
      (config as { port: number }).port = 1;
    }).toThrow(TypeError);
  });

  it("reads exactly its names and requires the tables, the state machine and the image bucket", () => {
    expect([...readGrpcFrontConfig.names].sort()).toEqual(
      [
        ENV.tablePrefix,
        ENV.awsEndpoint,
        ENV.awsRegion,
        ENV.childTaskStateMachineArn,
        ...CHILD_TASK_NAMES,
        ENV.secretsKmsKeyId,
        ENV.localSecretsKeyHex,
        ENV.requestMacKmsKeyId,
        ENV.host,
        ENV.port,
        ENV.tlsCert,
        ENV.tlsKey,
        ENV.tlsClientCa,
        ENV.plaintextBehindLoadBalancer,
        ENV.tlsSelfSigned,
        ENV.trustLoadBalancerClientCert,
        ENV.protoDir,
        ENV.serverReflection,
        ENV.maxInFlightCalls,
        ENV.maxConcurrentCreates,
        ENV.version,
        ENV.gitCommit,
        ENV.buildTime,
        ENV.authzPolicy,
        ENV.authzPolicyText,
        ENV.authzPolicyParameter,
        ENV.authzPolicyPollSeconds,
        ENV.imageBucket,
        ENV.externalChecks,
      ].sort(),
    );
    expect(readGrpcFrontConfig.required).toEqual([
      ENV.tablePrefix,
      ENV.childTaskStateMachineArn,
      ENV.imageBucket,
    ]);
  });
});
