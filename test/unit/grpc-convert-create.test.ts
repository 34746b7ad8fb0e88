/** The gRPC converters: a CreateOperationRunRequest decoded into the domain's CreateRunInput. */
import { describe, expect, it } from "vitest";
import { LIMITS } from "../../src/adapters/grpc/convert/limits.js";
import { createRunInputFromProto } from "../../src/adapters/grpc/convert/run-request.js";
import { ValidationError } from "../../src/domain/errors.js";
import * as pb from "../../src/gen/flow/v1/flow.js";
import { A, B, C, create, odd, thrown } from "../support/grpc-convert.js";

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
