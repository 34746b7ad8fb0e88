/** The gRPC converters: ids, list queries and pages. */
import { describe, expect, it } from "vitest";
import { LIMITS } from "../../src/adapters/grpc/convert/limits.js";
import {
  listRunsQueryFromProto,
  listTargetsQueryFromProto,
  listTasksQueryFromProto,
  pageFromListRacks,
} from "../../src/adapters/grpc/convert/list-queries.js";
import { runIdFromProto } from "../../src/adapters/grpc/convert/run-request.js";
import { taskIdFromProto, taskIdsFromProto } from "../../src/adapters/grpc/convert/tasks-inventory.js";
import * as pb from "../../src/gen/flow/v1/flow.js";
import { A, B, NIL, odd, thrown } from "../support/grpc-convert.js";

describe("grpc convert: ids, queries and pages", () => {
  it.each([
    ["absent", undefined],
    ["empty", { id: "" }],
    ["malformed", { id: "run-1" }],
    ["nil", { id: NIL }],
  ])("a %s run id → InvalidArgument 'operation run ID is required'", (_label, id) => {
    const err = thrown(() => runIdFromProto(id));
    expect(err.code).toBe("INVALID_ARGUMENT");
    expect(err.message).toBe("operation run ID is required");
  });

  it("run and task ids are lowercased; a bad task id → 'task ID is required'", () => {
    expect(runIdFromProto({ id: A.toUpperCase() })).toBe(A);
    expect(taskIdFromProto({ id: B.toUpperCase() })).toBe(B);
    expect(thrown(() => taskIdFromProto(undefined)).message).toBe("task ID is required");
    expect(thrown(() => taskIdFromProto({ id: NIL })).message).toBe("task ID is required");
  });

  it("ListOperationRuns: no filter and no pagination → everything, offset 0 limit 100", () => {
    expect(listRunsQueryFromProto(pb.ListOperationRunsRequest.fromPartial({}))).toEqual({
      states: [],
      kinds: [],
      page: { offset: 0, limit: 100 },
    });
  });

  it("ListOperationRuns: name, states and kinds arrive in domain terms", () => {
    const query = listRunsQueryFromProto(
      pb.ListOperationRunsRequest.fromPartial({
        filter: {
          name: { patterns: ["canary%"], isWildcard: true, useOr: false },
          states: [{ status: 3 }, { reason: 4 }, { status: 2, reason: 1 }],
          operationKinds: [{ type: 2 }, { type: 1, code: "upgrade" }],
        },
        pagination: { offset: 20, limit: 10 },
      }),
    );
    expect(query).toEqual({
      name: { patterns: ["canary%"], isWildcard: true, useOr: false },
      states: [{ status: "PAUSED" }, { reason: "SAFETY_GATE" }, { status: "RUNNING", reason: "NONE" }],
      kinds: [{ type: "FIRMWARE_CONTROL" }, { type: "POWER_CONTROL", code: "upgrade" }],
      page: { offset: 20, limit: 10 },
    });
  });

  it("ListOperationRuns: unknown enum numbers are the converter's; empty entries and negative pages the validator's", () => {
    expect(
      thrown(() =>
        listRunsQueryFromProto(
          pb.ListOperationRunsRequest.fromPartial({
            filter: {
              states: [{ status: odd(42) }, { reason: odd(17) }],
              operationKinds: [{ type: odd(9) }],
            },
          }),
        ),
      ).message,
    ).toBe(
      "filter.states[0].status: unknown enum value 42; filter.states[1].reason: unknown enum value 17; filter.operation_kinds[0].type: unknown enum value 9",
    );
    expect(
      thrown(() =>
        listRunsQueryFromProto(
          pb.ListOperationRunsRequest.fromPartial({
            filter: { states: [{}], operationKinds: [{ type: 0, code: "" }] },
            pagination: { offset: -1, limit: -5 },
          }),
        ),
      ).message,
    ).toBe(
      "filter.states[0]: operation run state filter must set status, reason, or both; filter.operation_kinds[0].type: operation kind filter must set operation type; filter.operation_kinds[0].code: operation kind filter code must not be empty; pagination.offset: offset must not be negative; pagination.limit: limit must not be negative",
    );
  });

  it("ListOperationRunTargets: UNKNOWN status → no filter, UNKNOWN scope → CURRENT_PHASE, id lowercased", () => {
    expect(
      listTargetsQueryFromProto(
        pb.ListOperationRunTargetsRequest.fromPartial({ operationRunId: { id: A.toUpperCase() } }),
      ),
    ).toStrictEqual({ runId: A, phaseScope: "CURRENT_PHASE", page: { offset: 0, limit: 100 } });
    expect(
      listTargetsQueryFromProto(
        pb.ListOperationRunTargetsRequest.fromPartial({
          operationRunId: { id: A },
          status: 5,
          phaseScope: 2,
          pagination: { offset: 3, limit: 0 },
        }),
      ),
    ).toEqual({
      runId: A,
      status: "FAILED",
      phaseScope: "COMPLETED_PHASES",
      page: { offset: 3, limit: 100 },
    });
  });

  it("ListOperationRunTargets: the run id is checked before anything else", () => {
    const bad = pb.ListOperationRunTargetsRequest.fromPartial({
      operationRunId: { id: "x" },
      status: odd(99),
    });
    expect(thrown(() => listTargetsQueryFromProto(bad)).message).toBe("operation run ID is required");
    const unknown = pb.ListOperationRunTargetsRequest.fromPartial({
      operationRunId: { id: A },
      status: odd(99),
      phaseScope: odd(7),
    });
    expect(thrown(() => listTargetsQueryFromProto(unknown)).message).toBe(
      "status: unknown enum value 99; phase_scope: unknown enum value 7",
    );
  });

  it("ListTasks: defaults, optional ids, and the validator's text for a malformed one", () => {
    expect(listTasksQueryFromProto(pb.ListTasksRequest.fromPartial({}))).toStrictEqual({
      activeOnly: false,
      withReport: false,
      page: { offset: 0, limit: 100 },
    });
    expect(
      listTasksQueryFromProto(
        pb.ListTasksRequest.fromPartial({
          rackId: { id: A.toUpperCase() },
          componentId: { id: B },
          activeOnly: true,
          withReport: true,
        }),
      ),
    ).toEqual({
      rackId: A,
      componentId: B,
      activeOnly: true,
      withReport: true,
      page: { offset: 0, limit: 100 },
    });
    expect(
      thrown(() => listTasksQueryFromProto(pb.ListTasksRequest.fromPartial({ rackId: { id: "r1" } })))
        .message,
    ).toBe('rack_id: must be a valid UUID (got "r1")');
  });

  it("GetTasksByIDs: every malformed or nil id is reported with its index", () => {
    expect(taskIdsFromProto({ taskIds: [{ id: A.toUpperCase() }, { id: B }] })).toEqual([A, B]);
    expect(
      thrown(() => taskIdsFromProto({ taskIds: [{ id: A }, { id: "nope" }, { id: NIL }] })).message,
    ).toBe('task_ids[1]: must be a UUID (got "nope"); task_ids[2]: must not be the nil UUID');
    const many = { taskIds: Array.from({ length: LIMITS.taskIds + 1 }, () => ({ id: A })) };
    expect(thrown(() => taskIdsFromProto(many)).message).toBe(
      "task_ids: must have at most 1000 entries (got 1001)",
    );
  });

  it("ListRacks: pagination absent → offset 0 limit 100; huge limits are capped by the domain", () => {
    expect(pageFromListRacks({})).toEqual({ offset: 0, limit: 100 });
    expect(pageFromListRacks({ pagination: { offset: 5, limit: 50_000 } })).toEqual({
      offset: 5,
      limit: 1000,
    });
  });
});
