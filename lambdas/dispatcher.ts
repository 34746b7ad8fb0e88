/**
 * Dispatcher Lambda. `{}` (the ticker's schedule) → one pass over every active run;
 * `{ runId }` (a wake-up) → one pass for that run. Wiring: src/service/lambdas/dispatcher.ts.
 */
import { dispatcherFromEnvironment } from "../src/service/lambdas/dispatcher.js";

const dispatcher = dispatcherFromEnvironment();

export const handler = async (event: { runId?: string } | null | undefined) => {
  const runId = event?.runId;
  if (typeof runId === "string" && runId !== "") return dispatcher.dispatchRun(runId);
  return dispatcher.tick();
};
