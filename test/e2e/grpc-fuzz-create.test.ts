/**
 * Fuzzed CreateOperationRun requests over a real socket, against an application that accepts
 * everything: any status other than OK comes from the gRPC adapter (fake application:
 * test/support/grpc-fake-api.ts).
 */
import * as grpc from "@grpc/grpc-js";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFlowClient, type FlowClient } from "../../src/adapters/grpc/client.js";
import { createRunInputFromProto } from "../../src/adapters/grpc/convert/run-request.js";
import { decodeRequest } from "../../src/adapters/grpc/request-text.js";
import { type RunningGrpcServer, startGrpcServer } from "../../src/adapters/grpc/server.js";
import { clientCredentials } from "../../src/adapters/grpc/tls.js";
import type { CreateRunInput } from "../../src/domain/create-run-input.js";
import { ValidationError } from "../../src/domain/errors.js";
import * as pb from "../../src/gen/flow/v1/flow.js";
import { BUILD, FakeFlowApi, NEW_RUN_ID, recordingLogger, soon } from "../support/grpc-fake-api.js";

describe("grpc server e2e: fuzzed CreateOperationRun requests", () => {
  /** Always accepts: any status other than OK comes from the adapter. */
  class AcceptingApi extends FakeFlowApi {
    override async createRun(input: CreateRunInput): Promise<{ id: string }> {
      this.calls.push({ method: "createRun", args: [input] });
      return { id: NEW_RUN_ID };
    }
  }
  const api = new AcceptingApi();
  let server: RunningGrpcServer;
  let flow: FlowClient;
  let raw: grpc.Client;

  beforeAll(async () => {
    server = await startGrpcServer({
      api,
      host: "127.0.0.1",
      port: 0,
      logger: recordingLogger(),
      protoDir: false,
    });
    flow = createFlowClient(`127.0.0.1:${server.port}`, clientCredentials());
    raw = new grpc.Client(`127.0.0.1:${server.port}`, clientCredentials());
  });

  afterAll(async () => {
    flow.close();
    raw.close();
    await server.shutdown(1000);
  });

  /** What the adapter must answer for these bytes, worked out locally with the same converter. */
  function expected(bytes: Uint8Array): { code: number; details: string; input?: CreateRunInput } {
    let request: pb.CreateOperationRunRequest;
    try {
      // The adapter's own decoder: strict UTF-8, no control characters in string fields.
      request = decodeRequest(pb.FlowService.createOperationRun, bytes);
    } catch (err) {
      if (err instanceof ValidationError) return { code: grpc.status.INVALID_ARGUMENT, details: err.message };
      return { code: grpc.status.INVALID_ARGUMENT, details: `malformed request: ${(err as Error).message}` };
    }
    try {
      return { code: grpc.status.OK, details: "", input: createRunInputFromProto(request) };
    } catch (err) {
      return { code: grpc.status.INVALID_ARGUMENT, details: (err as Error).message };
    }
  }

  function send(bytes: Uint8Array): Promise<{ code: number; details: string }> {
    return new Promise((resolve) => {
      raw.makeUnaryRequest(
        "/v1.Flow/CreateOperationRun",
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.from(bytes),
        new grpc.Metadata(),
        soon(),
        (err) => resolve({ code: err?.code ?? grpc.status.OK, details: err?.details ?? "" }),
      );
    });
  }

  it("random bytes: always answered, OK or INVALID_ARGUMENT exactly as the decoder and converter say", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 200 }), async (bytes) => {
        const want = expected(bytes);
        const got = await send(bytes);
        expect(got).toEqual({ code: want.code, details: want.details });
      }),
      { numRuns: 300 },
    );
    expect(await flow.version({}, soon())).toEqual(BUILD);
  });

  const enumValue = fc.oneof(
    fc.integer({ min: 0, max: 3 }),
    fc.integer({ min: -5, max: 200 }),
  ) as fc.Arbitrary<never>;
  const duration = fc.option(
    fc.record({ seconds: fc.integer({ min: -400_000_000_000, max: 400_000_000_000 }), nanos: fc.integer() }),
    { nil: undefined },
  );
  const gate = fc.oneof(
    fc.constant({ gate: undefined }),
    fc.record({
      gate: fc.record({
        $case: fc.constant("failureRate" as const),
        value: fc.record({ scope: enumValue, failureThresholdPercent: fc.integer({ min: -5, max: 200 }) }),
      }),
    }),
    fc.record({
      gate: fc.record({
        $case: fc.constant("failureCount" as const),
        value: fc.record({ scope: enumValue, failureThresholdCount: fc.integer({ min: -5, max: 200 }) }),
      }),
    }),
  );
  const request = fc.record({
    name: fc.string({ maxLength: 300 }),
    description: fc.string({ maxLength: 50 }),
    configuration: fc.option(
      fc.record({
        selector: fc.option(fc.record({ percentage: fc.integer(), seed: fc.string({ maxLength: 10 }) }), {
          nil: undefined,
        }),
        gates: fc.array(gate, { maxLength: 40 }),
        retry: fc.record({ retryTimeout: duration, initialRetryDelay: duration, maxRetryDelay: duration }),
        strategy: enumValue,
        phases: fc.array(fc.integer({ min: -5, max: 120 }), { maxLength: 110 }),
        componentTypes: fc.array(enumValue, { maxLength: 20 }),
        excludeIds: fc.array(fc.oneof(fc.uuid(), fc.string({ maxLength: 40 })), { maxLength: 105 }),
      }),
      { nil: undefined },
    ),
  });

  it("random well-formed messages: the application receives exactly the converter's input, or INVALID_ARGUMENT", async () => {
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const c = r.configuration;
        const message = pb.CreateOperationRunRequest.fromPartial({
          name: r.name,
          description: r.description,
          configuration: c && {
            selector: c.selector && { selector: { $case: "percentage", value: c.selector } },
            options: {
              safetyPolicy: { gates: c.gates },
              conflictPolicy: { strategy: { $case: "retry", value: c.retry } },
              orderingPolicy: { ordering: { $case: "physicalLocation", value: { strategy: c.strategy } } },
              phasePolicy: {
                plan: {
                  $case: "percentage",
                  value: { phases: c.phases.map((percentage) => ({ percentage })) },
                },
              },
            },
            operation: {
              operation: {
                $case: "upgradeFirmware",
                value: {
                  targetSpec: {
                    targets: {
                      $case: "racks",
                      value: {
                        targets: [
                          { identifier: { $case: "name", value: "r" }, componentTypes: c.componentTypes },
                        ],
                      },
                    },
                  },
                },
              },
              targetScope: { excludeOperationRunIds: c.excludeIds.map((id) => ({ id })) },
            },
          },
        });
        const bytes = pb.CreateOperationRunRequest.encode(message).finish();
        const want = expected(bytes);
        const before = api.calls.length;
        let got: { code: number; details: string };
        try {
          await flow.createOperationRun(message, soon());
          got = { code: grpc.status.OK, details: "" };
        } catch (err) {
          got = { code: (err as grpc.ServiceError).code, details: (err as grpc.ServiceError).details };
        }
        expect(got).toEqual({ code: want.code, details: want.details });
        if (want.code === grpc.status.OK)
          expect(api.calls.slice(before)).toEqual([{ method: "createRun", args: [want.input] }]);
        else expect(api.calls.length).toBe(before);
      }),
      { numRuns: 200 },
    );
  });
});
