/**
 * When the app runs without the CDK CLI (no CDK_OUTDIR / CDK_CONTEXT_JSON in the environment), give
 * it what the CLI would: cdk.json's context and ./cdk.out. Under the CLI this returns {} and the
 * CLI's settings apply unchanged.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { AppProps } from "aws-cdk-lib";
import { PROJECT_ROOT } from "./config.js";

export function standaloneAppProps(env: NodeJS.ProcessEnv = process.env): AppProps {
  if (env.CDK_OUTDIR || env.CDK_CONTEXT_JSON) return {};
  const cdkJson = JSON.parse(readFileSync(join(PROJECT_ROOT, "cdk.json"), "utf8")) as { context?: object };
  return { outdir: join(PROJECT_ROOT, "cdk.out"), context: { ...(cdkJson.context ?? {}) } };
}
