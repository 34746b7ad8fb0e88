/**
 * The run file (cli/run-file/load.ts): a minimal file, and the readable values its keys take
 * (phases, gates, conflict-retry durations, ordering, targets by name, firmware extras).
 */
import { describe, expect, it } from "vitest";
import { parseRunFile } from "../../cli/run-file/load.js";
import * as pb from "../../src/gen/flow/v1/flow.js";
import { MINIMAL, problems, withOptions } from "../support/run-file-cases.js";

describe("run file: a minimal file", () => {
  it("becomes a request with the percentage selector, one gate and no optional policies", () => {
    const req = parseRunFile(MINIMAL, "run.yaml");
    expect(req.name).toBe("fw");
    expect(req.description).toBe("");
    expect(req.configuration?.selector).toEqual({
      selector: { $case: "percentage", value: { percentage: 30, seed: "" } },
    });
    const o = req.configuration?.options;
    expect(o?.maxConcurrentTargets).toBe(2);
    expect(o?.safetyPolicy?.gates).toEqual([
      {
        gate: {
          $case: "failureCount",
          value: {
            scope: pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CURRENT_PHASE,
            failureThresholdCount: 1,
          },
        },
      },
    ]);
    expect(o?.phasePolicy).toBeUndefined();
    expect(o?.conflictPolicy).toBeUndefined();
    expect(o?.orderingPolicy).toBeUndefined();
    expect(req.configuration?.operation?.operation?.$case).toBe("upgradeFirmware");
    expect(req.configuration?.operation?.targetScope).toBeUndefined();
  });

  it("encodes to the wire and back unchanged (the request is a valid ts-proto message)", () => {
    const req = parseRunFile(MINIMAL, "run.yaml");
    const bytes = pb.CreateOperationRunRequest.encode(req).finish();
    expect(pb.CreateOperationRunRequest.decode(bytes)).toEqual(pb.CreateOperationRunRequest.fromPartial(req));
  });

  it("reads the same request from JSON", () => {
    const json = JSON.stringify({
      name: "fw",
      selector: { percentage: 30 },
      options: { maxConcurrentTargets: 2, gates: [{ failureCount: 1 }] },
      operation: { upgradeFirmware: {} },
    });
    expect(parseRunFile(json, "run.json")).toEqual(parseRunFile(MINIMAL, "run.yaml"));
  });
});

