/**
 * The CDK app: `npx cdk synth` / `npx cdk deploy` (cdk.json runs this file with tsx).
 * Configuration comes from context only (infra/config.ts, docs/deploy.md), so a synth with no
 * context works offline with placeholders; cdk-nag's AwsSolutions pack checks every resource.
 *
 * Run directly (`npx tsx infra/bin/app.ts`, no CLI) it reads cdk.json's context itself and writes
 * ./cdk.out: the same synthesis, bundling and cdk-nag validation as `cdk synth`, without the CLI
 * (useful while the installed CLI cannot read this aws-cdk-lib's assembly; docs/deploy.md).
 */
import { App } from "aws-cdk-lib";
import { buildFlowApp } from "../app.js";
import { standaloneAppProps } from "../standalone.js";

const app = new App(standaloneAppProps());
buildFlowApp(app);
app.synth();
