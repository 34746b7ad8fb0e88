/**
 * One dashboard per deployment and the alarms an operator must see, from
 * - the product's EMF metrics: namespace `Flow`, one dimension `Service` (the emitting component,
 *   see FLOW_METRIC_SERVICES and docs/deploy.md); the graphs and alarms sum over the services, e.g.
 *   GateTrips = FILL(dispatcher, 0) + FILL(stream-evaluator, 0) + … per minute,
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
// The namespace the runtime's Powertools metrics are written under: one definition, beside the names.
import { FLOW_METRIC_NAMESPACE } from "../../src/app/observability.js";

/**
 * The metric names the runtime emits (Powertools Metrics, EMF): the same list as FLOW_METRIC_NAMES in
 * src/app/observability.ts (a test keeps them equal; docs/deploy.md says who emits each).
 */
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
  accessDenied: "AccessDenied",
  accessPolicyRejected: "AccessPolicyRejected",
  accessPolicyUnreadable: "AccessPolicyUnreadable",
} as const;

/**
 * The `Service` dimension values the runtime emits with (the `service` each composition root gives
 * its Powertools metrics, src/service/aws.ts `Emitter`): the Lambda entry names, and `grpc` for
 * the front. A metric emitted under any other value is not shown.
 */
export const FLOW_METRIC_SERVICES = [
  "dispatcher",
  "stream-evaluator",
  "task-steps",
  "bmc-result",
  "event-publisher",
  "grpc",
] as const;

export interface ObservabilityProps {
  readonly dashboardName: string;
  readonly dispatcher: lambda.IFunction;
  readonly streamEvaluator: lambda.IFunction;
  readonly taskSteps: lambda.IFunction;
  readonly bmcResult: lambda.IFunction;
  readonly eventPublisher: lambda.IFunction;
  readonly streamDlq: sqs.IQueue;
  /** Execution ends and BMC reports bmc-result could not take (EventBridge DLQ, async on-failure). */
  readonly bmcResultDlq: sqs.IQueue;
  readonly childTask: sfn.IStateMachine;
  readonly ticker: sfn.IStateMachine;
  readonly alarmTopic?: sns.ITopic;
  /**
   * The tick interval. The dispatcher's TickOverrunMs is how late a full pass makes the next one
   * (the ticker waits the interval after each pass); a whole interval late is worth an alarm.
   */
  readonly tickIntervalSeconds: number;
}

const serviceMetric = (
  metricName: string,
  statistic: string,
  service: string,
  label?: string,
): cloudwatch.Metric =>
  new cloudwatch.Metric({
    namespace: FLOW_METRIC_NAMESPACE,
    metricName,
    statistic,
    dimensionsMap: { Service: service },
    period: Duration.minutes(1),
    label,
  });

/**
 * One figure across every emitting service: the sum of their Sums, or the max of their Maximums.
 * Missing services count as 0 (FILL), so the expression has a value whenever any service has one.
 */
const flowMetric = (
  metricName: string,
  statistic: "Sum" | "Maximum",
  label?: string,
): cloudwatch.MathExpression => {
  const usingMetrics: Record<string, cloudwatch.IMetric> = {};
  FLOW_METRIC_SERVICES.forEach((service, i) => {
    // Ids unique per metric: a graph may hold several of these expressions.
    usingMetrics[`${metricName.charAt(0).toLowerCase()}${metricName.slice(1)}_${i}`] = serviceMetric(
      metricName,
      statistic,
      service,
    );
  });
  const filled = Object.keys(usingMetrics).map((id) => `FILL(${id}, 0)`);
  return new cloudwatch.MathExpression({
    expression: statistic === "Sum" ? filled.join(" + ") : `MAX([${filled.join(", ")}])`,
    usingMetrics,
    label: label ?? metricName,
    period: Duration.minutes(1),
  });
};

export class Observability extends Construct {
  readonly dashboard: cloudwatch.Dashboard;
  readonly alarms: cloudwatch.Alarm[] = [];

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    const m = FLOW_METRICS;
    const oneMinute = { period: Duration.minutes(1) };

    const gateTrips = flowMetric(m.gateTrips, "Sum", "gate trips");
    const dlqDepth = props.streamDlq.metricApproximateNumberOfMessagesVisible({
      ...oneMinute,
      statistic: "Maximum",
    });
    const bmcResultDlqDepth = props.bmcResultDlq.metricApproximateNumberOfMessagesVisible({
      ...oneMinute,
      statistic: "Maximum",
    });
    const dispatcherErrors = props.dispatcher.metricErrors({ ...oneMinute, statistic: "Sum" });
    const tickOverrun = flowMetric(m.tickOverrunMs, "Maximum", "tick overrun (ms)");
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
        // Percentiles do not add up across services, so one line per emitter and percentile.
        left: (["dispatcher", "stream-evaluator"] as const).flatMap((service) =>
          (["p50", "p99"] as const).map((p) =>
            serviceMetric(m.dispatchLatencyMs, p, service, `${service} ${p}`),
          ),
        ),
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
        title: "gRPC front: calls refused by access control, policy reloads refused or unreadable",
        left: [serviceMetric(m.accessDenied, "Sum", "grpc", "access denied")],
        right: [
          serviceMetric(m.accessPolicyRejected, "Sum", "grpc", "policy reloads refused"),
          serviceMetric(m.accessPolicyUnreadable, "Sum", "grpc", "policy parameter reads failed"),
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
        title: "Lambda errors and the bmc-result DLQ",
        left: [
          props.streamEvaluator.metricErrors({ ...oneMinute, label: "stream-evaluator" }),
          props.taskSteps.metricErrors({ ...oneMinute, label: "task-steps" }),
          props.bmcResult.metricErrors({ ...oneMinute, label: "bmc-result" }),
          props.eventPublisher.metricErrors({ ...oneMinute, label: "event-publisher" }),
        ],
        right: [bmcResultDlqDepth.with({ label: "bmc-result DLQ depth" })],
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
    alarm(
      "BmcResultDlqNotEmpty",
      bmcResultDlqDepth,
      1,
      1,
      "An execution end or BMC report bmc-result could not record is in its DLQ: a task may stay active and its rack locked; inspect and redrive to bmc-result.",
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
