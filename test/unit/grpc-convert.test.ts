import { describe, expect, it } from "vitest";
import { runConfigToProto } from "../../src/adapters/grpc/convert/config-response.js";
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
import { firmwareTemplateFromProto } from "../../src/adapters/grpc/convert/firmware-request.js";
import { LIMITS } from "../../src/adapters/grpc/convert/limits.js";
import {
  listRunsQueryFromProto,
  listTargetsQueryFromProto,
  listTasksQueryFromProto,
  pageFromListRacks,
} from "../../src/adapters/grpc/convert/list-queries.js";
import { createRunInputFromProto, runIdFromProto } from "../../src/adapters/grpc/convert/run-request.js";
import {
  planToProto,
  runSummaryToProto,
  runToProto,
  targetToProto,
} from "../../src/adapters/grpc/convert/run-response.js";
import {
  inventoryRacksFromProto,
  inventoryRackToProto,
  taskIdFromProto,
  taskIdsFromProto,
  taskToProto,
} from "../../src/adapters/grpc/convert/tasks-inventory.js";
import { Violations } from "../../src/adapters/grpc/convert/violations.js";
import { durationToMs, msToDuration } from "../../src/adapters/grpc/convert/well-known.js";
import type { TargetView } from "../../src/app/api.js";
import { FlowError, ValidationError } from "../../src/domain/errors.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import {
  COMPONENT_TYPES,
  type ConflictStrategy,
  GATE_SCOPES,
  OPERATION_TYPES,
  RUN_REASONS,
  RUN_STATUSES,
  type Run,
  type RunConfig,
  TARGET_STATUSES,
} from "../../src/domain/model.js";
import { validateCreateRun } from "../../src/domain/run-config.js";
import { TASK_STATUSES, type Task } from "../../src/domain/task.js";
import * as pb from "../../src/gen/flow/v1/flow.js";
import { ImportInventoryRequest } from "../../src/gen/flowadmin/v1/admin.js";

const A = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
const B = "9b2c6a44-1d7e-4c1b-8c55-0d9f3a7e6b21";
const C = "c0ffee00-1234-4abc-8def-0123456789ab";
const NIL = "00000000-0000-0000-0000-000000000000";

/** The FlowError a converter throws; fails the test if it returns instead. */
function thrown(f: () => unknown): FlowError {
  try {
    f();
  } catch (err) {
    if (err instanceof FlowError) return err;
    throw err;
  }
  throw new Error("expected a FlowError, got a value");
}

/** `configuration` of a CreateOperationRunRequest, from a partial. */
function create(
  configuration: pb.DeepPartial<pb.OperationRunConfiguration>,
  name = "run",
): pb.CreateOperationRunRequest {
  return pb.CreateOperationRunRequest.fromPartial({ name, description: "", configuration });
}

/** A number the proto enum does not define, as a newer client (or garbage) would send it. */
const odd = (n: number): never => n as never;

/** Every defined number of a ts-proto enum (UNRECOGNIZED = -1 excluded). */
function numbers(e: Record<string, string | number>): number[] {
  return Object.values(e).filter((v): v is number => typeof v === "number" && v >= 0);
}

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

