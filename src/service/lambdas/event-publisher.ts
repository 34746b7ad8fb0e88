/**
 * Composition root of the event-publisher Lambda (lambdas/event-publisher.ts): the RunEvents
 * stream's batches (ReportBatchItemFailures) decoded by the DynamoDB adapter, each history event
 * published to the configured EventBridge bus, at least once. Observed by the function's
 * Powertools logger, metrics and tracer. It reads no table: the stream record is the event.
 */
import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import { createAwsClient } from "../../adapters/aws-config.js";
import { runEventsBatchHandler } from "../../adapters/dynamodb/run-event-records.js";
import { EventBridgeRunEventBus } from "../../adapters/eventbridge/run-event-bus.js";
import { type LambdaObservability, lambdaObservability } from "../../adapters/observability/lambda.js";
import { createRunEventRelay } from "../../app/run-event-relay.js";
import { awsOptions } from "../aws.js";
import { type EventPublisherConfig, readEventPublisherConfig } from "../config.js";

export type RunEventsBatchHandler = ReturnType<typeof runEventsBatchHandler>;

export interface EventPublisherLambda {
  handle: RunEventsBatchHandler;
  invoke: LambdaObservability["invoke"];
}

export function composeEventPublisherLambda(
  config: EventPublisherConfig,
  obs: LambdaObservability = lambdaObservability("event-publisher"),
): EventPublisherLambda {
  const client = obs.capture(createAwsClient(EventBridgeClient, awsOptions(config)));
  const relay = createRunEventRelay({
    bus: new EventBridgeRunEventBus(client, config.eventBusName),
    logger: obs.logger,
  });
  return { handle: runEventsBatchHandler(relay), invoke: obs.invoke };
}

export const eventPublisherFromEnvironment = (): EventPublisherLambda =>
  composeEventPublisherLambda(readEventPublisherConfig(process.env));
