import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { durationToNs, formatDurationNs, parseDurationNs } from "../../cli/durations.js";
import { parseRunFile, RunFileError } from "../../cli/run-file/load.js";
import { runFileFromConfig } from "../../cli/run-file/to-file.js";
import * as pb from "../../src/gen/flow/v1/flow.js";

const MINIMAL = `
name: fw
selector: { percentage: 30 }
options:
  maxConcurrentTargets: 2
  gates: [{ failureCount: 1 }]
operation:
  upgradeFirmware: {}
`;

/** The problems of a file that must fail, as `path: rule` lines. */
function problems(text: string): string[] {
  try {
    parseRunFile(text, "run.yaml");
  } catch (err) {
    expect(err).toBeInstanceOf(RunFileError);
    return (err as RunFileError).problems.map((p) => `${p.path}: ${p.rule}`);
  }
  throw new Error("expected the file to be rejected");
}

/** MINIMAL with `options` lines replaced. */
function withOptions(lines: string): string {
  return `name: fw\nselector: { percentage: 30 }\noptions:\n${lines}\noperation:\n  upgradeFirmware: {}\n`;
}

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

describe("run file: every problem at once, by key path", () => {
  it("maxConcurrentTargets 0 → `options.maxConcurrentTargets: must be a positive integer (got 0)`", () => {
    expect(problems(withOptions("  maxConcurrentTargets: 0\n  gates: [{ failureCount: 1 }]"))).toEqual([
      "options.maxConcurrentTargets: must be a positive integer (got 0)",
    ]);
  });

  it("an empty document names each required key", () => {
    expect(problems("{}")).toEqual([
      "name: is required",
      "selector: is required",
      "options: is required",
      "operation: is required",
    ]);
  });

  it("a misspelt key is refused with the keys that exist", () => {
    expect(
      problems(
        withOptions("  maxConcurrentTargets: 1\n  maxConcurentTargets: 2\n  gates: [{ failureCount: 1 }]"),
      ),
    ).toEqual([
      "options.maxConcurentTargets: unknown key (expected one of maxConcurrentTargets, gates, phases, autoAdvance, ordering, conflictRetry, maintenanceWindows, failureDomainSpread)",
    ]);
  });

  it("gates: missing, empty, two kinds in one entry, a bad scope, a rate over 100", () => {
    expect(problems(withOptions("  maxConcurrentTargets: 1"))).toEqual([
      "options.gates: is required: at least one gate, e.g. - failureCount: 1",
    ]);
    expect(problems(withOptions("  maxConcurrentTargets: 1\n  gates: []"))).toEqual([
      "options.gates: must not be empty",
    ]);
    expect(
      problems(
        withOptions(
          "  maxConcurrentTargets: 1\n  gates:\n    - { failureCount: 1, failureRate: 5 }\n    - { failureRate: 150%, scope: everywhere }\n    - { scope: currentPhase }",
        ),
      ),
    ).toEqual([
      "options.gates[0]: must set exactly one of failureCount, failureRate, observedFailureRate (got failureCount and failureRate)",
      'options.gates[1].scope: must be currentPhase or cumulativeRun (got "everywhere")',
      'options.gates[1].failureRate: must be a whole percentage from 1 to 100, e.g. 30 or 30% (got "150%")',
      "options.gates[2]: must set one of failureCount, failureRate, observedFailureRate",
    ]);
  });

  it("a gate scope or queue strategy is one of the table's names, not any key of an object", () => {
    const queue = (strategy: string) =>
      MINIMAL.replace("upgradeFirmware: {}", `upgradeFirmware: { queue: { strategy: ${strategy} } }`);
    expect(problems(queue("later"))).toEqual([
      'operation.upgradeFirmware.queue.strategy: must be queue or reject (got "later")',
    ]);
    expect(problems(queue("constructor"))).toEqual([
      'operation.upgradeFirmware.queue.strategy: must be queue or reject (got "constructor")',
    ]);
    expect(
      problems(withOptions("  maxConcurrentTargets: 1\n  gates: [{ failureCount: 1, scope: constructor }]")),
    ).toEqual(['options.gates[0].scope: must be currentPhase or cumulativeRun (got "constructor")']);
    const reject = parseRunFile(queue("REJECT"), "f").configuration?.operation?.operation?.value;
    expect(reject?.queueOptions?.conflictStrategy).toBe(pb.ConflictStrategy.CONFLICT_STRATEGY_REJECT);
  });

  it("phases: percentages that do not add up to 100, a zero count, two plans at once", () => {
    const base = "  maxConcurrentTargets: 1\n  gates: [{ failureCount: 1 }]\n";
    expect(problems(withOptions(`${base}  phases: { percentage: [10, 30] }`))).toEqual([
      "options.phases.percentage: must add up to 100 (got 10 + 30 = 40)",
    ]);
    expect(problems(withOptions(`${base}  phases: { count: [2, 0] }`))).toEqual([
      "options.phases.count[1]: must be a positive integer (got 0)",
    ]);
    expect(problems(withOptions(`${base}  phases: { equal: 2, count: [1] }`))).toEqual([
      "options.phases: must set exactly one of equal, percentage, count (got equal and count)",
    ]);
  });

  it("durations need a unit and must be positive; max retry delay at least the initial one", () => {
    expect(
      problems(
        withOptions(
          "  maxConcurrentTargets: 1\n  gates: [{ failureCount: 1 }]\n  conflictRetry: { retryTimeout: 10, initialRetryDelay: 5m, maxRetryDelay: 30s }",
        ),
      ),
    ).toEqual([
      "options.conflictRetry.retryTimeout: must be a duration with a unit, e.g. 30s, 5m, 1h30m (got 10)",
      "options.conflictRetry.maxRetryDelay: must be at least initialRetryDelay (5m)",
    ]);
    expect(
      problems(
        withOptions(
          "  maxConcurrentTargets: 1\n  gates: [{ failureCount: 1 }]\n  conflictRetry: { retryTimeout: 0s }",
        ),
      ),
    ).toEqual(['options.conflictRetry.retryTimeout: must be longer than zero (got "0s")']);
  });

  it("unknown component types, bad UUIDs and defaultScope beside explicit targets", () => {
    expect(
      problems(
        MINIMAL.replace(
          "upgradeFirmware: {}",
          "upgradeFirmware: { targets: { racks: [{ externalId: E1, componentTypes: [GPU] }] } }\n  excludeRuns: [run-7]\n  defaultScope: { componentTypes: [COMPUTE] }",
        ),
      ),
    ).toEqual([
      'operation.upgradeFirmware.targets.racks[0].componentTypes[0]: must be one of COMPUTE, NVSWITCH, POWERSHELF, TORSWITCH, UMS, CDU (got "GPU")',
      'operation.excludeRuns[0]: must be a UUID, e.g. 4f6f1a9e-0000-4000-8000-000000000001 (got "run-7")',
      "operation.defaultScope: is only allowed without upgradeFirmware.targets (it narrows the default scope)",
    ]);
  });

  it("a rack target with two identifiers, an empty target list", () => {
    expect(
      problems(
        MINIMAL.replace(
          "upgradeFirmware: {}",
          "upgradeFirmware: { targets: { racks: [{ name: a, externalId: b }] } }",
        ),
      ),
    ).toEqual([
      "operation.upgradeFirmware.targets.racks[0]: must set exactly one of id, name, externalId (got name and externalId)",
    ]);
    expect(
      problems(MINIMAL.replace("upgradeFirmware: {}", "upgradeFirmware: { targets: { racks: [] } }")),
    ).toEqual(["operation.upgradeFirmware.targets.racks: must not be empty"]);
  });

  it("failureDomainSpread: row, nvlDomain and attribute by name → the wire's spread; problems name the key", () => {
    const spread = (yaml: string) =>
      parseRunFile(
        withOptions(
          `  maxConcurrentTargets: 1\n  gates: [{ failureCount: 1 }]\n  failureDomainSpread: ${yaml}`,
        ),
        "f",
      ).configuration?.options?.failureDomainSpread;
    const D = pb.OperationRunFailureDomainSpread_Domain;
    expect(spread("{ domain: row, maxInFlight: 1 }")).toEqual({
      domain: D.DOMAIN_ROW,
      attribute: "",
      maxInFlight: 1,
    });
    expect(spread("{ domain: NVL_DOMAIN, maxInFlight: 2 }")).toEqual({
      domain: D.DOMAIN_NVL_DOMAIN,
      attribute: "",
      maxInFlight: 2,
    });
    expect(spread("{ domain: attribute, attribute: datacenter, maxInFlight: 3 }")).toEqual({
      domain: D.DOMAIN_ATTRIBUTE,
      attribute: "datacenter",
      maxInFlight: 3,
    });
    expect(
      problems(
        withOptions(
          "  maxConcurrentTargets: 1\n  gates: [{ failureCount: 1 }]\n  failureDomainSpread: { domain: rack, maxInFlight: 0, cap: 1 }",
        ),
      ),
    ).toEqual([
      "options.failureDomainSpread.cap: unknown key (expected one of domain, attribute, maxInFlight)",
      'options.failureDomainSpread.domain: must be row, nvlDomain, attribute (got "rack")',
      "options.failureDomainSpread.maxInFlight: must be a positive integer (got 0)",
    ]);
    expect(
      problems(
        withOptions("  maxConcurrentTargets: 1\n  gates: [{ failureCount: 1 }]\n  failureDomainSpread: {}"),
      ),
    ).toEqual([
      "options.failureDomainSpread.domain: is required: row, nvlDomain, attribute",
      "options.failureDomainSpread.maxInFlight: is required (racks of one domain in flight at once, at least 1)",
    ]);
  });

  it("maintenanceWindows: each needs a cron the service can parse and a positive duration", () => {
    expect(
      problems(
        withOptions(
          '  maxConcurrentTargets: 1\n  gates: [{ failureCount: 1 }]\n  maintenanceWindows:\n    - { cron: "0 25 * *", duration: 0s }\n    - { duration: 1h }\n    - { cron: "0 2 * * *" }\n    - { cron: "0 2 * * *", duration: 1h, tz: UTC }',
        ),
      ),
    ).toEqual([
      "options.maintenanceWindows[0].cron: must have 5 fields (minute hour day-of-month month day-of-week), got 4",
      'options.maintenanceWindows[0].duration: must be longer than zero (got "0s")',
      'options.maintenanceWindows[1].cron: is required, e.g. "0 2 * * *" (02:00 UTC daily)',
      "options.maintenanceWindows[2].duration: is required, e.g. 2h",
      "options.maintenanceWindows[3].tz: unknown key (expected one of cron, duration)",
    ]);
    expect(
      problems(
        withOptions(
          '  maxConcurrentTargets: 1\n  gates: [{ failureCount: 1 }]\n  maintenanceWindows: [{ cron: "61 2 * * FOO", duration: 1h }]',
        ),
      ),
    ).toEqual([
      "options.maintenanceWindows[0].cron: minute: 61 is out of range 0-59",
      'options.maintenanceWindows[0].cron: day-of-week: "FOO" is not a number or a name such as MON',
    ]);
    const req = parseRunFile(
      withOptions(
        '  maxConcurrentTargets: 1\n  gates: [{ failureCount: 1 }]\n  maintenanceWindows: [{ cron: "*/10 * * * *", duration: 5s }]',
      ),
      "run.yaml",
    );
    expect(req.configuration?.options?.maintenanceWindows).toEqual([
      { cron: "*/10 * * * *", duration: { seconds: 5, nanos: 0 } },
    ]);
    expect(parseRunFile(MINIMAL, "run.yaml").configuration?.options?.maintenanceWindows).toEqual([]);
  });

  it("the error message names the file on every line", () => {
    try {
      parseRunFile("name: x\nselector: 5\noptions: {}\noperation: {}", "plans/run.yaml");
      throw new Error("expected a RunFileError");
    } catch (err) {
      expect((err as Error).message.split("\n")).toEqual([
        "plans/run.yaml: selector: must be a mapping with keys percentage, seed (got 5)",
        "plans/run.yaml: options.maxConcurrentTargets: is required (how many racks may be updated at the same time)",
        "plans/run.yaml: options.gates: is required: at least one gate, e.g. - failureCount: 1",
        "plans/run.yaml: operation.upgradeFirmware: is required (upgradeFirmware is the only operation a run can perform)",
      ]);
    }
  });

  it("YAML syntax errors and duplicate keys are reported with their position", () => {
    expect(problems("name: [\n")).toEqual([
      "(root): not valid YAML or JSON: Flow sequence in block collection must be sufficiently indented and end with a ] at line 2, column 1",
    ]);
    expect(problems("name: a\nname: b\n")[0]).toMatch(
      /^\(root\): not valid YAML or JSON: Map keys must be unique at line 2, column 1/,
    );
  });
});

