/**
 * The local executor validates the definition it runs (aws-local-stepfunctions' own ASL check) and
 * does it once per definition, across processes: an invalid definition fails every construction, a
 * valid one validated before (by this process or an earlier one, recorded under
 * node_modules/.cache) is not compiled against the schema again. `validate: false` skips the check
 * and records nothing.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { validatedDefinitions } from "../../local/asl-validated.js";
import { LocalStepFunctionsExecutor } from "../../local/step-functions.js";
import { type AslMachine, loadChildTaskDefinition } from "../../src/adapters/stepfunctions/asl.js";

function executorFor(definition: AslMachine, validate?: boolean): LocalStepFunctionsExecutor {
  return new LocalStepFunctionsExecutor({
    steps: { handle: async () => ({}) },
    onEnded: async () => {},
    definition,
    ...(validate === undefined ? {} : { validate }),
  });
}

/** The child-task definition with its first state's transition to a state that does not exist. */
function brokenDefinition(): AslMachine {
  const broken = structuredClone(loadChildTaskDefinition());
  const [first] = Object.keys(broken.States);
  (broken.States[first as string] as { Next?: string }).Next = "NoSuchState";
  return broken;
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
    const broken = brokenDefinition();
    for (let i = 0; i < 2; i++) {
      expect(() => executorFor(structuredClone(broken))).toThrow(
        /State machine definition is invalid[\s\S]*NoSuchState/,
      );
    }
  });

  it("validate: false takes the definition unchecked, and does not record it as validated", {
    timeout: VALIDATION_TIMEOUT,
  }, () => {
    const broken = brokenDefinition();
    expect(() => executorFor(structuredClone(broken), false)).not.toThrow();
    expect(() => executorFor(structuredClone(broken))).toThrow(
      /State machine definition is invalid[\s\S]*NoSuchState/,
    );
  });

  it("the child-task definition is accepted again after its first validation", {
    timeout: VALIDATION_TIMEOUT,
  }, () => {
    const definition = loadChildTaskDefinition();
    expect(() => executorFor(structuredClone(definition))).not.toThrow();
    expect(() => executorFor(structuredClone(definition))).not.toThrow();
  });
});

describe("local executor: definitions validated by an earlier process (local/asl-validated.ts)", () => {
  const dirs: string[] = [];
  const freshDir = () => {
    const dir = mkdtempSync(join(tmpdir(), "asl-validated-"));
    dirs.push(dir);
    return dir;
  };
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it("a text one process recorded is known to the next on the same directory and library version", () => {
    const dir = freshDir();
    const first = validatedDefinitions(dir, "3.0.0");
    expect(first.has("{}")).toBe(false);
    first.add("{}");
    expect(first.has("{}")).toBe(true);
    const next = validatedDefinitions(dir, "3.0.0");
    expect(next.has("{}")).toBe(true);
    expect(next.has('{"a":1}')).toBe(false);
  });

  it("a record of another library version does not count: the new version validates again", () => {
    const dir = freshDir();
    validatedDefinitions(dir, "3.0.0").add("{}");
    expect(validatedDefinitions(dir, "3.1.0").has("{}")).toBe(false);
  });

  it("a directory that cannot be written keeps the record in this process only", () => {
    const dir = freshDir();
    const blocked = join(dir, "a-file");
    writeFileSync(blocked, "");
    const here = validatedDefinitions(join(blocked, "cache"), "3.0.0");
    expect(() => here.add("{}")).not.toThrow();
    expect(here.has("{}")).toBe(true);
    expect(validatedDefinitions(join(blocked, "cache"), "3.0.0").has("{}")).toBe(false);
  });
});