describe("grpc convert: CreateOperationRunRequest → CreateRunInput", () => {
  it("a request with no configuration keeps name and description as sent and nothing else", () => {
    expect(
      createRunInputFromProto(pb.CreateOperationRunRequest.fromPartial({ name: "  n ", description: "d" })),
    ).toEqual({
      name: "  n ",
      description: "d",
    });
  });

  it("empty sub-messages become absent, unset oneofs become { kind: 'unset' }", () => {
    const input = createRunInputFromProto(
      create({
        selector: {},
        options: {
          safetyPolicy: { gates: [{}] },
          conflictPolicy: {},
          orderingPolicy: {},
          phasePolicy: {},
        },
        operation: { targetScope: { defaultScopeComponentFilter: {} } },
      }),
    );
    expect(input.configuration).toStrictEqual({
      selector: { kind: "unset" },
      options: {
        maxConcurrentTargets: 0,
        safetyPolicy: { gates: [{ kind: "unset" }] },
        conflictPolicy: {},
        orderingPolicy: { kind: "unset" },
        phasePolicy: {},
      },
      operation: {
        targetScope: { excludeOperationRunIds: [], defaultScopeComponentFilter: { kind: "unset" } },
      },
    });
  });

  it("every field of a full request arrives, durations in ms, UNKNOWN enums kept for the validator", () => {
    const input = createRunInputFromProto(
      create({
        selector: { selector: { $case: "percentage", value: { percentage: 25, seed: "s" } } },
        options: {
          maxConcurrentTargets: 5,
          safetyPolicy: {
            gates: [
              { gate: { $case: "failureRate", value: { scope: 0, failureThresholdPercent: 20 } } },
              { gate: { $case: "failureCount", value: { scope: 2, failureThresholdCount: 3 } } },
            ],
          },
          conflictPolicy: {
            strategy: {
              $case: "retry",
              value: { retryTimeout: { seconds: 120 }, maxRetryDelay: { seconds: 10, nanos: 250_000_000 } },
            },
          },
          orderingPolicy: { ordering: { $case: "random", value: { seed: "o" } } },
          phasePolicy: {
            plan: { $case: "count", value: { phases: [{ count: 2 }, { count: 3 }] } },
            advancePolicy: { autoAdvance: true },
          },
        },
        operation: {
          operation: {
            $case: "upgradeFirmware",
            value: {
              targetSpec: {
                targets: {
                  $case: "racks",
                  value: {
                    targets: [
                      { identifier: { $case: "id", value: { id: A.toUpperCase() } }, componentTypes: [1, 0] },
                      { identifier: { $case: "name", value: "r2" } },
                      { identifier: { $case: "externalId", value: "x3" } },
                      {},
                    ],
                  },
                },
              },
              targetVersion: "2.1",
              startTime: new Date(5000),
              endTime: new Date(9000),
              description: "fw",
              queueOptions: { conflictStrategy: 1, queueTimeoutSeconds: 60 },
              ruleId: { id: B },
              subTargets: ["bios"],
              overrideReadinessCheck: true,
              authenticationData: { value: { $case: "shared", value: "hunter2" } },
              overrideVersionCheck: true,
            },
          },
          targetScope: { excludeOperationRunIds: [{ id: C }, { id: "not-a-uuid" }] },
        },
      }),
    );
    expect(input.configuration).toStrictEqual({
      selector: { kind: "percentage", percentage: 25, seed: "s" },
      options: {
        maxConcurrentTargets: 5,
        safetyPolicy: {
          gates: [
            { kind: "failureRate", scope: "UNKNOWN", thresholdPercent: 20 },
            { kind: "failureCount", scope: "CUMULATIVE_RUN", thresholdCount: 3 },
          ],
        },
        conflictPolicy: { retry: { retryTimeoutMs: 120_000, maxRetryDelayMs: 10_250 } },
        orderingPolicy: { kind: "random", seed: "o" },
        phasePolicy: { plan: { kind: "count", counts: [2, 3] }, advancePolicy: { autoAdvance: true } },
      },
      operation: {
        upgradeFirmware: {
          targetSpec: {
            kind: "racks",
            racks: [
              { ref: { by: "id", id: A.toUpperCase() }, componentTypes: ["COMPUTE", "UNKNOWN"] },
              { ref: { by: "name", name: "r2" }, componentTypes: [] },
              { ref: { by: "externalId", externalId: "x3" }, componentTypes: [] },
              { ref: { by: "unset" }, componentTypes: [] },
            ],
          },
          targetVersion: "2.1",
          startTime: 5000,
          endTime: 9000,
          description: "fw",
          queueOptions: { conflictStrategy: "QUEUE", queueTimeoutSeconds: 60 },
          ruleId: B,
          subTargets: ["bios"],
          overrideReadinessCheck: true,
          authentication: { kind: "shared", secret: "hunter2" },
          overrideVersionCheck: true,
        },
        targetScope: { excludeOperationRunIds: [C, "not-a-uuid"] },
      },
    });
  });

  it("phase plans, orderings, target specs, filters and credentials: every oneof branch", () => {
    const plan = (p: pb.DeepPartial<pb.OperationRunPhasePolicy>) =>
      createRunInputFromProto(create({ options: { phasePolicy: p } })).configuration?.options?.phasePolicy;
    expect(plan({ plan: { $case: "equal", value: { phaseCount: 3 } } })).toEqual({
      plan: { kind: "equal", phaseCount: 3 },
    });
    expect(
      plan({ plan: { $case: "percentage", value: { phases: [{ percentage: 40 }, { percentage: 60 }] } } }),
    ).toEqual({
      plan: { kind: "percentage", percentages: [40, 60] },
    });

    const ordering = createRunInputFromProto(
      create({
        options: { orderingPolicy: { ordering: { $case: "physicalLocation", value: { strategy: 2 } } } },
      }),
    ).configuration?.options?.orderingPolicy;
    expect(ordering).toEqual({ kind: "physicalLocation", strategy: "ONE_PER_ROW_ROUND_ROBIN" });

    const firmware = (fw: pb.DeepPartial<pb.UpgradeFirmwareRequest>) =>
      createRunInputFromProto(create({ operation: { operation: { $case: "upgradeFirmware", value: fw } } }))
        .configuration?.operation?.upgradeFirmware;
    expect(firmware({ targetSpec: {} })?.targetSpec).toEqual({ kind: "unset" });
    expect(
      firmware({
        targetSpec: {
          targets: {
            $case: "components",
            value: {
              targets: [
                { identifier: { $case: "id", value: { id: A } } },
                { identifier: { $case: "external", value: { type: 3, id: "ps-1" } } },
              ],
            },
          },
        },
      })?.targetSpec,
    ).toEqual({
      kind: "components",
      components: [
        { by: "id", id: A },
        { by: "external", type: "POWERSHELF", externalId: "ps-1" },
      ],
    });
    expect(
      firmware({
        targetSpec: {
          targets: {
            $case: "nvlDomains",
            value: {
              targets: [
                { identifier: { $case: "id", value: { id: B } }, componentTypes: [2] },
                { identifier: { $case: "name", value: "nvl-7" } },
              ],
            },
          },
        },
      })?.targetSpec,
    ).toEqual({
      kind: "nvlDomains",
      domains: [
        { ref: { by: "id", id: B }, componentTypes: ["NVSWITCH"] },
        { ref: { by: "name", name: "nvl-7" }, componentTypes: [] },
      ],
    });
    expect(
      firmware({
        authenticationData: { value: { $case: "perComponent", value: { compute: "c", powershelf: "" } } },
      })?.authentication,
    ).toStrictEqual({ kind: "perComponent", compute: "c", powershelf: "" });
    expect(firmware({ authenticationData: {} })).not.toHaveProperty("authentication");
    expect(firmware({})).toStrictEqual({
      description: "",
      subTargets: [],
      overrideReadinessCheck: false,
      overrideVersionCheck: false,
    });

    const filter = (f: pb.DeepPartial<pb.ComponentFilter>) =>
      createRunInputFromProto(create({ operation: { targetScope: { defaultScopeComponentFilter: f } } }))
        .configuration?.operation?.targetScope?.defaultScopeComponentFilter;
    expect(filter({ filter: { $case: "types", value: { types: [6, 0] } } })).toEqual({
      kind: "types",
      types: ["CDU", "UNKNOWN"],
    });
    expect(
      filter({
        filter: {
          $case: "components",
          value: { targets: [{ identifier: { $case: "id", value: { id: C } } }] },
        },
      }),
    ).toEqual({ kind: "components", components: [{ by: "id", id: C }] });
  });

  it("reports what only the wire can get wrong, every problem at once, with proto field paths", () => {
    const err = thrown(() =>
      createRunInputFromProto(
        create(
          {
            options: {
              safetyPolicy: {
                gates: [
                  { gate: { $case: "failureRate", value: { scope: odd(42), failureThresholdPercent: 5 } } },
                  { gate: { $case: "failureCount", value: { scope: odd(7), failureThresholdCount: 1 } } },
                ],
              },
              conflictPolicy: {
                strategy: { $case: "retry", value: { initialRetryDelay: { seconds: 5, nanos: -1 } } },
              },
              orderingPolicy: { ordering: { $case: "physicalLocation", value: { strategy: odd(9) } } },
            },
            operation: {
              operation: {
                $case: "upgradeFirmware",
                value: {
                  targetSpec: {
                    targets: {
                      $case: "components",
                      value: {
                        targets: [{}, { identifier: { $case: "external", value: { type: 0, id: "e" } } }],
                      },
                    },
                  },
                  queueOptions: { conflictStrategy: odd(5) },
                  startTime: new Date(Number.NaN),
                },
              },
            },
          },
          "x".repeat(257),
        ),
      ),
    );
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.code).toBe("INVALID_ARGUMENT");
    expect(err.message.split("; ")).toEqual([
      "name: must be at most 256 characters (got 257)",
      "configuration.options.safety_policy.gates[0].failure_rate.scope: unknown enum value 42",
      "configuration.options.safety_policy.gates[1].failure_count.scope: unknown enum value 7",
      "configuration.options.conflict_policy.retry.initial_retry_delay: must be a valid duration: nanos out of range or of the wrong sign (got -1)",
      "configuration.options.ordering_policy.physical_location.strategy: unknown enum value 9",
      "configuration.operation.upgrade_firmware.queue_options.conflict_strategy: unknown enum value 5",
      "configuration.operation.upgrade_firmware.target_spec.components.targets[0]: must set id or external",
      "configuration.operation.upgrade_firmware.target_spec.components.targets[1].external.type: must be a known component type (got COMPONENT_TYPE_UNKNOWN)",
      "configuration.operation.upgrade_firmware.start_time: must be a valid timestamp",
    ]);
  });

  it("absurd sizes are rejected at the limits, and the limits themselves pass", () => {
    const gates = (n: number) =>
      Array.from({ length: n }, () => ({
        gate: { $case: "failureCount" as const, value: { failureThresholdCount: 1 } },
      }));
    const ids = (n: number) => Array.from({ length: n }, () => ({ id: A }));
    const atLimit = create(
      {
        options: {
          safetyPolicy: { gates: gates(LIMITS.gates) },
          phasePolicy: { plan: { $case: "equal", value: { phaseCount: LIMITS.phases } } },
        },
        operation: { targetScope: { excludeOperationRunIds: ids(LIMITS.excludeRunIds) } },
      },
      "n".repeat(LIMITS.name),
    );
    expect(() => createRunInputFromProto(atLimit)).not.toThrow();

    const over = create({
      options: {
        safetyPolicy: { gates: gates(LIMITS.gates + 1) },
        phasePolicy: { plan: { $case: "equal", value: { phaseCount: LIMITS.phases + 1 } } },
      },
      operation: { targetScope: { excludeOperationRunIds: ids(LIMITS.excludeRunIds + 1) } },
    });
    over.description = "d".repeat(LIMITS.description + 1);
    expect(thrown(() => createRunInputFromProto(over)).message.split("; ")).toEqual([
      "description: must be at most 4096 characters (got 4097)",
      "configuration.options.safety_policy.gates: must have at most 32 entries (got 33)",
      "configuration.options.phase_policy.equal.phase_count: must be at most 100 (got 101)",
      "configuration.operation.target_scope.exclude_operation_run_ids: must have at most 100 entries (got 101)",
    ]);

    const pct = create({
      options: {
        phasePolicy: {
          plan: {
            $case: "percentage",
            value: { phases: Array.from({ length: 101 }, () => ({ percentage: 1 })) },
          },
        },
      },
    });
    expect(thrown(() => createRunInputFromProto(pct)).message).toBe(
      "configuration.options.phase_policy.percentage.phases: must have at most 100 entries (got 101)",
    );
  });
});

