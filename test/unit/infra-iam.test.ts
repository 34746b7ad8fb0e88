/**
 * Least privilege and cdk-nag over the synthesized stack, in three shapes: no context (dev, new
 * VPC, IoT endpoint looked up by a custom resource), prod with every option, and an existing VPC.
 */
import type { Template } from "aws-cdk-lib/assertions";
import { AwsSolutionsChecks } from "cdk-nag";
import { beforeAll, describe, expect, it } from "vitest";
import { KEY_ADMIN_ACTIONS } from "../../infra/constructs/key-policies.js";
import { EXISTING_VPC_CONTEXT, PROD_CONTEXT, sharedStack } from "../fixtures/infra-stack.js";

/**
 * The only actions allowed on Resource "*", each because the service offers no resource-level
 * permission for it:
 * - X-Ray tracing (Lambda `tracing: ACTIVE`, Step Functions `tracingEnabled`);
 * - CloudWatch Logs vended delivery for Step Functions logging;
 * - dynamodb:ListStreams (the stream event source mapping);
 * - ecr:GetAuthorizationToken (the task execution role pulling the image);
 * - iot:DescribeEndpoint (the custom resource that finds the IoT data endpoint).
 * No cloudwatch:PutMetricData at all: metrics are EMF lines in the logs.
 */
const STAR_RESOURCE_ACTIONS = new Set([
  "xray:PutTraceSegments",
  "xray:PutTelemetryRecords",
  "xray:GetSamplingRules",
  "xray:GetSamplingTargets",
  "logs:CreateLogDelivery",
  "logs:GetLogDelivery",
  "logs:UpdateLogDelivery",
  "logs:DeleteLogDelivery",
  "logs:ListLogDeliveries",
  "logs:PutResourcePolicy",
  "logs:DescribeResourcePolicies",
  "logs:DescribeLogGroups",
  "dynamodb:ListStreams",
  "ecr:GetAuthorizationToken",
  "iot:DescribeEndpoint",
]);

interface Statement {
  Sid?: string;
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: Record<string, Record<string, string | string[]>>;
}

function iamStatements(template: Template): { owner: string; statement: Statement }[] {
  const out: { owner: string; statement: Statement }[] = [];
  for (const [id, policy] of Object.entries(template.findResources("AWS::IAM::Policy"))) {
    for (const statement of policy.Properties.PolicyDocument.Statement) out.push({ owner: id, statement });
  }
  for (const [id, role] of Object.entries(template.findResources("AWS::IAM::Role"))) {
    for (const inline of role.Properties.Policies ?? []) {
      for (const statement of inline.PolicyDocument.Statement) out.push({ owner: id, statement });
    }
  }
  return out;
}

const list = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);

const BUILD_TIMEOUT = 60_000;
const shapes = {
  dev: () => sharedStack(),
  prod: () => sharedStack(PROD_CONTEXT),
  existingVpc: () => sharedStack(EXISTING_VPC_CONTEXT),
};

beforeAll(() => {
  for (const build of Object.values(shapes)) build();
}, BUILD_TIMEOUT);

