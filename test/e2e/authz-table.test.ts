/**
 * Access control over the real gRPC server on a socket: every RPC of Flow and of the admin
 * service × {no identity, declared name only, viewer, operator, operator out of scope, approver,
 * admin} → the exact status code. The identity is the client certificate the load balancer
 * verified and forwarded (the server trusts it here); mutual TLS end to end is in
 * authz-mtls.test.ts. Behind the server an application stub answers every call that gets through
 * with OK, and hands create and UpgradeFirmware's rack check the one rack it "plans" (in dc1),
 * so a cell's code is exactly the authorization's verdict.
 */
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAccessPolicy } from "../../src/adapters/grpc/access-policy-source.js";
import type { AccessControl } from "../../src/adapters/grpc/authorize.js";
import { LOAD_BALANCER_CERT_HEADER } from "../../src/adapters/grpc/caller-identity.js";
import { createFlowAdminClient, createFlowClient } from "../../src/adapters/grpc/client.js";
import { type RunningGrpcServer, startGrpcServer } from "../../src/adapters/grpc/server.js";
import { clientCredentials } from "../../src/adapters/grpc/tls.js";
import type { RunDenial } from "../../src/app/access.js";
import type { CreateRunOptions, FlowApi } from "../../src/app/api.js";
import type { RackPlace } from "../../src/domain/access-policy.js";
import type { Run } from "../../src/domain/model.js";
import { DEFAULT_RULE } from "../../src/domain/operation-rules.js";
import * as pb from "../../src/gen/flow/v1/flow.js";
import { FlowService } from "../../src/gen/flow/v1/flow.js";
import * as adminPb from "../../src/gen/flowadmin/v1/admin.js";
import { FlowInventoryAdminService } from "../../src/gen/flowadmin/v1/admin.js";
import { makeCertificates } from "../support/certificates.js";
import { runConfig, runningTask } from "../support/domain-fixtures.js";
import { imageRecord } from "../support/memory-images.js";
import { statusName } from "../support/stack.js";

const RUN_ID = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
const TASK_ID = "bbbbbbbb-0000-4000-8000-000000000002";
const DC1_RACK: RackPlace = { name: "rack-a1", datacenter: "dc1", row: "A" };

const POLICY = `
bindings:
  - subjects: ["uri:spiffe://example.org/ops/*"]
    roles: [operator]
    scope: { datacenters: [dc1] }
  - subjects: ["cn:ops-dc2"]
    roles: [operator]
    scope: { datacenters: [dc2] }
  - subjects: ["cn:viewer-1"]
    roles: [viewer]
  - subjects: ["dns:approver.example.com"]
    roles: [approver]
  - subjects: ["cn:admin-1"]
    roles: [admin]
`;

const RUN: Run = {
  id: RUN_ID,
  name: "canary",
  description: "",
  config: runConfig(),
  status: "PAUSED",
  reason: "OPERATOR_PAUSED",
  statusMessage: "",
  phaseSizes: [1],
  currentPhaseIndex: 0,
  counters: [{ completed: 0, failed: 0, terminated: 0, skipped: 0 }],
  inFlight: 0,
  createdAt: 1_800_000_000_000,
  updatedAt: 1_800_000_000_000,
};

