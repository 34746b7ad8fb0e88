/**
 * The gRPC server's shutdown over a real socket: graceful (health NOT_SERVING first, in-flight calls
 * finish) and forced (fake application: test/support/grpc-fake-api.ts).
 */
import * as grpc from "@grpc/grpc-js";
import { service as healthService } from "grpc-health-check";
import { describe, expect, it } from "vitest";
import { createFlowClient } from "../../src/adapters/grpc/client.js";
import { startGrpcServer } from "../../src/adapters/grpc/server.js";
import { clientCredentials } from "../../src/adapters/grpc/tls.js";
import {
  FakeFlowApi,
  failure,
  type HealthClient,
  recordingLogger,
  SLOW_RUN_ID,
  soon,
} from "../support/grpc-fake-api.js";

describe("grpc server e2e: shutdown", () => {
  it("graceful: health turns NOT_SERVING, an in-flight call still completes, then the server stops", async () => {
    const api = new FakeFlowApi();
    const server = await startGrpcServer({
      api,
      host: "127.0.0.1",
      port: 0,
      logger: recordingLogger(),
      protoDir: false,
      drainMs: 300,
    });
    const address = `127.0.0.1:${server.port}`;
    const flow = createFlowClient(address, clientCredentials());
    const Health = grpc.makeClientConstructor(healthService, "grpc.health.v1.Health");
    const health = new Health(address, clientCredentials()) as unknown as HealthClient;
    const check = () =>
      new Promise<string | undefined>((resolve) =>
        health.check({ service: "" }, (_e, res) => resolve(res?.status)),
      );
    expect(await check()).toBe("SERVING");

    const inFlight = flow.getOperationRun({ id: { id: SLOW_RUN_ID }, includeStats: false }, soon(10_000));
    while (!api.calls.some((c) => c.method === "getRun")) await new Promise((r) => setTimeout(r, 5));

    let stopped = false;
    const closing = server.shutdown(5000).then(() => {
      stopped = true;
    });
    expect(await check()).toBe("NOT_SERVING");
    // The drain is over once the server takes no new call (a health check fails to connect); the
    // one in flight still holds the shutdown open.
    while ((await check()) !== undefined) await new Promise((r) => setTimeout(r, 20));
    expect(stopped).toBe(false);

    api.release();
    const response = await inFlight;
    expect(response.operationRun?.summary?.id).toEqual({ id: SLOW_RUN_ID });
    await closing;
    expect(stopped).toBe(true);
    flow.close();
    health.close();
  });

  it("forced: a call still running when the grace period ends is cancelled and shutdown resolves", async () => {
    const api = new FakeFlowApi();
    const logger = recordingLogger();
    const server = await startGrpcServer({
      api,
      host: "127.0.0.1",
      port: 0,
      logger,
      protoDir: false,
    });
    const flow = createFlowClient(`127.0.0.1:${server.port}`, clientCredentials());
    const stuck = failure(
      flow.getOperationRun({ id: { id: SLOW_RUN_ID }, includeStats: false }, soon(10_000)),
    );
    while (!api.calls.some((c) => c.method === "getRun")) await new Promise((r) => setTimeout(r, 5));

    await server.shutdown(200);
    // The grace timer ended it: the call was still waiting on the API (released only below).
    expect(logger.warnings).toEqual(['gRPC grace period over: cancelling in-flight calls {"graceMs":200}']);
    expect([grpc.status.CANCELLED, grpc.status.UNAVAILABLE]).toContain((await stuck).code);
    api.release();
    flow.close();
  });
});
