/**
 * Retry and rollback runs end to end on the local stack: real gRPC over a socket, the dispatcher,
 * the child-task ASL, MQTT and the simulated BMC fleet, DynamoDB on moto.
 *
 *   retry: 6 racks flashed 1.0.0 → 2.0.0 with two racks' BMCs failing: COMPLETED_WITH_FAILURES,
 *     the two FAILED. Their BMCs fixed, a retry of the run plans exactly those two, with the run's
 *     template, and completes; their BMCs read 2.0.0. Each target of the first run lists its
 *     components' prior version (1.0.0) beside the version they were flashed to; the link shows
 *     both ways on GetOperationRun and in the first run's history.
 *   rollback: 3 racks of two components flashed 1.0.0 → 2.0.0, then rolled back: after the
 *     rollback every flashed component's BMC reads 1.0.0 again, and its targets froze 1.0.0.
 *   bad input: an unknown run (NotFound), a run still running (FailedPrecondition naming its
 *     status), a run with nothing to retry (InvalidArgument "no failed targets").
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ComponentType,
  type CreateOperationRunRequest,
  OperationRunEventKind,
  OperationRunStatus,
  OperationRunTargetStatus,
} from "../../src/gen/flow/v1/flow.js";
import { FAST_FAILURE, FAST_SUCCESS, fleetOf, HANG, rackGroup } from "../support/fixtures-inventory.js";
import {
  countGate,
  createRun,
  failure,
  getRun,
  listTargets,
  runRequest,
  startTestStack,
  stateOf,
  type TestStack,
  waitForTerminal,
} from "../support/stack.js";

const RETRY = rackGroup(71, { name: "retry", count: 6, types: ["COMPUTE"] });
const ROLLBACK = rackGroup(72, { name: "rollback", count: 3, types: ["COMPUTE", "NVSWITCH"] });
const BUSY = rackGroup(73, { name: "busy", count: 1, types: ["COMPUTE"], behaviour: HANG });
const FAILING = [RETRY.ids[1] as string, RETRY.ids[4] as string];
const S = OperationRunStatus;
const T = OperationRunTargetStatus;

let s: TestStack;

beforeAll(async () => {
  s = await startTestStack({
    label: "retry-rollback",
    groups: [RETRY, ROLLBACK, BUSY],
    defaults: FAST_SUCCESS,
  });
  s.local.fleet!.setConfig(
    fleetOf([{ ...RETRY, ids: FAILING, behaviour: FAST_FAILURE }, BUSY], FAST_SUCCESS),
  );
}, 60_000);

afterAll(async () => {
  await s?.stop();
});

/** A retry or rollback request: no operation (the followed run's template), its own options. */
function followUp(
  link: Partial<Pick<CreateOperationRunRequest, "retry" | "rollback">>,
  maxConcurrent = 2,
): CreateOperationRunRequest {
  const base = runRequest({ maxConcurrent, gates: [countGate(1)] });
  return {
    ...base,
    configuration: {
      selector: base.configuration?.selector,
      options: base.configuration?.options,
      operation: undefined,
    },
    ...link,
  };
}

const spec = (rackIds: readonly string[]) => ({
  rackIds,
  maxConcurrent: 6,
  gates: [countGate(100)],
});

describe("retry: exactly the racks that failed, with the run's template", () => {
  let first = "";
  let retry = "";

  beforeAll(async () => {
    first = await createRun(s.flow, runRequest(spec(RETRY.ids)));
    await waitForTerminal(s.flow, first, 90_000);
    // The operator fixes the cause: those BMCs flash fine from now on.
    s.local.fleet!.setConfig(fleetOf([BUSY], FAST_SUCCESS));
  }, 120_000);

  it("the first run ends COMPLETED_WITH_FAILURES with exactly the two failing racks FAILED", async () => {
    expect(stateOf(await getRun(s.flow, first)).status).toBe(S.OPERATION_RUN_STATUS_COMPLETED_WITH_FAILURES);
    const failed = (await listTargets(s.flow, first))
      .filter((t) => t.status === T.OPERATION_RUN_TARGET_STATUS_FAILED)
      .map((t) => t.rackId?.id)
      .sort();
    expect(failed).toEqual([...FAILING].sort());
  });

  it("every target lists its component's version before the run (1.0.0) and the version it was flashed to", async () => {
    for (const t of await listTargets(s.flow, first)) {
      expect(t.priorVersions, t.rackId?.id).toEqual([
        {
          componentId: t.componentsByType?.groups[0]?.componentIds[0],
          type: ComponentType.COMPONENT_TYPE_COMPUTE,
          priorVersion: "1.0.0",
          targetVersion: "2.0.0",
          subTargets: [],
        },
      ]);
    }
  });

  it("the retry plans and flashes exactly those racks, and completes; their BMCs read 2.0.0", async () => {
    const request = followUp({
      retry: { operationRunId: { id: first }, includeTerminated: false, includeSkipped: false },
    });
    const plan = await s.flow.planOperationRun(request);
    expect(plan.targets.map((t) => t.rackId?.id).sort()).toEqual([...FAILING].sort());
    retry = await createRun(s.flow, request);
    const done = await waitForTerminal(s.flow, retry, 60_000);
    expect(stateOf(done).status).toBe(S.OPERATION_RUN_STATUS_COMPLETED);
    const targets = await listTargets(s.flow, retry);
    expect(targets.map((t) => [t.rackId?.id, t.status]).sort()).toEqual(
      [...FAILING].sort().map((id) => [id, T.OPERATION_RUN_TARGET_STATUS_COMPLETED]),
    );
    expect(done.configuration?.operation?.operation?.value.targetVersion).toBe("2.0.0");
    for (const rack of RETRY.racks.filter((r) => FAILING.includes(r.id))) {
      expect(s.local.fleet!.versionOf(rack.components[0]!.id)).toBe("2.0.0");
    }
  });

  it("the link shows both ways: GetOperationRun and the retried run's history", async () => {
    expect((await getRun(s.flow, retry)).summary?.retryOf).toEqual({
      operationRunId: { id: first },
      includeTerminated: false,
      includeSkipped: false,
    });
    expect((await getRun(s.flow, first)).summary?.retriedBy).toEqual([{ id: retry }]);
    const { events } = await s.flow.listOperationRunEvents({
      operationRunId: { id: first },
      pagination: undefined,
    });
    const retried = events.find((e) => e.kind === OperationRunEventKind.OPERATION_RUN_EVENT_KIND_RETRIED);
    expect(retried?.message).toBe(`retried by run ${retry}: 2 targets`);
    expect(retried?.detail).toEqual({
      $case: "followUp",
      value: { operationRunId: { id: retry }, targets: 2 },
    });
  });
});

