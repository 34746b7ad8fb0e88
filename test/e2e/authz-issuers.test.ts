/**
 * An identity is issuer + subject, end to end: the local stack over mutual TLS trusting two CAs
 * this test makes (the main one, CN=flow-test-ca, and CN=ops-ca), each of which issued a
 * certificate with CN=alice. The policy binds alice from ops-ca as operator and alice from the main
 * CA as viewer only: the two are two callers, told apart in the run history and by whoami.
 */

import { userInfo } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OperationRunEventKind as Kind } from "../../src/gen/flow/v1/flow.js";
import { rackGroup } from "../support/fixtures-inventory.js";
import { type MtlsStack, startMtlsStack } from "../support/mtls-stack.js";
import { CALL_DEADLINE_MS, failure, runRequest } from "../support/stack.js";

const DC1 = rackGroup(1, { name: "dc1", count: 2 });

const POLICY = `
bindings:
  - subjects: ["cn:alice"]
    roles: [operator]
    issuers: ["CN = ops-ca"]
  - subjects: ["cn:alice"]
    roles: [viewer]
    issuers: ["CN=flow-test-ca"]
`;

describe("an identity is issuer + subject: the same CN under two CAs", () => {
  let s: MtlsStack;
  const soon = () => ({ deadline: Date.now() + CALL_DEADLINE_MS });

  beforeAll(async () => {
    s = await startMtlsStack({
      label: "issuers",
      policy: POLICY,
      cas: { ops: { cn: "ops-ca" } },
      clients: { opsAlice: { cn: "alice", ca: "ops" }, mainAlice: { cn: "alice" } },
      groups: [DC1],
    });
  });

  afterAll(async () => {
    await s?.stop();
  });

  it("alice from ops-ca creates; alice from the main CA may only read; the history tells them apart", async () => {
    const ops = s.as("opsAlice").flow;
    const main = s.as("mainAlice").flow;
    const created = await ops.createOperationRun(runRequest({ rackIds: DC1.ids }), soon());
    expect(await failure(main.createOperationRun(runRequest({ rackIds: DC1.ids }), soon()))).toEqual({
      code: "PERMISSION_DENIED",
      details: "alice may not operate operation runs; roles with it: operator, admin",
    });
    expect(await failure(main.pauseOperationRun({ id: created.id }, soon()))).toEqual({
      code: "PERMISSION_DENIED",
      details: "alice may not operate operation run; roles with it: operator, admin",
    });
    expect(
      s.logs.filter((l) => l.startsWith("warn access denied") && l.includes("CreateOperationRun")),
    ).toEqual([
      "warn access denied actor=alice authenticated=true method=/v1.Flow/CreateOperationRun code=PERMISSION_DENIED reason=alice may not operate operation runs; roles with it: operator, admin issuer=CN=flow-test-ca",
    ]);
    expect(s.logs.filter((l) => l.startsWith("info audit") && l.includes("CreateOperationRun"))).toEqual([
      "info audit actor=alice authenticated=true source=CLIENT_CERTIFICATE issuer=CN=ops-ca method=/v1.Flow/CreateOperationRun code=OK",
      "info audit actor=alice authenticated=true source=CLIENT_CERTIFICATE issuer=CN=flow-test-ca method=/v1.Flow/CreateOperationRun code=PERMISSION_DENIED",
    ]);
    const { events } = await main.listOperationRunEvents(
      { operationRunId: created.id, pagination: { offset: 0, limit: 100 } },
      soon(),
    );
    const byKind = (kind: Kind) => events.find((e) => e.kind === kind)?.actor;
    expect(byKind(Kind.OPERATION_RUN_EVENT_KIND_CREATED)).toMatchObject({
      name: "alice",
      issuer: "CN=ops-ca",
    });
    expect(byKind(Kind.OPERATION_RUN_EVENT_KIND_ACCESS_DENIED)).toMatchObject({
      name: "alice",
      issuer: "CN=flow-test-ca",
    });
  });

  it("whoami shows each alice's issuer and only the grant its CA earns", async () => {
    const lines = (who: string, grant: string) =>
      [
        "identity:  alice (client certificate the service verified (mutual TLS))",
        `issuer:    ${who}`,
        `declared:  ${userInfo().username} (not verified)`,
        "policy:    enforced",
        grant,
        "",
      ].join("\n");
    expect(await s.flowctl("opsAlice", "whoami")).toEqual({
      code: 0,
      stdout: lines(
        "CN=ops-ca",
        "grant:     operator (read, operate) on every rack (certificates from CN=ops-ca)",
      ),
      stderr: "",
    });
    expect(await s.flowctl("mainAlice", "whoami")).toEqual({
      code: 0,
      stdout: lines(
        "CN=flow-test-ca",
        "grant:     viewer (read) on every rack (certificates from CN=flow-test-ca)",
      ),
      stderr: "",
    });
  });
});
