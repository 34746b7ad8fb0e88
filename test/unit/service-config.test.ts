/**
 * The deployables' configuration readers (src/service/config.ts on src/service/env-reader.ts):
 * every rule with its exact message, every problem at once, defaults, blank = unset, frozen.
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_CHILD_TASK_SETTINGS } from "../../src/app/child-task/settings.js";
import {
  ENV,
  readBmcResultConfig,
  readDispatchConfig,
  readEventPublisherConfig,
  readGrpcFrontConfig,
  readTaskStepsConfig,
} from "../../src/service/config.js";
import { ConfigError } from "../../src/service/env-reader.js";

const DEPLOYMENT_DEFAULTS = {
  maxParallel: DEFAULT_CHILD_TASK_SETTINGS.maxParallel,
  updateTimeoutSeconds: DEFAULT_CHILD_TASK_SETTINGS.updateTimeoutSeconds,
  preflightTimeoutSeconds: DEFAULT_CHILD_TASK_SETTINGS.preflightTimeoutSeconds,
  readinessTimeoutSeconds: DEFAULT_CHILD_TASK_SETTINGS.readinessTimeoutSeconds,
};
const CHILD_TASK_NAMES = [
  ENV.childTaskMaxParallel,
  ENV.updateTimeoutSeconds,
  ENV.preflightTimeoutSeconds,
  ENV.readinessTimeoutSeconds,
];
const ARN = "arn:aws:states:eu-west-1:123456789012:stateMachine:Flow-prod-child-task";
const KEY_HEX = "0123456789abcdef".repeat(4);
const POLICY = 'bindings: [{ subjects: ["cn:admin"], roles: [admin] }]';
const front = {
  FLOW_TABLE_PREFIX: "Flow-prod-",
  FLOW_CHILD_TASK_STATE_MACHINE_ARN: ARN,
  FLOW_AUTHZ_POLICY_TEXT: POLICY,
  FLOW_IMAGE_BUCKET: "flow-prod-images",
};
const steps = {
  FLOW_TABLE_PREFIX: "Flow-prod-",
  FLOW_IOT_DATA_ENDPOINT: "https://abc-ats.iot.eu-west-1.amazonaws.com",
  FLOW_IMAGE_BUCKET: "flow-prod-images",
};

/** The problems of a reading that must fail. */
function problems(read: () => unknown): readonly string[] {
  try {
    read();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).name).toBe("ConfigError");
    expect((error as ConfigError).message).toBe((error as ConfigError).problems.join("; "));
    return (error as ConfigError).problems;
  }
  throw new Error("the reading succeeded");
}

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

describe("service config: where the AWS clients go", () => {
  it.each([
    ["gRPC front", () => readGrpcFrontConfig, front],
    ["dispatcher", () => readDispatchConfig, front],
    ["task-steps", () => readTaskStepsConfig, steps],
    ["bmc-result", () => readBmcResultConfig, { FLOW_TABLE_PREFIX: "Flow-prod-" }],
    ["event-publisher", () => readEventPublisherConfig, {}],
  ] as const)("%s: AWS_REGION and AWS_ENDPOINT_URL are read and checked by its reader", (_, reader, base) => {
    const read = reader() as (env: Record<string, string>) => { awsRegion?: string; awsEndpoint?: string };
    expect(
      read({ ...base, AWS_REGION: "eu-west-1", AWS_ENDPOINT_URL: "http://127.0.0.1:5000" }),
    ).toMatchObject({
      awsRegion: "eu-west-1",
      awsEndpoint: "http://127.0.0.1:5000",
    });
    expect(read({ ...base })).not.toHaveProperty("awsRegion");
    expect(problems(() => read({ ...base, AWS_REGION: "Europe", AWS_ENDPOINT_URL: "moto" }))).toEqual([
      'AWS_ENDPOINT_URL: must be an http:// or https:// URL (got "moto")',
      'AWS_REGION: must be an AWS region name such as eu-west-1 (got "Europe")',
    ]);
  });
});

describe("service config: the secrets cipher", () => {
  it("KMS in AWS; a local AES key off AWS; KMS wins when both are set; neither: none", () => {
    expect(readTaskStepsConfig({ ...steps, FLOW_SECRETS_KMS_KEY_ID: "alias/flow" }).secrets).toEqual({
      kind: "kms",
      keyId: "alias/flow",
    });
    expect(readTaskStepsConfig({ ...steps, FLOW_LOCAL_SECRETS_KEY: KEY_HEX }).secrets).toEqual({
      kind: "local-aes-256-gcm",
      keyHex: KEY_HEX,
    });
    expect(
      readTaskStepsConfig({
        ...steps,
        FLOW_SECRETS_KMS_KEY_ID: "alias/flow",
        FLOW_LOCAL_SECRETS_KEY: KEY_HEX,
      }).secrets,
    ).toEqual({ kind: "kms", keyId: "alias/flow" });
    expect(readTaskStepsConfig(steps).secrets).toBeUndefined();
  });
});

