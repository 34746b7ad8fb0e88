/**
 * Every composition root builds from a valid configuration without I/O: the AWS SDK clients are
 * mocked, and no command reaches any of them while a root is built (clients only send when used).
 * The `*FromEnvironment` functions the entries call read process.env once and fail at start with
 * every problem named.
 */
import { X509Certificate } from "node:crypto";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { IoTDataPlaneClient } from "@aws-sdk/client-iot-data-plane";
import { KMSClient } from "@aws-sdk/client-kms";
import { LambdaClient } from "@aws-sdk/client-lambda";
import { SendTaskSuccessCommand, SFNClient } from "@aws-sdk/client-sfn";
import { DynamoDBDocumentClient, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { KmsEnvelopeCipher } from "../../src/adapters/kms/kms-cipher.js";
import { LambdaRunWaker } from "../../src/adapters/lambda/lambda-waker.js";
import { StepFunctionsWaveWaker } from "../../src/adapters/stepfunctions/sfn-wave-waker.js";
import { noopMetrics, silentLogger } from "../../src/app/observability.js";
import { commandRequestId, entryKey, updateAddress } from "../../src/domain/command-sets.js";
import { awsChildTasks } from "../../src/service/aws.js";
import {
  readBmcResultConfig,
  readDispatchConfig,
  readEventPublisherConfig,
  readTaskStepsConfig,
} from "../../src/service/config.js";
import { readGrpcFrontConfig } from "../../src/service/config-front.js";
import { ConfigError } from "../../src/service/env-reader.js";
import { composeGrpcFront } from "../../src/service/grpc-front.js";
import { bmcResultFromEnvironment, composeBmcResultLambda } from "../../src/service/lambdas/bmc-result.js";
import { composeDispatcherLambda, dispatcherFromEnvironment } from "../../src/service/lambdas/dispatcher.js";
import {
  composeEventPublisherLambda,
  eventPublisherFromEnvironment,
} from "../../src/service/lambdas/event-publisher.js";
import { composeStreamEvaluatorLambda } from "../../src/service/lambdas/stream-evaluator.js";
import { composeTaskStepsLambda, taskStepsFromEnvironment } from "../../src/service/lambdas/task-steps.js";

/** What a root observes with, silent: these tests look at the parts, not at their lines. */
const quiet = { logger: silentLogger, metrics: noopMetrics };
const ARN = "arn:aws:states:eu-west-1:123456789012:stateMachine:Flow-test-child-task";
const base = {
  FLOW_TABLE_PREFIX: "Flow-test-",
  AWS_REGION: "eu-west-1",
  FLOW_IMAGE_BUCKET: "flow-test-images",
};
const POLICY = 'bindings: [{ subjects: ["cn:admin"], roles: [admin] }]';

const eventBridge = mockClient(EventBridgeClient);
const documents = mockClient(DynamoDBDocumentClient);
const stepFunctions = mockClient(SFNClient);
const mocks = [
  mockClient(DynamoDBClient),
  documents,
  stepFunctions,
  mockClient(KMSClient),
  mockClient(LambdaClient),
  mockClient(IoTDataPlaneClient),
  eventBridge,
];
/** Every command any client was asked to send, by client. */
const sent = () => mocks.flatMap((mock) => mock.calls() as unknown[]);
// Class-wide mocks: restored once the file is done, so the next file in this worker (the unit
// project shares its workers between files) gets real clients.
afterAll(() => {
  for (const mock of mocks) mock.restore();
});

beforeEach(() => {
  for (const mock of mocks) mock.reset();
});
afterEach(() => {
  vi.unstubAllEnvs();
});

describe("composition roots: built from a valid configuration without I/O", () => {
  it("the gRPC front: the API, and the server options from the configuration", () => {
    const config = readGrpcFrontConfig({
      ...base,
      FLOW_CHILD_TASK_STATE_MACHINE_ARN: ARN,
      FLOW_AUTHZ_POLICY_TEXT: POLICY,
      FLOW_SECRETS_KMS_KEY_ID: "alias/flow",
      FLOW_REQUEST_MAC_KMS_KEY_ID: "alias/flow-mac",
      FLOW_HOST: "0.0.0.0",
      FLOW_TLS_SELF_SIGNED: "true",
      FLOW_PROTO_DIR: "/app/proto",
      FLOW_SERVER_REFLECTION: "true",
      FLOW_VERSION: "1.4.0",
      FLOW_GIT_COMMIT: "abc1234",
    });
    const front = composeGrpcFront(config);
    expect(front.api.version()).toEqual({ version: "1.4.0", gitCommit: "abc1234", buildTime: "" });
    expect(front.server).toMatchObject({
      api: front.api,
      host: "0.0.0.0",
      port: 50_051,
      allowInsecureNonLoopback: false,
      trustLoadBalancerClientCert: false,
      protoDir: "/app/proto",
      drainMs: 5_000,
    });
    const trusting = readGrpcFrontConfig({
      ...base,
      FLOW_CHILD_TASK_STATE_MACHINE_ARN: ARN,
      FLOW_AUTHZ_POLICY_TEXT: POLICY,
      FLOW_PLAINTEXT_BEHIND_LB: "true",
      FLOW_TRUST_LB_CLIENT_CERT: "true",
    });
    expect(composeGrpcFront(trusting).server.trustLoadBalancerClientCert).toBe(true);
    // The Fargate task serves TLS to the load balancer with a certificate it made itself.
    const tls = front.server.tls as { certPem: string; keyPem: string };
    expect(new X509Certificate(tls.certPem).subject).toBe("CN=flow-front");
    expect(tls.keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    // Reflection (which lists the admin service to anyone) only when the deployment asks for it.
    expect(composeGrpcFront(trusting).server.protoDir).toBe(false);
    const reflecting = readGrpcFrontConfig({
      ...base,
      FLOW_CHILD_TASK_STATE_MACHINE_ARN: ARN,
      FLOW_AUTHZ_POLICY_TEXT: POLICY,
      FLOW_PROTO_DIR: "/app/proto",
      FLOW_SERVER_REFLECTION: "true",
    });
    expect(composeGrpcFront(reflecting).server.protoDir).toBe("/app/proto");
    expect(front.server.access?.policy()?.bindings.map((b) => b.roles)).toEqual([["admin"]]);
    expect(composeGrpcFront(reflecting).server.tls).toBeUndefined();
    expect(sent()).toEqual([]);
  });

  it("the gRPC front refuses a bad access policy before it builds anything, every problem named", () => {
    const config = readGrpcFrontConfig({
      ...base,
      FLOW_CHILD_TASK_STATE_MACHINE_ARN: ARN,
      FLOW_AUTHZ_POLICY_TEXT: "bindings: [{ subjects: [], roles: [root] }]",
    });
    expect(() => composeGrpcFront(config)).toThrow(
      'FLOW_AUTHZ_POLICY_TEXT: bindings[0].subjects: must not be empty\nFLOW_AUTHZ_POLICY_TEXT: bindings[0].roles[0]: unknown role "root" (roles: viewer, operator, approver, admin)',
    );
    expect(sent()).toEqual([]);
  });

  it("the gRPC front with TLS hands both files (and the client CA) to the server", () => {
    const config = readGrpcFrontConfig({
      ...base,
      FLOW_CHILD_TASK_STATE_MACHINE_ARN: ARN,
      FLOW_AUTHZ_POLICY_TEXT: POLICY,
      FLOW_TLS_CERT: "c.pem",
      FLOW_TLS_KEY: "k.pem",
      FLOW_TLS_CLIENT_CA: "ca.pem",
    });
    expect(composeGrpcFront(config).server.tls).toEqual({
      certFile: "c.pem",
      keyFile: "k.pem",
      clientCaFile: "ca.pem",
    });
  });

  it("the dispatcher and the stream evaluator", async () => {
    const config = readDispatchConfig({ ...base, FLOW_CHILD_TASK_STATE_MACHINE_ARN: ARN });
    const { dispatcher } = composeDispatcherLambda(config);
    expect(typeof dispatcher.tick).toBe("function");
    const { handle } = composeStreamEvaluatorLambda(config);
    expect(sent()).toEqual([]);
    // An empty batch decides nothing and reads nothing.
    expect(await handle({ Records: [] })).toEqual({ batchItemFailures: [] });
    expect(sent()).toEqual([]);
  });

  it("task-steps", () => {
    const { steps } = composeTaskStepsLambda(
      readTaskStepsConfig({
        ...base,
        FLOW_IOT_DATA_ENDPOINT: "https://abc-ats.iot.eu-west-1.amazonaws.com",
        FLOW_SECRETS_KMS_KEY_ID: "alias/flow",
        FLOW_DISPATCHER_FUNCTION_NAME: "Flow-test-dispatcher",
      }),
    );
    expect(typeof steps.handle).toBe("function");
    expect(sent()).toEqual([]);
  });

  it("the event publisher: a batch's INSERTed events go to the configured bus, nothing else is read", async () => {
    const { handle } = composeEventPublisherLambda(
      readEventPublisherConfig({ FLOW_EVENT_BUS_NAME: "flow-rollouts" }),
    );
    expect(sent()).toEqual([]);
    expect(await handle({ Records: [] })).toEqual({ batchItemFailures: [] });
    expect(sent()).toEqual([]);
    eventBridge.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [{ EventId: "e-1" }] });
    const image = {
      runId: { S: "r1" },
      eventKey: { S: "001700000000000#00" },
      at: { N: "1700000000000" },
      seq: { N: "0" },
      kind: { S: "STARTED" },
      runName: { S: "canary" },
      status: { S: "RUNNING" },
      reason: { S: "NONE" },
      message: { S: "operation run started" },
      phaseIndex: { N: "0" },
      totalPhases: { N: "1" },
      stats: {
        M: Object.fromEntries(
          ["current", "cumulative"].map((scope) => [
            scope,
            {
              M: {
                phaseIndex: { N: "0" },
                selectedTargets: { N: "1" },
                outcomes: {
                  M: {
                    completed: { N: "0" },
                    failed: { N: "0" },
                    terminated: { N: "0" },
                    skipped: { N: "0" },
                  },
                },
              },
            },
          ]),
        ),
      },
    };
    const out = await handle({
      Records: [{ eventName: "INSERT", dynamodb: { NewImage: image, SequenceNumber: "7" } }],
    });
    expect(out).toEqual({ batchItemFailures: [] });
    const entries = eventBridge.commandCalls(PutEventsCommand).map((c) => c.args[0].input.Entries);
    expect(entries).toEqual([
      [expect.objectContaining({ EventBusName: "flow-rollouts", Source: "flow.operation-runs" })],
    ]);
  });

  it("bmc-result", async () => {
    const { receiver } = composeBmcResultLambda(readBmcResultConfig(base));
    expect(await receiver.receive({ kind: "invalid" })).toEqual({ outcome: "invalid" });
    expect(sent()).toEqual([]);
  });
});

