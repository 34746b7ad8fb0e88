/**
 * One Lambda entry file under `lambdas/` as a Node.js 22, ARM64, locally bundled function with its
 * own role and its own log group.
 *
 * Why an explicit role: the default Lambda role carries the AWS managed
 * `AWSLambdaBasicExecutionRole`, which may write to *any* log group. Here the role may write to this
 * function's log group only (`logGroup.grantWrite`), and every other permission is granted by the
 * stack, named, one by one.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { AssetHashType, DockerImage, type Duration, RemovalPolicy } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as logs from "aws-cdk-lib/aws-logs";
import { Construct } from "constructs";
import { PROJECT_ROOT } from "../config.js";
import { LocalLambdaBundling } from "../lambda-bundles.js";
import { acknowledge } from "../nag.js";

export interface FlowFunctionProps {
  /** File name under `<root>/lambdas`, e.g. `dispatcher.ts`. The module must export `handler`. */
  readonly entryFile: string;
  readonly description: string;
  readonly timeout: Duration;
  readonly memorySize?: number;
  readonly environment: Record<string, string>;
  readonly retainLogs: boolean;
  /** A physical name, for a function others must name without referencing it (see functions.ts). */
  readonly functionName?: string;
}

export class FlowFunction extends Construct {
  readonly fn: lambda.Function;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: FlowFunctionProps) {
    super(scope, id);
    const entry = join(PROJECT_ROOT, "lambdas", props.entryFile);
    if (!existsSync(entry)) {
      throw new Error(
        `Lambda entry ${entry} does not exist (FlowFunction ${id}); it must export \`handler\``,
      );
    }
    this.logGroup = new logs.LogGroup(this, "Logs", {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: props.retainLogs ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    this.role = new iam.Role(this, "Role", {
      assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com"),
      description: `${id}: log to its own group; everything else granted by name in the stack`,
    });
    this.logGroup.grantWrite(this.role);

    this.fn = new lambda.Function(this, "Function", {
      // Bundled locally with esbuild, no Docker (lambda-bundles.ts: options, and the cache that
      // reuses a bundle while its inputs are unchanged); the image is never used.
      code: lambda.Code.fromAsset(join(PROJECT_ROOT, "lambdas"), {
        assetHashType: AssetHashType.OUTPUT,
        bundling: {
          image: DockerImage.fromRegistry("flow-local-bundling-only"),
          local: new LocalLambdaBundling(`lambdas/${props.entryFile}`),
        },
      }),
      handler: "index.handler",
      ...(props.functionName === undefined ? {} : { functionName: props.functionName }),
      runtime: lambda.Runtime.NODEJS_22_X,
      architecture: lambda.Architecture.ARM_64,
      description: props.description,
      timeout: props.timeout,
      memorySize: props.memorySize ?? 512,
      role: this.role,
      logGroup: this.logGroup,
      tracing: lambda.Tracing.ACTIVE,
      // Stack traces point into the TypeScript sources (the bundle ships its .map file).
      environment: { ...props.environment, NODE_OPTIONS: "--enable-source-maps" },
    });

    acknowledge(
      this.role,
      "Resource * is required by X-Ray: xray:PutTraceSegments and xray:PutTelemetryRecords (added by tracing: ACTIVE) support no resource-level permissions.",
      "AwsSolutions-IAM5[Resource::*]",
    );
    acknowledge(
      this.fn,
      "The product targets Node.js 22 (NODEJS_22_X) on purpose (architecture.md): local development and the tests run the same Node 22 (a devDependency); moving to a later runtime is a tested decision, not a default.",
      "AwsSolutions-L1",
    );
  }
}
