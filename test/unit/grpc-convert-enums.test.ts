/** The gRPC converters: every enum both ways (totally: unknown numbers too) and the durations. */
import { describe, expect, it } from "vitest";
import {
  componentTypeFromProto,
  componentTypeToProto,
  conflictStrategyFromProto,
  conflictStrategyToProto,
  executorTypeToProto,
  gateScopeFromProto,
  gateScopeToProto,
  operationTypeFromProto,
  operationTypeToProto,
  phaseScopeFromProto,
  runReasonFromProto,
  runReasonToProto,
  runStatusFromProto,
  runStatusToProto,
  strategyFromProto,
  targetStatusFromProto,
  targetStatusToProto,
  taskStatusToProto,
} from "../../src/adapters/grpc/convert/enums.js";
import { Violations } from "../../src/adapters/grpc/convert/violations.js";
import { durationToMs, msToDuration } from "../../src/adapters/grpc/convert/well-known.js";
import {
  COMPONENT_TYPES,
  type ConflictStrategy,
  GATE_SCOPES,
  OPERATION_TYPES,
  RUN_REASONS,
  RUN_STATUSES,
  TARGET_STATUSES,
} from "../../src/domain/model.js";
import { TASK_STATUSES } from "../../src/domain/task.js";
import * as pb from "../../src/gen/flow/v1/flow.js";
import { numbers, odd } from "../support/grpc-convert.js";