describe("run file: back from a configuration", () => {
  it("runFileFromConfig then parseRunFile gives the same request (seeds and defaults kept)", () => {
    const text = `
name: fw
description: d
selector: { percentage: 30%, seed: s1 }
options:
  maxConcurrentTargets: 4
  gates: [{ failureCount: 2, scope: cumulativeRun }, { failureRate: 25% }, { observedFailureRate: { percent: 50, minFinished: 4 } }]
  phases: { percentage: [10, 30, 60] }
  autoAdvance: false
  ordering: { random: { seed: s2 } }
  conflictRetry: { retryTimeout: 1h, initialRetryDelay: 30s, maxRetryDelay: 5m }
  maintenanceWindows: [{ cron: "0 2 * * MON-FRI", duration: 2h30m }]
  failureDomainSpread: { domain: attribute, attribute: datacenter, maxInFlight: 2 }
operation:
  upgradeFirmware:
    targetVersion: 7.2.0
    targets: { racks: [{ externalId: EXT-1, componentTypes: [COMPUTE] }, rack-b] }
    startTime: 2026-11-20T08:00:00Z
    endTime: 2026-11-27T08:00:00Z
  excludeRuns: [0a6f1a9e-0000-4000-8000-000000000001]
`;
    const req = parseRunFile(text, "f");
    const doc = runFileFromConfig(req.name, req.description, req.configuration);
    expect(parseRunFile(JSON.stringify(doc), "f")).toEqual(req);
    expect(doc.options).toMatchObject({
      conflictRetry: { retryTimeout: "1h", initialRetryDelay: "30s", maxRetryDelay: "5m" },
      maintenanceWindows: [{ cron: "0 2 * * MON-FRI", duration: "2h30m" }],
    });
  });
  it("queue strategies and gate scopes are written by name; UNSPECIFIED is left out, UNKNOWN is currentPhase", () => {
    const gate = (scope: pb.OperationRunSafetyGateScope): pb.OperationRunSafetyGate => ({
      gate: { $case: "failureCount", value: { scope, failureThresholdCount: 1 } },
    });
    const config = (conflictStrategy: pb.ConflictStrategy) =>
      pb.OperationRunConfiguration.fromPartial({
        options: {
          safetyPolicy: {
            gates: [
              gate(pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_CUMULATIVE_RUN),
              gate(pb.OperationRunSafetyGateScope.OPERATION_RUN_SAFETY_GATE_SCOPE_UNKNOWN),
            ],
          },
        },
        operation: {
          operation: { $case: "upgradeFirmware", value: { queueOptions: { conflictStrategy } } },
        },
      });
    const written = (s: pb.ConflictStrategy) => {
      const doc = runFileFromConfig("fw", "", config(s));
      const op = doc.operation as { upgradeFirmware: { queue: unknown } };
      return { gates: (doc.options as { gates: unknown }).gates, queue: op.upgradeFirmware.queue };
    };
    expect(written(pb.ConflictStrategy.CONFLICT_STRATEGY_QUEUE)).toEqual({
      gates: [
        { failureCount: 1, scope: "cumulativeRun" },
        { failureCount: 1, scope: "currentPhase" },
      ],
      queue: { strategy: "queue" },
    });
    expect(written(pb.ConflictStrategy.CONFLICT_STRATEGY_REJECT).queue).toEqual({ strategy: "reject" });
    expect(written(pb.ConflictStrategy.CONFLICT_STRATEGY_UNSPECIFIED).queue).toEqual({});
  });
});