// ---------------------------------------------------------------------------------------------

const CONFIG: RunConfig = {
  selector: { kind: "percentage", percentage: 50, seed: "sel-seed" },
  maxConcurrentTargets: 4,
  safetyGates: [
    { kind: "failureRate", scope: "CUMULATIVE_RUN", thresholdPercent: 10 },
    { kind: "failureCount", scope: "CURRENT_PHASE", thresholdCount: 3 },
    { kind: "observedFailureRate", scope: "CUMULATIVE_RUN", thresholdPercent: 50, minFinished: 7 },
  ],
  conflictRetry: { retryTimeoutMs: 3_600_000, initialRetryDelayMs: 1500, maxRetryDelayMs: 300_000 },
  ordering: { kind: "random", seed: "ord-seed" },
  phasePlan: { kind: "percentage", percentages: [10, 90] },
  autoAdvance: true,
  operation: {
    kind: "upgradeFirmware",
    firmware: {
      targetSpec: {
        kind: "racks",
        racks: [{ ref: { by: "id", id: A }, componentTypes: ["COMPUTE", "NVSWITCH"] }],
      },
      targetVersion: "2.0",
      startTime: 1_000,
      description: "fw",
      queueOptions: { conflictStrategy: "REJECT", queueTimeoutSeconds: 60 },
      ruleId: B,
      subTargets: ["bmc"],
      overrideReadinessCheck: false,
      authentication: { kind: "shared", secret: "hunter2" },
      overrideVersionCheck: true,
    },
  },
  targetScope: { excludeOperationRunIds: [C] },
  maintenanceWindows: [{ cron: "0 2 * * MON-FRI", durationMs: 7_200_500 }],
  failureDomainSpread: { kind: "ATTRIBUTE", attribute: "datacenter", maxInFlight: 2 },
};