describe("the roots that wake waves: task-steps and bmc-result send SendTaskSuccess", () => {
  const TASK = "7a5c0000-0000-4000-8000-000000000001";
  const address = updateAddress(TASK, 0, 2);
  const key = entryKey(address, "c1");
  /** The wave's part as the write that stores its last result reads it back. */
  const answered = {
    Attributes: {
      id: `cmds#${TASK}#u.2`,
      taskId: TASK,
      family: "u",
      part: 2,
      w: { t: "tk-1", k: [key] },
      [`e_${key}`]: { s: 1, d: 9_000_000_000_000, r: { ok: true, version: "2.0.0" }, rt: 5 },
    },
  };
  const tokens = () =>
    stepFunctions.commandCalls(SendTaskSuccessCommand).map((c) => c.args[0].input.taskToken);

  it("task-steps: a wave whose results are in when its wait begins is woken by its own step", async () => {
    documents.on(UpdateCommand).resolves(answered);
    stepFunctions.on(SendTaskSuccessCommand).resolves({});
    const { steps } = composeTaskStepsLambda(
      readTaskStepsConfig({ ...base, FLOW_IOT_DATA_ENDPOINT: "https://abc-ats.iot.eu-west-1.amazonaws.com" }),
    );
    const wave = {
      stage: 2,
      step: 0,
      action: "UPDATE_FIRMWARE" as const,
      attempt: 0,
      timeoutSeconds: 60,
      part: 2,
      componentIds: ["c1"],
      types: { c1: "COMPUTE" as const },
      versions: { c1: "2.0.0" },
      deadline: 9_000_000_000_000,
      polls: 0,
      waitSeconds: 10,
      done: false,
    };
    expect(
      await steps.handle({
        step: "awaitWave",
        taskId: TASK,
        token: "tk-1",
        wave,
      }),
    ).toEqual({ woken: true });
    expect(tokens()).toEqual(["tk-1"]);
  });

  it("bmc-result: the report that stores a wave's last result wakes it", async () => {
    documents.on(UpdateCommand).resolves(answered);
    stepFunctions.on(SendTaskSuccessCommand).resolves({});
    const { receiver } = composeBmcResultLambda(readBmcResultConfig(base));
    const message = {
      v: 1,
      type: "result",
      requestId: commandRequestId(address, "c1"),
      ok: true,
      version: "2.0.0",
      componentId: "c1",
    };
    expect(await receiver.receive({ kind: "bmc-report", message })).toEqual({ outcome: "recorded" });
    expect(tokens()).toEqual(["tk-1"]);
  });
});