describe("run file: the examples in examples/", () => {
  it.each([
    "examples/canary.yaml",
    "examples/quickstart.yaml",
    "examples/explicit-racks.json",
    "examples/nightly-window.yaml",
  ])("%s parses", (file) => {
    const req = parseRunFile(readFileSync(file, "utf8"), file);
    expect(req.name).not.toBe("");
    expect(req.configuration?.options?.safetyPolicy?.gates.length).toBeGreaterThan(0);
  });
});

describe("durations", () => {
  it.each([
    ["30s", 30_000_000_000n],
    ["1h30m", 5_400_000_000_000n],
    ["1.5s", 1_500_000_000n],
    ["0.1s", 100_000_000n],
    ["250ms", 250_000_000n],
    ["1h0m0s", 3_600_000_000_000n],
    ["2us", 2_000n],
  ])("%s → %i ns", (text, ns) => {
    expect(parseDurationNs(text)).toBe(ns);
  });

  it.each(["", "30", "s", "1 h", "1d", "-5s", "1h 30m"])("%j is not a duration", (text) => {
    expect(parseDurationNs(text)).toBeUndefined();
  });

  it.each([
    [3_600_000_000_000n, "1h"],
    [5_400_000_000_000n, "1h30m"],
    [3_605_000_000_000n, "1h5s"],
    [1_500_000_000n, "1.5s"],
    [250_000_000n, "250ms"],
    [0n, "0s"],
  ])("%i ns prints as %s", (ns, text) => {
    expect(formatDurationNs(ns)).toBe(text);
    expect(parseDurationNs(text)).toBe(ns);
  });

  it("a Duration message converts to nanoseconds", () => {
    expect(durationToNs({ seconds: 2, nanos: 5 })).toBe(2_000_000_005n);
  });
});