describe("rollback: every flashed component back to the version it ran before", () => {
  let first = "";
  let rollback = "";

  beforeAll(async () => {
    first = await createRun(s.flow, runRequest(spec(ROLLBACK.ids)));
    expect(stateOf(await waitForTerminal(s.flow, first, 90_000)).status).toBe(
      S.OPERATION_RUN_STATUS_COMPLETED,
    );
    rollback = await createRun(s.flow, followUp({ rollback: { operationRunId: { id: first } } }, 3));
    await waitForTerminal(s.flow, rollback, 90_000);
  }, 200_000);

  it("the first run flashed every component to 2.0.0", async () => {
    const targets = await listTargets(s.flow, first);
    expect(targets.flatMap((t) => t.priorVersions.map((p) => [p.priorVersion, p.targetVersion]))).toEqual(
      Array.from({ length: 6 }, () => ["1.0.0", "2.0.0"]),
    );
  });

  it("the rollback completes, its targets froze 1.0.0 for both components, and every BMC reads 1.0.0", async () => {
    expect(stateOf(await getRun(s.flow, rollback)).status).toBe(S.OPERATION_RUN_STATUS_COMPLETED);
    const targets = await listTargets(s.flow, rollback);
    expect(targets.map((t) => t.rackId?.id).sort()).toEqual([...ROLLBACK.ids].sort());
    for (const t of targets) {
      expect(t.targetVersions.map((v) => [v.version, v.componentIds.length])).toEqual([["1.0.0", 2]]);
      expect(t.skippedComponents).toEqual([]);
    }
    for (const c of ROLLBACK.racks.flatMap((r) => r.components)) {
      expect(s.local.fleet!.versionOf(c.id), c.id).toBe("1.0.0");
    }
    expect((await getRun(s.flow, rollback)).summary?.rollbackOf).toEqual({ operationRunId: { id: first } });
    expect((await getRun(s.flow, first)).summary?.rolledBackBy).toEqual([{ id: rollback }]);
  });
});

describe("bad input", () => {
  const retryOf = (id: string) =>
    followUp({ retry: { operationRunId: { id }, includeTerminated: false, includeSkipped: false } });

  it("an unknown run → NOT_FOUND", async () => {
    const unknown = "0000abcd-0000-4000-8000-000000000001";
    expect(await failure(s.flow.createOperationRun(retryOf(unknown)))).toEqual({
      code: "NOT_FOUND",
      details: `operation run to retry not found: ${unknown}`,
    });
    expect(
      await failure(s.flow.planOperationRun(followUp({ rollback: { operationRunId: { id: unknown } } }))),
    ).toEqual({
      code: "NOT_FOUND",
      details: `operation run to roll back not found: ${unknown}`,
    });
  });

  it("a run still running → FAILED_PRECONDITION naming its status", async () => {
    const busy = await createRun(s.flow, runRequest(spec(BUSY.ids)));
    const running = await failure(s.flow.createOperationRun(retryOf(busy)));
    expect(running.code).toBe("FAILED_PRECONDITION");
    expect(running.details).toMatch(
      new RegExp(
        `^operation run ${busy} is (PENDING|RUNNING); only a finished run \\(COMPLETED, COMPLETED_WITH_FAILURES, FAILED or CANCELLED\\) can be retried$`,
      ),
    );
    await s.flow.cancelOperationRun({ id: { id: busy }, reason: "test over" });
  });

  it("a run with nothing to retry → INVALID_ARGUMENT no failed targets", async () => {
    const clean = await createRun(s.flow, runRequest(spec([ROLLBACK.ids[0] as string])));
    await waitForTerminal(s.flow, clean, 60_000);
    expect(await failure(s.flow.createOperationRun(retryOf(clean)))).toEqual({
      code: "INVALID_ARGUMENT",
      details: "retry.operation_run_id: no failed targets",
    });
  });
});
