/**
 * The gRPC server over a real socket (127.0.0.1:0) with a fake application behind it
 * (test/support/grpc-fake-api.ts): every RPC through the typed client, status codes and messages,
 * deadlines, health and reflection.
 */
import { createRequire } from "node:module";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { service as healthService } from "grpc-health-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createFlowAdminClient,
  createFlowClient,
  type FlowAdminClient,
  type FlowClient,
} from "../../src/adapters/grpc/client.js";
import { type RunningGrpcServer, startGrpcServer } from "../../src/adapters/grpc/server.js";
import { clientCredentials } from "../../src/adapters/grpc/tls.js";
import * as pb from "../../src/gen/flow/v1/flow.js";
import {
  BUILD,
  COMPONENT_ID,
  FakeFlowApi,
  failure,
  type HealthClient,
  NEW_RUN_ID,
  RACK,
  RACK_ID,
  RUN,
  RUN_ID,
  recordingLogger,
  SLOW_RUN_ID,
  soon,
  TASK,
  TASK_ID,
  TERMINAL_RUN_ID,
} from "../support/grpc-fake-api.js";

describe("grpc server e2e: every RPC over the socket", () => {
  const api = new FakeFlowApi();
  const logger = recordingLogger();
  let server: RunningGrpcServer;
  let flow: FlowClient;
  let admin: FlowAdminClient;
  let address: string;

  beforeAll(async () => {
    server = await startGrpcServer({ api, host: "127.0.0.1", port: 0, logger });
    address = `127.0.0.1:${server.port}`;
    flow = createFlowClient(address, clientCredentials());
    admin = createFlowAdminClient(address, clientCredentials());
  });

  afterAll(async () => {
    flow.close();
    admin.close();
    api.release();
    await server.shutdown(1000);
  });

  const last = (method: string) => api.calls.filter((c) => c.method === method).at(-1)?.args;

  it("CreateOperationRun: decodes the request into CreateRunInput and returns only the new id", async () => {
    const response = await flow.createOperationRun(
      pb.CreateOperationRunRequest.fromPartial({
        name: "canary",
        description: "d",
        configuration: {
          selector: { selector: { $case: "percentage", value: { percentage: 10 } } },
          options: {
            maxConcurrentTargets: 3,
            conflictPolicy: { strategy: { $case: "retry", value: { retryTimeout: { seconds: 90 } } } },
          },
        },
      }),
      soon(),
    );
    expect(response).toEqual({ id: { id: NEW_RUN_ID } });
    expect(last("createRun")).toEqual([
      {
        name: "canary",
        description: "d",
        configuration: {
          selector: { kind: "percentage", percentage: 10, seed: "" },
          options: { maxConcurrentTargets: 3, conflictPolicy: { retry: { retryTimeoutMs: 90_000 } } },
        },
      },
    ]);
  });

  it("CreateOperationRun: an undefined enum number → INVALID_ARGUMENT naming the field; the application is not called", async () => {
    const before = api.calls.length;
    const err = await failure(
      flow.createOperationRun(
        pb.CreateOperationRunRequest.fromPartial({
          name: "n",
          configuration: {
            options: {
              safetyPolicy: {
                gates: [
                  {
                    gate: { $case: "failureRate", value: { scope: 42 as never, failureThresholdPercent: 5 } },
                  },
                ],
              },
            },
          },
        }),
        soon(),
      ),
    );
    expect(err).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: "configuration.options.safety_policy.gates[0].failure_rate.scope: unknown enum value 42",
    });
    expect(api.calls.length).toBe(before);
  });

  it("CreateOperationRun: the application's errors map to their statuses with their messages", async () => {
    expect(
      await failure(flow.createOperationRun(pb.CreateOperationRunRequest.fromPartial({ name: " " }), soon())),
    ).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: "name: name is required",
    });
    expect(
      await failure(
        flow.createOperationRun(pb.CreateOperationRunRequest.fromPartial({ name: "too-wide" }), soon()),
      ),
    ).toEqual({
      code: grpc.status.INTERNAL,
      details: "operation run candidate scope exceeds target limit 100",
    });
  });

  it("CreateOperationRun: an unexpected failure → INTERNAL 'internal error'; the detail is only logged", async () => {
    expect(
      await failure(
        flow.createOperationRun(pb.CreateOperationRunRequest.fromPartial({ name: "crash" }), soon()),
      ),
    ).toEqual({ code: grpc.status.INTERNAL, details: "internal error" });
    expect(logger.errors.at(-1)).toMatchObject({
      method: "/v1.Flow/CreateOperationRun",
      error: { message: "ProvisionedThroughputExceeded on table flow-runs (internal detail)" },
    });
  });

  it("PlanOperationRun: returns the effective configuration and the planned targets", async () => {
    const response = await flow.planOperationRun(
      pb.CreateOperationRunRequest.fromPartial({ name: "dry" }),
      soon(),
    );
    expect(response.candidateCount).toBe(3);
    expect(response.totalPhases).toBe(1);
    expect(response.targets.map((t) => [t.rackId?.id, t.rackExternalId, t.status])).toEqual([
      [RACK_ID, "rack-ext-1", pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_PENDING],
    ]);
    expect(response.configuration?.operation?.operation?.value.authenticationData).toBeUndefined();
  });

  it("GetOperationRun: summary, configuration without credentials, and stats only when asked", async () => {
    const withStats = await flow.getOperationRun(
      { id: { id: RUN_ID.toUpperCase() }, includeStats: true },
      soon(),
    );
    expect(last("getRun")).toEqual([RUN_ID, true]);
    expect(withStats.operationRun?.summary?.state).toEqual({
      status: pb.OperationRunStatus.OPERATION_RUN_STATUS_RUNNING,
      reason: pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_NONE,
    });
    expect(withStats.operationRun?.summary?.createdAt).toEqual(new Date(RUN.createdAt));
    expect(withStats.operationRun?.stats?.currentPhaseStats?.selectedTargets).toBe(3);
    expect(
      withStats.operationRun?.configuration?.operation?.operation?.value.authenticationData,
    ).toBeUndefined();
    expect(withStats.operationRun?.configuration?.operation?.operation?.value.targetVersion).toBe("2.0");

    const without = await flow.getOperationRun({ id: { id: RUN_ID }, includeStats: false }, soon());
    expect(without.operationRun?.stats).toBeUndefined();
  });

  it("GetOperationRun: unknown id → NOT_FOUND; missing or malformed id → INVALID_ARGUMENT 'operation run ID is required'", async () => {
    const unknown = "eeeeeeee-0000-4000-8000-000000000000";
    expect(await failure(flow.getOperationRun({ id: { id: unknown }, includeStats: false }, soon()))).toEqual(
      {
        code: grpc.status.NOT_FOUND,
        details: `operation run ${unknown} not found`,
      },
    );
    for (const id of [undefined, { id: "" }, { id: "run-1" }]) {
      expect(await failure(flow.getOperationRun({ id, includeStats: false }, soon()))).toEqual({
        code: grpc.status.INVALID_ARGUMENT,
        details: "operation run ID is required",
      });
    }
  });

  it("ListOperationRuns: default page, summaries and total", async () => {
    const response = await flow.listOperationRuns({ filter: undefined }, soon());
    expect(last("listRuns")).toEqual([{ states: [], kinds: [], page: { offset: 0, limit: 100 } }]);
    expect(response.total).toBe(7);
    expect(response.operationRuns.map((r) => [r.id?.id, r.name, r.operationKind])).toEqual([
      [RUN_ID, "canary", { type: pb.OperationType.OPERATION_TYPE_FIRMWARE_CONTROL, code: "upgrade" }],
    ]);
    expect(
      await failure(
        flow.listOperationRuns({ filter: undefined, pagination: { offset: -1, limit: 10 } }, soon()),
      ),
    ).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: "pagination.offset: offset must not be negative",
    });
  });

  it("ListOperationRunTargets: phase scope default, status filter, targets with rack external ids", async () => {
    const response = await flow.listOperationRunTargets(
      pb.ListOperationRunTargetsRequest.fromPartial({ operationRunId: { id: RUN_ID }, status: 3 }),
      soon(),
    );
    expect(last("listTargets")).toEqual([
      { runId: RUN_ID, status: "SUBMITTED", phaseScope: "CURRENT_PHASE", page: { offset: 0, limit: 100 } },
    ]);
    expect(response.total).toBe(1);
    expect(response.targets[0]).toMatchObject({
      rackId: { id: RACK_ID },
      taskId: { id: TASK_ID },
      rackExternalId: "rack-ext-1",
      status: pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_SUBMITTED,
    });
    expect(
      await failure(flow.listOperationRunTargets(pb.ListOperationRunTargetsRequest.fromPartial({}), soon())),
    ).toEqual({ code: grpc.status.INVALID_ARGUMENT, details: "operation run ID is required" });
  });

  it("Pause/Resume/Advance/Cancel: ids and arguments arrive; runs come back without stats", async () => {
    const paused = await flow.pauseOperationRun({ id: { id: RUN_ID } }, soon());
    expect(paused.summary?.state?.status).toBe(pb.OperationRunStatus.OPERATION_RUN_STATUS_PAUSED);
    expect(paused.summary?.statusMessage).toBe("operation run paused by operator");
    expect(paused.stats).toBeUndefined();

    expect((await flow.resumeOperationRun({ id: { id: RUN_ID } }, soon())).summary?.statusMessage).toBe(
      "operation run resumed",
    );

    await flow.advanceOperationRunPhase({ id: { id: RUN_ID }, expectedPhaseIndex: 1 }, soon());
    expect(last("advancePhase")).toEqual([RUN_ID, 1]);
    await flow.advanceOperationRunPhase({ id: { id: RUN_ID } }, soon());
    expect(last("advancePhase")).toEqual([RUN_ID, undefined]);

    const cancelled = await flow.cancelOperationRun({ id: { id: RUN_ID }, reason: " bad firmware " }, soon());
    expect(last("cancelRun")).toEqual([RUN_ID, " bad firmware "]);
    expect(cancelled.summary?.statusMessage).toBe("operation run cancelled: bad firmware");
  });

  it("PauseOperationRun on a terminal run → FAILED_PRECONDITION with the application's message", async () => {
    expect(await failure(flow.pauseOperationRun({ id: { id: TERMINAL_RUN_ID } }, soon()))).toEqual({
      code: grpc.status.FAILED_PRECONDITION,
      details: "cannot pause a COMPLETED operation run",
    });
  });

  it("UpgradeFirmware: a validated template reaches the application; a missing target spec does not", async () => {
    const response = await flow.upgradeFirmware(
      pb.UpgradeFirmwareRequest.fromPartial({
        targetSpec: {
          targets: {
            $case: "racks",
            value: { targets: [{ identifier: { $case: "name", value: "rack-1" } }] },
          },
        },
        authenticationData: { value: { $case: "shared", value: "s3cret" } },
      }),
      soon(),
    );
    expect(response).toEqual({ taskIds: [{ id: TASK_ID }] });
    expect(last("upgradeFirmware")).toEqual([
      {
        targetSpec: { kind: "racks", racks: [{ ref: { by: "name", name: "rack-1" }, componentTypes: [] }] },
        description: "",
        subTargets: [],
        overrideReadinessCheck: false,
        authentication: { kind: "shared", secret: "s3cret" },
        overrideVersionCheck: false,
      },
    ]);
    expect(await failure(flow.upgradeFirmware(pb.UpgradeFirmwareRequest.fromPartial({}), soon()))).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: "target_spec: target_spec is required",
    });
  });

  it("GetTasksByIDs, ListTasks (report only when asked) and CancelTask", async () => {
    const got = await flow.getTasksByIDs({ taskIds: [{ id: TASK_ID }] }, soon());
    expect(got.tasks.map((t) => [t.id?.id, t.executorType, t.report])).toEqual([
      [TASK_ID, pb.TaskExecutorType.TASK_EXECUTOR_TYPE_STEP_FUNCTIONS, TASK.report],
    ]);
    expect(await failure(flow.getTasksByIDs({ taskIds: [{ id: "t-1" }] }, soon()))).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: 'task_ids[0]: must be a UUID (got "t-1")',
    });

    const listed = await flow.listTasks(pb.ListTasksRequest.fromPartial({ rackId: { id: RACK_ID } }), soon());
    expect(last("listTasks")).toEqual([
      { rackId: RACK_ID, activeOnly: false, withReport: false, page: { offset: 0, limit: 100 } },
    ]);
    expect(listed.tasks[0]?.report).toBe("");
    const withReport = await flow.listTasks(pb.ListTasksRequest.fromPartial({ withReport: true }), soon());
    expect(withReport.tasks[0]?.report).toBe(TASK.report);

    const cancelled = await flow.cancelTask({ taskId: { id: TASK_ID } }, soon());
    expect(cancelled.task?.status).toBe(pb.TaskStatus.TASK_STATUS_TERMINATED);
    expect(cancelled.task?.finishedAt).toEqual(new Date(1_800_000_002_000));
    expect(await failure(flow.cancelTask({ taskId: undefined }, soon()))).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: "task ID is required",
    });
  });

  it("Version", async () => {
    expect(await flow.version({}, soon())).toEqual(BUILD);
  });

  it("FlowInventoryAdmin: ImportInventory and ListRacks", async () => {
    const imported = await admin.importInventory(
      {
        racks: [
          {
            id: { id: RACK_ID },
            name: "rack-1",
            externalId: "rack-ext-1",
            nvlDomainId: undefined,
            nvlDomainName: "",
            location: { datacenter: "dc1", row: "A", position: 3 },
            components: [
              {
                id: { id: COMPONENT_ID },
                type: 1,
                externalId: "",
                firmwareVersion: "1.0",
                model: "",
                vendor: "",
                readiness: undefined,
              },
            ],
          },
        ],
        baselines: [{ componentType: 2, model: "", vendor: "", version: "2.0" }],
        allowComponentTypeChange: true,
      },
      soon(),
    );
    expect(imported).toEqual({ racksWritten: 1, componentsWritten: 1, baselinesWritten: 1 });
    expect(last("importInventory")).toEqual([
      [{ ...RACK, location: { datacenter: "dc1", row: "A", position: 3 } }],
      [{ componentType: "NVSWITCH", version: "2.0" }],
      true,
    ]);

    const listed = await admin.listRacks({ pagination: { offset: 0, limit: 5 } }, soon());
    expect(last("listRacks")).toEqual([0, 5]);
    expect(listed.racks.map((r) => [r.id?.id, r.externalId, r.components.length])).toEqual([
      [RACK_ID, "rack-ext-1", 1],
    ]);
  });

  it("a call that outlives its deadline → DEADLINE_EXCEEDED, and the server keeps serving", async () => {
    const err = await failure(
      flow.getOperationRun({ id: { id: SLOW_RUN_ID }, includeStats: false }, soon(150)),
    );
    expect(err.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    api.release();
    expect(await flow.version({}, soon())).toEqual(BUILD);
  });

  it("undecodable bytes → INVALID_ARGUMENT; an unknown method → UNIMPLEMENTED", async () => {
    const raw = new grpc.Client(address, clientCredentials());
    const send = (path: string, bytes: number[]) =>
      new Promise<{ code: number; details: string }>((resolve) => {
        raw.makeUnaryRequest(
          path,
          (b: Buffer) => b,
          (b: Buffer) => b,
          Buffer.from(bytes),
          new grpc.Metadata(),
          soon(),
          (err) => resolve({ code: err?.code ?? grpc.status.OK, details: err?.details ?? "" }),
        );
      });
    expect(await send("/v1.Flow/CreateOperationRun", [0x0f])).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: "malformed request: cant skip wire type 7",
    });
    expect((await send("/v1.Flow/DeleteEverything", [])).code).toBe(grpc.status.UNIMPLEMENTED);
    raw.close();
  });

  it("a request over the 4 MiB receive limit → RESOURCE_EXHAUSTED, and the server keeps serving", async () => {
    const err = await failure(
      flow.createOperationRun(
        pb.CreateOperationRunRequest.fromPartial({ name: "big", description: "x".repeat(5 << 20) }),
        soon(),
      ),
    );
    expect(err.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(await flow.version({}, soon())).toEqual(BUILD);
  });

  it("health: the server and both services report SERVING; an unknown service is NOT_FOUND", async () => {
    const Health = grpc.makeClientConstructor(healthService, "grpc.health.v1.Health");
    const health = new Health(address, clientCredentials()) as unknown as HealthClient;
    const check = (service: string) =>
      new Promise<{ status?: string; code?: number }>((resolve) => {
        health.check({ service }, (err, res) => resolve(err ? { code: err.code } : { status: res?.status }));
      });
    expect(await check("")).toEqual({ status: "SERVING" });
    expect(await check("v1.Flow")).toEqual({ status: "SERVING" });
    expect(await check("flowadmin.v1.FlowInventoryAdmin")).toEqual({ status: "SERVING" });
    expect(await check("v9.Nope")).toEqual({ code: grpc.status.NOT_FOUND });
    health.close();
  });

  it("reflection lists the services and serves flow.proto's descriptor", async () => {
    const require = createRequire(import.meta.url);
    const protoPath = join(
      require.resolve("@grpc/reflection"),
      "../../proto/grpc/reflection/v1/reflection.proto",
    );
    const loaded = grpc.loadPackageDefinition(
      protoLoader.loadSync(protoPath, { keepCase: true }),
    ) as unknown as {
      grpc: { reflection: { v1: { ServerReflection: grpc.ServiceClientConstructor } } };
    };
    const reflection = new loaded.grpc.reflection.v1.ServerReflection(address, clientCredentials());
    const ask = (request: Record<string, string>) =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        const stream = (
          reflection as unknown as { ServerReflectionInfo(): grpc.ClientDuplexStream<object, object> }
        ).ServerReflectionInfo();
        stream.on("data", (data: Record<string, unknown>) => {
          resolve(data);
          stream.end();
        });
        stream.on("error", reject);
        stream.write(request);
      });

    const listed = (await ask({ list_services: "*" })) as {
      list_services_response: { service: { name: string }[] };
    };
    expect(listed.list_services_response.service.map((s) => s.name).sort()).toEqual([
      "flowadmin.v1.FlowInventoryAdmin",
      "grpc.health.v1.Health",
      "v1.Flow",
    ]);

    const file = (await ask({ file_containing_symbol: "v1.Flow" })) as {
      file_descriptor_response: { file_descriptor_proto: Buffer[] };
    };
    const descriptors = file.file_descriptor_response.file_descriptor_proto.map((b) =>
      fromBinary(FileDescriptorProtoSchema, b),
    );
    // proto-loader (protobufjs) names generated files by package ("v1.proto"), not by path.
    const flowFile = descriptors.find((d) => d.package === "v1");
    expect(flowFile?.messageType.some((m) => m.name === "CreateOperationRunRequest")).toBe(true);
    expect(flowFile?.service.map((s) => s.name)).toEqual(["Flow"]);
    expect(flowFile?.service[0]?.method.length).toBe(18);
    expect(flowFile?.service[0]?.method.map((m) => m.name)).toEqual(
      expect.arrayContaining([
        "ListOperationRunEvents",
        "WhoAmI",
        "ApproveOperationRun",
        "ReportTargetFailure",
      ]),
    );
    reflection.close();
  });
});
