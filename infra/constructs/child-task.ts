/**
 * The child task: one Standard execution per rack target. Its definition is the JSON file in
 * `state-machines/child-task.asl.json`, the same ASL the local stack runs with
 * aws-local-stepfunctions, so there is one definition and no CDK-only copy to drift.
 *
 * The file names its one Lambda as the placeholder `${TaskStepsFunctionArn}`; CloudFormation fills
 * it in through `DefinitionSubstitutions`. Example, a Task state in the file:
 *   "Resource": "arn:aws:states:::lambda:invoke",
 *   "Parameters": { "FunctionName": "${TaskStepsFunctionArn}", "Payload": { "step": "lock", "input.$": "$" } }
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ArnFormat, Duration, RemovalPolicy, Stack } from "aws-cdk-lib";
import * as events from "aws-cdk-lib/aws-events";
import * as eventTargets from "aws-cdk-lib/aws-events-targets";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import * as logs from "aws-cdk-lib/aws-logs";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import * as sfn from "aws-cdk-lib/aws-stepfunctions";
import { Construct, type IConstruct } from "constructs";
import { PROJECT_ROOT } from "../config.js";
import { acknowledge, acknowledgeWildcardResources } from "../nag.js";

export const CHILD_TASK_ASL_PATH = join(PROJECT_ROOT, "state-machines", "child-task.asl.json");
export const TASK_STEPS_PLACEHOLDER = "TaskStepsFunctionArn";

/** The detail-type Step Functions gives its execution events on the default event bus. */
export const EXECUTION_STATUS_CHANGE = "Step Functions Execution Status Change";
/**
 * The execution ends after which no state recorded the task's outcome: a stop (CancelTask, a run's
 * cancel, a gate), the 6-hour timeout, or a failure inside RecordFailure itself. SUCCEEDED is left
 * out: the machine only succeeds through a state that already recorded the outcome.
 */
export const UNRECORDED_EXECUTION_ENDS = ["ABORTED", "TIMED_OUT", "FAILED"] as const;

export class ChildTaskDefinitionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ChildTaskDefinitionError";
  }
}

/**
 * Reads and checks the ASL at synth time: it must parse, have `StartAt` and `States`, and use the
 * placeholder (a definition without it would deploy a state machine that calls some other Lambda).
 */
