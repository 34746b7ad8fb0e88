/**
 * BMC reports (IoT rule) onto their request records, and execution endings (EventBridge) onto the
 * task, its run target and the rack lock. Parsing: src/adapters/lambda/bmc-result-event.ts;
 * handling: src/app/child-task/receiving.ts; wiring: src/service/lambdas/bmc-result.ts.
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
