/**
 * Helpers of the gRPC converter tests (test/unit/grpc-convert-*.test.ts): ids, the FlowError a
 * converter throws, a create request from a partial configuration, and enum numbers.
 */
import { FlowError } from "../../src/domain/errors.js";
import * as pb from "../../src/gen/flow/v1/flow.js";

export const A = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
export const B = "9b2c6a44-1d7e-4c1b-8c55-0d9f3a7e6b21";
export const C = "c0ffee00-1234-4abc-8def-0123456789ab";
export const NIL = "00000000-0000-0000-0000-000000000000";

/** The FlowError a converter throws; fails the test if it returns instead. */
export function thrown(f: () => unknown): FlowError {
  try {
    f();
  } catch (err) {
    if (err instanceof FlowError) return err;
    throw err;
  }
  throw new Error("expected a FlowError, got a value");
}

/** `configuration` of a CreateOperationRunRequest, from a partial. */
export function create(
  configuration: pb.DeepPartial<pb.OperationRunConfiguration>,
  name = "run",
): pb.CreateOperationRunRequest {
  return pb.CreateOperationRunRequest.fromPartial({ name, description: "", configuration });
}

/** A number the proto enum does not define, as a newer client (or garbage) would send it. */
export const odd = (n: number): never => n as never;

/** Every defined number of a ts-proto enum (UNRECOGNIZED = -1 excluded). */
export function numbers(e: Record<string, string | number>): number[] {
  return Object.values(e).filter((v): v is number => typeof v === "number" && v >= 0);
}
