/**
 * Builds the dispatcher's dependencies from the environment, once per Lambda container (module
 * scope in lambdas/dispatcher.ts and lambdas/stream-evaluator.ts).
 *
 * Environment (src/config.ts ENV): FLOW_TABLE_PREFIX (required), FLOW_CHILD_TASK_STATE_MACHINE_ARN
 * (the child-task submitter starts executions of it), FLOW_SECRETS_KMS_KEY_ID, AWS_ENDPOINT_URL
 * (optional, any AWS-compatible endpoint).
 */
import type { DynamoStores } from "../adapters/dynamodb/index.js";
import { createDispatcher, type Dispatcher } from "../app/dispatcher.js";
import { emfMetrics, jsonLogger } from "../app/observability.js";
import type { ChildTaskSubmitter } from "../app/ports.js";
import { composeChildTasks } from "./compose-aws.js";

export interface DispatchComposition {
  stores: DynamoStores;
  submitter: ChildTaskSubmitter;
  dispatcher: Dispatcher;
}

export function composeDispatch(
  env: Record<string, string | undefined> = process.env,
  options: { service: string; submitter?: ChildTaskSubmitter } = { service: "dispatcher" },
): DispatchComposition {
  // The child-task service starts one Step Functions execution per claimed target.
  const child = composeChildTasks(env, options.service);
  const { stores } = child;
  const submitter = options.submitter ?? child.service().submitter;
  const dispatcher = createDispatcher({
    runs: stores.runs,
    submitter,
    clock: Date.now,
    logger: jsonLogger,
    metrics: emfMetrics({ service: options.service }),
  });
  return { stores, submitter, dispatcher };
}