const RUN: Run = {
  id: A,
  name: "canary",
  description: "first wave",
  config: CONFIG,
  status: "PAUSED",
  reason: "PHASE_GATE",
  statusMessage: "waiting for phase advance",
  phaseSizes: [1, 9],
  currentPhaseIndex: 0,
  counters: [
    { completed: 1, failed: 0, terminated: 0, skipped: 0 },
    { completed: 0, failed: 0, terminated: 0, skipped: 0 },
  ],
  inFlight: 0,
  createdAt: 1_700_000_000_000,
  updatedAt: 1_700_000_100_000,
  startedAt: 1_700_000_000_500,
};

describe("grpc convert: domain → responses", () => {
  it("the effective configuration encodes with durations and without credentials", () => {
    const proto = runConfigToProto(CONFIG);
    expect(proto.options?.conflictPolicy?.strategy).toEqual({
      $case: "retry",
      value: {
        retryTimeout: { seconds: 3600, nanos: 0 },
        initialRetryDelay: { seconds: 1, nanos: 500_000_000 },
        maxRetryDelay: { seconds: 300, nanos: 0 },
      },
    });
    const fw = proto.operation?.operation?.value;
    expect(fw?.authenticationData).toBeUndefined();
    expect(fw?.queueOptions).toEqual({
      conflictStrategy: pb.ConflictStrategy.CONFLICT_STRATEGY_REJECT,
      queueTimeoutSeconds: 60,
    });
    expect(fw?.startTime).toEqual(new Date(1_000));
    expect(fw?.ruleId).toEqual({ id: B });
    expect(proto.options?.maintenanceWindows).toEqual([
      { cron: "0 2 * * MON-FRI", duration: { seconds: 7200, nanos: 500_000_000 } },
    ]);
    expect(
      runConfigToProto({ ...CONFIG, maintenanceWindows: undefined }).options?.maintenanceWindows,
    ).toEqual([]);
    const bytes = Buffer.from(pb.OperationRun.encode(runToProto(RUN)).finish());
    expect(bytes.includes("hunter2")).toBe(false);
    expect(bytes.includes("sel-seed")).toBe(true);
  });

  it("effective configuration → request → validator gives the same configuration back (credentials aside)", () => {
    const request = pb.CreateOperationRunRequest.fromPartial({
      name: "n",
      configuration: runConfigToProto(CONFIG),
    });
    const result = validateCreateRun(createRunInputFromProto(request), () => "unused", 0);
    const { authentication: _, ...firmware } = CONFIG.operation.firmware;
    expect(result).toEqual({
      ok: true,
      name: "n",
      description: "",
      config: { ...CONFIG, operation: { kind: "upgradeFirmware", firmware } },
    });
  });

  it("a failure-domain spread decodes as sent; UNKNOWN is the validator's, an unknown value names its path", () => {
    const spread = (failureDomainSpread: pb.OperationRunFailureDomainSpread) =>
      createRunInputFromProto(
        pb.CreateOperationRunRequest.fromPartial({
          name: "n",
          configuration: { options: { failureDomainSpread } },
        }),
      ).configuration?.options?.failureDomainSpread;
    const D = pb.OperationRunFailureDomainSpread_Domain;
    expect(spread({ domain: D.DOMAIN_NVL_DOMAIN, attribute: "", maxInFlight: 2 })).toEqual({
      kind: "NVL_DOMAIN",
      attribute: "",
      maxInFlight: 2,
    });
    expect(spread({ domain: D.DOMAIN_UNKNOWN, attribute: "x", maxInFlight: 0 })).toEqual({
      kind: "UNKNOWN",
      attribute: "x",
      maxInFlight: 0,
    });
    expect(thrown(() => spread({ domain: odd(9), attribute: "", maxInFlight: 1 })).message).toBe(
      "configuration.options.failure_domain_spread.domain: unknown enum value 9",
    );
    expect(
      thrown(() => spread({ domain: D.DOMAIN_ATTRIBUTE, attribute: "a".repeat(257), maxInFlight: 1 }))
        .message,
    ).toBe("configuration.options.failure_domain_spread.attribute: must be at most 256 characters (got 257)");
  });

  it("an observed-rate gate crosses the wire: min_finished absent stays absent, an explicit 0 stays 0, a bad scope names its path", () => {
    const gates = (value: pb.OperationRunObservedFailureRateGate) =>
      createRunInputFromProto(
        pb.CreateOperationRunRequest.decode(
          pb.CreateOperationRunRequest.encode(
            pb.CreateOperationRunRequest.fromPartial({
              name: "n",
              configuration: {
                options: { safetyPolicy: { gates: [{ gate: { $case: "observedFailureRate", value } }] } },
              },
            }),
          ).finish(),
        ),
      ).configuration?.options?.safetyPolicy?.gates;
    const cumulative = pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CUMULATIVE_RUN;
    expect(gates({ scope: cumulative, failureThresholdPercent: 50 })).toEqual([
      { kind: "observedFailureRate", scope: "CUMULATIVE_RUN", thresholdPercent: 50, minFinished: undefined },
    ]);
    expect(gates({ scope: 0, failureThresholdPercent: 50, minFinished: 0 })).toEqual([
      { kind: "observedFailureRate", scope: "UNKNOWN", thresholdPercent: 50, minFinished: 0 },
    ]);
    expect(thrown(() => gates({ scope: odd(42), failureThresholdPercent: 50 })).message).toBe(
      "configuration.options.safety_policy.gates[0].observed_failure_rate.scope: unknown enum value 42",
    );
  });

  it("maintenance windows decode as sent (a missing duration too) for the validator; bad ones name their path", () => {
    const options = (maintenanceWindows: pb.MaintenanceWindow[]) =>
      createRunInputFromProto(
        pb.CreateOperationRunRequest.fromPartial({
          name: "n",
          configuration: { options: { maintenanceWindows } },
        }),
      ).configuration?.options?.maintenanceWindows;
    expect(options([])).toBeUndefined();
    expect(
      options([
        { cron: "0 2 * * *", duration: { seconds: 60, nanos: 0 } },
        { cron: "x", duration: undefined },
      ]),
    ).toEqual([{ cron: "0 2 * * *", durationMs: 60_000 }, { cron: "x" }]);
    expect(thrown(() => options([{ cron: "0 2 * * *", duration: { seconds: 1, nanos: -1 } }])).message).toBe(
      "configuration.options.maintenance_windows[0].duration: must be a valid duration: nanos out of range or of the wrong sign (got -1)",
    );
    expect(thrown(() => options([{ cron: "*".repeat(257), duration: undefined }])).message).toMatch(
      /^configuration\.options\.maintenance_windows\[0\]\.cron: must be at most 256 characters/,
    );
  });

  it("plan phase kinds, per-component filters and every target spec kind encode", () => {
    const config: RunConfig = {
      ...CONFIG,
      phasePlan: { kind: "count", counts: [2] },
      operation: {
        kind: "upgradeFirmware",
        firmware: {
          ...CONFIG.operation.firmware,
          targetSpec: {
            kind: "components",
            components: [
              { by: "id", id: A },
              { by: "external", type: "UMS", externalId: "u1" },
            ],
          },
        },
      },
      targetScope: {
        excludeOperationRunIds: [],
        defaultScopeComponentFilter: { kind: "components", componentIds: [B] },
      },
    };
    const proto = runConfigToProto(config);
    expect(proto.options?.phasePolicy?.plan).toEqual({ $case: "count", value: { phases: [{ count: 2 }] } });
    expect(proto.operation?.targetScope?.defaultScopeComponentFilter).toEqual({
      filter: {
        $case: "components",
        value: { targets: [{ identifier: { $case: "id", value: { id: B } } }] },
      },
    });
    expect(proto.operation?.operation?.value.targetSpec).toEqual({
      targets: {
        $case: "components",
        value: {
          targets: [
            { identifier: { $case: "id", value: { id: A } } },
            {
              identifier: {
                $case: "external",
                value: { type: pb.ComponentType.COMPONENT_TYPE_UMS, id: "u1" },
              },
            },
          ],
        },
      },
    });
    const nvl = runConfigToProto({
      ...config,
      phasePlan: { kind: "equal", phaseCount: 2 },
      targetScope: {
        excludeOperationRunIds: [],
        defaultScopeComponentFilter: { kind: "types", types: ["CDU"] },
      },
      operation: {
        kind: "upgradeFirmware",
        firmware: {
          ...config.operation.firmware,
          targetSpec: {
            kind: "nvlDomains",
            domains: [
              { ref: { by: "name", name: "d1" }, componentTypes: ["TORSWITCH"] },
              { ref: { by: "id", id: C }, componentTypes: [] },
            ],
          },
        },
      },
    });
    expect(nvl.options?.phasePolicy?.plan).toEqual({ $case: "equal", value: { phaseCount: 2 } });
    expect(nvl.operation?.targetScope?.defaultScopeComponentFilter).toEqual({
      filter: { $case: "types", value: { types: [pb.ComponentType.COMPONENT_TYPE_CDU] } },
    });
    expect(nvl.operation?.operation?.value.targetSpec?.targets).toEqual({
      $case: "nvlDomains",
      value: {
        targets: [
          {
            identifier: { $case: "name", value: "d1" },
            componentTypes: [pb.ComponentType.COMPONENT_TYPE_TORSWITCH],
          },
          { identifier: { $case: "id", value: { id: C } }, componentTypes: [] },
        ],
      },
    });
  });

  it("a run summary carries state, kind, phases and optional timestamps", () => {
    expect(runSummaryToProto(RUN)).toEqual({
      id: { id: A },
      name: "canary",
      description: "first wave",
      operationKind: { type: pb.OperationType.OPERATION_TYPE_FIRMWARE_CONTROL, code: "upgrade" },
      state: {
        status: pb.OperationRunStatus.OPERATION_RUN_STATUS_PAUSED,
        reason: pb.OperationRunStatusReason.OPERATION_RUN_STATUS_REASON_PHASE_GATE,
      },
      statusMessage: "waiting for phase advance",
      totalPhases: 2,
      createdAt: new Date(1_700_000_000_000),
      updatedAt: new Date(1_700_000_100_000),
      startedAt: new Date(1_700_000_000_500),
      finishedAt: undefined,
      currentPhaseIndex: 0,
      phaseSizes: RUN.phaseSizes,
      retryOf: undefined,
      rollbackOf: undefined,
      retriedBy: [],
      rolledBackBy: [],
    });
  });

  it("a retry or rollback run names what it follows; a run followed names its retries and rollbacks", () => {
    const retry = runSummaryToProto({
      ...RUN,
      origin: { kind: "retry", runId: A, includeTerminated: true, includeSkipped: false },
    });
    expect(retry.retryOf).toEqual({
      operationRunId: { id: A },
      includeTerminated: true,
      includeSkipped: false,
    });
    expect(retry.rollbackOf).toBeUndefined();
    const rollback = runSummaryToProto({ ...RUN, origin: { kind: "rollback", runId: B } });
    expect(rollback.rollbackOf).toEqual({ operationRunId: { id: B } });
    const followed = runSummaryToProto({
      ...RUN,
      followUps: [
        { kind: "retry", runId: A },
        { kind: "rollback", runId: B },
        { kind: "retry", runId: C },
      ],
    });
    expect(followed.retriedBy).toEqual([{ id: A }, { id: C }]);
    expect(followed.rolledBackBy).toEqual([{ id: B }]);
  });

  it("stats are included only when given", () => {
    expect(runToProto(RUN).stats).toBeUndefined();
    const stats = runToProto(RUN, {
      current: {
        phaseIndex: 0,
        selectedTargets: 1,
        outcomes: { completed: 1, failed: 0, terminated: 0, skipped: 0 },
      },
      cumulative: {
        phaseIndex: 0,
        selectedTargets: 1,
        outcomes: { completed: 1, failed: 0, terminated: 0, skipped: 0 },
      },
    }).stats;
    expect(stats).toEqual({
      currentPhaseStats: {
        phaseIndex: 0,
        selectedTargets: 1,
        outcomeCounts: { completed: 1, failed: 0, terminated: 0, skipped: 0 },
      },
      cumulativePhaseStats: {
        phaseIndex: 0,
        selectedTargets: 1,
        outcomeCounts: { completed: 1, failed: 0, terminated: 0, skipped: 0 },
      },
    });
  });

  it("a target encodes with its task id, components by type and rack external id", () => {
    const target: TargetView = {
      id: C,
      runId: A,
      rackId: B,
      sequenceIndex: 3,
      phaseIndex: 1,
      status: "SUBMITTED",
      message: "submitted",
      taskId: A,
      componentsByType: [{ type: "COMPUTE", componentIds: [A, B] }],
      createdAt: 1000,
      updatedAt: 2000,
      conflictAttempts: 0,
      rackExternalId: "rack-ext-1",
      versions: [{ version: "2.1", componentIds: [A, B] }],
      priorVersions: [
        { componentId: A, type: "COMPUTE", version: "1.9", targetVersion: "2.1", subTargets: ["bios"] },
        { componentId: B, type: "COMPUTE", version: "2.0", targetVersion: "2.1" },
      ],
      failureDomain: "nvl-07",
    };
    expect(targetToProto(target)).toEqual({
      id: { id: C },
      operationRunId: { id: A },
      rackId: { id: B },
      sequenceIndex: 3,
      phaseIndex: 1,
      taskId: { id: A },
      status: pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_SUBMITTED,
      message: "submitted",
      componentsByType: {
        groups: [{ type: pb.ComponentType.COMPONENT_TYPE_COMPUTE, componentIds: [{ id: A }, { id: B }] }],
      },
      createdAt: new Date(1000),
      updatedAt: new Date(2000),
      rackExternalId: "rack-ext-1",
      targetVersions: [{ version: "2.1", componentIds: [{ id: A }, { id: B }] }],
      priorVersions: [
        {
          componentId: { id: A },
          type: pb.ComponentType.COMPONENT_TYPE_COMPUTE,
          priorVersion: "1.9",
          targetVersion: "2.1",
          subTargets: ["bios"],
        },
        {
          componentId: { id: B },
          type: pb.ComponentType.COMPONENT_TYPE_COMPUTE,
          priorVersion: "2.0",
          targetVersion: "2.1",
          subTargets: [],
        },
      ],
      skippedComponents: [],
      failureDomain: "nvl-07",
    });
    expect(targetToProto({ ...target, failureDomain: undefined }).failureDomain).toBe("");
    expect(targetToProto({ ...target, priorVersions: undefined }).priorVersions).toEqual([]);
    expect(
      targetToProto({
        ...target,
        skippedComponents: [{ componentId: A, type: "CDU", reason: "never flashed" }],
      }).skippedComponents,
    ).toEqual([
      { componentId: { id: A }, type: pb.ComponentType.COMPONENT_TYPE_CDU, reason: "never flashed" },
    ]);
    expect(targetToProto({ ...target, taskId: undefined }).taskId).toBeUndefined();
    expect(targetToProto({ ...target, versions: undefined }).targetVersions).toEqual([]);
  });

  it("a plan encodes its targets as PENDING with no ids, task or timestamps", () => {
    const response = planToProto({
      config: CONFIG,
      plan: {
        candidateCount: 12,
        phaseSizes: [1, 1],
        targets: [
          {
            rackId: A,
            sequenceIndex: 0,
            phaseIndex: 0,
            componentsByType: [{ type: "CDU", componentIds: [B] }],
            failureDomain: "dc1/A",
          },
          { rackId: C, sequenceIndex: 1, phaseIndex: 1, componentsByType: [] },
        ],
      },
      rackExternalIds: new Map([[A, "ext-a"]]),
      nextWindowOpenings: [Date.parse("2026-11-21T02:00:00Z")],
      versions: new Map([[A, [{ version: "3.0", componentIds: [B] }]]]),
    });
    expect(response.nextWindowOpenings).toEqual([new Date("2026-11-21T02:00:00Z")]);
    expect(response.candidateCount).toBe(12);
    expect(response.totalPhases).toBe(2);
    expect(response.targets).toEqual([
      {
        id: undefined,
        operationRunId: undefined,
        rackId: { id: A },
        sequenceIndex: 0,
        phaseIndex: 0,
        taskId: undefined,
        status: pb.OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_PENDING,
        message: "",
        componentsByType: {
          groups: [{ type: pb.ComponentType.COMPONENT_TYPE_CDU, componentIds: [{ id: B }] }],
        },
        createdAt: undefined,
        updatedAt: undefined,
        rackExternalId: "ext-a",
        targetVersions: [{ version: "3.0", componentIds: [{ id: B }] }],
        priorVersions: [],
        skippedComponents: [],
        failureDomain: "dc1/A",
      },
      expect.objectContaining({
        rackId: { id: C },
        rackExternalId: "",
        targetVersions: [],
        failureDomain: "",
      }),
    ]);
  });

  it("a task encodes with the Step Functions executor and its optional timestamps", () => {
    const task: Task = {
      id: A,
      operation: "UpgradeFirmware",
      rackId: B,
      rackExternalId: "EXT-7",
      componentIds: [C],
      description: "fw",
      executorType: "STEP_FUNCTIONS",
      executionId: "arn:aws:states:us-east-1:000000000000:execution:child:x",
      status: "RUNNING",
      message: "flashing",
      createdAt: 10,
      updatedAt: 20,
      startedAt: 15,
      report: "{}",
      idempotencyKey: "operation-run-target:t",
    };
    expect(taskToProto(task)).toEqual({
      id: { id: A },
      operation: "UpgradeFirmware",
      rackId: { id: B },
      rackExternalId: "EXT-7",
      componentUuids: [{ id: C }],
      description: "fw",
      executorType: pb.TaskExecutorType.TASK_EXECUTOR_TYPE_STEP_FUNCTIONS,
      executionId: "arn:aws:states:us-east-1:000000000000:execution:child:x",
      status: pb.TaskStatus.TASK_STATUS_RUNNING,
      message: "flashing",
      queueExpiresAt: undefined,
      createdAt: new Date(10),
      finishedAt: undefined,
      appliedRuleId: undefined,
      updatedAt: new Date(20),
      startedAt: new Date(15),
      report: "{}",
    });
    // A task made before external ids were frozen, on a rack the inventory no longer names: empty.
    expect(taskToProto({ ...task, rackExternalId: undefined }).rackExternalId).toBe("");
  });
});

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

