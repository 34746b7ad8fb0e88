/**
 * The local executor validates the definition it runs (aws-local-stepfunctions' own ASL check) and
 * does it once per process per definition: an invalid definition fails every construction, a
 * valid one validated before is not compiled against the schema again.
 */
import { describe, expect, it } from "vitest";
import { LocalStepFunctionsExecutor } from "../../local/step-functions.js";
import { type AslMachine, loadChildTaskDefinition } from "../../src/adapters/stepfunctions/asl.js";

function executorFor(definition: AslMachine): LocalStepFunctionsExecutor {
  return new LocalStepFunctionsExecutor({
    steps: { handle: async () => ({}) },
    onEnded: async () => {},
    definition,
  });
}

/**
 * Each invalid construction compiles the ASL schema again (seconds of CPU): past vitest's 5 s
 * default when the machine is loaded, as the CDK syntheses of unit-shell are.
 */
const VALIDATION_TIMEOUT = 30_000;

describe("local executor: the definition is validated", () => {
  it("a definition with a transition to no state fails each time it is given, not only the first", {
    timeout: VALIDATION_TIMEOUT,
  }, () => {
    const broken = structuredClone(loadChildTaskDefinition());
    const [first] = Object.keys(broken.States);
    (broken.States[first as string] as { Next?: string }).Next = "NoSuchState";
    for (let i = 0; i < 2; i++) {
      expect(() => executorFor(structuredClone(broken))).toThrow(
        /State machine definition is invalid[\s\S]*NoSuchState/,
      );
    }
  });

  it("the child-task definition is accepted again after its first validation", {
    timeout: VALIDATION_TIMEOUT,
  }, () => {
    const definition = loadChildTaskDefinition();
    expect(() => executorFor(structuredClone(definition))).not.toThrow();
    expect(() => executorFor(structuredClone(definition))).not.toThrow();
  });
});
