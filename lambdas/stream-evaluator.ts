/**
 * Stream evaluator Lambda on the Runs and Targets streams (ReportBatchItemFailures): for every run
 * a batch touches in a way that may need a decision, one dispatch pass (gates, phase boundary,
 * completion, and refilling the freed slot). Wiring: src/service/lambdas/stream-evaluator.ts.
 */
import { streamEvaluatorFromEnvironment } from "../src/service/lambdas/stream-evaluator.js";

export const handler = streamEvaluatorFromEnvironment();