/** Answers OK to everything; create and UpgradeFirmware check their one planned rack first. */
function okApi(): FlowApi {
  const permit = (options?: Pick<CreateRunOptions, "permitRacks">) => options?.permitRacks?.([DC1_RACK]);
  return {
    approveRun: async () => RUN,
    async createRun(_input, options) {
      permit(options);
      return { id: RUN_ID };
    },
    async planRun() {
      return {
        config: runConfig(),
        plan: { candidateCount: 0, phaseSizes: [], targets: [] },
        rackExternalIds: new Map(),
        nextWindowOpenings: [],
      };
    },
    getRun: async () => ({ run: RUN }),
    listRuns: async () => ({ runs: [RUN], total: 1 }),
    listTargets: async () => ({ targets: [], total: 0 }),
    listRunEvents: async () => ({ events: [], total: 0 }),
    pauseRun: async () => RUN,
    resumeRun: async () => RUN,
    advancePhase: async () => RUN,
    cancelRun: async () => RUN,
    reportTargetFailure: async () => RUN,
    async upgradeFirmware(_request, options) {
      permit(options);
      return { taskIds: [TASK_ID] };
    },
    getTasks: async () => [runningTask({ id: TASK_ID })],
    listTasks: async () => ({ tasks: [], total: 0 }),
    cancelTask: async () => runningTask({ id: TASK_ID }),
    importInventory: async () => ({ racks: 0, components: 0, baselines: 0 }),
    listRacks: async () => ({ racks: [], total: 0 }),
    setBaselines: async () => [],
    listBaselines: async () => [],
    deleteBaseline: async (key) => ({ ...key, version: "1.0" }),
    setReadiness: async (componentId) => ({ id: componentId, type: "COMPUTE" }),
    createRule: async () => ({ ...DEFAULT_RULE }),
    getRule: async () => ({ ...DEFAULT_RULE }),
    listRules: async () => ({ rules: [], total: 0 }),
    beginImageUpload: async () => ({ uploadId: TASK_ID, url: "https://images.example/put", expiresAt: 0 }),
    completeImageUpload: async (input) => ({
      image: imageRecord({ componentType: "COMPUTE", version: input.version }),
      alreadyRegistered: false,
    }),
    listImages: async () => ({ images: [], total: 0 }),
    deleteImage: async (input) => ({
      image: imageRecord({ componentType: "COMPUTE", version: input.version }),
      objectVersionsDeleted: 1,
    }),
    version: () => ({ version: "t", buildTime: "", gitCommit: "" }),
  };
}

const id = { id: RUN_ID };
/** A request per RPC that the stub answers OK when it gets through. */
const FLOW_REQUESTS: Record<keyof typeof FlowService, unknown> = {
  createOperationRun: { name: "r", configuration: undefined },
  getOperationRun: { id },
  listOperationRuns: {},
  listOperationRunTargets: pb.ListOperationRunTargetsRequest.fromPartial({ operationRunId: id }),
  pauseOperationRun: { id },
  resumeOperationRun: { id },
  advanceOperationRunPhase: { id },
  cancelOperationRun: { id },
  reportTargetFailure: { id, targetId: { id: TASK_ID }, reason: "XID 79" },
  upgradeFirmware: pb.UpgradeFirmwareRequest.fromPartial({}),
  getTasksByIDs: pb.GetTasksByIDsRequest.fromPartial({ taskIds: [{ id: TASK_ID }] }),
  listTasks: {},
  cancelTask: { taskId: { id: TASK_ID } },
  version: {},
  planOperationRun: { name: "r" },
  listOperationRunEvents: { operationRunId: id },
  whoAmI: {},
  approveOperationRun: { id },
};
const ADMIN_REQUESTS: Record<keyof typeof FlowInventoryAdminService, unknown> = {
  importInventory: adminPb.ImportInventoryRequest.fromPartial({}),
  listRacks: {},
  setFirmwareBaselines: adminPb.SetFirmwareBaselinesRequest.fromPartial({}),
  listFirmwareBaselines: {},
  deleteFirmwareBaseline: { componentType: 1 },
  deleteFirmwareImage: { componentType: 1, version: "1.0" },
  setComponentReadiness: { componentId: { id: TASK_ID } },
  createOperationRule: adminPb.CreateOperationRuleRequest.fromPartial({
    name: "r",
    stages: [
      {
        name: "all",
        componentTypes: [pb.ComponentType.COMPONENT_TYPE_COMPUTE],
        steps: [{ action: adminPb.RuleAction.RULE_ACTION_UPDATE_FIRMWARE }],
      },
    ],
  }),
  getOperationRule: { id: { id: TASK_ID } },
  listOperationRules: {},
  beginFirmwareImageUpload: {
    componentType: pb.ComponentType.COMPONENT_TYPE_COMPUTE,
    version: "1.3.0",
    sizeBytes: 1024,
  },
  completeFirmwareImageUpload: {
    uploadId: TASK_ID,
    componentType: pb.ComponentType.COMPONENT_TYPE_COMPUTE,
    version: "1.3.0",
    sizeBytes: 1024,
    sha256: "ab".repeat(32),
  },
  listFirmwareImages: adminPb.ListFirmwareImagesRequest.fromPartial({}),
};