describe("grpc convert: UpgradeFirmware and inventory", () => {
  it("a plain UpgradeFirmware request is decoded; the task service validates it (run-config tests)", () => {
    expect(firmwareTemplateFromProto(pb.UpgradeFirmwareRequest.fromPartial({})).targetSpec).toBeUndefined();
    const template = firmwareTemplateFromProto(
      pb.UpgradeFirmwareRequest.fromPartial({
        targetSpec: {
          targets: {
            $case: "racks",
            value: { targets: [{ identifier: { $case: "id", value: { id: A.toUpperCase() } } }] },
          },
        },
        targetVersion: "3.0",
      }),
    );
    // Ids are passed as sent: validateFirmwareTask lowercases them.
    expect(template).toEqual({
      targetSpec: { kind: "racks", racks: [{ ref: { by: "id", id: A.toUpperCase() }, componentTypes: [] }] },
      targetVersion: "3.0",
      description: "",
      subTargets: [],
      overrideReadinessCheck: false,
      overrideVersionCheck: false,
    });
    expect(
      firmwareTemplateFromProto(
        pb.UpgradeFirmwareRequest.fromPartial({
          targetSpec: { targets: { $case: "racks", value: { targets: [{}] } } },
        }),
      ).targetSpec,
    ).toEqual({ kind: "racks", racks: [{ ref: { by: "unset" }, componentTypes: [] }] });
    // Decoding errors are still the converter's: an enum number the proto does not define.
    expect(
      thrown(() =>
        firmwareTemplateFromProto(
          pb.UpgradeFirmwareRequest.fromPartial({ queueOptions: { conflictStrategy: 42 as never } }),
        ),
      ).message,
    ).toBe("queue_options.conflict_strategy: unknown enum value 42");
  });

  const RACK: InventoryRack = {
    id: A,
    name: "rack-1",
    externalId: "ext-1",
    nvlDomain: { id: B, name: "nvl-1" },
    location: { datacenter: "dc1", row: "R7", position: 4 },
    components: [
      {
        id: C,
        type: "COMPUTE",
        externalId: "node-1",
        firmwareVersion: "1.0",
        model: "GB200",
        vendor: "Acme",
      },
      { id: B, type: "POWERSHELF", readiness: { state: "MAINTENANCE", reason: "PSU swap" } },
    ],
  };

  it("inventory racks survive domain → proto → domain", () => {
    const request = ImportInventoryRequest.decode(
      ImportInventoryRequest.encode({
        racks: [inventoryRackToProto(RACK)],
        baselines: [],
        allowComponentTypeChange: false,
      }).finish(),
    );
    expect(inventoryRacksFromProto(request)).toStrictEqual([RACK]);
    const bare: InventoryRack = { id: B, name: "bare", components: [] };
    expect(
      inventoryRacksFromProto({
        racks: [inventoryRackToProto(bare)],
        baselines: [],
        allowComponentTypeChange: false,
      }),
    ).toStrictEqual([bare]);
  });

  it("inventory rows need ids, names and known component types", () => {
    const err = thrown(() =>
      inventoryRacksFromProto({
        racks: [
          {
            id: undefined,
            name: "",
            externalId: "",
            nvlDomainId: { id: "d" },
            nvlDomainName: "",
            location: undefined,
            components: [
              {
                id: { id: A },
                type: 0,
                externalId: "",
                firmwareVersion: "",
                model: "",
                vendor: "",
                readiness: undefined,
              },
              {
                id: { id: "c" },
                type: odd(12),
                externalId: "",
                firmwareVersion: "",
                model: "",
                vendor: "",
                readiness: { state: 2, reason: "" },
              },
            ],
          },
        ],
        baselines: [],
        allowComponentTypeChange: false,
      }),
    );
    expect(err.message.split("; ")).toEqual([
      "racks[0].name: must not be empty",
      'racks[0].id: must be a UUID (got "")',
      "racks[0].components[0].type: must be a known component type (got COMPONENT_TYPE_UNKNOWN)",
      "racks[0].components[1].type: unknown enum value 12",
      'racks[0].components[1].id: must be a UUID (got "c")',
      "racks[0].components[1].readiness.reason: a NOT_READY component needs a reason",
      'racks[0].nvl_domain_id: must be a UUID (got "d")',
    ]);
  });

  it("every label a request carries is capped: inventory strings, name patterns, sub-target names", () => {
    const long = "x".repeat(LIMITS.label + 1);
    const err = thrown(() =>
      inventoryRacksFromProto(
        ImportInventoryRequest.fromPartial({
          racks: [
            {
              id: { id: A },
              name: long,
              externalId: long,
              nvlDomainName: long,
              location: { datacenter: long, row: long, position: 1 },
              components: [
                {
                  id: { id: A },
                  type: 1,
                  externalId: long,
                  firmwareVersion: long,
                  model: long,
                  vendor: long,
                },
              ],
            },
          ],
        }),
      ),
    );
    const over = `must be at most ${LIMITS.label} characters (got ${long.length})`;
    expect(err.message.split("; ")).toEqual(
      [
        "name",
        "external_id",
        "nvl_domain_name",
        "location.datacenter",
        "location.row",
        "components[0].external_id",
        "components[0].firmware_version",
        "components[0].model",
        "components[0].vendor",
      ].map((f) => `racks[0].${f}: ${over}`),
    );
    // At the cap: accepted.
    const atCap = "x".repeat(LIMITS.label);
    expect(
      inventoryRacksFromProto(
        ImportInventoryRequest.fromPartial({ racks: [{ id: { id: A }, name: atCap, components: [] }] }),
      ),
    ).toEqual([{ id: A, name: atCap, components: [] }]);

    expect(
      thrown(() =>
        listRunsQueryFromProto(
          pb.ListOperationRunsRequest.fromPartial({ filter: { name: { patterns: ["ok", long] } } }),
        ),
      ).message,
    ).toBe(`filter.name.patterns[1]: ${over}`);
    expect(
      thrown(() =>
        firmwareTemplateFromProto(
          pb.UpgradeFirmwareRequest.fromPartial({ subTargets: ["bmc", "b".repeat(LIMITS.subTarget + 1)] }),
        ),
      ).message,
    ).toBe(`sub_targets[1]: must be at most ${LIMITS.subTarget} characters (got ${LIMITS.subTarget + 1})`);
  });
});
