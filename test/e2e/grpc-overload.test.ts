/**
 * The gRPC server's admission over a real socket: calls beyond the in-flight limit are shed with
 * RESOURCE_EXHAUSTED at once, not absorbed (fake application: test/support/grpc-fake-api.ts).
 */
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { createFlowClient } from "../../src/adapters/grpc/client.js";
import { startGrpcServer } from "../../src/adapters/grpc/server.js";
import { clientCredentials } from "../../src/adapters/grpc/tls.js";
import * as pb from "../../src/gen/flow/v1/flow.js";
import { BUILD, FakeFlowApi, failure, recordingLogger, SLOW_RUN_ID, soon } from "../support/grpc-fake-api.js";

describe("grpc server e2e: overload is shed over a real socket", () => {
  it("calls beyond the in-flight limit are RESOURCE_EXHAUSTED at once; a freed slot admits again", async () => {
    const api = new FakeFlowApi();
    const logger = recordingLogger();
    const server = await startGrpcServer({
      api,
      host: "127.0.0.1",
      port: 0,
      logger,
      protoDir: false,
      admission: { maxInFlightCalls: 2, maxConcurrentCreates: 1 },
    });
    const flow = createFlowClient(`127.0.0.1:${server.port}`, clientCredentials());
    const slow = () => flow.getOperationRun({ id: { id: SLOW_RUN_ID }, includeStats: false }, soon(10_000));
    const parked = [slow(), slow()];
    while (api.calls.filter((c) => c.method === "getRun").length < 2)
      await new Promise((r) => setTimeout(r, 5));

    const refused = await failure(flow.version({}, soon()));
    expect({ code: refused.code, details: refused.details }).toEqual({
      code: grpc.status.RESOURCE_EXHAUSTED,
      details:
        "server busy: 2 calls in progress, the most it admits at once; the call was not started and may be retried with backoff",
    });
    api.release();
    await Promise.all(parked);
    expect(await flow.version({}, soon())).toEqual(BUILD);
    flow.close();
    await server.shutdown(1000);
  });

  it("a create naming a run with a terminal escape is INVALID_ARGUMENT before the application sees it", async () => {
    const api = new FakeFlowApi();
    const server = await startGrpcServer({
      api,
      host: "127.0.0.1",
      port: 0,
      logger: recordingLogger(),
      protoDir: false,
    });
    const flow = createFlowClient(`127.0.0.1:${server.port}`, clientCredentials());
    const error = await failure(
      flow.createOperationRun(pb.CreateOperationRunRequest.fromPartial({ name: "\x1b[2Jrollout" }), soon()),
    );
    expect({ code: error.code, details: error.details }).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: "name: must not contain control characters (U+001B at character 0)",
    });
    expect(api.calls).toEqual([]);
    flow.close();
    await server.shutdown(1000);
  });
});