const CALLERS = ["none", "declared", "viewer", "operator", "operatorOut", "approver", "admin"] as const;
type Caller = (typeof CALLERS)[number];

const OK = "OK";
const UNAUTH = "UNAUTHENTICATED";
const DENIED = "PERMISSION_DENIED";
/** read: everyone verified; operate: operator in scope, admin; administer: admin. */
const READ = [UNAUTH, UNAUTH, OK, OK, OK, OK, OK];
const OPERATE = [UNAUTH, UNAUTH, DENIED, OK, DENIED, DENIED, OK];
const ADMINISTER = [UNAUTH, UNAUTH, DENIED, DENIED, DENIED, DENIED, OK];
const ANYONE = [OK, OK, OK, OK, OK, OK, OK];
/** approve: the approver and admin (both in scope of every rack). */
const APPROVE = [UNAUTH, UNAUTH, DENIED, DENIED, DENIED, OK, OK];

const EXPECTED: Record<string, string[]> = {
  createOperationRun: OPERATE,
  getOperationRun: READ,
  listOperationRuns: READ,
  listOperationRunTargets: READ,
  pauseOperationRun: OPERATE,
  resumeOperationRun: OPERATE,
  advanceOperationRunPhase: OPERATE,
  cancelOperationRun: OPERATE,
  reportTargetFailure: OPERATE,
  upgradeFirmware: OPERATE,
  getTasksByIDs: READ,
  listTasks: READ,
  cancelTask: OPERATE,
  version: READ,
  planOperationRun: READ,
  listOperationRunEvents: READ,
  whoAmI: ANYONE,
  approveOperationRun: APPROVE,
  importInventory: ADMINISTER,
  listRacks: READ,
  setFirmwareBaselines: ADMINISTER,
  listFirmwareBaselines: READ,
  deleteFirmwareBaseline: ADMINISTER,
  setComponentReadiness: ADMINISTER,
  createOperationRule: ADMINISTER,
  getOperationRule: READ,
  listOperationRules: READ,
  beginFirmwareImageUpload: ADMINISTER,
  completeFirmwareImageUpload: ADMINISTER,
  deleteFirmwareImage: ADMINISTER,
  listFirmwareImages: READ,
};

