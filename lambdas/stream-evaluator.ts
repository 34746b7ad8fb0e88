/**
 * Stream evaluator Lambda on the Runs and Targets streams (ReportBatchItemFailures): for every run
 * a batch touches in a way that may need a decision, one dispatch pass (gates, phase boundary,
 * completion, and refilling the freed slot). Wiring: src/service/lambdas/stream-evaluator.ts.
 */
import type { Context } from "aws-lambda";
import {
  type StreamBatchHandler,
  streamEvaluatorFromEnvironment,
} from "../src/service/lambdas/stream-evaluator.js";

const { handle, invoke } = streamEvaluatorFromEnvironment();

// A batch spans many runs: its lines name their run themselves.
export const handler = async (event: Parameters<StreamBatchHandler>[0], context: Context) =>
  invoke(context, {}, () => handle(event));
