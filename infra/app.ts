/**
 * Builds the app's one stack from context and registers cdk-nag. Shared by infra/bin/app.ts (what
 * cdk.json runs) and the tests, so the tests check the same wiring the CLI synthesizes.
 */
import { type App, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import { readDeployConfig } from "./config.js";
import { FlowStack } from "./stacks/flow-stack.js";

export function buildFlowApp(app: App): FlowStack {
  const config = readDeployConfig((key) => app.node.tryGetContext(key));
  const stack = new FlowStack(app, `Flow-${config.stage}`, {
    config,
    env: { account: config.account, region: config.region },
    description: `Flow operation runs (${config.stage}): gRPC front, DynamoDB, dispatcher, child tasks, IoT, dashboard`,
    tags: { product: "flow-operation-runs", stage: config.stage },
  });
  // Every resource is checked at synth; an unacknowledged finding fails the synth.
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  return stack;
}