describe.each(["dev", "prod", "existingVpc"] as const)("infra least privilege (%s)", (shape) => {
  it("no IAM statement has a wildcard action (no `*`, no `service:*`, no `kms:GenerateDataKey*`)", () => {
    const wild = iamStatements(shapes[shape]().template).flatMap(({ owner, statement }) =>
      list(statement.Action)
        .filter((a) => a.includes("*"))
        .map((a) => `${owner}: ${a}`),
    );
    expect(wild).toEqual([]);
  });

  it("Resource * only for the actions that have no resource-level permissions", () => {
    const offenders = iamStatements(shapes[shape]().template)
      .filter(({ statement }) => list(statement.Resource).includes("*"))
      .flatMap(({ owner, statement }) =>
        list(statement.Action)
          .filter((a) => !STAR_RESOURCE_ACTIONS.has(a))
          .map((a) => `${owner}: ${a}`),
      );
    expect(offenders).toEqual([]);
  });

  it("no Deny-less managed policy except on aws-cdk-lib's own custom-resource providers", () => {
    const roles = Object.entries(shapes[shape]().template.findResources("AWS::IAM::Role"));
    const withManaged = roles.filter(([, r]) => r.Properties.ManagedPolicyArns).map(([id]) => id);
    for (const id of withManaged)
      expect(id).toMatch(/^(AWS679f53fac002430cb0da5b7982bd2287|CustomVpcRestrictDefaultSG)/);
  });

  it("cdk-nag AwsSolutions: no finding left unacknowledged", () => {
    const { stack } = shapes[shape]();
    const report = new AwsSolutionsChecks(stack).validateScope(stack);
    const findings = report.violations.map(
      (v) => `${v.ruleName} at ${v.violatingResources.map((r) => r.constructPath).join(", ")}`,
    );
    expect(findings).toEqual([]);
  });
});

/**
 * What each principal may do, flattened to "action on resource" lines with the logical ids replaced
 * by names, e.g. `dynamodb:PutItem on table:Runs`, `states:StopExecution on
 * arn:<AWS::Partition>:states:us-east-1:000000000000:execution:Flow-dev-child-task:*`,
 * `kms:GenerateDataKey on SecretsKey if context ~ bmc:*`.
 */
function grantsOf(template: Template, ownerPrefix: string): string[] {
  const tables = new Map<string, string>();
  for (const [id, t] of Object.entries(template.findResources("AWS::DynamoDB::Table"))) {
    tables.set(id, (t.Properties.TableName as string).replace(/^Flow-[a-z]+-/, ""));
  }
  const name = (resource: unknown): string => {
    const text = joined(resource);
    const ref = /^<([A-Za-z0-9]+)\.(Arn|StreamArn)>(.*)$/.exec(text);
    if (ref) {
      const [, id, attr, rest] = ref;
      const table = tables.get(id!);
      if (table !== undefined) return `${attr === "StreamArn" ? "stream" : "table"}:${table}${rest}`;
      return `${id!.replace(/[0-9A-F]{8}$/, "")}${rest}`;
    }
    return text.replace(/<([A-Za-z0-9]+?)[0-9A-F]{8}>/g, "$1");
  };
  const lines = new Set<string>();
  for (const { owner, statement } of iamStatements(template)) {
    if (!owner.startsWith(ownerPrefix) || statement.Effect !== "Allow") continue;
    const contexts = statement.Condition?.StringLike?.["kms:EncryptionContext:context"];
    const condition = contexts === undefined ? "" : ` if context ~ ${list(contexts).join("|")}`;
    for (const action of list(statement.Action)) {
      for (const resource of list(statement.Resource))
        lines.add(`${action} on ${name(resource)}${condition}`);
    }
  }
  return [...lines].sort();
}

/** A Fn::Join of strings and GetAtt/Ref → a string with `<Logical.Attr>` / `<Logical>` in place of each token. */
function joined(value: unknown): string {
  if (typeof value === "string") return value;
  const v = value as { "Fn::Join"?: [string, unknown[]]; "Fn::GetAtt"?: [string, string]; Ref?: string };
  if (v["Fn::Join"]) return v["Fn::Join"][1].map(joined).join(v["Fn::Join"][0]);
  if (v["Fn::GetAtt"]) return `<${v["Fn::GetAtt"][0]}.${v["Fn::GetAtt"][1]}>`;
  return `<${v.Ref}>`;
}

const ROLES = {
  front: "FrontTaskTaskRole",
  dispatcher: "DispatcherRole",
  streamEvaluator: "StreamEvaluatorRole",
  taskSteps: "TaskStepsRole",
  bmcResult: "BmcResultRole",
  eventPublisher: "EventPublisherRole",
} as const;

const OPERATIONAL = ["Runs", "Targets", "Tasks", "RackLocks"];

