/**
 * The CDK app and the composition roots agree on the environment: every variable the stack sets
 * on a deployable is one its root's reader reads (src/service/config.ts, config-front.ts), every variable a reader
 * requires is set, and what the stack sets passes the reader's rules (tokens replaced by values
 * of the shape CloudFormation resolves them to).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CfnElement } from "aws-cdk-lib";
import { Annotations, Match, type Template } from "aws-cdk-lib/assertions";
import { beforeAll, describe, expect, it } from "vitest";
import {
  BUILD_FACTS,
  ENV,
  readBmcResultConfig,
  readDispatchConfig,
  readEventPublisherConfig,
  readTaskStepsConfig,
} from "../../src/service/config.js";
import { readGrpcFrontConfig } from "../../src/service/config-front.js";
import type { ConfigReader } from "../../src/service/env-reader.js";
import { type BuiltStack, buildStack, PROD_CONTEXT, sharedStack } from "../fixtures/infra-stack.js";

type Resource = { Type: string; Properties: Record<string, unknown> };

/** The stack's access policy parameter (a CfnParameter of the SSM construct). */
function accessPolicyParameterOf(built: BuiltStack): CfnElement {
  return built.stack.node.findChild("AccessPolicy").node.defaultChild as CfnElement;
}

/** Set by the Lambda construct for the runtime, not for a root. */
const RUNTIME = ["NODE_OPTIONS"];

/** What CloudFormation resolves the stack's tokens to, by variable. */
const RESOLVED: Record<string, string> = {
  [ENV.childTaskStateMachineArn]: "arn:aws:states:eu-west-1:123456789012:stateMachine:Flow-prod-child-task",
  [ENV.secretsKmsKeyId]: "arn:aws:kms:eu-west-1:123456789012:key/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
  [ENV.requestMacKmsKeyId]: "arn:aws:kms:eu-west-1:123456789012:key/1a2b3c4d-5e6f-4a8b-9c0d-e1f2a3b4c5d6",
  [ENV.imageBucket]: "flow-prod-firmwareimagesbucket0a1b2c3d-1a2b3c4d5e6f",
  [ENV.authzPolicyParameter]: "/Flow-prod/access-policy",
};

const resolve = (name: string, value: unknown): string => {
  if (typeof value === "string") return value;
  const resolved = RESOLVED[name];
  if (resolved === undefined)
    throw new Error(`${name} is a token (${JSON.stringify(value)}): add a stand-in`);
  return resolved;
};

let prod: BuiltStack;
beforeAll(() => {
  prod = sharedStack(PROD_CONTEXT);
}, 60_000);

function lambdaEnvironment(template: Template, prefix: string): Record<string, unknown> {
  const found = Object.entries(
    template.findResources("AWS::Lambda::Function") as Record<string, Resource>,
  ).find(([id]) => id.startsWith(`${prefix}Function`));
  expect(found, prefix).toBeDefined();
  return (found![1].Properties.Environment as { Variables: Record<string, unknown> }).Variables;
}

function frontEnvironment(template: Template): Record<string, unknown> {
  const [task] = Object.values(
    template.findResources("AWS::ECS::TaskDefinition") as Record<string, Resource>,
  );
  const [container] = task!.Properties.ContainerDefinitions as {
    Environment: { Name: string; Value: unknown }[];
  }[];
  return Object.fromEntries(container!.Environment.map((e) => [e.Name, e.Value]));
}

const deployables: [
  string,
  (t: Template) => Record<string, unknown>,
  ConfigReader<object>,
  readonly string[],
][] = [
  ["dispatcher", (t) => lambdaEnvironment(t, "Dispatcher"), readDispatchConfig, BUILD_FACTS],
  ["stream-evaluator", (t) => lambdaEnvironment(t, "StreamEvaluator"), readDispatchConfig, BUILD_FACTS],
  ["task-steps", (t) => lambdaEnvironment(t, "TaskSteps"), readTaskStepsConfig, BUILD_FACTS],
  ["bmc-result", (t) => lambdaEnvironment(t, "BmcResult"), readBmcResultConfig, BUILD_FACTS],
  ["event-publisher", (t) => lambdaEnvironment(t, "EventPublisher"), readEventPublisherConfig, BUILD_FACTS],
  ["gRPC front", frontEnvironment, readGrpcFrontConfig, []],
];

