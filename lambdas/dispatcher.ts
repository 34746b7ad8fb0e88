/**
 * Dispatcher Lambda. `{}` (the ticker's schedule) → one pass over every active run;
 * `{ runId }` (a wake-up) → one pass for that run.
 */
import { composeDispatch } from "../src/service/compose-dispatch.js";

const { dispatcher } = composeDispatch(process.env, { service: "dispatcher" });

export const handler = async (event: { runId?: string } | null | undefined) => {
  const runId = event?.runId;
  if (typeof runId === "string" && runId !== "") return dispatcher.dispatchRun(runId);
  return dispatcher.tick();
};
