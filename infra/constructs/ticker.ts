/**
 * The dispatcher's tick. EventBridge Scheduler fires at most once a minute, so the minute is cut
 * into ticks inside an Express workflow: invoke the dispatcher with `{}` (a full pass), wait the
 * interval, again, `ceil(60 / interval)` times in all, then end; the next schedule starts the
 * next minute. Worked example, interval 10 s: passes at 0, 10, 20, 30, 40, 50 s (6 invocations,
 * 5 waits), the next minute's first pass at about 60 s. Interval 7 s: 0, 7, …, 56 s (9 passes).
 *
 * Overlap is harmless by design: a slow pass can still run when the next minute's first starts,
 * and the dispatcher's claims are conditional writes (architecture.md, "Concurrency must hold under
 * concurrent dispatchers"). The Wait comes after each pass, so a pass of D ms starts every later pass
 * of the minute D ms late: the dispatcher's `tick()` emits D as `TickOverrunMs`, and the TickOverrun
 * alarm (observability.ts) fires when it reaches one interval.
 *
 * A failed pass does not end the minute: the error is caught and the loop goes on, so one bad
 * invocation costs one tick, not six; the dispatcher's Errors metric and alarm report it.
 */
import { Duration, RemovalPolicy } from "aws-cdk-lib";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import * as logs from "aws-cdk-lib/aws-logs";
import * as scheduler from "aws-cdk-lib/aws-scheduler";
import * as schedulerTargets from "aws-cdk-lib/aws-scheduler-targets";
import * as sfn from "aws-cdk-lib/aws-stepfunctions";
import * as tasks from "aws-cdk-lib/aws-stepfunctions-tasks";
import { Construct } from "constructs";
import { acknowledge, acknowledgeWildcardResources } from "../nag.js";

export interface TickerProps {
  readonly dispatcher: lambda.IFunction;
  /** Seconds between passes inside the minute, 1–60; 10 by default. */
  readonly intervalSeconds?: number;
  readonly retainLogs: boolean;
}

/** How many dispatcher passes one minute-long execution makes: ceil(60 / interval). */
export function ticksPerMinute(intervalSeconds: number): number {
  if (!Number.isInteger(intervalSeconds) || intervalSeconds < 1 || intervalSeconds > 60) {
    throw new RangeError(`ticker interval must be an integer from 1 to 60 seconds, got ${intervalSeconds}`);
  }
  return Math.ceil(60 / intervalSeconds);
}

export class Ticker extends Construct {
  readonly stateMachine: sfn.StateMachine;
  readonly schedule: scheduler.Schedule;
  readonly ticks: number;

  constructor(scope: Construct, id: string, props: TickerProps) {
    super(scope, id);
    const interval = props.intervalSeconds ?? 10;
    this.ticks = ticksPerMinute(interval);

    const init = new sfn.Pass(this, "Start", { parameters: { tick: 0 } });
    const pass = new tasks.LambdaInvoke(this, "Dispatch", {
      lambdaFunction: props.dispatcher,
      payload: sfn.TaskInput.fromObject({}),
      payloadResponseOnly: true,
      resultPath: sfn.JsonPath.DISCARD,
      // One quick retry for throttling/service errors; a pass must not outlive its tick.
      retryOnServiceExceptions: false,
      taskTimeout: sfn.Timeout.duration(Duration.seconds(Math.max(5, interval * 3))),
    });
    pass.addRetry({
      errors: ["Lambda.ServiceException", "Lambda.TooManyRequestsException", "Lambda.SdkClientException"],
      interval: Duration.seconds(1),
      maxAttempts: 1,
    });
    const count = new sfn.Pass(this, "Count", {
      parameters: { "tick.$": "States.MathAdd($.tick, 1)" },
    });
    pass.addCatch(count, { errors: ["States.ALL"], resultPath: sfn.JsonPath.DISCARD });
    const wait = new sfn.Wait(this, "Wait", { time: sfn.WaitTime.duration(Duration.seconds(interval)) });
    const more = new sfn.Choice(this, "MoreTicks")
      .when(sfn.Condition.numberLessThan("$.tick", this.ticks), wait.next(pass))
      .otherwise(new sfn.Succeed(this, "MinuteDone"));
    const definition = init.next(pass).next(count).next(more);

    const logGroup = new logs.LogGroup(this, "Logs", {
      retention: logs.RetentionDays.TWO_WEEKS,
      removalPolicy: props.retainLogs ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    this.stateMachine = new sfn.StateMachine(this, "StateMachine", {
      stateMachineType: sfn.StateMachineType.EXPRESS,
      definitionBody: sfn.DefinitionBody.fromChainable(definition),
      // Six passes and five waits take about 50 s plus the passes; two minutes is the hard stop.
      timeout: Duration.minutes(2),
      tracingEnabled: true,
      logs: { destination: logGroup, level: sfn.LogLevel.ALL, includeExecutionData: false },
    });

    this.schedule = new scheduler.Schedule(this, "EveryMinute", {
      description: `Starts the dispatcher ticker (${this.ticks} passes, ${interval} s apart)`,
      schedule: scheduler.ScheduleExpression.rate(Duration.minutes(1)),
      target: new schedulerTargets.StepFunctionsStartExecution(this.stateMachine, {
        input: scheduler.ScheduleTargetInput.fromObject({}),
        // A late minute is worthless: the next one is already due. No retries, no backlog.
        retryAttempts: 0,
        maxEventAge: Duration.minutes(1),
      }),
    });

    const role = this.stateMachine.role;
    acknowledge(
      role,
      "Resource * is required by the services: CloudWatch Logs vended log delivery (logs:CreateLogDelivery, …) and X-Ray (xray:PutTraceSegments, …) support no resource-level permissions.",
      "AwsSolutions-IAM5[Resource::*]",
    );
    acknowledgeWildcardResources(
      role,
      "Scoped wildcard: <dispatcher ARN>:* is that one function's versions and aliases (LambdaInvoke grant).",
      [`${props.dispatcher.functionArn}:*`],
    );
  }
}
