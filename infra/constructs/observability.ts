/**
 * One dashboard per deployment and the alarms an operator must see, from
 * - the product's EMF metrics: namespace `Flow`, no dimensions (see FLOW_METRICS and docs/deploy.md),
 * - the services' own metrics: Lambda errors/duration/iterator age, SQS depth, Step Functions.
 *
 * Alarms notify an SNS topic when one is configured (context alarmEmail or alarmTopicArn).
 */
import { Duration } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as actions from "aws-cdk-lib/aws-cloudwatch-actions";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as sns from "aws-cdk-lib/aws-sns";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import type * as sfn from "aws-cdk-lib/aws-stepfunctions";
import { Construct } from "constructs";

export const FLOW_METRIC_NAMESPACE = "Flow";

/** The EMF metric names the runtime emits (documented in docs/deploy.md). */
export const FLOW_METRICS = {
  targetsDispatched: "TargetsDispatched",
  targetsCompleted: "TargetsCompleted",
  targetsFailed: "TargetsFailed",
  targetsTerminated: "TargetsTerminated",
  dispatchLatencyMs: "DispatchLatencyMs",
  gateTrips: "GateTrips",
  bmcFailures: "BmcFailures",
  rackConflicts: "RackConflicts",
  tickOverrunMs: "TickOverrunMs",
} as const;

export interface ObservabilityProps {
  readonly dashboardName: string;
  readonly dispatcher: lambda.IFunction;
  readonly streamEvaluator: lambda.IFunction;
  readonly taskSteps: lambda.IFunction;
  readonly bmcResult: lambda.IFunction;
  readonly streamDlq: sqs.IQueue;
  readonly childTask: sfn.IStateMachine;
  readonly ticker: sfn.IStateMachine;
  readonly alarmTopic?: sns.ITopic;
  /** The tick interval; a pass that starts this late is an overrun worth an alarm. */
  readonly tickIntervalSeconds: number;
}

const flowMetric = (metricName: string, statistic: string, label?: string): cloudwatch.Metric =>
  new cloudwatch.Metric({
    namespace: FLOW_METRIC_NAMESPACE,
    metricName,
    statistic,
    period: Duration.minutes(1),
    label,
  });

export class Observability extends Construct {
  readonly dashboard: cloudwatch.Dashboard;
  readonly alarms: cloudwatch.Alarm[] = [];

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    const m = FLOW_METRICS;
    const oneMinute = { period: Duration.minutes(1) };

    // Alarm metrics carry no label: a labelled metric would become a metric-math alarm.
    const gateTrips = flowMetric(m.gateTrips, "Sum");
    const dlqDepth = props.streamDlq.metricApproximateNumberOfMessagesVisible({
      ...oneMinute,
      statistic: "Maximum",
    });
    const dispatcherErrors = props.dispatcher.metricErrors({ ...oneMinute, statistic: "Sum" });
    const tickOverrun = flowMetric(m.tickOverrunMs, "Maximum");
    const iteratorAge = props.streamEvaluator.metric("IteratorAge", { ...oneMinute, statistic: "Maximum" });

    this.dashboard = new cloudwatch.Dashboard(this, "Dashboard", {
      dashboardName: props.dashboardName,
      defaultInterval: Duration.hours(3),
    });
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: "Targets by status (per minute)",
        left: [
          flowMetric(m.targetsDispatched, "Sum", "dispatched"),
          flowMetric(m.targetsCompleted, "Sum", "completed"),
          flowMetric(m.targetsFailed, "Sum", "failed"),
          flowMetric(m.targetsTerminated, "Sum", "terminated"),
        ],
        stacked: true,
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: "Dispatch latency (ms): ready → child task started",
        left: [
          flowMetric(m.dispatchLatencyMs, "p50", "p50"),
          flowMetric(m.dispatchLatencyMs, "p90", "p90"),
          flowMetric(m.dispatchLatencyMs, "p99", "p99"),
        ],
        width: 12,
      }),
    );
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: "Gate trips, BMC failures, rack conflicts",
        left: [
          gateTrips,
          flowMetric(m.bmcFailures, "Sum", "BMC failures"),
          flowMetric(m.rackConflicts, "Sum", "rack conflicts"),
        ],
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: "Ticker: overrun (ms) and executions failed",
        left: [tickOverrun],
        right: [props.ticker.metricFailed({ ...oneMinute, label: "ticker executions failed" })],
        width: 12,
      }),
    );
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: "Dispatcher: errors and duration",
        left: [dispatcherErrors],
        right: [
          props.dispatcher.metricDuration({ ...oneMinute, statistic: "p50", label: "duration p50" }),
          props.dispatcher.metricDuration({ ...oneMinute, statistic: "Maximum", label: "duration max" }),
        ],
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: "Stream: evaluator iterator age (ms) and DLQ depth",
        left: [iteratorAge],
        right: [dlqDepth],
        width: 12,
      }),
    );
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: "Child tasks (Step Functions)",
        left: [
          props.childTask.metricStarted({ ...oneMinute, label: "started" }),
          props.childTask.metricSucceeded({ ...oneMinute, label: "succeeded" }),
          props.childTask.metricFailed({ ...oneMinute, label: "failed" }),
          props.childTask.metricTimedOut({ ...oneMinute, label: "timed out" }),
        ],
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: "Lambda errors",
        left: [
          props.streamEvaluator.metricErrors({ ...oneMinute, label: "stream-evaluator" }),
          props.taskSteps.metricErrors({ ...oneMinute, label: "task-steps" }),
          props.bmcResult.metricErrors({ ...oneMinute, label: "bmc-result" }),
        ],
        width: 12,
      }),
    );

    const alarm = (
      alarmId: string,
      metric: cloudwatch.IMetric,
      threshold: number,
      evaluationPeriods: number,
      description: string,
    ) => {
      const created = new cloudwatch.Alarm(this, alarmId, {
        metric,
        threshold,
        evaluationPeriods,
        datapointsToAlarm: evaluationPeriods,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        // No data means nothing happened (no trips, no errors), not an outage of the metric.
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        alarmDescription: description,
      });
      if (props.alarmTopic) {
        created.addAlarmAction(new actions.SnsAction(props.alarmTopic));
        created.addOkAction(new actions.SnsAction(props.alarmTopic));
      }
      this.alarms.push(created);
      return created;
    };
    alarm("GateTripped", gateTrips, 1, 1, "A safety gate tripped: a run was paused or failed by its gates.");
    alarm(
      "StreamDlqNotEmpty",
      dlqDepth,
      1,
      1,
      "Stream records the gate evaluator gave up on are in the DLQ: counters or gates may lag; inspect and redrive.",
    );
    alarm("DispatcherErrors", dispatcherErrors, 1, 3, "The dispatcher failed in three consecutive minutes.");
    alarm(
      "TickOverrun",
      tickOverrun,
      props.tickIntervalSeconds * 1000,
      3,
      "Dispatcher passes ran a whole tick late for three consecutive minutes.",
    );
    alarm(
      "StreamIteratorAge",
      iteratorAge,
      60_000,
      5,
      "The gate evaluator is more than a minute behind the stream for five minutes.",
    );
  }
}
