/**
 * Access control end to end: the local stack (real gRPC server, moto, the real run service) over
 * mutual TLS with certificates this test makes (test/support/certificates.ts), under a policy
 * file. A viewer reads and cannot create; an operator scoped to the racks named `dc1-*` creates
 * within its scope and is refused outside it, and cannot pause a run holding racks outside it;
 * only admin changes a baseline; a forged x-flow-actor or forged forwarded-certificate header
 * grants nothing; a policy reload takes effect without a restart, and a broken one is refused
 * with the old one kept; flowctl with --cert/--key/--ca reaches both services, and a refused
 * command exits 17 with the service's reason.
 */

import { writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOAD_BALANCER_CERT_HEADER } from "../../src/adapters/grpc/caller-identity.js";
import { ComponentType, UpgradeFirmwareRequest } from "../../src/gen/flow/v1/flow.js";
import { rackGroup } from "../support/fixtures-inventory.js";
import { type MtlsStack, startMtlsStack } from "../support/mtls-stack.js";
import { CALL_DEADLINE_MS, failure, racksSpec, runRequest, startTestStack } from "../support/stack.js";

const DC1 = rackGroup(1, { name: "dc1", count: 3 });
const DC2 = rackGroup(2, { name: "dc2", count: 2 });

const policy = (viewerRole: string) => `
bindings:
  - subjects: ["uri:spiffe://example.org/ops/*"]
    roles: [operator]
    scope: { racks: ["dc1-*"] }
  - subjects: ["cn:viewer-1"]
    roles: [${viewerRole}]
  - subjects: ["cn:admin-1"]
    roles: [admin]
`;

