/**
 * Every Task state of the child-task state machine (state-machines/child-task.asl.json): the
 * state's Parameters carry `step`, and the handler's return value is the state's result. A thrown
 * StepError's `name` (RackLockHeld, BmcTimeout, …) is the Lambda's errorType, which is what the
 * state machine's Retry and Catch match. Wiring: src/service/lambdas/task-steps.ts.
 */
import { type StepEvent, taskStepsFromEnvironment } from "../src/service/lambdas/task-steps.js";

const steps = taskStepsFromEnvironment();

export const handler = async (event: StepEvent): Promise<unknown> => steps.handle(event);