describe("awsChildTasks: the parts the configuration names", () => {
  it("a KMS key → KMS envelope encryption, sealing for the BMC under the key's id", async () => {
    const { parts } = awsChildTasks(
      { tablePrefix: "p-", secrets: { kind: "kms", keyId: "alias/flow" } },
      quiet,
    );
    expect((parts.secrets as unknown as { cipher: unknown }).cipher).toBeInstanceOf(KmsEnvelopeCipher);
    expect(sent()).toEqual([]);
  });

  it("a local AES key off AWS: the sealer names it local-aes-256-gcm", async () => {
    const { parts } = awsChildTasks(
      { tablePrefix: "p-", secrets: { kind: "local-aes-256-gcm", keyHex: "ab".repeat(32) } },
      quiet,
    );
    expect((await parts.sealer.seal("pw", { rackId: "k1", componentId: "c1" }, "r1")).keyId).toBe(
      "local-aes-256-gcm",
    );
  });

  it("no cipher: sealing credentials is refused with the reason", async () => {
    const { parts } = awsChildTasks({ tablePrefix: "p-" }, quiet);
    await expect(parts.sealer.seal("pw", { rackId: "k1", componentId: "c1" }, "r1")).rejects.toThrow(
      "firmware credentials need a cipher; none is configured",
    );
  });

  it("a dispatcher name → outcomes wake the dispatcher Lambda; none → no waker", () => {
    const named = awsChildTasks({ tablePrefix: "p-", dispatcherFunctionName: "Flow-test-dispatcher" }, quiet);
    expect(named.parts.outcome.waker).toBeInstanceOf(LambdaRunWaker);
    expect(awsChildTasks({ tablePrefix: "p-" }, quiet).parts.outcome.waker).toBeUndefined();
  });

  it("wakesWaves (task-steps, bmc-result) → a Step Functions wave waker; the other deployables build none", () => {
    expect(awsChildTasks({ tablePrefix: "p-" }, quiet, { wakesWaves: true }).parts.waveWaker).toBeInstanceOf(
      StepFunctionsWaveWaker,
    );
    expect(awsChildTasks({ tablePrefix: "p-" }, quiet).parts.waveWaker).toBeUndefined();
  });

  it("the tables are named from the prefix", () => {
    expect(awsChildTasks({ tablePrefix: "Flow-prod-" }, quiet).names.runs).toBe("Flow-prod-Runs");
  });
});

describe("composition roots: the environment, read once at start", () => {
  it("a valid environment builds the Lambda", () => {
    vi.stubEnv("FLOW_TABLE_PREFIX", "Flow-test-");
    vi.stubEnv("FLOW_CHILD_TASK_STATE_MACHINE_ARN", ARN);
    expect(typeof dispatcherFromEnvironment().dispatcher.dispatchRun).toBe("function");
    expect(typeof bmcResultFromEnvironment().receiver.receive).toBe("function");
    expect(typeof eventPublisherFromEnvironment().handle).toBe("function");
  });

  it("an invalid one fails at start with every problem", () => {
    vi.stubEnv("FLOW_IMAGE_BUCKET", "flow-test-images");
    vi.stubEnv("FLOW_TABLE_PREFIX", "");
    vi.stubEnv("FLOW_IOT_DATA_ENDPOINT", "iot");
    expect(() => taskStepsFromEnvironment()).toThrow(
      new ConfigError([
        "FLOW_TABLE_PREFIX: is required",
        'FLOW_IOT_DATA_ENDPOINT: must be an http:// or https:// URL (got "iot")',
      ]),
    );
  });
});
