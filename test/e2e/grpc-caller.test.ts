/**
 * ListOperationRunEvents over a real socket, and who is calling: the caller of create and of every
 * control (anonymous, a declared x-flow-actor, a client certificate, the load balancer's forwarded
 * certificate when trusted), and reads that never ask (fake application:
 * test/support/grpc-fake-api.ts).
 */
import * as grpc from "@grpc/grpc-js";
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
import { makeCertificates } from "../support/certificates.js";
import {
  FakeFlowApi,
  failure,
  NEW_RUN_ID,
  RUN_ID,
  recordingLogger,
  soon,
  TASK_ID,
} from "../support/grpc-fake-api.js";

describe("grpc server e2e: ListOperationRunEvents and the caller of create and the controls", () => {
  const api = new FakeFlowApi();
  let server: RunningGrpcServer;
  let flow: FlowClient;
  let admin: FlowAdminClient;
  const logger = recordingLogger();
  let trusting: RunningGrpcServer;
  let behindLb: FlowClient;
  const certs = makeCertificates({
    clients: { lb: { subject: "/O=Flow/CN=deployer", san: "DNS:deployer.example.com,URI:spiffe://flow/ci" } },
  });

  beforeAll(async () => {
    server = await startGrpcServer({
      api,
      host: "127.0.0.1",
      port: 0,
      logger,
      protoDir: false,
    });
    flow = createFlowClient(`127.0.0.1:${server.port}`, clientCredentials());
    admin = createFlowAdminClient(`127.0.0.1:${server.port}`, clientCredentials());
    trusting = await startGrpcServer({
      api,
      host: "127.0.0.1",
      port: 0,
      logger: recordingLogger(),
      protoDir: false,
      trustLoadBalancerClientCert: true,
    });
    behindLb = createFlowClient(`127.0.0.1:${trusting.port}`, clientCredentials());
  });

  afterAll(async () => {
    flow.close();
    admin.close();
    behindLb.close();
    certs.remove();
    await Promise.all([server.shutdown(1000), trusting.shutdown(1000)]);
  });

  const withMetadata = (entries: [string, string][]) => {
    const metadata = new grpc.Metadata();
    for (const [key, value] of entries) metadata.add(key, value);
    return { ...soon(), metadata };
  };
  const lastActor = () => api.actors.at(-1);
  /** The leaf as ALB verify mode forwards it: URL-encoded PEM, with +=/ left as they are. */
  const forwarded = (pem: string) =>
    encodeURIComponent(pem).replace(/%2B/g, "+").replace(/%3D/g, "=").replace(/%2F/g, "/");

  it("ListOperationRunEvents: the run id and page are decoded; every event comes back with its id, kind, state, stats, actor and detail", async () => {
    const response = await flow.listOperationRunEvents(
      { operationRunId: { id: RUN_ID }, pagination: { offset: 1, limit: 2 } },
      soon(),
    );
    expect(api.calls.at(-1)).toEqual({
      method: "listRunEvents",
      args: [{ runId: RUN_ID, page: { offset: 1, limit: 2 } }],
    });
    expect(response.total).toBe(9);
    expect(response.events.map((e) => [e.id, e.kind, e.detail?.$case])).toEqual([
      [`${RUN_ID}/001800000000000.00`, pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_CREATED, "plan"],
      [
        `${RUN_ID}/001800000001000.01`,
        pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_GATE_TRIPPED,
        "gate",
      ],
      [
        `${RUN_ID}/001800000002000.00`,
        pb.OperationRunEventKind.OPERATION_RUN_EVENT_KIND_WINDOW_CLOSED,
        "window",
      ],
    ]);
    expect(response.events[0]).toMatchObject({
      operationRunId: { id: RUN_ID },
      time: new Date(1_800_000_000_000),
      state: {
        status: pb.OperationRunStatus.OPERATION_RUN_STATUS_PENDING,
        reason: pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_NONE,
      },
      message: "operation run created: 3 targets in 1 phase",
      totalPhases: 1,
      stats: { currentPhaseStats: { selectedTargets: 3, outcomeCounts: { completed: 1 } } },
      actor: {
        name: "ops",
        source: pb.OperationRunActorSource.OPERATION_RUN_ACTOR_SOURCE_CLIENT_CERTIFICATE,
        authenticated: true,
        subjectAltNames: ["DNS:ops.example.com"],
        declaredName: "alice",
      },
      detail: {
        $case: "plan",
        value: { targets: 3, phaseSizes: [3], selectionSeed: "sel", orderingSeed: "ord" },
      },
    });
    expect(response.events[1]?.actor).toBeUndefined();
    expect(response.events[1]?.detail).toEqual({
      $case: "gate",
      value: {
        gateIndex: 0,
        gate: {
          gate: {
            $case: "failureCount",
            value: {
              scope: pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CURRENT_PHASE,
              failureThresholdCount: 1,
            },
          },
        },
        failed: 1,
        selected: 3,
        // The event predates the verdict's `finished` (0: not recorded).
        finished: 0,
      },
    });
    expect(response.events[2]?.detail).toEqual({
      $case: "window",
      value: { opensAt: new Date(1_800_000_100_000), closesAt: undefined, closedAt: undefined },
    });
  });

  it("ListOperationRunEvents: a malformed run id → INVALID_ARGUMENT; an unknown run → NOT_FOUND; a negative offset names the field", async () => {
    expect(
      await failure(
        flow.listOperationRunEvents({ operationRunId: { id: "nope" }, pagination: undefined }, soon()),
      ),
    ).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: (await failure(flow.pauseOperationRun({ id: { id: "nope" } }, soon()))).details,
    });
    expect(
      (
        await failure(
          flow.listOperationRunEvents({ operationRunId: { id: NEW_RUN_ID }, pagination: undefined }, soon()),
        )
      ).code,
    ).toBe(grpc.status.NOT_FOUND);
    expect(
      await failure(
        flow.listOperationRunEvents(
          { operationRunId: { id: RUN_ID }, pagination: { offset: -1, limit: 0 } },
          soon(),
        ),
      ),
    ).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: "pagination.offset: offset must not be negative",
    });
  });

  it("no certificate, no name: every control and create records an ANONYMOUS caller", async () => {
    const before = api.actors.length;
    await flow.createOperationRun(pb.CreateOperationRunRequest.fromPartial({ name: "canary" }), soon());
    await flow.pauseOperationRun({ id: { id: RUN_ID } }, soon());
    await flow.resumeOperationRun({ id: { id: RUN_ID } }, soon());
    await flow.advanceOperationRunPhase({ id: { id: RUN_ID } }, soon());
    await flow.cancelOperationRun({ id: { id: RUN_ID }, reason: "" }, soon());
    const anonymous = { name: "", source: "ANONYMOUS", authenticated: false, subjectAltNames: [] };
    expect(api.actors.slice(before)).toEqual(
      ["createRun", "pauseRun", "resumeRun", "advancePhase", "cancelRun"].map((method) => ({
        method,
        actor: anonymous,
      })),
    );
  });

  it("x-flow-actor: the declared name, unauthenticated, on create and on every control", async () => {
    const alice = { name: "alice", source: "DECLARED", authenticated: false, subjectAltNames: [] };
    await flow.createOperationRun(
      pb.CreateOperationRunRequest.fromPartial({ name: "canary" }),
      withMetadata([["x-flow-actor", "alice"]]),
    );
    await flow.resumeOperationRun({ id: { id: RUN_ID } }, withMetadata([["x-flow-actor", "alice"]]));
    await flow.advanceOperationRunPhase({ id: { id: RUN_ID } }, withMetadata([["x-flow-actor", "alice"]]));
    await flow.cancelOperationRun(
      { id: { id: RUN_ID }, reason: "" },
      withMetadata([["x-flow-actor", "alice"]]),
    );
    expect(api.actors.slice(-4)).toEqual(
      ["createRun", "resumeRun", "advancePhase", "cancelRun"].map((method) => ({ method, actor: alice })),
    );
  });

  it("every call that changes something is one audit line with its caller, the RPC, its status and the task or run it named; reads are not", async () => {
    const audits = () => logger.infos.filter((l) => l.startsWith("audit "));
    const before = audits().length;
    const as = withMetadata([["x-flow-actor", "carol"]]);
    await flow.cancelTask({ taskId: { id: TASK_ID } }, as);
    await admin.setFirmwareBaselines({ baselines: [] }, withMetadata([]));
    await flow.getOperationRun({ id: { id: RUN_ID }, includeStats: false }, as);
    await flow.listTasks(pb.ListTasksRequest.fromPartial({}), as);
    expect((await failure(flow.pauseOperationRun({ id: { id: "not-a-uuid" } }, as))).code).toBe(
      grpc.status.INVALID_ARGUMENT,
    );
    expect(audits().slice(before)).toEqual([
      `audit ${JSON.stringify({ actor: "carol", authenticated: false, source: "DECLARED", method: "/v1.Flow/CancelTask", code: "OK", taskId: TASK_ID })}`,
      `audit ${JSON.stringify({ actor: "anonymous", authenticated: false, source: "ANONYMOUS", method: "/flowadmin.v1.FlowInventoryAdmin/SetFirmwareBaselines", code: "OK" })}`,
      `audit ${JSON.stringify({ actor: "carol", authenticated: false, source: "DECLARED", method: "/v1.Flow/PauseOperationRun", code: "INVALID_ARGUMENT", runId: "not-a-uuid" })}`,
    ]);
  });

  it("x-flow-actor longer than 128 characters → INVALID_ARGUMENT naming it; the application is not called", async () => {
    const before = api.calls.length;
    expect(
      await failure(
        flow.pauseOperationRun({ id: { id: RUN_ID } }, withMetadata([["x-flow-actor", "a".repeat(129)]])),
      ),
    ).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: "metadata x-flow-actor: must be at most 128 printable ASCII characters (got 129 characters)",
    });
    expect(api.calls.length).toBe(before);
  });

  it("reads never ask who is calling: a malformed x-flow-actor fails none of the read RPCs", async () => {
    const malformed = () => withMetadata([["x-flow-actor", "a".repeat(200)]]);
    const reads: [string | undefined, () => Promise<unknown>][] = [
      ["getRun", () => flow.getOperationRun({ id: { id: RUN_ID }, includeStats: false }, malformed())],
      ["listRuns", () => flow.listOperationRuns({ filter: undefined }, malformed())],
      [
        "listTargets",
        () =>
          flow.listOperationRunTargets(
            pb.ListOperationRunTargetsRequest.fromPartial({ operationRunId: { id: RUN_ID } }),
            malformed(),
          ),
      ],
      [
        "listRunEvents",
        () =>
          flow.listOperationRunEvents({ operationRunId: { id: RUN_ID }, pagination: undefined }, malformed()),
      ],
      [
        "planRun",
        () => flow.planOperationRun(pb.CreateOperationRunRequest.fromPartial({ name: "dry" }), malformed()),
      ],
      ["getTasks", () => flow.getTasksByIDs({ taskIds: [{ id: TASK_ID }] }, malformed())],
      ["listTasks", () => flow.listTasks(pb.ListTasksRequest.fromPartial({}), malformed())],
      // Version is answered by the server itself: no application call.
      [undefined, () => flow.version({}, malformed())],
    ];
    const actors = api.actors.length;
    for (const [method, read] of reads) {
      const before = api.calls.length;
      await read();
      expect(api.calls.slice(before).map((c) => c.method)).toEqual(method === undefined ? [] : [method]);
    }
    expect(api.actors.length).toBe(actors);
  });

  it("the load balancer's certificate header is ignored unless the front is configured to trust it", async () => {
    const header = forwarded(certs.pem("lb.crt"));
    await flow.pauseOperationRun(
      { id: { id: RUN_ID } },
      withMetadata([
        ["x-amzn-mtls-clientcert-leaf", header],
        ["x-flow-actor", "mallory"],
      ]),
    );
    expect(lastActor()?.actor).toEqual({
      name: "mallory",
      source: "DECLARED",
      authenticated: false,
      subjectAltNames: [],
    });
  });

  it("behind the load balancer (trusted): its forwarded certificate is the caller, CN and SANs; the declared name rides along", async () => {
    await behindLb.pauseOperationRun(
      { id: { id: RUN_ID } },
      withMetadata([
        ["x-amzn-mtls-clientcert-leaf", forwarded(certs.pem("lb.crt"))],
        ["x-flow-actor", "alice"],
      ]),
    );
    expect(lastActor()?.actor).toEqual({
      name: "deployer",
      source: "LOAD_BALANCER_CERTIFICATE",
      authenticated: true,
      subjectAltNames: ["DNS:deployer.example.com", "URI:spiffe://flow/ci"],
      declaredName: "alice",
      issuer: "CN=flow-test-ca",
    });
    // Without the header (not via the load balancer's mTLS listener): the declared name, unauthenticated.
    await behindLb.pauseOperationRun({ id: { id: RUN_ID } }, withMetadata([["x-flow-actor", "alice"]]));
    expect(lastActor()?.actor).toMatchObject({ name: "alice", source: "DECLARED", authenticated: false });
    expect(
      await failure(
        behindLb.pauseOperationRun(
          { id: { id: RUN_ID } },
          withMetadata([["x-amzn-mtls-clientcert-leaf", "garbage"]]),
        ),
      ),
    ).toEqual({
      code: grpc.status.INVALID_ARGUMENT,
      details: "metadata x-amzn-mtls-clientcert-leaf: must be a URL-encoded PEM certificate",
    });
  });
});