describe("authz e2e over mutual TLS: the local stack under a policy file", () => {
  let s: MtlsStack;
  const as = (who: "viewer" | "operator" | "admin") => s.as(who);
  const soon = (metadata = new grpc.Metadata()) => ({ deadline: Date.now() + CALL_DEADLINE_MS, metadata });

  beforeAll(async () => {
    s = await startMtlsStack({
      label: "authz",
      policy: policy("viewer"),
      clients: {
        viewer: { cn: "viewer-1" },
        operator: { cn: "alice", san: "URI:spiffe://example.org/ops/alice" },
        admin: { cn: "admin-1" },
      },
      groups: [DC1, DC2],
    });
  });

  afterAll(async () => {
    await s?.stop();
  });

  it("under a policy the stack does not say it is open", () => {
    expect(s.logs.filter((l) => l.startsWith("access control"))).toEqual([]);
  });

  it("a viewer reads, and cannot create", async () => {
    const { flow } = as("viewer");
    await expect(flow.listOperationRuns({ filter: undefined }, soon())).resolves.toMatchObject({ total: 0 });
    expect(await failure(flow.createOperationRun(runRequest({ rackIds: DC1.ids }), soon()))).toEqual({
      code: "PERMISSION_DENIED",
      details: "viewer-1 may not operate operation runs; roles with it: operator, admin",
    });
    expect(s.logs.filter((l) => l.startsWith("warn access denied"))).toEqual([
      "warn access denied actor=viewer-1 authenticated=true method=/v1.Flow/CreateOperationRun code=PERMISSION_DENIED reason=viewer-1 may not operate operation runs; roles with it: operator, admin issuer=CN=flow-test-ca",
    ]);
  });

  it("an operator creates within its scope, is refused outside it (nothing written), and cannot pause a run with racks outside it", async () => {
    const { flow } = as("operator");
    const inScope = await flow.createOperationRun(runRequest({ rackIds: DC1.ids }), soon());
    expect(inScope.id?.id).toMatch(/^[0-9a-f-]{36}$/);

    expect(
      await failure(flow.createOperationRun(runRequest({ rackIds: [...DC1.ids, ...DC2.ids] }), soon())),
    ).toEqual({
      code: "PERMISSION_DENIED",
      details: "alice may not operate operation runs: 2 of 5 racks outside its scope: dc2-0, dc2-1",
    });
    const { flow: adminFlow } = as("admin");
    expect((await adminFlow.listOperationRuns({ filter: undefined }, soon())).total).toBe(1);

    const wide = await adminFlow.createOperationRun(
      runRequest({ rackIds: [DC1.ids[0]!, DC2.ids[0]!] }),
      soon(),
    );
    expect(await failure(flow.pauseOperationRun({ id: wide.id }, soon()))).toEqual({
      code: "PERMISSION_DENIED",
      details: "alice may not operate operation run: 1 of 2 racks outside its scope: dc2-0",
    });
    expect((await flow.pauseOperationRun({ id: inScope.id }, soon())).summary?.id).toEqual(inScope.id);
  });

  it("an operator's firmware task is checked against every rack it expands to: outside its scope, refused before any task exists", async () => {
    const { flow } = as("operator");
    // dc2-1: no run names it (the wide run above dispatches dc2-0), so its task count is this call's alone.
    const before = await flow.listTasks(
      { rackId: { id: DC2.ids[1]! }, activeOnly: false, withReport: false },
      soon(),
    );
    expect(
      await failure(
        flow.upgradeFirmware(
          UpgradeFirmwareRequest.fromPartial({
            targetSpec: racksSpec([DC1.ids[2]!, DC2.ids[1]!]),
            targetVersion: "2.0.0",
          }),
          soon(),
        ),
      ),
    ).toEqual({
      code: "PERMISSION_DENIED",
      details: "alice may not operate firmware tasks: 1 of 2 racks outside its scope: dc2-1",
    });
    const after = await flow.listTasks(
      { rackId: { id: DC2.ids[1]! }, activeOnly: false, withReport: false },
      soon(),
    );
    expect(after.total).toBe(before.total);
  });

  it("only admin changes a baseline", async () => {
    const baselines = [
      { componentType: ComponentType.COMPONENT_TYPE_COMPUTE, model: "", vendor: "", version: "2.0.0" },
    ];
    expect(await failure(as("operator").admin.setFirmwareBaselines({ baselines }, soon()))).toEqual({
      code: "PERMISSION_DENIED",
      details: "alice may not administer firmware baselines; roles with it: admin",
    });
    await expect(as("admin").admin.setFirmwareBaselines({ baselines }, soon())).resolves.toMatchObject({
      baselines: [{ version: "2.0.0" }],
    });
  });

  it("a forged x-flow-actor and a forged forwarded-certificate header grant nothing", async () => {
    const metadata = new grpc.Metadata();
    metadata.add("x-flow-actor", "admin-1");
    metadata.add(LOAD_BALANCER_CERT_HEADER, encodeURIComponent(s.certs.pem("admin.crt")));
    expect(
      await failure(as("viewer").flow.createOperationRun(runRequest({ rackIds: DC1.ids }), soon(metadata))),
    ).toEqual({
      code: "PERMISSION_DENIED",
      details: "viewer-1 may not operate operation runs; roles with it: operator, admin",
    });
  });

  it("a reload takes effect without a restart; a broken policy is refused and the old one stays", async () => {
    const { admin } = as("viewer");
    const list = () => admin.setFirmwareBaselines({ baselines: [] }, soon());
    expect((await failure(list())).code).toBe("PERMISSION_DENIED");

    writeFileSync(s.policyFile, policy("admin"));
    expect(s.local.accessPolicy?.reload()).toBe(true);
    await expect(list()).resolves.toBeDefined();

    writeFileSync(s.policyFile, policy("superuser"));
    expect(s.local.accessPolicy?.reload()).toBe(false);
    expect(s.logs.filter((l) => l.startsWith("error access policy reload refused"))).toEqual([
      `error access policy reload refused; the previous policy stays in force file=${s.policyFile} problems=${s.policyFile}: bindings[1].roles[0]: unknown role "superuser" (roles: viewer, operator, approver, admin)`,
    ]);
    await expect(list()).resolves.toBeDefined();
  });

  /** flowctl in this process, as `who`, over mutual TLS. */
  const flowctl = (who: "viewer" | "operator", ...args: string[]) => s.flowctl(who, ...args);

  it("flowctl whoami prints the identity, how it was verified, its roles and scopes; a refused command exits 17 with the reason", async () => {
    writeFileSync(s.policyFile, policy("viewer"));
    expect(s.local.accessPolicy?.reload()).toBe(true);
    expect(await flowctl("operator", "whoami")).toEqual({
      code: 0,
      stdout: [
        "identity:  alice (client certificate the service verified (mutual TLS))",
        "SANs:      URI:spiffe://example.org/ops/alice",
        "issuer:    CN=flow-test-ca",
        // flowctl declares the OS user beside the certificate: shown, and marked as not proof.
        `declared:  ${userInfo().username} (not verified)`,
        "policy:    enforced",
        "grant:     operator (read, operate) on racks dc1-*",
        "",
      ].join("\n"),
      stderr: "",
    });
    const refused = await flowctl("viewer", "task", "cancel", DC1.ids[0]!);
    expect(refused.code).toBe(17);
    expect(refused.stderr).toContain("viewer-1 may not operate task; roles with it: operator, admin");
  });

  it("flowctl with --cert/--key/--ca reaches both services: a viewer's reads of each kind answer; an admin command is refused to an operator (17) and made by an admin", async () => {
    writeFileSync(s.policyFile, policy("viewer"));
    expect(s.local.accessPolicy?.reload()).toBe(true);
    const reads = [
      ["version"],
      ["run", "list"],
      ["task", "list"],
      ["inventory", "list"],
      ["baseline", "list"],
      ["rule", "list"],
      ["firmware", "list"],
    ];
    for (const args of reads) {
      const r = await flowctl("viewer", ...args);
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: "" });
    }
    expect((await flowctl("viewer", "inventory", "list")).stdout).toContain("dc1-0");
    const set = ["baseline", "set", "COMPUTE", "2.0.0", "--model", "flowctl-mtls"];
    const refused = await flowctl("operator", ...set);
    expect(refused.code).toBe(17);
    expect(refused.stderr).toContain("alice may not administer firmware baselines; roles with it: admin");
    expect(await s.flowctl("admin", ...set)).toMatchObject({ code: 0, stderr: "" });
    expect((await flowctl("viewer", "baseline", "list")).stdout).toContain("flowctl-mtls");
    expect(
      await s.flowctl("admin", "baseline", "delete", "COMPUTE", "--model", "flowctl-mtls"),
    ).toMatchObject({
      code: 0,
      stderr: "",
    });
  });
});

describe("the local stack without a policy", () => {
  it("runs open, and says so in one line at start", async () => {
    const open = await startTestStack({ label: "authz-open", groups: [DC1] });
    try {
      expect(open.logs.filter((l) => l.startsWith("access control"))).toEqual([
        "access control: none (no --authz-policy): every caller may make every call",
      ]);
      await expect(open.flow.createOperationRun(runRequest({ rackIds: DC1.ids }))).resolves.toHaveProperty(
        "id",
      );
    } finally {
      await open.stop();
    }
  });
});
