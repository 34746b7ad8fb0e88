/**
 * Builds the dispatcher's dependencies from the environment, once per Lambda container (module
 * scope in lambdas/dispatcher.ts and lambdas/stream-evaluator.ts).
 *
 * Environment (src/config.ts ENV): FLOW_TABLE_PREFIX (required), FLOW_CHILD_TASK_STATE_MACHINE_ARN
 * (for the child-task submitter), AWS_ENDPOINT_URL (optional, any AWS-compatible endpoint).
 */
import { createDynamoDbClient } from "../adapters/aws-config.js";
import { createDynamoStores, type DynamoStores, tableNames } from "../adapters/dynamodb/index.js";
import { createDispatcher, type Dispatcher, emfMetrics, jsonLogger } from "../app/dispatcher.js";
import type { ChildTaskSubmitter } from "../app/task-ports.js";
import { ENV, requireEnv } from "../config.js";
import { FlowError } from "../domain/errors.js";

export interface DispatchComposition {
  stores: DynamoStores;
  submitter: ChildTaskSubmitter;
  dispatcher: Dispatcher;
}

/**
 * TODO(child tasks): replace with the Step Functions-backed submitter from src/app/tasks.ts once
 * it exists (`createTaskService(...).submitter` or similar). Until then every submission throws,
 * which leaves the claimed target CLAIMED: its lease runs out and a later pass retries it. Nothing
 * is failed or started by mistake.
 */
export const unwiredSubmitter: ChildTaskSubmitter = {
  async submit() {
    throw new FlowError("UNAVAILABLE", "the child-task submitter is not wired into this deployment yet");
  },
  async cancel() {
    throw new FlowError("UNAVAILABLE", "the child-task submitter is not wired into this deployment yet");
  },
};

export function composeDispatch(
  env: Record<string, string | undefined> = process.env,
  options: { service: string; submitter?: ChildTaskSubmitter } = { service: "dispatcher" },
): DispatchComposition {
  const prefix = requireEnv(env, ENV.tablePrefix);
  const stores = createDynamoStores(createDynamoDbClient(), tableNames(prefix));
  const submitter = options.submitter ?? unwiredSubmitter;
  const dispatcher = createDispatcher({
    runs: stores.runs,
    submitter,
    clock: Date.now,
    logger: jsonLogger,
    metrics: emfMetrics({ service: options.service }),
  });
  return { stores, submitter, dispatcher };
}