describe("infra environment: what the stack sets is what each root reads", () => {
  it.each(deployables)("%s: every variable set is read by its reader", (_, environment, reader, carried) => {
    const set = Object.keys(environment(prod.template)).filter((n) => !RUNTIME.includes(n));
    const unread = set.filter((n) => !reader.names.includes(n) && !carried.includes(n));
    expect(unread).toEqual([]);
  });

  it.each(deployables)("%s: every variable its reader requires is set", (_, environment, reader) => {
    const set = Object.keys(environment(prod.template));
    expect(reader.required.filter((n) => !set.includes(n))).toEqual([]);
  });

  it.each(deployables)("%s: the values set pass the reader's rules", (_, environment, reader) => {
    const env = Object.fromEntries(
      Object.entries(environment(prod.template)).map(([name, value]) => [name, resolve(name, value)]),
    );
    expect(() => reader(env)).not.toThrow();
  });

  it("the build facts are set on every deployable, and the front reads them (the Version RPC)", () => {
    for (const [, environment] of deployables) {
      expect(Object.keys(environment(prod.template))).toEqual(expect.arrayContaining([...BUILD_FACTS]));
    }
    expect(readGrpcFrontConfig.names).toEqual(expect.arrayContaining([...BUILD_FACTS]));
  });
});

describe("infra environment: the child task's deployment settings", () => {
  it.each([
    ["dispatcher", (t: Template) => lambdaEnvironment(t, "Dispatcher"), readDispatchConfig],
    ["stream-evaluator", (t: Template) => lambdaEnvironment(t, "StreamEvaluator"), readDispatchConfig],
    ["gRPC front", frontEnvironment, readGrpcFrontConfig],
  ] as const)("%s: the context's values reach the executions it starts", (_, environment, reader) => {
    const env = Object.fromEntries(
      Object.entries(environment(prod.template)).map(([name, value]) => [name, resolve(name, value)]),
    );
    expect(reader(env).childTask).toEqual({
      maxParallel: PROD_CONTEXT.childTaskMaxParallel,
      updateTimeoutSeconds: PROD_CONTEXT.updateTimeoutSeconds,
      preflightTimeoutSeconds: PROD_CONTEXT.preflightTimeoutSeconds,
      readinessTimeoutSeconds: PROD_CONTEXT.readinessTimeoutSeconds,
    });
  });
});

