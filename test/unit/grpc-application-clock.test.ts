/**
 * The unary wrapper hands the application the call's deadline on the application's clock when that
 * is not the wall clock the caller's deadline is in (a local stack started on a shifted clock,
 * local/clock.ts): its now plus the time the call has left. Without one, the deadline as it came.
 */
import type { ServerUnaryCall, sendUnaryData } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import type { CallContext } from "../../src/adapters/grpc/handlers.js";
import { type GrpcLogger, unaryHandler } from "../../src/adapters/grpc/server.js";
import { FlowService, GetOperationRunRequest } from "../../src/gen/flow/v1/flow.js";

const WALL = 1_800_000_000_000;
const silent: GrpcLogger = { info: () => {}, warn: () => {}, error: () => {} };
const request = Buffer.from(
  GetOperationRunRequest.encode({
    id: { id: "3f2504e0-4f89-11d3-9a0c-0305e82c3301" },
    includeStats: false,
  }).finish(),
);

/** The deadline and abandonment the handler saw for a call with `deadline` (wall clock). */
async function contextSeen(deadline: number, applicationNow?: () => number) {
  return new Promise<{ deadline: number | undefined; abandoned: boolean }>((resolve) => {
    const handler = unaryHandler(
      FlowService.getOperationRun,
      async (_req, context: CallContext) => {
        resolve({ deadline: context.deadline, abandoned: context.abandoned() });
        return { operationRun: undefined };
      },
      { logger: silent, now: () => WALL, ...(applicationNow === undefined ? {} : { applicationNow }) },
    );
    const call = { request, cancelled: false, getDeadline: () => deadline };
    const callback: sendUnaryData<Buffer> = () => {};
    handler(call as unknown as ServerUnaryCall<Buffer, Buffer>, callback);
  });
}

describe("the deadline the application is handed", () => {
  it("is the caller's, as it came, without an application clock", async () => {
    expect(await contextSeen(WALL + 15_000)).toEqual({ deadline: WALL + 15_000, abandoned: false });
  });

  it("is moved onto an application clock an hour ahead: its now plus the 15 s the call has left", async () => {
    const ahead = WALL + 3_600_000;
    expect(await contextSeen(WALL + 15_000, () => ahead)).toEqual({
      deadline: ahead + 15_000,
      abandoned: false,
    });
  });
});
