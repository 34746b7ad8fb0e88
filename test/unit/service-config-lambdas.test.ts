/**
 * The Lambdas' configuration readers (src/service/config.ts), where the AWS clients go, and the
 * secrets cipher: every rule with its exact message, defaults, blank = unset.
 */
import { describe, expect, it } from "vitest";
import {
  ENV,
  readBmcResultConfig,
  readDispatchConfig,
  readEventPublisherConfig,
  readTaskStepsConfig,
} from "../../src/service/config.js";
import { readGrpcFrontConfig } from "../../src/service/config-front.js";
import {
  ARN,
  CHILD_TASK_NAMES,
  DEPLOYMENT_DEFAULTS,
  front,
  KEY_HEX,
  problems,
} from "../support/service-config-cases.js";

const steps = {
  FLOW_TABLE_PREFIX: "Flow-prod-",
  FLOW_IOT_DATA_ENDPOINT: "https://abc-ats.iot.eu-west-1.amazonaws.com",
  FLOW_IMAGE_BUCKET: "flow-prod-images",
};

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
