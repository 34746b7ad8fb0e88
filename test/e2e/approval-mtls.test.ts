/**
 * The two-person rule end to end: the local stack (real gRPC server, moto, the run service, the
 * dispatcher and the simulated fleet) over mutual TLS with certificates this test makes, under a
 * policy with `approval: { minRacks: 3 }`. A run over 3 racks is created PAUSED /
 * AWAITING_APPROVAL and nothing of it reaches the fleet while a smaller run beside it is flashed;
 * its creator cannot approve it (nor resume it), a viewer cannot approve it, each refusal is in the
 * run's history; a second approver approves it with `flowctl run approve` and it runs; the history
 * names both people; a run awaiting approval can still be cancelled.
 */

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalStack } from "../../local/stack.js";
import type { FlowClient } from "../../src/adapters/grpc/client.js";
import {
  OperationRunEventKind as Kind,
  ListOperationRunTargetsRequest,
  OperationRunStatus,
  OperationRunStatusReason,
  OperationRunTargetPhaseScope,
  OperationRunTargetStatus,
} from "../../src/gen/flow/v1/flow.js";
import { rackGroup } from "../support/fixtures-inventory.js";
import { type MtlsStack, startMtlsStack } from "../support/mtls-stack.js";
import { until } from "../support/poll.js";
import { CALL_DEADLINE_MS, failure, runRequest } from "../support/stack.js";

const BIG = rackGroup(1, { name: "dc1", count: 3 });
const SMALL = rackGroup(2, { name: "dc2", count: 2 });

const POLICY = `
bindings:
  - subjects: ["uri:spiffe://example.org/ops/*"]
    roles: [operator, approver]
  - subjects: ["cn:bob"]
    roles: [approver]
  - subjects: ["cn:viewer-1"]
    roles: [viewer]
approval: { minRacks: 3 }
`;

type Who = "alice" | "bob" | "viewer";

