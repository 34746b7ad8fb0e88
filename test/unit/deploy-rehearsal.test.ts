/**
 * The deploy rehearsal's pure parts and the commands' argument handling; the deploy itself is
 * test/deploy/rehearsal.test.ts.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  assemblyHolds,
  COMPILE_CACHE_DIR,
  cdkEnvironment,
  cdkInvocation,
  type Deployment,
  formatReport,
  type RehearsalRun,
  stackNameOf,
  synthEnvironment,
  VALIDATION_FAILS_FLAG,
} from "../../deploy/rehearsal.js";
import { PROJECT_ROOT } from "../../infra/config.js";

describe("deploy rehearsal: the CLI's environment", () => {
  it("the local endpoint, dummy credentials, no profile or session, the template URL on localhost", () => {
    const env = cdkEnvironment("http://127.0.0.1:4599", {
      AWS_PROFILE: "prod",
      AWS_SESSION_TOKEN: "t",
      AWS_ACCESS_KEY_ID: "AKIAREAL",
      PATH: "/bin",
    });
    expect(env).toMatchObject({
      AWS_ENDPOINT_URL: "http://127.0.0.1:4599",
      AWS_ENDPOINT_URL_S3_FOR_CLOUDFORMATION: "http://localhost:4599",
      AWS_ACCESS_KEY_ID: "rehearsal",
      AWS_REGION: "us-east-1",
      CDK_DISABLE_VERSION_CHECK: "1",
      CDK_DISABLE_CLI_TELEMETRY: "true",
      PATH: "/bin",
    });
    expect(env.AWS_PROFILE).toBeUndefined();
    expect(env.AWS_SESSION_TOKEN).toBeUndefined();
  });

  it("the CLI and the synthesis keep compiled code under node_modules/.cache, or where NODE_COMPILE_CACHE says", () => {
    expect(COMPILE_CACHE_DIR).toBe(join(PROJECT_ROOT, "node_modules", ".cache", "flow-node-compile"));
    expect(cdkEnvironment("http://127.0.0.1:4599", {}).NODE_COMPILE_CACHE).toBe(COMPILE_CACHE_DIR);
    expect(cdkEnvironment("http://127.0.0.1:4599", { NODE_COMPILE_CACHE: "/var/cache/node" })).toMatchObject({
      NODE_COMPILE_CACHE: "/var/cache/node",
    });
  });

  it("the stack is Flow-<stage>, dev by default", () => {
    expect(stackNameOf({})).toBe("Flow-dev");
    expect(stackNameOf({ stage: "qa" })).toBe("Flow-qa");
  });
});

describe("deploy rehearsal: the CLI's arguments (the app synthesized once, by the deploy)", () => {
  let outdir: string;
  const runIn = (dir: string, moto = true): RehearsalRun => ({
    endpoint: { url: "http://127.0.0.1:4599", moto },
    context: { account: "000000000000", region: "us-east-1", stage: "qa", customResources: "false" },
    outdir: dir,
  });
  /** A cloud assembly as `cdk deploy` writes it, with the stacks given (name → environment). */
  const writeAssembly = (stacks: Record<string, string>) => {
    const artifacts: Record<string, unknown> = { Tree: { type: "cdk:tree" } };
    for (const [name, environment] of Object.entries(stacks))
      artifacts[name] = { type: "aws:cloudformation:stack", environment };
    writeFileSync(join(outdir, "manifest.json"), JSON.stringify({ version: "55.0.0", artifacts }));
  };
  afterEach(() => rmSync(outdir, { recursive: true, force: true }));
  const fresh = () => {
    outdir = mkdtempSync(join(tmpdir(), "flow-rehearsal-args-"));
    return outdir;
  };

  it("bootstrap names the environment and runs in the assembly directory, where no cdk.json names an app", () => {
    const run = runIn(fresh());
    expect(cdkInvocation("bootstrap", run)).toEqual({
      args: ["bootstrap", "aws://000000000000/us-east-1", "--no-notices"],
      cwd: outdir,
      env: {},
    });
  });

  it("deploy synthesizes with the context into the assembly directory; direct on moto, change sets elsewhere", () => {
    const context = ["-c", "account=000000000000", "-c", "region=us-east-1", "-c", "stage=qa"];
    const deploy = ["deploy", "Flow-qa", "--require-approval", "never", "--progress", "events"];
    expect(cdkInvocation("deploy", runIn(fresh()))).toEqual({
      args: [...deploy, "--output", outdir, "--method=direct", ...context, "-c", "customResources=false"],
      cwd: PROJECT_ROOT,
      env: { CDK_VALIDATION: "false" },
    });
    expect(cdkInvocation("deploy", runIn(outdir, false)).args).not.toContain("--method=direct");
  });

  it("destroy reads the assembly the deploy wrote when it holds the stack in the context's environment", () => {
    fresh();
    writeAssembly({ "Flow-qa": "aws://000000000000/us-east-1" });
    expect(assemblyHolds(outdir, runIn(outdir).context)).toBe(true);
    expect(cdkInvocation("destroy", runIn(outdir))).toEqual({
      args: ["destroy", "Flow-qa", "--force", "--app", outdir],
      cwd: PROJECT_ROOT,
      env: {},
    });
  });

  it.each([
    ["no assembly", undefined],
    ["an assembly of another stack", { "Flow-dev": "aws://000000000000/us-east-1" }],
    ["an assembly of the stack in another environment", { "Flow-qa": "aws://111111111111/us-east-1" }],
  ])("destroy synthesizes with the context when the directory holds %s", (_, stacks) => {
    fresh();
    if (stacks !== undefined) writeAssembly(stacks);
    expect(assemblyHolds(outdir, runIn(outdir).context)).toBe(false);
    expect(cdkInvocation("destroy", runIn(outdir))).toEqual({
      args: [
        "destroy",
        "Flow-qa",
        "--force",
        "--output",
        outdir,
        ...["-c", "account=000000000000", "-c", "region=us-east-1", "-c", "stage=qa"],
        ...["-c", "customResources=false"],
      ],
      cwd: PROJECT_ROOT,
      env: { CDK_VALIDATION: "false" },
    });
  });

  it("a synthesis runs without the built-in CloudFormation validation (cdk.json does not let it fail one), with it when the context sets the flag", () => {
    expect(synthEnvironment({ stage: "qa" })).toEqual({ CDK_VALIDATION: "false" });
    expect(synthEnvironment({ [VALIDATION_FAILS_FLAG]: "false" })).toEqual({ CDK_VALIDATION: "false" });
    expect(synthEnvironment({ [VALIDATION_FAILS_FLAG]: "true" })).toEqual({});
    const run = runIn(fresh());
    const flagged = { ...run, context: { ...run.context, [VALIDATION_FAILS_FLAG]: "true" } };
    expect(cdkInvocation("deploy", flagged).env).toEqual({});
    expect(cdkInvocation("destroy", flagged).env).toEqual({});
  });
});

