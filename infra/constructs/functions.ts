/**
 * The five Lambda functions and the child-task state machine, with the environment each one's
 * composition root reads (src/service/config.ts; test/unit/infra-env.test.ts keeps the two in
 * step). Built in the stack's own scope, under the ids the stack has always given them; the stack
 * grants them what they call.
 */
import { ArnFormat, Duration, Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import type { Construct } from "constructs";
import type { ExternalCheckConfig } from "../../src/domain/external-check.js";
import { CHILD_TASK_ENV, ENV } from "../../src/service/config.js";
import type { FlowDeployConfig } from "../config.js";
import { ChildTaskStateMachine } from "./child-task.js";
import { FlowFunction } from "./flow-function.js";

export interface FlowFunctionsProps {
  readonly config: FlowDeployConfig;
  /** `Flow-<stage>`: the dispatcher's and the state machine's names start with it. */
  readonly namePrefix: string;
  readonly tablePrefix: string;
  readonly prod: boolean;
  readonly iotDataEndpoint: string;
  readonly secretsKeyArn: string;
  /** The image bucket's variable, for task-steps. */
  readonly imageBucket: Record<string, string>;
  /** The external checks' variable (empty without a checks file), for task-steps. */
  readonly checksEnvironment: Record<string, string>;
  readonly externalChecks: { checks: ExternalCheckConfig[] } | undefined;
}

export interface FlowFunctions {
  readonly taskSteps: FlowFunction;
  readonly childTask: ChildTaskStateMachine;
  readonly dispatcher: FlowFunction;
  readonly streamEvaluator: FlowFunction;
  readonly bmcResult: FlowFunction;
  readonly eventPublisher: FlowFunction;
  /** The build's variables (table prefix, version, commit, time), which the front gets too. */
  readonly build: Record<string, string>;
  /** The child task's settings, for whoever starts executions (the front too). */
  readonly childTaskSettings: Record<string, string>;
  /** The dispatcher's ARN, built from its name (task-steps and bmc-result wake it). */
  readonly dispatcherArn: string;
}

export function flowFunctions(scope: Construct, props: FlowFunctionsProps): FlowFunctions {
  const { config, namePrefix, tablePrefix, prod, iotDataEndpoint, imageBucket, checksEnvironment } = props;
  const { externalChecks } = props;
  const build = {
    [ENV.tablePrefix]: tablePrefix,
    [ENV.version]: config.version,
    [ENV.gitCommit]: config.gitCommit,
    [ENV.buildTime]: config.buildTime,
  };
  const fnDefaults = { retainLogs: prod };
  // Whoever records a run child's outcome (task-steps, bmc-result) wakes the dispatcher for the
  // run with an asynchronous invocation, so a freed slot refills without waiting for the stream.
  // By a physical name and an ARN built from it, not by reference: the dispatcher's role refers
  // to the child-task machine, which refers to task-steps, so a reference back would be a cycle.
  const dispatcherName = `${namePrefix}-dispatcher`;
  const dispatcherArn = Stack.of(scope).formatArn({
    service: "lambda",
    resource: "function",
    resourceName: dispatcherName,
    arnFormat: ArnFormat.COLON_RESOURCE_NAME,
  });
  const wakesDispatcher = { [ENV.dispatcherFunctionName]: dispatcherName };
  const taskSteps = new FlowFunction(scope, "TaskSteps", {
    ...fnDefaults,
    entryFile: "task-steps.ts",
    description: "Every Task state of the child-task state machine (switch on event.step)",
    timeout: Duration.seconds(30),
    environment: {
      ...build,
      ...wakesDispatcher,
      [ENV.iotDataEndpoint]: iotDataEndpoint,
      ...(config.legacyBmcTopics ? { [ENV.legacyBmcTopics]: "true" } : {}),
      [ENV.secretsKmsKeyId]: props.secretsKeyArn,
      ...imageBucket,
      ...checksEnvironment,
    },
  });
  // It hands racks to the Lambda checks (asynchronous invocations); an HTTPS check needs no grant.
  const checkFunctions = (externalChecks?.checks ?? []).flatMap((c) =>
    c.target.kind === "lambda" ? [c.target.functionArn] : [],
  );
  if (checkFunctions.length > 0) {
    taskSteps.fn.addToRolePolicy(
      new iam.PolicyStatement({
        sid: "InvokeExternalHealthChecks",
        actions: ["lambda:InvokeFunction"],
        resources: checkFunctions,
      }),
    );
  }
  const childTask = new ChildTaskStateMachine(scope, "ChildTask", {
    taskSteps: taskSteps.fn,
    stateMachineName: `${namePrefix}-child-task`,
    retainLogs: prod,
    includeExecutionData: !prod,
  });
  const childTaskArn = childTask.stateMachine.stateMachineArn;

  // Both build the Step Functions task service (awsDispatcher in src/service/aws.ts), which needs
  // the machine's ARN at cold start. Neither touches credentials: run children read
  // theirs in task-steps, so no secrets key id (and no grant) here.
  // Whoever starts executions (these two and the front) tells each the deployment's settings.
  const childTaskSettings = Object.fromEntries(
    Object.entries(CHILD_TASK_ENV).map(([key, name]) => [
      name,
      String(config.childTask[key as keyof typeof CHILD_TASK_ENV]),
    ]),
  );
  const dispatchEnvironment = {
    ...build,
    [ENV.childTaskStateMachineArn]: childTaskArn,
    ...childTaskSettings,
  };
  const dispatcher = new FlowFunction(scope, "Dispatcher", {
    ...fnDefaults,
    functionName: dispatcherName,
    entryFile: "dispatcher.ts",
    description:
      "Claims ready targets under the concurrency limit and starts child tasks ({} = full pass, {runId} = one run)",
    timeout: Duration.seconds(30),
    environment: dispatchEnvironment,
  });
  const streamEvaluator = new FlowFunction(scope, "StreamEvaluator", {
    ...fnDefaults,
    entryFile: "stream-evaluator.ts",
    description:
      "Runs and Targets streams: one dispatch pass per run a batch may need a decision for (gates, phases, completion, refill)",
    timeout: Duration.seconds(60),
    environment: dispatchEnvironment,
  });
  const bmcResult = new FlowFunction(scope, "BmcResult", {
    ...fnDefaults,
    entryFile: "bmc-result.ts",
    description:
      "BMC reports (flow/bmc/+/evt, in batches from the reports queue) onto their command sets; child-task executions that ended unrecorded",
    timeout: Duration.seconds(15),
    environment: { ...build, ...wakesDispatcher },
  });
  // A deploy updates the receiver before the steps, so a request id of a new form (the update
  // set's parts) is never sent while the receiver live is one that cannot parse it.
  taskSteps.fn.node.addDependency(bmcResult.fn);
  // And before the child-task definition: its AwaitWave's waits store a resume (the wave) with
  // their token, which only a receiver of that code hands back in the wake-up (without it the
  // wake-up's output would be the answers alone, where the definition reads the wave).
  childTask.stateMachine.node.addDependency(bmcResult.fn);

  const eventPublisher = new FlowFunction(scope, "EventPublisher", {
    ...fnDefaults,
    entryFile: "event-publisher.ts",
    description: "RunEvents stream: every run history event to EventBridge (source flow.operation-runs)",
    timeout: Duration.seconds(30),
    // No table prefix: it reads no table, only the stream records it is handed.
    environment: {
      [ENV.version]: config.version,
      [ENV.gitCommit]: config.gitCommit,
      [ENV.buildTime]: config.buildTime,
      [ENV.eventBusName]: config.eventBusName,
    },
  });
  return {
    taskSteps,
    childTask,
    dispatcher,
    streamEvaluator,
    bmcResult,
    eventPublisher,
    build,
    childTaskSettings,
    dispatcherArn,
  };
}