/** The tables (with `/index/*` when indexed) a role may run `action` on. */
const tablesWith = (grants: string[], action: string): string[] =>
  grants
    .filter((g) => g.startsWith(`${action} on table:`))
    .map((g) => g.slice(`${action} on table:`.length))
    .filter((t) => !t.endsWith("/index/*"));

describe("infra least privilege: grants by principal (what the composition roots call)", () => {
  const grants = (role: keyof typeof ROLES) => grantsOf(shapes.dev().template, ROLES[role]);

  it("dispatcher and stream-evaluator read and write Runs, Targets, RunEvents (a pass's history), Tasks, RackLocks; bmc-result the same but RunEvents; never Inventory", () => {
    for (const role of ["dispatcher", "streamEvaluator", "bmcResult"] as const) {
      const g = grants(role);
      const expected = role === "bmcResult" ? OPERATIONAL : [...OPERATIONAL, "RunEvents"];
      for (const action of [
        "dynamodb:GetItem",
        "dynamodb:Query",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
      ]) {
        expect(tablesWith(g, action).sort(), `${role} ${action}`).toEqual([...expected].sort());
      }
      expect(
        g.filter((line) => line.includes("table:Inventory")),
        role,
      ).toEqual([]);
    }
  });

  it("task-steps: read/write the operational tables; on Inventory only GetItem, BatchGetItem (the image records) and UpdateItem of items", () => {
    const g = grants("taskSteps");
    for (const action of [
      "dynamodb:GetItem",
      "dynamodb:PutItem",
      "dynamodb:DeleteItem",
      "dynamodb:UpdateItem",
    ]) {
      expect(
        tablesWith(g, action).filter((t) => t !== "Inventory"),
        action,
      ).toEqual(expect.arrayContaining(OPERATIONAL));
    }
    expect(g.filter((line) => line.includes("table:Inventory"))).toEqual([
      "dynamodb:BatchGetItem on table:Inventory",
      "dynamodb:GetItem on table:Inventory",
      "dynamodb:UpdateItem on table:Inventory",
    ]);
  });

  it("the front reads and writes every table (runs, tasks, inventory import)", () => {
    const g = grants("front");
    expect(tablesWith(g, "dynamodb:PutItem").sort()).toEqual(
      ["Inventory", "RackLocks", "RunEvents", "Runs", "Targets", "Tasks"].sort(),
    );
    expect(tablesWith(g, "dynamodb:BatchWriteItem")).toContain("Inventory");
  });

  it("front, dispatcher and stream-evaluator start child tasks and stop their executions; task-steps and bmc-result only wake waiting ones (bmc-result also keeps them waiting, task-steps ends its own)", () => {
    const executions = "arn:<AWS::Partition>:states:us-east-1:000000000000:execution:Flow-dev-child-task:*";
    for (const role of ["front", "dispatcher", "streamEvaluator"] as const) {
      expect(
        grants(role).filter((line) => line.startsWith("states:")),
        role,
      ).toEqual(["states:StartExecution on ChildTaskStateMachine", `states:StopExecution on ${executions}`]);
    }
    // SendTaskSuccess: an AwaitWave's task token, sent back when the wave's results are in; the
    // receiver also keeps the wait alive while the wave's BMCs report (SendTaskHeartbeat); a
    // judging wait that sends no next step ends itself with an error its Catch routes
    // (SendTaskFailure), which only task-steps does.
    const machine = "arn:<AWS::Partition>:states:us-east-1:000000000000:stateMachine:Flow-dev-child-task";
    expect(
      grants("taskSteps")
        .filter((line) => line.startsWith("states:"))
        .sort(),
    ).toEqual([`states:SendTaskFailure on ${machine}`, `states:SendTaskSuccess on ${machine}`]);
    expect(
      grants("bmcResult")
        .filter((line) => line.startsWith("states:"))
        .sort(),
    ).toEqual([`states:SendTaskHeartbeat on ${machine}`, `states:SendTaskSuccess on ${machine}`]);
  });

  it("the secrets key: the front seals run:/task: blobs, task-steps opens them and seals bmc: blobs, nobody else", () => {
    const onSecretsKey = (role: keyof typeof ROLES) =>
      grants(role).filter((line) => line.startsWith("kms:") && line.includes(" on SecretsKey"));
    expect(onSecretsKey("front")).toEqual(["kms:GenerateDataKey on SecretsKey if context ~ run:*|task:*"]);
    expect(onSecretsKey("taskSteps")).toEqual([
      "kms:Decrypt on SecretsKey if context ~ run:*|task:*",
      "kms:GenerateDataKey on SecretsKey if context ~ bmc:*",
    ]);
    for (const role of ["dispatcher", "streamEvaluator", "bmcResult"] as const) {
      expect(onSecretsKey(role), role).toEqual([]);
    }
  });

  it("the request MAC key (HMAC_256): the front may GenerateMac with HMAC_SHA_256 only, nobody else touches it", () => {
    const template = shapes.dev().template;
    const [, key] = Object.entries(template.findResources("AWS::KMS::Key")).find(([id]) =>
      id.startsWith("RequestMacKey"),
    )!;
    expect(key.Properties).toMatchObject({ KeySpec: "HMAC_256", KeyUsage: "GENERATE_VERIFY_MAC" });
    const onMacKey = (role: keyof typeof ROLES) =>
      grants(role).filter((line) => line.startsWith("kms:") && line.includes(" on RequestMacKey"));
    expect(onMacKey("front")).toEqual(["kms:GenerateMac on RequestMacKey"]);
    const statement = iamStatements(template).find(
      ({ owner, statement }) =>
        owner.startsWith(ROLES.front) && list(statement.Action).includes("kms:GenerateMac"),
    )?.statement;
    expect(statement?.Condition).toEqual({ StringEquals: { "kms:MacAlgorithm": "HMAC_SHA_256" } });
    for (const role of [
      "dispatcher",
      "streamEvaluator",
      "taskSteps",
      "bmcResult",
      "eventPublisher",
    ] as const) {
      expect(onMacKey(role), role).toEqual([]);
    }
  });

  it("key policies: the account administers the secrets and MAC keys but cannot use them; each use names its role and conditions", () => {
    const template = shapes.dev().template;
    const keyPolicy = (prefix: string) => {
      const [, key] = Object.entries(template.findResources("AWS::KMS::Key")).find(([id]) =>
        id.startsWith(prefix),
      )!;
      return (key.Properties.KeyPolicy as { Statement: (Statement & { Sid: string; Principal: unknown })[] })
        .Statement;
    };
    const roleOf = (principal: unknown) => {
      const arn = (principal as { AWS: unknown }).AWS;
      const ref = joined(arn);
      const role = Object.entries(ROLES).find(([, prefix]) => ref.startsWith(`<${prefix}`));
      return role?.[0] ?? ref;
    };
    const uses = (prefix: string) =>
      keyPolicy(prefix)
        .filter((st) => st.Sid !== "AccountAdministersNotUses")
        .map((st) => ({
          sid: st.Sid,
          role: roleOf(st.Principal),
          actions: st.Action,
          condition: st.Condition,
        }));
    const account = { StringEquals: { "kms:CallerAccount": expect.anything() } };
    for (const prefix of ["SecretsKey", "RequestMacKey"]) {
      const admin = keyPolicy(prefix).find((st) => st.Sid === "AccountAdministersNotUses")!;
      expect(list(admin.Action)).toEqual([...KEY_ADMIN_ACTIONS]);
      for (const action of list(admin.Action)) {
        expect(action, prefix).not.toMatch(/Encrypt|Decrypt|GenerateDataKey|GenerateMac|VerifyMac|\*/);
      }
    }
    expect(uses("SecretsKey")).toEqual([
      {
        sid: "OpenStoredCredentials",
        role: "taskSteps",
        actions: "kms:Decrypt",
        condition: { StringLike: { "kms:EncryptionContext:context": ["run:*", "task:*"] }, ...account },
      },
      {
        sid: "SealBmcCredentials",
        role: "taskSteps",
        actions: "kms:GenerateDataKey",
        condition: { StringLike: { "kms:EncryptionContext:context": ["bmc:*"] }, ...account },
      },
      {
        sid: "SealStoredCredentials",
        role: "front",
        actions: "kms:GenerateDataKey",
        condition: { StringLike: { "kms:EncryptionContext:context": ["run:*", "task:*"] }, ...account },
      },
      // The rack agents' role: the key allows it BMC blobs only, its own policy only its rack's.
      {
        sid: "AgentsOpenBmcCredentials",
        role: expect.stringMatching(/^<IotAgentRole/),
        actions: "kms:Decrypt",
        condition: { StringLike: { "kms:EncryptionContext:context": ["bmc:*"] }, ...account },
      },
    ]);
    expect(uses("RequestMacKey")).toEqual([
      {
        sid: "DigestRetriedCredentials",
        role: "front",
        actions: "kms:GenerateMac",
        condition: {
          StringEquals: { "kms:MacAlgorithm": "HMAC_SHA_256", "kms:CallerAccount": expect.anything() },
        },
      },
    ]);
  });

  it("the tables' key: the account administers it and cannot use it; DynamoDB reads its metadata; the deploy role and each role granted tables use it through DynamoDB only", () => {
    const template = shapes.dev().template;
    const [, key] = Object.entries(template.findResources("AWS::KMS::Key")).find(([id]) =>
      id.startsWith("DataTableKey"),
    )!;
    const statements = (
      key.Properties.KeyPolicy as { Statement: (Statement & { Sid: string; Principal: unknown })[] }
    ).Statement;
    const principal = (p: unknown): string => {
      const { AWS, Service } = p as { AWS?: unknown; Service?: string };
      if (Service !== undefined) return `service:${Service}`;
      const text =
        typeof AWS === "object" && AWS !== null && "Fn::Sub" in AWS ? String(AWS["Fn::Sub"]) : joined(AWS);
      const role = Object.entries(ROLES).find(([, prefix]) => text.startsWith(`<${prefix}`));
      return role?.[0] ?? text;
    };
    const viaDynamoDb = {
      StringEquals: {
        "kms:ViaService": "dynamodb.us-east-1.amazonaws.com",
        "kms:CallerAccount": "000000000000",
      },
    };
    const read = ["kms:Decrypt", "kms:DescribeKey"];
    const write = [
      ...read,
      "kms:Encrypt",
      "kms:GenerateDataKey",
      "kms:GenerateDataKeyWithoutPlaintext",
      "kms:ReEncryptFrom",
      "kms:ReEncryptTo",
    ];
    expect(
      statements.map((st) => ({
        sid: st.Sid,
        principal: principal(st.Principal),
        actions: list(st.Action),
        condition: st.Condition,
      })),
    ).toEqual([
      {
        sid: "AccountAdministersNotUses",
        principal: "arn:<AWS::Partition>:iam::000000000000:root",
        actions: [...KEY_ADMIN_ACTIONS],
        condition: undefined,
      },
      {
        sid: "DynamoDBReadsKeyMetadata",
        principal: "service:dynamodb.amazonaws.com",
        actions: [
          "kms:DescribeKey",
          "kms:GetKeyPolicy",
          "kms:GetKeyRotationStatus",
          "kms:ListAliases",
          "kms:ListGrants",
          "kms:ListKeyPolicies",
          "kms:ListKeyRotations",
          "kms:ListResourceTags",
        ],
        condition: undefined,
      },
      {
        sid: "DeployManagesTables",
        principal:
          // biome-ignore lint/suspicious/noTemplateCurlyInString: a Fn::Sub placeholder, literal by design
          "arn:${AWS::Partition}:iam::000000000000:role/cdk-hnb659fds-cfn-exec-role-000000000000-us-east-1",
        actions: [...write, "kms:CreateGrant"],
        condition: viaDynamoDb,
      },
      { sid: "DispatcherUsesTables", principal: "dispatcher", actions: write, condition: viaDynamoDb },
      {
        sid: "StreamEvaluatorUsesTables",
        principal: "streamEvaluator",
        actions: write,
        condition: viaDynamoDb,
      },
      { sid: "BmcResultUsesTables", principal: "bmcResult", actions: write, condition: viaDynamoDb },
      { sid: "TaskStepsUsesTables", principal: "taskSteps", actions: write, condition: viaDynamoDb },
      // Reads the RunEvents stream only.
      { sid: "EventPublisherUsesTables", principal: "eventPublisher", actions: read, condition: viaDynamoDb },
      { sid: "FrontUsesTables", principal: "front", actions: write, condition: viaDynamoDb },
    ]);
    // Each role's own policy names the same use, through DynamoDB too.
    for (const [role, prefix] of Object.entries(ROLES)) {
      const own = iamStatements(template).filter(
        ({ owner, statement }) => owner.startsWith(prefix) && statement.Sid?.endsWith("UsesTables"),
      );
      expect(
        own.map(({ statement }) => statement.Condition),
        role,
      ).toEqual([{ StringEquals: { "kms:ViaService": "dynamodb.us-east-1.amazonaws.com" } }]);
    }
  });

  it("only task-steps may publish to IoT, on command topics only", () => {
    for (const role of Object.keys(ROLES) as (keyof typeof ROLES)[]) {
      const publish = grants(role).filter((line) => line.startsWith("iot:Publish"));
      expect(publish, role).toEqual(
        role === "taskSteps"
          ? [
              "iot:Publish on arn:<AWS::Partition>:iot:<AWS::Region>:<AWS::AccountId>:topic/flow/rack/*/bmc/*/cmd",
            ]
          : [],
      );
    }
  });

  it("task-steps and bmc-result invoke the dispatcher (the wake-up after an outcome), by its name; no other role invokes any function", () => {
    const dispatcher = "arn:<AWS::Partition>:lambda:us-east-1:000000000000:function:Flow-dev-dispatcher";
    for (const role of Object.keys(ROLES) as (keyof typeof ROLES)[]) {
      expect(
        grants(role).filter((line) => line.startsWith("lambda:InvokeFunction")),
        role,
      ).toEqual(
        role === "taskSteps" || role === "bmcResult" ? [`lambda:InvokeFunction on ${dispatcher}`] : [],
      );
    }
    expect(grantsOf(shapes.dev().template, "TickerStateMachineRole")).toEqual(
      expect.arrayContaining(["lambda:InvokeFunction on DispatcherFunction"]),
    );
  });

  it("the stream evaluator reads the Runs and Targets streams only; bmc-result may send to its DLQ", () => {
    const streams = grants("streamEvaluator")
      .filter((line) => line.startsWith("dynamodb:GetRecords"))
      .map((line) => line.replace("dynamodb:GetRecords on ", ""));
    expect(streams).toEqual(["stream:Runs", "stream:Targets"]);
    expect(grants("bmcResult")).toContain("sqs:SendMessage on BmcResultDlq");
  });

  it("the event publisher: the RunEvents stream, events:PutEvents on the one configured bus (default bus unless configured), its DLQ; no table", () => {
    const g = grants("eventPublisher");
    expect(
      g.filter((line) => line.startsWith("dynamodb:") && !line.startsWith("dynamodb:ListStreams")),
    ).toEqual([
      "dynamodb:DescribeStream on stream:RunEvents",
      "dynamodb:GetRecords on stream:RunEvents",
      "dynamodb:GetShardIterator on stream:RunEvents",
    ]);
    expect(g.filter((line) => line.startsWith("events:"))).toEqual([
      "events:PutEvents on arn:<AWS::Partition>:events:us-east-1:000000000000:event-bus/default",
    ]);
    expect(g.filter((line) => line.includes("table:"))).toEqual([]);
    // Nobody else may put events anywhere, in any shape; prod names its own bus and gets that one.
    for (const role of Object.keys(ROLES).filter((r) => r !== "eventPublisher") as (keyof typeof ROLES)[]) {
      expect(
        grants(role).filter((line) => line.startsWith("events:")),
        role,
      ).toEqual([]);
    }
    const putEvents = iamStatements(shapes.prod().template).filter(({ statement }) =>
      list(statement.Action).some((a) => a.startsWith("events:")),
    );
    expect(
      putEvents.map(({ owner, statement }) => [
        owner.replace(/[0-9A-F]{8}$/, ""),
        statement.Action,
        joined(statement.Resource),
      ]),
    ).toEqual([
      [
        "EventPublisherRoleDefaultPolicy",
        "events:PutEvents",
        "arn:<AWS::Partition>:events:eu-west-1:123456789012:event-bus/flow-rollouts",
      ],
    ]);
  });

  it("no principal gets DynamoDB table management", () => {
    const all = iamStatements(shapes.dev().template).flatMap(({ statement }) => list(statement.Action));
    for (const action of ["dynamodb:DeleteTable", "dynamodb:CreateTable", "dynamodb:UpdateTable"]) {
      expect(all).not.toContain(action);
    }
  });
});

