/**
 * The deploy rehearsal: the CDK app deployed with the real CDK CLI (`cdk bootstrap`, `cdk deploy`,
 * `cdk destroy`) to a local AWS endpoint, a moto spawned for it or whatever `AWS_ENDPOINT_URL`
 * names (LocalStack). Shared by `npm run deploy:local` / `destroy:local` (deploy/local.ts) and the
 * deploy test (test/deploy/rehearsal.test.ts), so the test rehearses what the command does.
 *
 * What makes the app deployable there, all by context (infra/config.ts), none by code paths:
 * - `customResources=false`: moto invokes a Lambda-backed custom resource only with Docker;
 * - `iotDataEndpoint`: looked up here with iot:DescribeEndpoint, the call the custom resource makes;
 * - `containerImage`: a prebuilt reference, so no Docker build runs (the endpoint never pulls it);
 * - `certificateArn`: an ACM certificate requested on the endpoint (the HTTPS listener needs one);
 * - account `000000000000`, us-east-1: moto is told to be that account (MOTO_ACCOUNT_ID), and
 *   cdk.json already holds that environment's availability zones, so nothing is looked up.
 *
 * The standard bootstrap works on moto 5.2 (bucket, ECR repository, roles, version parameter).
 * Two moto gaps are worked around in how the CLI is called, not in the app:
 * - the CLI hands CloudFormation a TemplateURL built from the S3 endpoint; moto reads a bucket out
 *   of it only in path style on `localhost` (or `s3.<region>.amazonaws.com`), so
 *   `AWS_ENDPOINT_URL_S3_FOR_CLOUDFORMATION` (the CLI's own knob for this) says `localhost`;
 * - moto fills no Outputs on a stack created from a change set, so on moto the CLI deploys with
 *   `--method=direct` (CreateStack/UpdateStack); another endpoint gets the CLI's default, change sets.
 *
 * The app is synthesized once per rehearsal, by `cdk deploy` (bundling, cdk-nag and the built-in
 * CloudFormation validation make that the costliest step). `cdk bootstrap` is given the environment
 * and runs where no cdk.json names an app, so the CLI does not synthesize the app to find
 * environments; `cdk destroy` reads the cloud assembly the deploy wrote (`--app <dir>`) and
 * synthesizes only when that assembly does not hold the stack (`cdkInvocation`).
 *
 * Resource kinds the endpoint does not model are not an error on moto (it skips them with a
 * warning); `describeDeployment` finds them by comparing the template's resources with the ones
 * the stack lists, so the report names every one (`formatReport`).
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ACMClient, ListCertificatesCommand, RequestCertificateCommand } from "@aws-sdk/client-acm";
import {
  CloudFormationClient,
  DescribeStacksCommand,
  paginateListStackResources,
} from "@aws-sdk/client-cloudformation";
import { DescribeEndpointCommand, IoTClient } from "@aws-sdk/client-iot";
import { PROJECT_ROOT } from "../infra/config.js";
import { type LocalMoto, startLocalMoto } from "../local/moto.js";

/** The environment the rehearsal deploys to: moto is made this account; cdk.json has its AZs. */
export const REHEARSAL_ACCOUNT = "000000000000";
export const REHEARSAL_REGION = "us-east-1";
/** Never pulled: moto creates the ECS service but runs no task. */
export const REHEARSAL_IMAGE = "flow-operation-runs:rehearsal";
/** The name the rehearsal's certificate is requested for. */
export const REHEARSAL_DOMAIN = "flow.rehearsal.internal";
/** Any key is accepted locally; fixed, so no real credentials ever reach a local endpoint. */
const DUMMY_CREDENTIALS = { accessKeyId: "rehearsal", secretAccessKey: "rehearsal" };

export interface RehearsalEndpoint {
  url: string;
  /** moto (spawned here, or answering on /moto-api/): decides the CLI's deploy method. */
  moto: boolean;
  /** Set when this process started the endpoint. */
  spawned?: LocalMoto;
}