describe("run file: readable values", () => {
  it.each([
    ["30", 30],
    ["30%", 30],
    ['"30 %"', 30],
    ["1", 1],
    ["100%", 100],
  ])("selector percentage %s → %i", (text, expected) => {
    const req = parseRunFile(MINIMAL.replace("percentage: 30", `percentage: ${text}`), "run.yaml");
    expect(req.configuration?.selector?.selector?.value.percentage).toBe(expected);
  });

  it("phases { equal: 3 } → equal phases with phase_count 3, auto_advance false", () => {
    const req = parseRunFile(
      withOptions("  maxConcurrentTargets: 1\n  gates: [{ failureCount: 1 }]\n  phases: { equal: 3 }"),
      "f",
    );
    expect(req.configuration?.options?.phasePolicy).toEqual({
      plan: { $case: "equal", value: { phaseCount: 3 } },
      advancePolicy: { autoAdvance: false },
    });
  });

  it("phases { percentage: [10, 30%, 60] } → three percentage phases", () => {
    const req = parseRunFile(
      withOptions(
        "  maxConcurrentTargets: 1\n  gates: [{ failureCount: 1 }]\n  phases: { percentage: [10, 30%, 60] }",
      ),
      "f",
    );
    expect(req.configuration?.options?.phasePolicy?.plan).toEqual({
      $case: "percentage",
      value: { phases: [{ percentage: 10 }, { percentage: 30 }, { percentage: 60 }] },
    });
  });

  it("phases { count: [2, 3] } with autoAdvance true → count phases that advance on their own", () => {
    const req = parseRunFile(
      withOptions(
        "  maxConcurrentTargets: 1\n  gates: [{ failureCount: 1 }]\n  phases: { count: [2, 3] }\n  autoAdvance: true",
      ),
      "f",
    );
    expect(req.configuration?.options?.phasePolicy).toEqual({
      plan: { $case: "count", value: { phases: [{ count: 2 }, { count: 3 }] } },
      advancePolicy: { autoAdvance: true },
    });
  });

  it("a rate gate with scope cumulativeRun (or CUMULATIVE_RUN) → the cumulative-run scope", () => {
    for (const scope of ["cumulativeRun", "CUMULATIVE_RUN", "cumulative-run"]) {
      const req = parseRunFile(
        withOptions(`  maxConcurrentTargets: 1\n  gates:\n    - failureRate: 20%\n      scope: ${scope}`),
        "f",
      );
      expect(req.configuration?.options?.safetyPolicy?.gates[0]).toEqual({
        gate: {
          $case: "failureRate",
          value: {
            scope: pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CUMULATIVE_RUN,
            failureThresholdPercent: 20,
          },
        },
      });
    }
  });

  it("observedFailureRate { percent, minFinished, scope } → the observed_failure_rate gate; minFinished absent stays unset", () => {
    const req = parseRunFile(
      withOptions(
        "  maxConcurrentTargets: 1\n  gates:\n    - observedFailureRate: { percent: 50%, minFinished: 3, scope: cumulativeRun }\n    - observedFailureRate: { percent: 20 }",
      ),
      "f",
    );
    expect(req.configuration?.options?.safetyPolicy?.gates).toEqual([
      {
        gate: {
          $case: "observedFailureRate",
          value: {
            scope: pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CUMULATIVE_RUN,
            failureThresholdPercent: 50,
            minFinished: 3,
          },
        },
      },
      {
        gate: {
          $case: "observedFailureRate",
          value: {
            scope: pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CURRENT_PHASE,
            failureThresholdPercent: 20,
          },
        },
      },
    ]);
  });

  it("observedFailureRate problems name the key: no percent, minFinished 0, an unknown key, scope set twice", () => {
    expect(
      problems(
        withOptions(
          "  maxConcurrentTargets: 1\n  gates:\n    - observedFailureRate: { minFinished: 0 }\n    - observedFailureRate: { percent: 10, min: 5 }\n    - { observedFailureRate: { percent: 10, scope: currentPhase }, scope: cumulativeRun }",
        ),
      ),
    ).toEqual([
      "options.gates[0].observedFailureRate.percent: is required (the failed share of finished racks that pauses the run)",
      "options.gates[0].observedFailureRate.minFinished: must be a positive integer (got 0)",
      "options.gates[1].observedFailureRate.min: unknown key (expected one of percent, minFinished, scope)",
      "options.gates[2].observedFailureRate.scope: is also set beside observedFailureRate: set it once",
    ]);
  });

  it("conflictRetry durations 1h / 30s / 5m → google.protobuf.Duration seconds", () => {
    const req = parseRunFile(
      withOptions(
        "  maxConcurrentTargets: 1\n  gates: [{ failureCount: 1 }]\n  conflictRetry: { retryTimeout: 1h, initialRetryDelay: 30s, maxRetryDelay: 5m }",
      ),
      "f",
    );
    expect(req.configuration?.options?.conflictPolicy).toEqual({
      strategy: {
        $case: "retry",
        value: {
          retryTimeout: { seconds: 3600, nanos: 0 },
          initialRetryDelay: { seconds: 30, nanos: 0 },
          maxRetryDelay: { seconds: 300, nanos: 0 },
        },
      },
    });
  });

  it("a conflictRetry with only maxRetryDelay leaves the others for the service to default", () => {
    const req = parseRunFile(
      withOptions(
        "  maxConcurrentTargets: 1\n  gates: [{ failureCount: 1 }]\n  conflictRetry: { maxRetryDelay: 1.5s }",
      ),
      "f",
    );
    expect(req.configuration?.options?.conflictPolicy?.strategy?.value).toEqual({
      retryTimeout: undefined,
      initialRetryDelay: undefined,
      maxRetryDelay: { seconds: 1, nanos: 500_000_000 },
    });
  });

  it("ordering { random: { seed: s } } and a bare `random:` → random ordering (seed given, or generated)", () => {
    const seeded = parseRunFile(
      withOptions(
        "  maxConcurrentTargets: 1\n  gates: [{ failureCount: 1 }]\n  ordering: { random: { seed: s1 } }",
      ),
      "f",
    );
    expect(seeded.configuration?.options?.orderingPolicy).toEqual({
      ordering: { $case: "random", value: { seed: "s1" } },
    });
    const bare = parseRunFile(
      withOptions("  maxConcurrentTargets: 1\n  gates: [{ failureCount: 1 }]\n  ordering:\n    random:"),
      "f",
    );
    expect(bare.configuration?.options?.orderingPolicy).toEqual({
      ordering: { $case: "random", value: { seed: "" } },
    });
  });

  it("rack targets by name (bare or keyed), external id and UUID, with component types by name", () => {
    const req = parseRunFile(
      `name: fw
selector: { percentage: 100 }
options: { maxConcurrentTargets: 1, gates: [{ failureCount: 1 }] }
operation:
  upgradeFirmware:
    targetVersion: 7.2
    targets:
      racks:
        - rack-a01
        - { externalId: EXT-2, componentTypes: [compute, NVSWITCH] }
        - { id: 4F6F1A9E-0000-4000-8000-000000000003 }
`,
      "f",
    );
    const fw = req.configuration?.operation?.operation?.value;
    expect(fw?.targetVersion).toBe("7.2");
    expect(fw?.targetSpec).toEqual({
      targets: {
        $case: "racks",
        value: {
          targets: [
            { identifier: { $case: "name", value: "rack-a01" }, componentTypes: [] },
            {
              identifier: { $case: "externalId", value: "EXT-2" },
              componentTypes: [
                pb.ComponentType.COMPONENT_TYPE_COMPUTE,
                pb.ComponentType.COMPONENT_TYPE_NVSWITCH,
              ],
            },
            {
              identifier: { $case: "id", value: { id: "4f6f1a9e-0000-4000-8000-000000000003" } },
              componentTypes: [],
            },
          ],
        },
      },
    });
  });

  it("component targets by id and by (type, externalId); NVLink domains by name", () => {
    const comps = parseRunFile(
      `name: fw
selector: { percentage: 100 }
options: { maxConcurrentTargets: 1, gates: [{ failureCount: 1 }] }
operation:
  upgradeFirmware:
    targets:
      components: [{ id: 5a6f1a9e-0000-4000-8000-000000000001 }, { type: POWERSHELF, externalId: SN-9 }]
`,
      "f",
    );
    expect(comps.configuration?.operation?.operation?.value.targetSpec?.targets).toEqual({
      $case: "components",
      value: {
        targets: [
          { identifier: { $case: "id", value: { id: "5a6f1a9e-0000-4000-8000-000000000001" } } },
          {
            identifier: {
              $case: "external",
              value: { type: pb.ComponentType.COMPONENT_TYPE_POWERSHELF, id: "SN-9" },
            },
          },
        ],
      },
    });
    const domains = parseRunFile(
      MINIMAL.replace("upgradeFirmware: {}", "upgradeFirmware: { targets: { nvlDomains: [nvl-01] } }"),
      "f",
    );
    expect(domains.configuration?.operation?.operation?.value.targetSpec?.targets).toEqual({
      $case: "nvlDomains",
      value: { targets: [{ identifier: { $case: "name", value: "nvl-01" }, componentTypes: [] }] },
    });
  });

  it("excludeRuns and defaultScope → the operation's target scope", () => {
    const req = parseRunFile(
      MINIMAL.replace(
        "upgradeFirmware: {}",
        "upgradeFirmware: {}\n  excludeRuns: [0a6f1a9e-0000-4000-8000-000000000001]\n  defaultScope: { componentTypes: [CDU] }",
      ),
      "f",
    );
    expect(req.configuration?.operation?.targetScope).toEqual({
      excludeOperationRunIds: [{ id: "0a6f1a9e-0000-4000-8000-000000000001" }],
      defaultScopeComponentFilter: {
        filter: { $case: "types", value: { types: [pb.ComponentType.COMPONENT_TYPE_CDU] } },
      },
    });
  });

  it("firmware extras: times, queue options, rule, sub-targets, overrides, shared credentials", () => {
    const req = parseRunFile(
      MINIMAL.replace(
        "upgradeFirmware: {}",
        `upgradeFirmware:
      startTime: 2026-11-20T08:00:00Z
      endTime: "2026-11-20T10:00:00+01:00"
      queue: { strategy: queue, timeout: 10m }
      ruleId: 1a6f1a9e-0000-4000-8000-000000000001
      subTargets: [bmc]
      overrideReadinessCheck: true
      overrideVersionCheck: true
      authentication: { shared: s3cret }`,
      ),
      "f",
    );
    const fw = req.configuration?.operation?.operation?.value;
    expect(fw?.startTime?.toISOString()).toBe("2026-11-20T08:00:00.000Z");
    expect(fw?.endTime?.toISOString()).toBe("2026-11-20T09:00:00.000Z");
    expect(fw?.queueOptions).toEqual({
      conflictStrategy: pb.ConflictStrategy.CONFLICT_STRATEGY_QUEUE,
      queueTimeoutSeconds: 600,
    });
    expect(fw?.ruleId).toEqual({ id: "1a6f1a9e-0000-4000-8000-000000000001" });
    expect(fw?.subTargets).toEqual(["bmc"]);
    expect(fw?.overrideReadinessCheck).toBe(true);
    expect(fw?.overrideVersionCheck).toBe(true);
    expect(fw?.authenticationData).toEqual({ value: { $case: "shared", value: "s3cret" } });
  });
});