describe("infra: the firmware image bucket and who may touch it", () => {
  const template = () => shapes.dev().template;
  const s3Grants = (role: keyof typeof ROLES) =>
    grantsOf(template(), ROLES[role]).filter((line) => line.startsWith("s3:"));

  it("versioned, SSE encrypted, public access blocked, TLS only, access-logged, abandoned uploads expire", () => {
    const buckets = Object.entries(template().findResources("AWS::S3::Bucket"));
    const [, images] = buckets.find(([id]) => id.startsWith("FirmwareImagesBucket"))!;
    const p = images.Properties;
    expect(p.VersioningConfiguration).toEqual({ Status: "Enabled" });
    expect(p.BucketEncryption.ServerSideEncryptionConfiguration[0].ServerSideEncryptionByDefault).toEqual({
      SSEAlgorithm: "AES256",
    });
    expect(p.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(p.LoggingConfiguration.LogFilePrefix).toBe("images/");
    expect(p.LifecycleConfiguration.Rules).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          Id: "abandoned-uploads",
          Prefix: "uploads/",
          ExpirationInDays: 1,
          Status: "Enabled",
        }),
      ]),
    );
    const policies = Object.values(template().findResources("AWS::S3::BucketPolicy"));
    const denies = policies.flatMap((pol) =>
      (pol.Properties.PolicyDocument.Statement as Statement[]).filter(
        (st) =>
          st.Effect === "Deny" && JSON.stringify(st.Condition) === '{"Bool":{"aws:SecureTransport":"false"}}',
      ),
    );
    // Every bucket of the stack (the images and their access logs among them) refuses plain HTTP.
    expect(denies).toHaveLength(buckets.length);
  });

  it("the front presigns and verifies uploads; task-steps only reads registered images; no one else has any S3 grant", () => {
    expect(s3Grants("front")).toEqual([
      "s3:DeleteObject on FirmwareImagesBucket/uploads/*",
      "s3:GetObject on FirmwareImagesBucket/images/*",
      "s3:GetObject on FirmwareImagesBucket/uploads/*",
      "s3:ListBucket on FirmwareImagesBucket",
      "s3:PutObject on FirmwareImagesBucket/images/*",
      "s3:PutObject on FirmwareImagesBucket/uploads/*",
    ]);
    expect(s3Grants("taskSteps")).toEqual(["s3:GetObject on FirmwareImagesBucket/images/*"]);
    for (const role of ["dispatcher", "streamEvaluator", "bmcResult", "eventPublisher"] as const) {
      expect(s3Grants(role), role).toEqual([]);
    }
  });
});
