/**
 * Event publisher Lambda on the RunEvents stream (ReportBatchItemFailures): every run history
 * event to EventBridge (source `flow.operation-runs`), at least once. Wiring:
 * src/service/lambdas/event-publisher.ts.
 */
import type { Context } from "aws-lambda";
import {
  eventPublisherFromEnvironment,
  type RunEventsBatchHandler,
} from "../src/service/lambdas/event-publisher.js";

const { handle, invoke } = eventPublisherFromEnvironment();

// A batch spans many runs: its lines name their run themselves.
export const handler = async (event: Parameters<RunEventsBatchHandler>[0], context: Context) =>
  invoke(context, {}, () => handle(event));