describe("deploy rehearsal: the report", () => {
  const deployment: Deployment = {
    stackName: "Flow-dev",
    status: "CREATE_COMPLETE",
    outputs: { TablePrefix: "Flow-dev-" },
    deployed: [
      { logicalId: "RunsTable", type: "AWS::DynamoDB::Table", physicalId: "Flow-dev-Runs" },
      { logicalId: "TargetsTable", type: "AWS::DynamoDB::Table", physicalId: "Flow-dev-Targets" },
    ],
    skipped: [
      { logicalId: "GateTripped", type: "AWS::CloudWatch::Alarm" },
      { logicalId: "EveryMinute", type: "AWS::Scheduler::Schedule" },
      { logicalId: "DlqNotEmpty", type: "AWS::CloudWatch::Alarm" },
    ],
  };

  it("outputs, deployed kinds with counts, and every skipped resource by kind", () => {
    expect(formatReport(deployment, { url: "http://127.0.0.1:1", moto: true }).split("\n")).toEqual([
      "Flow-dev: CREATE_COMPLETE on http://127.0.0.1:1 (moto)",
      "Outputs:",
      "  TablePrefix = Flow-dev-",
      "Deployed: 2 resources of 1 kinds",
      "  AWS::DynamoDB::Table     × 2",
      "Not created by this endpoint (3 resources of 2 kinds), so not rehearsed:",
      "  AWS::CloudWatch::Alarm   × 2  GateTripped, DlqNotEmpty",
      "  AWS::Scheduler::Schedule × 1  EveryMinute",
    ]);
  });

  it("says so when the endpoint created everything", () => {
    const report = formatReport(
      { ...deployment, skipped: [] },
      { url: "http://localhost:4566", moto: false },
    );
    expect(report.split("\n").at(-1)).toBe("Not created by this endpoint: none");
    expect(report.split("\n")[0]).toBe("Flow-dev: CREATE_COMPLETE on http://localhost:4566");
  });
});

describe("deploy:local / destroy:local: arguments", () => {
  const CASES: [string[], string][] = [
    [["frobnicate"], "unknown command frobnicate"],
    [["deploy", "--force"], "unknown argument --force"],
    [["destroy", "-c", "stage"], "-c needs key=value"],
    [["deploy", "-c"], "-c needs key=value"],
  ];
  /** `tsx deploy/local.ts …args` (node with tsx's loader, as the tsx bin runs it): its exit code and stderr. */
  const local = (args: string[]) =>
    new Promise<{ status: number | null; stderr: string }>((resolvePromise, reject) => {
      const child = spawn(
        process.execPath,
        ["--import", "tsx", join(PROJECT_ROOT, "deploy", "local.ts"), ...args],
        {
          cwd: PROJECT_ROOT,
          env: { ...process.env, AWS_ENDPOINT_URL: "" },
          stdio: ["ignore", "ignore", "pipe"],
        },
      );
      let stderr = "";
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
        stderr += chunk;
      });
      child.once("error", reject);
      child.once("close", (status) => resolvePromise({ status, stderr }));
    });
  // Each case is a process that loads the command's module graph (a second or two of CPU): they
  // run together, so the file waits for the slowest of them rather than for their sum.
  const results = new Map<string, { status: number | null; stderr: string }>();
  beforeAll(async () => {
    await Promise.all(CASES.map(async ([args]) => results.set(JSON.stringify(args), await local(args))));
  });

  it.each(CASES)("%j → exit 2: %s, and the usage", (args, message) => {
    const result = results.get(JSON.stringify(args));
    expect(result?.status).toBe(2);
    expect(result?.stderr.split("\n").slice(0, 2)).toEqual([
      message,
      "usage: tsx deploy/local.ts deploy|destroy [-c key=value …]  (npm run deploy:local / destroy:local)",
    ]);
  });
});