describe("service config: the Lambdas", () => {
  it("dispatcher and stream-evaluator: the tables and the state machine", () => {
    expect(readDispatchConfig(front)).toEqual({
      tablePrefix: "Flow-prod-",
      childTaskStateMachineArn: ARN,
      childTask: DEPLOYMENT_DEFAULTS,
    });
    expect(problems(() => readDispatchConfig({}))).toEqual([
      "FLOW_TABLE_PREFIX: is required",
      "FLOW_CHILD_TASK_STATE_MACHINE_ARN: is required",
    ]);
    expect(readDispatchConfig.names).toEqual([
      ENV.tablePrefix,
      ENV.awsEndpoint,
      ENV.awsRegion,
      ENV.childTaskStateMachineArn,
      ...CHILD_TASK_NAMES,
    ]);
  });

  it.each([
    ["dispatcher", readDispatchConfig],
    ["gRPC front", readGrpcFrontConfig],
  ] as const)("%s: the child task's deployment settings, read and bounded", (_, read) => {
    const set = {
      ...front,
      FLOW_CHILD_TASK_MAX_PARALLEL: "39",
      FLOW_UPDATE_TIMEOUT_SECONDS: "3600",
      FLOW_PREFLIGHT_TIMEOUT_SECONDS: "120",
      FLOW_READINESS_TIMEOUT_SECONDS: "86400",
    };
    expect(read(set).childTask).toEqual({
      maxParallel: 39,
      updateTimeoutSeconds: 3600,
      preflightTimeoutSeconds: 120,
      readinessTimeoutSeconds: 86_400,
    });
    expect(
      problems(() =>
        read({
          ...front,
          FLOW_CHILD_TASK_MAX_PARALLEL: "0",
          FLOW_UPDATE_TIMEOUT_SECONDS: "86401",
          FLOW_PREFLIGHT_TIMEOUT_SECONDS: "1.5",
          FLOW_READINESS_TIMEOUT_SECONDS: "-1",
        }),
      ),
    ).toEqual([
      'FLOW_CHILD_TASK_MAX_PARALLEL: must be an integer from 1 to 1000 (got "0")',
      'FLOW_UPDATE_TIMEOUT_SECONDS: must be an integer from 1 to 86400 (got "86401")',
      'FLOW_PREFLIGHT_TIMEOUT_SECONDS: must be an integer from 1 to 86400 (got "1.5")',
      'FLOW_READINESS_TIMEOUT_SECONDS: must be an integer from 1 to 86400 (got "-1")',
    ]);
  });

  it("task-steps: the IoT endpoint is required and a URL; the dispatcher's name optional", () => {
    expect(readTaskStepsConfig({ ...steps, FLOW_DISPATCHER_FUNCTION_NAME: "Flow-prod-dispatcher" })).toEqual({
      tablePrefix: "Flow-prod-",
      iotDataEndpoint: "https://abc-ats.iot.eu-west-1.amazonaws.com",
      imageBucket: "flow-prod-images",
      secrets: undefined,
      dispatcherFunctionName: "Flow-prod-dispatcher",
      externalChecks: [],
      legacyBmcTopics: false,
    });
    expect(readTaskStepsConfig({ ...steps, FLOW_LEGACY_BMC_TOPICS: "true" }).legacyBmcTopics).toBe(true);
    expect(problems(() => readTaskStepsConfig({ ...steps, FLOW_LEGACY_BMC_TOPICS: "yes" }))).toEqual([
      'FLOW_LEGACY_BMC_TOPICS: must be "true" or "false" (got "yes")',
    ]);
    expect(problems(() => readTaskStepsConfig({ FLOW_TABLE_PREFIX: "p-" }))).toEqual([
      "FLOW_IOT_DATA_ENDPOINT: is required",
      "FLOW_IMAGE_BUCKET: is required",
    ]);
    expect(
      problems(() =>
        readTaskStepsConfig({ ...steps, FLOW_IOT_DATA_ENDPOINT: "abc-ats.iot.eu-west-1.amazonaws.com" }),
      ),
    ).toEqual([
      'FLOW_IOT_DATA_ENDPOINT: must be an http:// or https:// URL (got "abc-ats.iot.eu-west-1.amazonaws.com")',
    ]);
    expect(readTaskStepsConfig.required).toEqual([ENV.tablePrefix, ENV.iotDataEndpoint, ENV.imageBucket]);
  });

  it("external checks: a Lambda ARN or an HTTPS endpoint by name, read by task-steps (the checks) and the front (their names); every problem at once, a command refused", () => {
    const checks = JSON.stringify({
      "dcgm-diag": {
        lambda: "arn:aws:lambda:eu-west-1:123456789012:function:dcgm-diag",
        timeoutSeconds: 1800,
      },
      "burn-in": { https: "https://checks.example.com/burn-in" },
    });
    expect(readTaskStepsConfig({ ...steps, FLOW_EXTERNAL_CHECKS: checks }).externalChecks).toEqual([
      {
        name: "dcgm-diag",
        target: { kind: "lambda", functionArn: "arn:aws:lambda:eu-west-1:123456789012:function:dcgm-diag" },
        timeoutSeconds: 1800,
      },
      {
        name: "burn-in",
        target: { kind: "https", url: "https://checks.example.com/burn-in" },
        timeoutSeconds: 3600,
      },
    ]);
    expect(readGrpcFrontConfig({ ...front, FLOW_EXTERNAL_CHECKS: checks }).externalChecks).toEqual([
      "dcgm-diag",
      "burn-in",
    ]);
    const bad = JSON.stringify({
      "Burn In": { https: "https://x.example" },
      local: { command: ["./check.sh"] },
      plain: { https: "http://checks.example.com" },
      both: { lambda: "arn:aws:lambda:eu-west-1:123456789012:function:f", https: "https://x.example" },
      slow: { https: "https://x.example", timeoutSeconds: 0 },
    });
    expect(problems(() => readTaskStepsConfig({ ...steps, FLOW_EXTERNAL_CHECKS: bad }))).toEqual([
      `FLOW_EXTERNAL_CHECKS: "Burn In": must be 1 to 63 lowercase letters, digits, '-' and '_', starting with a letter or digit, local.command: a command check runs only in the local stack (in AWS: lambda or https), local: needs exactly one of lambda, https (got 0), plain.https: must be an https:// URL without credentials, both: needs exactly one of lambda, https (got 2), slow.timeoutSeconds: must be a whole number of seconds from 1 to 86400`,
    ]);
    expect(problems(() => readTaskStepsConfig({ ...steps, FLOW_EXTERNAL_CHECKS: "[1]" }))).toEqual([
      "FLOW_EXTERNAL_CHECKS: must be a JSON object of checks by name",
    ]);
  });

  it.each([
    ["Flow-prod-dispatcher", true],
    ["arn:aws:lambda:eu-west-1:123456789012:function:Flow-prod-dispatcher", true],
    ["arn:aws:lambda:eu-west-1:123456789012:function:Flow-prod-dispatcher:live", true],
    ["Flow prod dispatcher", false],
    ["x".repeat(65), false],
  ])("bmc-result: FLOW_DISPATCHER_FUNCTION_NAME=%s accepted: %s", (name, accepted) => {
    const read = () => readBmcResultConfig({ FLOW_TABLE_PREFIX: "p-", FLOW_DISPATCHER_FUNCTION_NAME: name });
    if (accepted) expect(read().dispatcherFunctionName).toBe(name);
    else
      expect(problems(read)).toEqual([
        `FLOW_DISPATCHER_FUNCTION_NAME: must be a Lambda function name or ARN (got ${JSON.stringify(name)})`,
      ]);
  });

  it("event-publisher: the bus (default: the account's default bus), a name or an ARN; nothing required", () => {
    expect(readEventPublisherConfig({})).toEqual({ eventBusName: "default" });
    expect(
      readEventPublisherConfig({
        FLOW_EVENT_BUS_NAME: "flow-rollouts",
        AWS_ENDPOINT_URL: "http://127.0.0.1:5000",
      }),
    ).toEqual({ eventBusName: "flow-rollouts", awsEndpoint: "http://127.0.0.1:5000" });
    const arn = "arn:aws:events:eu-west-1:123456789012:event-bus/ops";
    expect(readEventPublisherConfig({ FLOW_EVENT_BUS_NAME: arn }).eventBusName).toBe(arn);
    expect(problems(() => readEventPublisherConfig({ FLOW_EVENT_BUS_NAME: "my bus" }))).toEqual([
      'FLOW_EVENT_BUS_NAME: must be an EventBridge bus name or ARN (got "my bus")',
    ]);
    expect(readEventPublisherConfig.names).toEqual([ENV.awsEndpoint, ENV.awsRegion, ENV.eventBusName]);
    expect(readEventPublisherConfig.required).toEqual([]);
  });

  it("bmc-result: the tables alone are required", () => {
    expect(readBmcResultConfig({ FLOW_TABLE_PREFIX: "p-" })).toEqual({ tablePrefix: "p-" });
    expect(readBmcResultConfig.required).toEqual([ENV.tablePrefix]);
  });
});