describe("two-person rule e2e over mutual TLS", () => {
  let s: MtlsStack;
  let local: LocalStack;
  let logs: string[];
  const as = (who: Who): FlowClient => s.as(who).flow;
  const soon = () => ({ deadline: Date.now() + CALL_DEADLINE_MS });

  beforeAll(async () => {
    s = await startMtlsStack({
      label: "approval",
      policy: POLICY,
      clients: {
        alice: { cn: "alice", san: "URI:spiffe://example.org/ops/alice" },
        bob: { cn: "bob" },
        viewer: { cn: "viewer-1" },
      },
      groups: [BIG, SMALL],
    });
    ({ local, logs } = s);
  });

  afterAll(async () => {
    await s?.stop();
  });

  /** flowctl in this process, as `who`, over mutual TLS. */
  const flowctl = (who: Who, ...args: string[]) => s.flowctl(who, ...args);

  const targetStatuses = async (flow: FlowClient, id: string) =>
    (
      await flow.listOperationRunTargets(
        ListOperationRunTargetsRequest.fromPartial({
          operationRunId: { id },
          phaseScope: OperationRunTargetPhaseScope.OPERATION_RUN_TARGET_PHASE_SCOPE_CURRENT_PHASE,
          pagination: { offset: 0, limit: 100 },
        }),
        soon(),
      )
    ).targets.map((t) => t.status);
  const updatesTo = (group: typeof BIG) =>
    group.racks
      .flatMap((r) => r.components)
      .reduce((n, c) => n + (local.fleet?.stats().updatesByComponent[c.id] ?? 0), 0);

  it("a large run waits for a second person: the creator and a viewer are refused, resume does not lift it, nothing reaches the fleet; another approver releases it", async () => {
    const alice = as("alice");
    const created = await alice.createOperationRun(runRequest({ rackIds: BIG.ids }), soon());
    const id = created.id?.id as string;
    const run = await alice.getOperationRun({ id: { id }, includeStats: false }, soon());
    expect(run.operationRun?.summary).toMatchObject({
      state: {
        status: OperationRunStatus.OPERATION_RUN_STATUS_PAUSED,
        reason: OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_AWAITING_APPROVAL,
      },
      statusMessage: "awaiting approval: 3 racks, the access policy requires a second person from 3",
    });

    // A smaller run beside it is dispatched and flashed: the dispatcher is at work.
    const small = await alice.createOperationRun(runRequest({ rackIds: SMALL.ids }), soon());
    await until("the small run's racks receive update commands", () => updatesTo(SMALL) > 0);
    // A pass of the large run, finished: it claimed nothing.
    await local.dispatcher.dispatchRun(id);
    expect(await targetStatuses(alice, id)).toEqual([
      OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_PENDING,
      OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_PENDING,
      OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_PENDING,
    ]);
    expect(updatesTo(BIG)).toBe(0);
    expect(small.id?.id).not.toBe(id);

    expect(await failure(alice.approveOperationRun({ id: { id } }, soon()))).toEqual({
      code: "PERMISSION_DENIED",
      details: `alice may not approve operation run ${id}: alice created it; a second person must approve`,
    });
    expect(await failure(as("viewer").approveOperationRun({ id: { id } }, soon()))).toEqual({
      code: "PERMISSION_DENIED",
      details: "viewer-1 may not approve operation run; roles with it: approver, admin",
    });
    expect(await failure(alice.resumeOperationRun({ id: { id } }, soon()))).toEqual({
      code: "FAILED_PRECONDITION",
      details: `operation run is not in a valid state for the requested operation: ${id} is awaiting approval by a second person; use ApproveOperationRun`,
    });
    expect(
      logs.filter((l) => l.startsWith("warn access denied") && l.includes("ApproveOperationRun")),
    ).toEqual([
      `warn access denied actor=alice authenticated=true method=/v1.Flow/ApproveOperationRun code=PERMISSION_DENIED reason=alice may not approve operation run ${id}: alice created it; a second person must approve runId=${id} issuer=CN=flow-test-ca`,
      `warn access denied actor=viewer-1 authenticated=true method=/v1.Flow/ApproveOperationRun code=PERMISSION_DENIED reason=viewer-1 may not approve operation run; roles with it: approver, admin runId=${id} issuer=CN=flow-test-ca`,
    ]);

    const approved = await flowctl("bob", "run", "approve", id);
    expect(approved).toMatchObject({ code: 0, stderr: "" });
    await until("the approved run's racks receive update commands", () => updatesTo(BIG) > 0);

    const { events } = await alice.listOperationRunEvents(
      { operationRunId: { id }, pagination: { offset: 0, limit: 100 } },
      soon(),
    );
    const named = events.map((e) => [e.kind, e.actor?.name ?? ""]);
    expect(named.slice(0, 5)).toEqual([
      [Kind.OPERATION_RUN_EVENT_KIND_CREATED, "alice"],
      [Kind.OPERATION_RUN_EVENT_KIND_APPROVAL_REQUESTED, ""],
      [Kind.OPERATION_RUN_EVENT_KIND_ACCESS_DENIED, "alice"],
      [Kind.OPERATION_RUN_EVENT_KIND_ACCESS_DENIED, "viewer-1"],
      [Kind.OPERATION_RUN_EVENT_KIND_APPROVED, "bob"],
    ]);
    const approval = events[4];
    expect(approval?.message).toBe("operation run approved by bob (created by alice)");
    expect(approval?.detail).toMatchObject({
      $case: "approval",
      value: { minRacks: 3, racks: 3, requestedBy: { name: "alice", authenticated: true } },
    });
    expect(events[3]?.detail).toEqual({
      $case: "denial",
      value: {
        rpc: "ApproveOperationRun",
        code: "PERMISSION_DENIED",
        reason: "viewer-1 may not approve operation run; roles with it: approver, admin",
      },
    });
    const history = await flowctl("viewer", "run", "history", id);
    expect(history.code).toBe(0);
    // flowctl declares the OS user beside the certificate: shown, not proof.
    expect(history.stdout).toMatch(
      /approved\s+1\/1\s+bob \(certificate(, as [^)]+)?\)\s+operation run approved by bob \(created by alice\)\n/,
    );
  });

  it("a run awaiting approval can be cancelled by its creator; approving it afterwards is FAILED_PRECONDITION", async () => {
    const alice = as("alice");
    const created = await alice.createOperationRun(runRequest({ rackIds: BIG.ids }), soon());
    const id = created.id?.id as string;
    const cancelled = await alice.cancelOperationRun({ id: { id }, reason: "not today" }, soon());
    expect(cancelled.summary?.state?.status).toBe(OperationRunStatus.OPERATION_RUN_STATUS_CANCELLED);
    expect(await failure(as("bob").approveOperationRun({ id: { id } }, soon()))).toEqual({
      code: "FAILED_PRECONDITION",
      details: `operation run is not in a valid state for the requested operation: ${id} is not awaiting approval`,
    });
  });
});
