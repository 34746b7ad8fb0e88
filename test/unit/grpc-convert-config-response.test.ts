/**
 * The gRPC converters: the domain's run configuration as a response (durations, no credentials),
 * and back through a request to the validator (spread, gates, windows, phases, target specs).
 */
import { describe, expect, it } from "vitest";
import { runConfigToProto } from "../../src/adapters/grpc/convert/config-response.js";
import { createRunInputFromProto } from "../../src/adapters/grpc/convert/run-request.js";
import { runToProto } from "../../src/adapters/grpc/convert/run-response.js";
import type { RunConfig } from "../../src/domain/model.js";
import { validateCreateRun } from "../../src/domain/run-config.js";
import * as pb from "../../src/gen/flow/v1/flow.js";
import { A, B, C, odd, thrown } from "../support/grpc-convert.js";
import { CONFIG, RUN } from "../support/grpc-convert-domain.js";

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
});