describe("infra environment: the access policy", () => {
  it("with accessPolicyFile (prod context) the front gets the name of the policy's parameter, not its text; without, neither, and synth warns", () => {
    const front = frontEnvironment(prod.template);
    expect(front[ENV.authzPolicyParameter]).toEqual({
      Ref: prod.stack.getLogicalId(accessPolicyParameterOf(prod)),
    });
    expect(front).not.toHaveProperty(ENV.authzPolicyText);
    expect(front).not.toHaveProperty(ENV.authzPolicy);
    const dev = sharedStack();
    expect(frontEnvironment(dev.template)).not.toHaveProperty(ENV.authzPolicyParameter);
    expect(dev.template.findResources("AWS::SSM::Parameter")).toEqual({});
    expect(
      Annotations.fromStack(dev.stack).findWarning(
        "*",
        Match.stringLikeRegexp("context accessPolicyFile is not set"),
      ),
    ).toHaveLength(1);
    expect(
      Annotations.fromStack(prod.stack).findWarning("*", Match.stringLikeRegexp("context accessPolicyFile")),
    ).toHaveLength(0);
  });

  it("a bad policy file stops the synth with every problem named", () => {
    const dir = mkdtempSync(join(tmpdir(), "flow-policy-"));
    const file = join(dir, "bad.yaml");
    writeFileSync(file, "bindings:\n  - subjects: []\n    roles: [boss]\n");
    try {
      expect(() => buildStack({ accessPolicyFile: file })).toThrow(
        `context accessPolicyFile: ${file}: bindings[0].subjects: must not be empty\n${file}: bindings[0].roles[0]: unknown role "boss" (roles: viewer, operator, approver, admin)`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("infra environment: the caller from the load balancer's certificate", () => {
  it("with a trust store (prod context) the listener verifies client certificates and the front trusts what it forwards; without, neither", () => {
    const listener = (template: Template) =>
      Object.values(
        template.findResources("AWS::ElasticLoadBalancingV2::Listener") as Record<string, Resource>,
      )[0]!.Properties.MutualAuthentication;
    expect(listener(prod.template)).toEqual({
      Mode: "verify",
      TrustStoreArn:
        "arn:aws:elasticloadbalancing:eu-west-1:123456789012:truststore/flow-clients/0123456789abcdef",
    });
    expect(frontEnvironment(prod.template)[ENV.trustLoadBalancerClientCert]).toBe("true");
    const dev = sharedStack();
    expect(listener(dev.template)).toBeUndefined();
    expect(frontEnvironment(dev.template)).not.toHaveProperty(ENV.trustLoadBalancerClientCert);
  });

  it("the event publisher is told its bus: the configured one in prod, the default bus otherwise", () => {
    expect(lambdaEnvironment(prod.template, "EventPublisher")[ENV.eventBusName]).toBe("flow-rollouts");
    expect(lambdaEnvironment(sharedStack().template, "EventPublisher")[ENV.eventBusName]).toBe("default");
  });
});

/** What the front needs besides the checks, for reading them as it would. */
const FRONT_MINIMUM = {
  [ENV.tablePrefix]: "p-",
  [ENV.childTaskStateMachineArn]: "arn:aws:states:eu-west-1:123456789012:stateMachine:c",
  [ENV.imageBucket]: "flow-images",
  [ENV.authzPolicyText]: "bindings: []",
};

describe("infra environment: external health checks", () => {
  it("with externalChecksFile the front and task-steps get its checks, which their readers accept, and task-steps may invoke the Lambda checks alone; without, nothing", () => {
    const dir = mkdtempSync(join(tmpdir(), "flow-checks-"));
    const file = join(dir, "checks.json");
    const lambdaArn = "arn:aws:lambda:eu-west-1:123456789012:function:dcgm-diag";
    writeFileSync(
      file,
      JSON.stringify({
        "dcgm-diag": { lambda: lambdaArn },
        "burn-in": { https: "https://checks.example.com/b" },
      }),
    );
    try {
      const built = buildStack({ externalChecksFile: file });
      const text = frontEnvironment(built.template)[ENV.externalChecks] as string;
      expect(lambdaEnvironment(built.template, "TaskSteps")[ENV.externalChecks]).toBe(text);
      expect(readGrpcFrontConfig({ ...FRONT_MINIMUM, [ENV.externalChecks]: text }).externalChecks).toEqual([
        "dcgm-diag",
        "burn-in",
      ]);
      const statements = Object.values(built.template.findResources("AWS::IAM::Policy")).flatMap(
        (p) =>
          (p as Resource).Properties.PolicyDocument as { Statement: { Sid?: string; Resource?: unknown }[] },
      );
      const invoke = statements
        .flatMap((d) => d.Statement)
        .filter((s) => s.Sid === "InvokeExternalHealthChecks");
      expect(invoke.map((s) => s.Resource)).toEqual([lambdaArn]);
      expect(frontEnvironment(sharedStack().template)).not.toHaveProperty(ENV.externalChecks);
      writeFileSync(file, JSON.stringify({ local: { command: ["./check.sh"] } }));
      expect(() => buildStack({ externalChecksFile: file })).toThrow(
        `context externalChecksFile ${file}: local.command: a command check runs only in the local stack (in AWS: lambda or https), local: needs exactly one of lambda, https (got 0)`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
