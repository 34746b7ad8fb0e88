/**
 * The run file's refusals (cli/run-file/load.ts): every problem at once, each by its key path.
 */
import { describe, expect, it } from "vitest";
import { parseRunFile } from "../../cli/run-file/load.js";
import * as pb from "../../src/gen/flow/v1/flow.js";
import { MINIMAL, problems, withOptions } from "../support/run-file-cases.js";

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
