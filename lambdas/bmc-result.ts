/**
 * Two event sources, one job (make what the BMCs and executions did durable): BMC reports from the
 * IoT rule, stored on their request records (idempotent: duplicates and late reports change
 * nothing); and child-task execution endings from EventBridge, recorded on the task, its run target
 * and the rack lock by the same recordTaskOutcome the last state uses. Parsing:
 * src/adapters/lambda/bmc-result-event.ts; handling: src/app/child-task/receiving.ts; wiring:
 * src/service/lambdas/bmc-result.ts.
 */
import type { Context } from "aws-lambda";
import {
  bmcResultFromEnvironment,
  bmcResultKeys,
  parseBmcResultEvent,
} from "../src/service/lambdas/bmc-result.js";

const { receiver, invoke } = bmcResultFromEnvironment();

export const handler = async (event: unknown, context: Context): Promise<unknown> => {
  const input = parseBmcResultEvent(event);
  return invoke(context, bmcResultKeys(input), () => receiver.receive(input));
};
