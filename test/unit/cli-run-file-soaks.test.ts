import { describe, expect, it } from "vitest";
import { parseRunFile, RunFileError } from "../../cli/run-file/load.js";
import { runFileFromConfig } from "../../cli/run-file/to-file.js";

/** A run file with these `options.phases`. */
const withPhases = (phases: string) =>
  `name: fw\nselector: { percentage: 30 }\noptions:\n  maxConcurrentTargets: 2\n  gates: [{ failureCount: 1 }]\n  phases: ${phases}\noperation:\n  upgradeFirmware: {}\n`;

function problems(text: string): string[] {
  try {
    parseRunFile(text, "run.yaml");
  } catch (err) {
    expect(err).toBeInstanceOf(RunFileError);
    return (err as RunFileError).problems.map((p) => `${p.path}: ${p.rule}`);
  }
  throw new Error("expected the file to be rejected");
}

describe("run file: options.phases.minSoak and minSoakPerPhase", () => {
  it("minSoak: 30s beside a plan → phase_policy.min_soak 30 s, the plan kept", () => {
    const policy = parseRunFile(withPhases("{ equal: 3, minSoak: 30s }"), "f").configuration?.options
      ?.phasePolicy;
    expect(policy).toEqual({
      plan: { $case: "equal", value: { phaseCount: 3 } },
      advancePolicy: { autoAdvance: false },
      minSoak: { seconds: 30, nanos: 0 },
    });
  });

  it("soaks alone keep the default plan; per-phase soaks may be 0s", () => {
    const policy = parseRunFile(withPhases("{ minSoak: 1h, minSoakPerPhase: [0s, 1.5s] }"), "f").configuration
      ?.options?.phasePolicy;
    expect(policy).toEqual({
      plan: undefined,
      advancePolicy: { autoAdvance: false },
      minSoak: { seconds: 3600, nanos: 0 },
      phaseMinSoaks: {
        minSoaks: [
          { seconds: 0, nanos: 0 },
          { seconds: 1, nanos: 500_000_000 },
        ],
      },
    });
  });

  it("a soak without a unit, a number, an empty list: each reported by its key", () => {
    expect(problems(withPhases("{ equal: 2, minSoak: 30, minSoakPerPhase: [10m, soon] }"))).toEqual([
      "options.phases.minSoak: must be a duration with a unit, e.g. 30s, 10m, 2h (got 30)",
      'options.phases.minSoakPerPhase[1]: must be a duration with a unit, e.g. 30s, 10m, 2h (got "soon")',
    ]);
    expect(problems(withPhases("{ equal: 2, minSoakPerPhase: [] }"))).toEqual([
      "options.phases.minSoakPerPhase: must not be empty",
    ]);
    expect(problems(withPhases("{ equal: 2, minsoak: 30s }"))).toEqual([
      "options.phases.minsoak: unknown key (expected one of equal, percentage, count, minSoak, minSoakPerPhase)",
    ]);
  });

  it("back from a configuration and read again: the same request", () => {
    const req = parseRunFile(withPhases("{ count: [1, 2], minSoak: 30s, minSoakPerPhase: [0s, 2h] }"), "f");
    const doc = runFileFromConfig(req.name, req.description, req.configuration);
    expect((doc.options as Record<string, unknown>).phases).toEqual({
      count: [1, 2],
      minSoak: "30s",
      minSoakPerPhase: ["0s", "2h"],
    });
    expect(parseRunFile(JSON.stringify(doc), "f")).toEqual(req);
  });
});
