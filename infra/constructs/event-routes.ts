/**
 * Where events flow between the parts, and where what fails to flow lands: the Runs and Targets
 * streams into the stream-evaluator, the RunEvents stream into the event publisher and on to the
 * one bus it may write to, the BMC reports queue into bmc-result, and the two dead-letter queues.
 * Built in the stack's own scope, under the ids the stack has always given them.
 */
import { Duration } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as lambdaDestinations from "aws-cdk-lib/aws-lambda-destinations";
import * as eventSources from "aws-cdk-lib/aws-lambda-event-sources";
import * as sqs from "aws-cdk-lib/aws-sqs";
import type { Construct } from "constructs";
import { acknowledge } from "../nag.js";
import type { ChildTaskStateMachine } from "./child-task.js";
import type { FlowData } from "./data.js";
import { eventBusArn } from "./deploy-inputs.js";
import type { FlowFunction } from "./flow-function.js";

export interface EventRoutesProps {
  readonly data: FlowData;
  readonly streamEvaluator: FlowFunction;
  readonly eventPublisher: FlowFunction;
  readonly bmcResult: FlowFunction;
  readonly childTask: ChildTaskStateMachine;
  /** The bus the run history goes to: `default` or a name in this account, or an ARN. */
  readonly eventBusName: string;
}

export interface EventRoutes {
  readonly streamDlq: sqs.Queue;
  readonly bmcResultDlq: sqs.Queue;
  /** BMC reports from the IoT rule, consumed by bmc-result in batches. */
  readonly bmcReports: sqs.Queue;
}

export function eventRoutes(scope: Construct, props: EventRoutesProps): EventRoutes {
  // ---- the streams: Runs and Targets only. The evaluator wakes a run on a target reaching a
  // terminal status (or CLAIMED → BLOCKED) and on a run inserted or moved into PENDING/RUNNING
  // (src/app/stream-evaluator.ts); task items never decide anything there, their outcome reaches
  // the run through its target. The Tasks table has no stream.
  // The DLQ holds failure metadata (shard, sequence numbers), not item images: SQS-managed SSE.
  const streamDlq = new sqs.Queue(scope, "StreamDlq", {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.days(14),
  });
  for (const table of [props.data.table("Runs"), props.data.table("Targets")]) {
    props.streamEvaluator.fn.addEventSource(
      new eventSources.DynamoEventSource(table, {
        startingPosition: lambda.StartingPosition.TRIM_HORIZON,
        batchSize: 100,
        bisectBatchOnError: true,
        retryAttempts: 5,
        // Records older than a day are past any useful gate decision; they go to the DLQ.
        maxRecordAge: Duration.days(1),
        reportBatchItemFailures: true,
        onFailure: new eventSources.SqsDlq(streamDlq),
      }),
    );
  }

  // ---- the run history out: RunEvents stream → event-publisher → the one bus it may write to.
  // At least once (src/app/run-event-relay.ts): records whose events the bus refused are retried
  // from the lowest failed one; after the retries, or a day, the DLQ gets their metadata.
  props.eventPublisher.fn.addEventSource(
    new eventSources.DynamoEventSource(props.data.table("RunEvents"), {
      startingPosition: lambda.StartingPosition.TRIM_HORIZON,
      batchSize: 100,
      bisectBatchOnError: true,
      retryAttempts: 10,
      maxRecordAge: Duration.days(1),
      reportBatchItemFailures: true,
      onFailure: new eventSources.SqsDlq(streamDlq),
    }),
  );
  props.data.grantStreamKey(props.eventPublisher.role, "EventPublisher");
  props.eventPublisher.role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: "PublishRunEvents",
      actions: ["events:PutEvents"],
      resources: [eventBusArn(scope, props.eventBusName)],
    }),
  );
  acknowledge(
    props.eventPublisher.role,
    "Resource * is required by the services: dynamodb:ListStreams (stream event source) and X-Ray have no resource-level permissions.",
    "AwsSolutions-IAM5[Resource::*]",
  );

  // ---- execution ends the machine could not record → bmc-result
  // What bmc-result could not take lands here: EventBridge deliveries that failed for a day, and
  // invocations (execution ends and BMC reports alike) that still failed after Lambda's two
  // retries. The messages are the events themselves (task ids, statuses, report fields; BMC
  // reports carry no credentials), so SQS-managed SSE; a redrive replays them to bmc-result.
  const bmcResultDlq = new sqs.Queue(scope, "BmcResultDlq", {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.days(14),
  });
  props.bmcResult.fn.configureAsyncInvoke({
    retryAttempts: 2,
    onFailure: new lambdaDestinations.SqsDestination(bmcResultDlq),
  });
  props.childTask.routeUnrecordedEnds(props.bmcResult.fn, bmcResultDlq);

  // ---- BMC reports: IoT rule → this queue → bmc-result, in batches
  // One invocation per batch (up to 1,000 reports gathered for at most 1 s) and one conditional
  // write per command set a batch touches (src/app/child-task/receiving.ts), instead of one
  // invocation and one write per report. Reports the receiver could not store are handed back
  // (batch item failures) and delivered again; after 5 receives they go to the bmc-result DLQ.
  // Visibility: 6× the function's timeout, as Lambda asks of an SQS source.
  const bmcReports = new sqs.Queue(scope, "BmcReports", {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    visibilityTimeout: Duration.seconds(90),
    retentionPeriod: Duration.days(1),
    deadLetterQueue: { queue: bmcResultDlq, maxReceiveCount: 5 },
  });
  props.bmcResult.fn.addEventSource(
    new eventSources.SqsEventSource(bmcReports, {
      batchSize: 1000,
      maxBatchingWindow: Duration.seconds(1),
      reportBatchItemFailures: true,
    }),
  );

  acknowledge(
    props.streamEvaluator.role,
    "Resource * is required by the services: dynamodb:ListStreams (stream event source) and X-Ray have no resource-level permissions.",
    "AwsSolutions-IAM5[Resource::*]",
  );
  for (const dlq of [streamDlq, bmcResultDlq]) {
    acknowledge(
      dlq,
      "This queue IS a dead-letter destination (stream mappings; bmc-result's EventBridge target, async failures and the reports queue); a DLQ for the DLQ adds nothing. Its depth alarms.",
      "AwsSolutions-SQS3",
    );
  }
  return { streamDlq, bmcResultDlq, bmcReports };
}