/** `AWS_ENDPOINT_URL` when set, else a moto started as account 000000000000. */
export async function openEndpoint(
  options: { env?: NodeJS.ProcessEnv; detachedLog?: string } = {},
): Promise<RehearsalEndpoint> {
  const given = (options.env ?? process.env).AWS_ENDPOINT_URL?.trim();
  if (given) return { url: given, moto: await answersAsMoto(given) };
  const spawned = await startLocalMoto({
    env: { MOTO_ACCOUNT_ID: REHEARSAL_ACCOUNT },
    ...(options.detachedLog === undefined ? {} : { detachedLog: options.detachedLog }),
  });
  return { url: spawned.endpoint, moto: true, spawned };
}

export async function answersAsMoto(url: string): Promise<boolean> {
  try {
    const res = await fetch(new URL("/moto-api/", url), { signal: AbortSignal.timeout(3000) });
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}

const clientConfig = (endpoint: string) => ({
  endpoint,
  region: REHEARSAL_REGION,
  credentials: DUMMY_CREDENTIALS,
  maxAttempts: 3,
});

export const cloudFormation = (endpoint: string) => new CloudFormationClient(clientConfig(endpoint));

/**
 * The context of a rehearsal deploy: the caller's (`-c key=value`) over what is prepared here. The
 * certificate is reused when one for REHEARSAL_DOMAIN exists, so a redeploy creates none.
 */
export async function rehearsalContext(
  endpoint: string,
  given: Readonly<Record<string, string>> = {},
): Promise<Record<string, string>> {
  const context: Record<string, string> = {
    account: REHEARSAL_ACCOUNT,
    region: REHEARSAL_REGION,
    customResources: "false",
    containerImage: REHEARSAL_IMAGE,
    ...given,
  };
  if (context.iotDataEndpoint === undefined) {
    const iot = new IoTClient(clientConfig(endpoint));
    const { endpointAddress } = await iot.send(new DescribeEndpointCommand({ endpointType: "iot:Data-ATS" }));
    if (!endpointAddress) throw new Error(`${endpoint}: iot:DescribeEndpoint returned no address`);
    context.iotDataEndpoint = endpointAddress;
  }
  if (context.certificateArn === undefined) {
    const acm = new ACMClient(clientConfig(endpoint));
    const existing = (await acm.send(new ListCertificatesCommand({}))).CertificateSummaryList ?? [];
    const arn =
      existing.find((c) => c.DomainName === REHEARSAL_DOMAIN)?.CertificateArn ??
      (await acm.send(new RequestCertificateCommand({ DomainName: REHEARSAL_DOMAIN }))).CertificateArn;
    if (!arn) throw new Error(`${endpoint}: acm:RequestCertificate returned no ARN`);
    context.certificateArn = arn;
  }
  return context;
}

export const stackNameOf = (context: Readonly<Record<string, string>>): string =>
  `Flow-${context.stage ?? "dev"}`;

/**
 * Where the CLI's runs and the app's synthesis keep the code V8 compiled (Node's compile cache),
 * unless NODE_COMPILE_CACHE names another directory: each run after the first reuses what an
 * earlier one compiled from the same text, so the CLI's 16 MB bundle and aws-cdk-lib's modules are
 * not all compiled again (about 0.1 CPU-s of the CLI's 2 at each start). Node keys it by its own
 * version and each file's content; `node_modules/.cache`, as the Lambda bundles'.
 */
export const COMPILE_CACHE_DIR = join(PROJECT_ROOT, "node_modules", ".cache", "flow-node-compile");

/**
 * The CLI's environment: only the local endpoint and dummy credentials, never a profile; the
 * compile cache (COMPILE_CACHE_DIR) unless the caller's environment names one.
 */
export function cdkEnvironment(endpoint: string, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  for (const name of ["AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"]) delete env[name];
  const url = new URL(endpoint);
  if (url.hostname === "127.0.0.1") url.hostname = "localhost";
  return {
    ...env,
    AWS_ENDPOINT_URL: endpoint,
    AWS_ENDPOINT_URL_S3_FOR_CLOUDFORMATION: url.origin,
    AWS_ACCESS_KEY_ID: DUMMY_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: DUMMY_CREDENTIALS.secretAccessKey,
    AWS_REGION: REHEARSAL_REGION,
    AWS_DEFAULT_REGION: REHEARSAL_REGION,
    // No upgrade banner: it would ask the npm registry.
    CDK_DISABLE_VERSION_CHECK: "1",
    // No telemetry, also where cdk.json (which turns it off) is not read: see bootstrap below.
    CDK_DISABLE_CLI_TELEMETRY: "true",
    NODE_COMPILE_CACHE: env.NODE_COMPILE_CACHE || COMPILE_CACHE_DIR,
  };
}

export interface CdkRun {
  /** Everything the CLI printed (stdout and stderr interleaved). */
  output: string;
  seconds: number;
}

export class CdkCommandError extends Error {
  constructor(
    readonly args: readonly string[],
    readonly code: number | null,
    readonly output: string,
  ) {
    super(`cdk ${args.join(" ")} exited ${code}:\n${output.slice(-6000)}`);
    this.name = "CdkCommandError";
  }
}

/**
 * Runs the project's pinned CDK CLI, in the project root unless `cwd` says otherwise; `echo`
 * receives its output as it comes.
 */
export function runCdk(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  echo?: (chunk: string) => void,
  cwd: string = PROJECT_ROOT,
): Promise<CdkRun> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(join(PROJECT_ROOT, "node_modules", ".bin", "cdk"), [...args], {
      cwd,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    const take = (d: Buffer) => {
      const text = d.toString();
      output += text;
      echo?.(text);
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    child.on("error", reject);
    child.on("close", (code) => {
      if (code === 0) resolve({ output, seconds: (performance.now() - started) / 1000 });
      else reject(new CdkCommandError(args, code, output));
    });
  });
}

const contextArgs = (context: Readonly<Record<string, string>>): string[] =>
  Object.entries(context).flatMap(([key, value]) => ["-c", `${key}=${value}`]);

export interface RehearsalRun {
  endpoint: RehearsalEndpoint;
  context: Readonly<Record<string, string>>;
  /** The cloud assembly directory (kept apart from ./cdk.out, which `npm run synth` writes). */
  outdir: string;
  echo?: (chunk: string) => void;
}

/** What one CLI run is given: its arguments, the directory it runs in, and added environment. */
export interface CdkInvocation {
  args: string[];
  cwd: string;
  env: Record<string, string>;
}

/** The feature flag that lets aws-cdk-lib's built-in CloudFormation validation fail a synthesis. */
export const VALIDATION_FAILS_FLAG = "@aws-cdk/core:validateAgainstDefaultRules";

/**
 * The environment of a run that synthesizes the app. aws-cdk-lib's built-in CloudFormation
 * validation (a third of a synthesis' CPU) turns its findings into warnings unless
 * VALIDATION_FAILS_FLAG is set, so it cannot change a rehearsal's outcome: it is switched off
 * (`CDK_VALIDATION=false`, aws-cdk-lib's documented switch) unless the context or cdk.json sets
 * the flag. `npm run synth` still runs it and prints its findings.
 */
export function synthEnvironment(context: Readonly<Record<string, string>>): Record<string, string> {
  const cdkJson = JSON.parse(readFileSync(join(PROJECT_ROOT, "cdk.json"), "utf8")) as {
    context?: Record<string, unknown>;
  };
  const flag = context[VALIDATION_FAILS_FLAG] ?? cdkJson.context?.[VALIDATION_FAILS_FLAG];
  return flag === true || flag === "true" ? {} : { CDK_VALIDATION: "false" };
}

/**
 * True when the cloud assembly in `outdir` holds `stackName` for the context's environment: then
 * `cdk destroy` can read it instead of synthesizing the app again.
 */
export function assemblyHolds(outdir: string, context: Readonly<Record<string, string>>): boolean {
  const manifest = join(outdir, "manifest.json");
  if (!existsSync(manifest)) return false;
  const { artifacts = {} } = JSON.parse(readFileSync(manifest, "utf8")) as {
    artifacts?: Record<string, { type?: string; environment?: string }>;
  };
  const stack = artifacts[stackNameOf(context)];
  return (
    stack?.type === "aws:cloudformation:stack" &&
    stack.environment ===
      `aws://${context.account ?? REHEARSAL_ACCOUNT}/${context.region ?? REHEARSAL_REGION}`
  );
}

/**
 * The CLI's arguments for each step of a rehearsal (`destroy` looks at `run.outdir` for an
 * assembly; the others read nothing):
 * - `bootstrap`: the environment named, run in `outdir`, where no cdk.json names an app, so the CLI
 *   runs none (`--app` "can also be specified in cdk.json or ~/.cdk.json", `cdk bootstrap --help`;
 *   with an app it synthesizes it even for an explicit environment). Without cdk.json its
 *   `"notices": false` is not read, hence `--no-notices`.
 * - `deploy`: the one synthesis, with the context, written to `outdir` (`synthEnvironment`).
 * - `destroy`: from the assembly in `outdir` (`--app <dir>`: "a cloud assembly directory") when it
 *   holds the stack, else by synthesizing as the deploy did.
 */
export function cdkInvocation(step: "bootstrap" | "deploy" | "destroy", run: RehearsalRun): CdkInvocation {
  const stackName = stackNameOf(run.context);
  switch (step) {
    case "bootstrap":
      return {
        args: ["bootstrap", `aws://${REHEARSAL_ACCOUNT}/${REHEARSAL_REGION}`, "--no-notices"],
        cwd: run.outdir,
        env: {},
      };
    case "deploy":
      return {
        args: [
          "deploy",
          stackName,
          "--require-approval",
          "never",
          "--progress",
          "events",
          "--output",
          run.outdir,
          ...(run.endpoint.moto ? ["--method=direct"] : []),
          ...contextArgs(run.context),
        ],
        cwd: PROJECT_ROOT,
        env: synthEnvironment(run.context),
      };
    case "destroy":
      return assemblyHolds(run.outdir, run.context)
        ? { args: ["destroy", stackName, "--force", "--app", run.outdir], cwd: PROJECT_ROOT, env: {} }
        : {
            args: ["destroy", stackName, "--force", "--output", run.outdir, ...contextArgs(run.context)],
            cwd: PROJECT_ROOT,
            env: synthEnvironment(run.context),
          };
  }
}

function runStep(step: "bootstrap" | "deploy" | "destroy", run: RehearsalRun): Promise<CdkRun> {
  const { args, cwd, env } = cdkInvocation(step, run);
  return runCdk(args, { ...cdkEnvironment(run.endpoint.url), ...env }, run.echo, cwd);
}

/** `cdk bootstrap`, unless the endpoint already has the CDKToolkit stack. */
export async function bootstrapIfNeeded(run: RehearsalRun): Promise<CdkRun | undefined> {
  try {
    const { Stacks } = await cloudFormation(run.endpoint.url).send(
      new DescribeStacksCommand({ StackName: "CDKToolkit" }),
    );
    if (Stacks?.[0]?.StackStatus?.endsWith("_COMPLETE")) return undefined;
  } catch (error) {
    if (!/does not exist/.test((error as Error).message)) throw error;
  }
  mkdirSync(run.outdir, { recursive: true });
  return runStep("bootstrap", run);
}

export function deployStack(run: RehearsalRun): Promise<CdkRun> {
  return runStep("deploy", run);
}

export interface Destroyed extends CdkRun {
  /**
   * Set when the stack is gone but the endpoint left resources behind. moto's CloudFormation
   * deletes what it can, in passes, and cannot delete a NAT gateway, route table, VPC endpoint or
   * flow log: the VPC then "has dependencies", the CLI reports a failure, and the stack is deleted
   * anyway. Stopping that moto removes the rest.
   */
  incomplete?: string;
}

export async function destroyStack(run: RehearsalRun): Promise<Destroyed> {
  const stackName = stackNameOf(run.context);
  try {
    return await runStep("destroy", run);
  } catch (error) {
    if (
      !(error instanceof CdkCommandError) ||
      !run.endpoint.moto ||
      (await stackExists(run.endpoint.url, stackName))
    )
      throw error;
    const reason = /^.*cannot be deleted.*$/m.exec(error.output)?.[0] ?? error.message.split("\n")[0]!;
    return {
      output: error.output,
      seconds: Number.NaN,
      incomplete: reason.replace(/^.*?DeploymentError: /, ""),
    };
  }
}

/** False once the stack is deleted (DescribeStacks by name then fails, or says DELETE_COMPLETE). */
export async function stackExists(endpoint: string, stackName: string): Promise<boolean> {
  try {
    const { Stacks } = await cloudFormation(endpoint).send(
      new DescribeStacksCommand({ StackName: stackName }),
    );
    return Stacks?.[0] !== undefined && Stacks[0].StackStatus !== "DELETE_COMPLETE";
  } catch (error) {
    if (/does not exist/.test((error as Error).message)) return false;
    throw error;
  }
}

export interface TemplateResource {
  logicalId: string;
  type: string;
}

export interface Deployment {
  stackName: string;
  status: string;
  outputs: Record<string, string>;
  /** Template resources the stack lists, with the endpoint's physical id ("" when it gives none). */
  deployed: (TemplateResource & { physicalId: string })[];
  /** Template resources the stack does not list: the endpoint did not create them. */
  skipped: TemplateResource[];
}

export function readTemplate(
  outdir: string,
  stackName: string,
): { Resources: Record<string, { Type: string }> } {
  return JSON.parse(readFileSync(join(outdir, `${stackName}.template.json`), "utf8"));
}

/** The deployed stack against its template, resource by resource (moto lists skipped kinds blank). */
export async function describeDeployment(
  endpoint: string,
  outdir: string,
  stackName: string,
): Promise<Deployment> {
  const cf = cloudFormation(endpoint);
  const { Stacks } = await cf.send(new DescribeStacksCommand({ StackName: stackName }));
  const stack = Stacks?.[0];
  const listed = new Map<string, string>();
  for await (const page of paginateListStackResources({ client: cf }, { StackName: stackName })) {
    for (const r of page.StackResourceSummaries ?? []) {
      if (r.LogicalResourceId) listed.set(r.LogicalResourceId, r.PhysicalResourceId ?? "");
    }
  }
  const deployed: Deployment["deployed"] = [];
  const skipped: TemplateResource[] = [];
  for (const [logicalId, { Type: type }] of Object.entries(readTemplate(outdir, stackName).Resources)) {
    const physicalId = listed.get(logicalId);
    if (physicalId === undefined) skipped.push({ logicalId, type });
    else deployed.push({ logicalId, type, physicalId });
  }
  return {
    stackName,
    status: stack?.StackStatus ?? "UNKNOWN",
    outputs: Object.fromEntries((stack?.Outputs ?? []).map((o) => [o.OutputKey ?? "", o.OutputValue ?? ""])),
    deployed,
    skipped,
  };
}

function byKind(resources: readonly TemplateResource[]): [string, TemplateResource[]][] {
  const kinds = new Map<string, TemplateResource[]>();
  for (const r of resources) kinds.set(r.type, [...(kinds.get(r.type) ?? []), r]);
  return [...kinds.entries()].sort(([a], [b]) => a.localeCompare(b));
}

/**
 * What was deployed and what was not, by kind. Example (moto 5.2):
 *   Not created by this endpoint (16 resources of 10 kinds), so not rehearsed:
 *     AWS::CloudWatch::Alarm × 6  ObservabilityGateTripped…, ObservabilityStreamDlqNotEmpty…, …
 */
export function formatReport(deployment: Deployment, endpoint: RehearsalEndpoint): string {
  const width = Math.max(...[...deployment.deployed, ...deployment.skipped].map((r) => r.type.length));
  const lines = [
    `${deployment.stackName}: ${deployment.status} on ${endpoint.url}${endpoint.moto ? " (moto)" : ""}`,
    "Outputs:",
    ...Object.entries(deployment.outputs).map(([key, value]) => `  ${key} = ${value}`),
    `Deployed: ${deployment.deployed.length} resources of ${byKind(deployment.deployed).length} kinds`,
    ...byKind(deployment.deployed).map(([type, rs]) => `  ${type.padEnd(width)} × ${rs.length}`),
  ];
  if (deployment.skipped.length === 0) lines.push("Not created by this endpoint: none");
  else {
    lines.push(
      `Not created by this endpoint (${deployment.skipped.length} resources of ${byKind(deployment.skipped).length} kinds), so not rehearsed:`,
      ...byKind(deployment.skipped).map(
        ([type, rs]) => `  ${type.padEnd(width)} × ${rs.length}  ${rs.map((r) => r.logicalId).join(", ")}`,
      ),
    );
  }
  return lines.join("\n");
}