describe("grpc convert: enums map both ways, totally", () => {
  it("every domain value survives domain → proto → domain; every proto number decodes", () => {
    const v = new Violations();
    for (const t of COMPONENT_TYPES) expect(componentTypeFromProto(componentTypeToProto(t), "f", v)).toBe(t);
    for (const s of GATE_SCOPES) expect(gateScopeFromProto(gateScopeToProto(s), "f", v)).toBe(s);
    for (const s of RUN_STATUSES) expect(runStatusFromProto(runStatusToProto(s), "f", v)).toBe(s);
    for (const r of RUN_REASONS) expect(runReasonFromProto(runReasonToProto(r), "f", v)).toBe(r);
    for (const s of TARGET_STATUSES) expect(targetStatusFromProto(targetStatusToProto(s), "f", v)).toBe(s);
    for (const t of OPERATION_TYPES) expect(operationTypeFromProto(operationTypeToProto(t), "f", v)).toBe(t);
    for (const s of ["UNSPECIFIED", "QUEUE", "REJECT"] as ConflictStrategy[]) {
      expect(conflictStrategyFromProto(conflictStrategyToProto(s), "f", v)).toBe(s);
    }
    for (const n of numbers(pb.ComponentType)) expect(componentTypeFromProto(n, "f", v)).toBeDefined();
    for (const n of numbers(pb.OperationRunSafetyGateScope))
      expect(gateScopeFromProto(n, "f", v)).toBeDefined();
    for (const n of numbers(pb.OperationRunStatus)) expect(runStatusFromProto(n, "f", v)).toBeDefined();
    for (const n of numbers(pb.OperationRunStatusReason)) expect(runReasonFromProto(n, "f", v)).toBeDefined();
    for (const n of numbers(pb.OperationRunTargetStatus))
      expect(targetStatusFromProto(n, "f", v)).toBeDefined();
    for (const n of numbers(pb.OperationType)) expect(operationTypeFromProto(n, "f", v)).toBeDefined();
    for (const n of numbers(pb.ConflictStrategy)) expect(conflictStrategyFromProto(n, "f", v)).toBeDefined();
    expect(v.list).toEqual([]);
  });

  it("the wire's 0 decodes to UNKNOWN (or, for the phase scope, to CURRENT_PHASE)", () => {
    const v = new Violations();
    expect(componentTypeFromProto(0, "f", v)).toBe("UNKNOWN");
    expect(gateScopeFromProto(0, "f", v)).toBe("UNKNOWN");
    expect(runStatusFromProto(0, "f", v)).toBe("UNKNOWN");
    expect(runReasonFromProto(0, "f", v)).toBe("UNKNOWN");
    expect(targetStatusFromProto(0, "f", v)).toBe("UNKNOWN");
    expect(operationTypeFromProto(0, "f", v)).toBe("UNKNOWN");
    expect(strategyFromProto(0, "f", v)).toBe("UNKNOWN");
    expect(conflictStrategyFromProto(0, "f", v)).toBe("UNSPECIFIED");
    expect(phaseScopeFromProto(0, "f", v)).toBe("CURRENT_PHASE");
    expect(v.list).toEqual([]);
  });

  it("phase scopes and physical-location strategies decode by table", () => {
    const v = new Violations();
    expect([1, 2, 3].map((n) => phaseScopeFromProto(n, "f", v))).toEqual([
      "CURRENT_PHASE",
      "COMPLETED_PHASES",
      "CURRENT_AND_COMPLETED_PHASES",
    ]);
    expect([1, 2].map((n) => strategyFromProto(n, "f", v))).toEqual([
      "ROW_BY_ROW",
      "ONE_PER_ROW_ROUND_ROBIN",
    ]);
  });

  it("task statuses and the executor encode by table (STEP_FUNCTIONS is the project's 100)", () => {
    expect(TASK_STATUSES.map(taskStatusToProto)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(executorTypeToProto("STEP_FUNCTIONS")).toBe(100);
  });

  it("a number the proto does not define is reported with its field, not mapped", () => {
    const v = new Violations();
    expect(componentTypeFromProto(odd(7), "a", v)).toBeUndefined();
    expect(gateScopeFromProto(odd(3), "b", v)).toBeUndefined();
    expect(runStatusFromProto(odd(8), "c", v)).toBeUndefined();
    expect(runReasonFromProto(odd(-3), "d", v)).toBeUndefined();
    expect(targetStatusFromProto(odd(9), "e", v)).toBeUndefined();
    expect(operationTypeFromProto(odd(3), "f", v)).toBeUndefined();
    expect(strategyFromProto(odd(3), "g", v)).toBeUndefined();
    expect(conflictStrategyFromProto(odd(3), "h", v)).toBeUndefined();
    expect(phaseScopeFromProto(odd(4), "i", v)).toBeUndefined();
    expect(v.list.map((x) => `${x.field}: ${x.rule}`)).toEqual([
      "a: unknown enum value 7",
      "b: unknown enum value 3",
      "c: unknown enum value 8",
      "d: unknown enum value -3",
      "e: unknown enum value 9",
      "f: unknown enum value 3",
      "g: unknown enum value 3",
      "h: unknown enum value 3",
      "i: unknown enum value 4",
    ]);
  });
});

describe("grpc convert: durations", () => {
  it.each([
    [{ seconds: 30, nanos: 0 }, 30_000],
    [{ seconds: 1, nanos: 500_000_000 }, 1500],
    [{ seconds: 3600, nanos: 0 }, 3_600_000],
    [{ seconds: 0, nanos: 1 }, 1],
    [{ seconds: 0, nanos: -1 }, -1],
    [{ seconds: -2, nanos: 0 }, -2000],
    [{ seconds: 0, nanos: 0 }, 0],
  ])("%o → %d ms (non-zero never rounds to 0)", (d, ms) => {
    const v = new Violations();
    expect(durationToMs(d, "f", v)).toBe(ms);
    expect(v.list).toEqual([]);
  });

  it.each([
    [
      { seconds: 1, nanos: -1 },
      "f: must be a valid duration: nanos out of range or of the wrong sign (got -1)",
    ],
    [
      { seconds: 0, nanos: 1_000_000_000 },
      "f: must be a valid duration: nanos out of range or of the wrong sign (got 1000000000)",
    ],
    [
      { seconds: 315_576_000_001, nanos: 0 },
      "f: must be a valid duration: seconds out of range (got 315576000001)",
    ],
  ])("%o is reported", (d, message) => {
    const v = new Violations();
    expect(durationToMs(d, "f", v)).toBeUndefined();
    expect(v.list.map((x) => `${x.field}: ${x.rule}`)).toEqual([message]);
  });

  it.each([
    [1500, { seconds: 1, nanos: 500_000_000 }],
    [-1500, { seconds: -1, nanos: -500_000_000 }],
    [0, { seconds: 0, nanos: 0 }],
    [300_000, { seconds: 300, nanos: 0 }],
  ])("%d ms → %o (signs agree)", (ms, d) => {
    expect(msToDuration(ms)).toEqual(d);
  });
});