describe("authz e2e: every RPC × every kind of caller → the exact status", () => {
  const certs = makeCertificates({
    clients: {
      viewer: { cn: "viewer-1" },
      operator: { cn: "alice", san: "URI:spiffe://example.org/ops/alice" },
      operatorOut: { cn: "ops-dc2" },
      approver: { cn: "approver", san: "DNS:approver.example.com" },
      admin: { cn: "admin-1" },
    },
  });
  const lines: string[] = [];
  const metrics: string[] = [];
  /** The denials recorded in a run's history: run id, who, and what they were told. */
  const recorded: { runId: string; actor: string; denial: RunDenial }[] = [];
  let server: RunningGrpcServer;
  let address: string;

  beforeAll(async () => {
    const policy = parseAccessPolicy("policy.yaml", POLICY);
    const access: AccessControl = {
      policy: () => policy,
      lookups: {
        runRacks: async () => ({ reason: "OPERATOR_PAUSED", racks: [DC1_RACK] }),
        taskRacks: async () => [DC1_RACK],
        recordDenial: async (runId, actor, denial) => {
          recorded.push({ runId, actor: actor.name, denial });
        },
      },
      logger: {
        info: () => {},
        warn: (message, fields) => lines.push(`${message} ${JSON.stringify(fields)}`),
        error: () => {},
      },
      metrics: { add: (name) => metrics.push(name), flush: () => {} },
    };
    server = await startGrpcServer({
      api: okApi(),
      host: "127.0.0.1",
      port: 0,
      logger: { info() {}, warn() {}, error() {} },
      protoDir: false,
      trustLoadBalancerClientCert: true,
      access,
    });
    address = `127.0.0.1:${server.port}`;
  });

  afterAll(async () => {
    certs.remove();
    await server.shutdown(1000);
  });

  function metadataOf(who: Caller): grpc.Metadata {
    const metadata = new grpc.Metadata();
    if (who === "none") return metadata;
    metadata.add("x-flow-actor", who === "declared" ? "admin-1" : "someone");
    if (who !== "declared")
      metadata.add(LOAD_BALANCER_CERT_HEADER, encodeURIComponent(certs.pem(`${who}.crt`)));
    return metadata;
  }

  async function codeOf(
    client: Record<string, unknown>,
    method: string,
    request: unknown,
    who: Caller,
  ): Promise<string> {
    const call = client[method] as (r: unknown, o: object) => Promise<unknown>;
    try {
      await call.call(client, request, { metadata: metadataOf(who), deadline: Date.now() + 10_000 });
      return OK;
    } catch (err) {
      return statusName((err as grpc.ServiceError).code);
    }
  }

  it("the table names every RPC of both services", () => {
    expect(Object.keys(EXPECTED).sort()).toEqual(
      [...Object.keys(FlowService), ...Object.keys(FlowInventoryAdminService)].sort(),
    );
  });

  it.each([
    ...Object.entries(FLOW_REQUESTS).map(([m, r]) => ["flow", m, r] as const),
    ...Object.entries(ADMIN_REQUESTS).map(([m, r]) => ["admin", m, r] as const),
  ])("%s %s", async (service, method, request) => {
    const client =
      service === "flow"
        ? createFlowClient(address, clientCredentials())
        : createFlowAdminClient(address, clientCredentials());
    try {
      const codes: string[] = [];
      for (const who of CALLERS) codes.push(await codeOf(client as never, method, request, who));
      expect(Object.fromEntries(CALLERS.map((c, i) => [c, codes[i]]))).toEqual(
        Object.fromEntries(CALLERS.map((c, i) => [c, EXPECTED[method]?.[i]])),
      );
    } finally {
      client.close();
    }
  });

  it("each denial is one log line with the actor, the RPC and the reason, and one AccessDenied metric; on a run, also one event in its history", async () => {
    const flow = createFlowClient(address, clientCredentials());
    try {
      const before = { lines: lines.length, metrics: metrics.length, recorded: recorded.length };
      await expect(
        flow.cancelOperationRun({ id, reason: "" }, { metadata: metadataOf("viewer") }),
      ).rejects.toMatchObject({
        code: grpc.status.PERMISSION_DENIED,
        details: "viewer-1 may not operate operation run; roles with it: operator, admin",
      });
      expect(lines.slice(before.lines)).toEqual([
        `access denied ${JSON.stringify({
          actor: "viewer-1",
          authenticated: true,
          method: "/v1.Flow/CancelOperationRun",
          code: "PERMISSION_DENIED",
          reason: "viewer-1 may not operate operation run; roles with it: operator, admin",
          runId: RUN_ID,
          issuer: "CN=flow-test-ca",
        })}`,
      ]);
      expect(metrics.slice(before.metrics)).toEqual(["AccessDenied"]);
      expect(recorded.slice(before.recorded)).toEqual([
        {
          runId: RUN_ID,
          actor: "viewer-1",
          denial: {
            rpc: "CancelOperationRun",
            code: "PERMISSION_DENIED",
            reason: "viewer-1 may not operate operation run; roles with it: operator, admin",
          },
        },
      ]);
      // A refusal for want of a certificate is recorded too; a refusal of a call on no run is not.
      await expect(flow.pauseOperationRun({ id }, { metadata: metadataOf("none") })).rejects.toMatchObject({
        code: grpc.status.UNAUTHENTICATED,
      });
      await expect(
        flow.createOperationRun(pb.CreateOperationRunRequest.fromPartial({ name: "r" }), {
          metadata: metadataOf("viewer"),
        }),
      ).rejects.toMatchObject({ code: grpc.status.PERMISSION_DENIED });
      expect(recorded.slice(before.recorded + 1).map((r) => [r.runId, r.denial.rpc, r.denial.code])).toEqual([
        [RUN_ID, "PauseOperationRun", "UNAUTHENTICATED"],
      ]);
    } finally {
      flow.close();
    }
  });

  it("the messages: no certificate, a declared name, out of scope", async () => {
    const flow = createFlowClient(address, clientCredentials());
    try {
      await expect(
        flow.pauseOperationRun({ id }, { metadata: metadataOf("declared") }),
      ).rejects.toMatchObject({
        code: grpc.status.UNAUTHENTICATED,
        details:
          'PauseOperationRun needs a verified client certificate; the caller has none (declared name "admin-1" is not proof)',
      });
      await expect(flow.version({}, { metadata: metadataOf("none") })).rejects.toMatchObject({
        code: grpc.status.UNAUTHENTICATED,
        details: "Version needs a verified client certificate; the caller has none",
      });
      await expect(
        flow.pauseOperationRun({ id }, { metadata: metadataOf("operatorOut") }),
      ).rejects.toMatchObject({
        code: grpc.status.PERMISSION_DENIED,
        details: "ops-dc2 may not operate operation run: 1 of 1 racks outside its scope: rack-a1",
      });
      await expect(
        flow.upgradeFirmware(pb.UpgradeFirmwareRequest.fromPartial({ overrideReadinessCheck: true }), {
          metadata: metadataOf("operator"),
        }),
      ).rejects.toMatchObject({
        code: grpc.status.PERMISSION_DENIED,
        details:
          "alice may not override (set override_readiness_check or override_version_check); roles with it: admin",
      });
    } finally {
      flow.close();
    }
  });

  it("WhoAmI: under the policy, the caller's identity and its grants; a caller with none gets an empty list; an open server says so", async () => {
    const flow = createFlowClient(address, clientCredentials());
    const open = await startGrpcServer({
      api: okApi(),
      host: "127.0.0.1",
      port: 0,
      logger: { info() {}, warn() {}, error() {} },
      protoDir: false,
    });
    const openFlow = createFlowClient(`127.0.0.1:${open.port}`, clientCredentials());
    try {
      expect(await flow.whoAmI({}, { metadata: metadataOf("operatorOut") })).toEqual({
        actor: {
          name: "ops-dc2",
          source: pb.OperationRunActorSource.OPERATION_RUN_ACTOR_SOURCE_LOAD_BALANCER_CERTIFICATE,
          authenticated: true,
          subjectAltNames: [],
          declaredName: "someone",
          issuer: "CN=flow-test-ca",
        },
        policyEnforced: true,
        grants: [
          {
            roles: ["operator"],
            permissions: ["read", "operate"],
            datacenters: ["dc2"],
            rows: [],
            nvlDomains: [],
            rackNames: [],
            issuers: [],
          },
        ],
      });
      expect(await flow.whoAmI({}, { metadata: metadataOf("none") })).toMatchObject({
        actor: {
          source: pb.OperationRunActorSource.OPERATION_RUN_ACTOR_SOURCE_ANONYMOUS,
          authenticated: false,
        },
        policyEnforced: true,
        grants: [],
      });
      expect(await openFlow.whoAmI({}, { metadata: metadataOf("declared") })).toMatchObject({
        actor: { name: "admin-1", source: pb.OperationRunActorSource.OPERATION_RUN_ACTOR_SOURCE_DECLARED },
        policyEnforced: false,
        grants: [],
      });
    } finally {
      flow.close();
      openFlow.close();
      await open.shutdown(1000);
    }
  });
});