export function readChildTaskAsl(path: string = CHILD_TASK_ASL_PATH): string {
  if (!existsSync(path)) {
    throw new ChildTaskDefinitionError(
      `child-task state machine definition not found at ${path}: write state-machines/child-task.asl.json ` +
        `(its Lambda resource as the placeholder \${${TASK_STEPS_PLACEHOLDER}}) before synthesizing`,
    );
  }
  const text = readFileSync(path, "utf8");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ChildTaskDefinitionError(`${path} is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || !("StartAt" in parsed) || !("States" in parsed)) {
    throw new ChildTaskDefinitionError(`${path} is not a state machine definition (no StartAt/States)`);
  }
  if (!text.includes(`\${${TASK_STEPS_PLACEHOLDER}}`)) {
    throw new ChildTaskDefinitionError(`${path} never uses the placeholder \${${TASK_STEPS_PLACEHOLDER}}`);
  }
  // Re-serialized compactly: the deployed DefinitionString is the same JSON value as the file.
  return JSON.stringify(parsed);
}

export interface ChildTaskStateMachineProps {
  readonly taskSteps: lambda.IFunction;
  /** Explicit, so execution ARNs (`…:execution:<name>:<target id>`) can be granted by name. */
  readonly stateMachineName: string;
  readonly retainLogs: boolean;
  /** Execution input/output in the logs: on outside production (it holds rack and component ids). */
  readonly includeExecutionData: boolean;
}

export class ChildTaskStateMachine extends Construct {
  readonly stateMachine: sfn.StateMachine;
  readonly logGroup: logs.LogGroup;
  readonly stateMachineName: string;

  constructor(scope: Construct, id: string, props: ChildTaskStateMachineProps) {
    super(scope, id);
    this.stateMachineName = props.stateMachineName;
    const definition = readChildTaskAsl();
    this.logGroup = new logs.LogGroup(this, "Logs", {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: props.retainLogs ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    this.stateMachine = new sfn.StateMachine(this, "StateMachine", {
      stateMachineName: props.stateMachineName,
      stateMachineType: sfn.StateMachineType.STANDARD,
      definitionBody: sfn.DefinitionBody.fromString(definition),
      definitionSubstitutions: { [TASK_STEPS_PLACEHOLDER]: props.taskSteps.functionArn },
      // A firmware update with retries fits easily; a hung execution ends as States.Timeout.
      timeout: Duration.hours(6),
      tracingEnabled: true,
      logs: {
        destination: this.logGroup,
        level: sfn.LogLevel.ALL,
        includeExecutionData: props.includeExecutionData,
      },
    });
    // The definition is a string, so CDK cannot see the Lambda in it: grant the invoke by name.
    props.taskSteps.grantInvoke(this.stateMachine);

    const role = this.stateMachine.role;
    acknowledge(
      role,
      "Resource * is required by the services: CloudWatch Logs vended log delivery (logs:CreateLogDelivery, logs:DescribeResourcePolicies, …) and X-Ray (xray:PutTraceSegments, xray:GetSamplingRules, …) support no resource-level permissions.",
      "AwsSolutions-IAM5[Resource::*]",
    );
    acknowledgeWildcardResources(
      role,
      "Scoped wildcard: <task-steps ARN>:* is that one function's versions and aliases (grantInvoke).",
      [`${props.taskSteps.functionArn}:*`],
    );
  }

  /**
   * An EventBridge rule on this machine's unrecorded ends → `handler` (the bmc-result Lambda, which
   * reads `detail.name` = the task id, `detail.status`, `detail.error`, `detail.cause` and ends the
   * task, its run target and its rack lock). Events EventBridge cannot deliver within a day land in
   * `deadLetterQueue`. Example event it matches:
   *   { "source": "aws.states", "detail-type": "Step Functions Execution Status Change",
   *     "detail": { "stateMachineArn": "<this machine>", "name": "<task id>", "status": "ABORTED", … } }
   */
  routeUnrecordedEnds(handler: lambda.IFunction, deadLetterQueue: sqs.IQueue): events.Rule {
    const rule = new events.Rule(this, "UnrecordedEnds", {
      description:
        "Child-task executions that ended without recording their outcome (stopped, timed out, failed) → bmc-result",
      eventPattern: {
        source: ["aws.states"],
        detailType: [EXECUTION_STATUS_CHANGE],
        detail: {
          stateMachineArn: [this.stateMachine.stateMachineArn],
          status: [...UNRECORDED_EXECUTION_ENDS],
        },
      },
    });
    rule.addTarget(
      new eventTargets.LambdaFunction(handler, {
        deadLetterQueue,
        retryAttempts: 185,
        maxEventAge: Duration.hours(24),
      }),
    );
    return rule;
  }

  /** `arn:…:states:<region>:<account>:execution:<name>:*`: every execution of this machine, nothing else. */
  executionsArn(): string {
    const stack = Stack.of(this);
    return stack.formatArn({
      service: "states",
      resource: "execution",
      resourceName: `${this.stateMachineName}:*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
  }

  /**
   * `arn:…:states:<region>:<account>:stateMachine:<name>`, by name: no reference to the machine,
   * whose definition names the task-steps Lambda, so that Lambda's role can be granted on it.
   */
  stateMachineArnByName(): string {
    return Stack.of(this).formatArn({
      service: "states",
      resource: "stateMachine",
      resourceName: this.stateMachineName,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
  }

  /**
   * Grants `states:SendTaskSuccess` on this machine: waking an execution that waits for its wave's
   * results or its preflight's answers (AwaitWave's, AwaitPreflight's task token), which the
   * task-steps and bmc-result Lambdas do.
   */
  grantWaveWakeUps(grantee: iam.IGrantable): void {
    iam.Grant.addToPrincipal({
      grantee,
      actions: ["states:SendTaskSuccess"],
      resourceArns: [this.stateMachineArnByName()],
    });
  }

  /**
   * Grants `states:SendTaskFailure` on this machine: a judging wait (AwaitWave, AwaitNextWave) that
   * sends no next step ends itself with an error its Catch routes (OutcomeRecorded, StepHandedOver),
   * which the task-steps Lambda does.
   */
  grantWaitEnds(grantee: iam.IGrantable): void {
    iam.Grant.addToPrincipal({
      grantee,
      actions: ["states:SendTaskFailure"],
      resourceArns: [this.stateMachineArnByName()],
    });
  }

  /**
   * Grants `states:SendTaskHeartbeat` on this machine: keeping an AwaitWave's wait alive while its
   * BMCs report (an acknowledgement or progress stored), which the bmc-result Lambda does.
   */
  grantWaveHeartbeats(grantee: iam.IGrantable): void {
    iam.Grant.addToPrincipal({
      grantee,
      actions: ["states:SendTaskHeartbeat"],
      resourceArns: [this.stateMachineArnByName()],
    });
  }

  /** Grants execution-level actions (`states:StopExecution`, `states:DescribeExecution`) by name. */
  grantExecutionActions(grantee: iam.IGrantable & IConstruct, ...actions: string[]): void {
    iam.Grant.addToPrincipal({ grantee, actions, resourceArns: [this.executionsArn()] });
    acknowledgeWildcardResources(
      grantee,
      "Scoped wildcard: executions (:*) of the one child-task state machine, by its name.",
      [this.executionsArn()],
    );
  }
}
