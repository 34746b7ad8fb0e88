/**
 * Every Task state of the child-task state machine (state-machines/child-task.asl.json): the
 * state's Parameters carry `step`, and the handler's return value is the state's result. A thrown
 * StepError's `name` (RackLockHeld, BmcTimeout, …) is the Lambda's errorType, which is what the
 * state machine's Retry and Catch match. Wiring: src/service/lambdas/task-steps.ts.
 */
import type { Context } from "aws-lambda";
import { type StepEvent, taskStepsFromEnvironment } from "../src/service/lambdas/task-steps.js";

const { steps, invoke } = taskStepsFromEnvironment();

export const handler = async (event: StepEvent, context: Context): Promise<unknown> =>
  invoke(context, { taskId: event.taskId }, () => steps.handle(event));
