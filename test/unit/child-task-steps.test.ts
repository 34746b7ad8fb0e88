/** The step table: every step the ASL names is served, and nothing else is. */
import { describe, expect, it } from "vitest";
import type { TaskStepsDeps } from "../../src/app/child-task/deps.js";
import type { StepEvent } from "../../src/app/child-task/settings.js";
import { createTaskSteps } from "../../src/app/child-task/steps.js";

describe("createTaskSteps: the dispatch over steps", () => {
  // No step runs in these cases, so the deps are never touched.
  const steps = createTaskSteps({} as TaskStepsDeps);

  it.each([
    ["nope", 'unknown step "nope"'],
    ["toString", 'unknown step "toString"'],
    [undefined, "unknown step undefined"],
    [7, "unknown step 7"],
  ])("step %o is refused: %s", async (step, message) => {
    await expect(steps.handle({ step, taskId: "t" } as unknown as StepEvent)).rejects.toThrow(message);
  });
});
