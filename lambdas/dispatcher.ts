/**
 * Dispatcher Lambda. `{}` (the ticker's schedule) → one pass over every active run;
 * `{ runId }` (a wake-up) → one pass for that run. Wiring: src/service/lambdas/dispatcher.ts.
 */
import type { Context } from "aws-lambda";
import { dispatcherFromEnvironment } from "../src/service/lambdas/dispatcher.js";

const { dispatcher, invoke } = dispatcherFromEnvironment();

export const handler = async (event: { runId?: string } | null | undefined, context: Context) => {
  const runId = event?.runId;
  if (typeof runId === "string" && runId !== "")
    return invoke(context, { runId }, () => dispatcher.dispatchRun(runId));
  return invoke(context, {}, () => dispatcher.tick());
};
