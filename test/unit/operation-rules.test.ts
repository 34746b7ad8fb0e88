/** Operation rules: the built-in default, validation with every violation at once, coverage, retry waits. */
import { describe, expect, it } from "vitest";
import { queryVerdict, stepQueryRequestId } from "../../src/domain/component-verdict.js";
import {
  activatedAfterUpdate,
  DEFAULT_RULE,
  DEFAULT_RULE_ID,
  RULE_LIMITS,
  type RuleAction,
  type RuleInput,
  type RuleStageInput,
  readBackStep,
  retryWaitSeconds,
  ruleTypeOrder,
  TYPE_ACTIVATION,
  typesWithoutStage,
  validateRule,
} from "../../src/domain/operation-rules.js";
import { UPGRADE_GROUP_ORDER } from "../../src/domain/task-report.js";

const update = { action: "UPDATE_FIRMWARE" as const, timeoutSeconds: 0, sleepSeconds: 0 };
const stage = (extra: Partial<RuleStageInput> = {}): RuleStageInput => ({
  name: "compute",
  componentTypes: ["COMPUTE"],
  maxParallel: 0,
  steps: [update],
  ...extra,
});
const rule = (extra: Partial<RuleInput> = {}): RuleInput => ({
  name: "compute-first",
  description: "",
  stages: [stage()],
  readinessTimeoutSeconds: 0,
  ...extra,
});
const violations = (input: RuleInput, field?: string) => {
  const result = validateRule(input, field);
  return result.ok ? [] : result.violations.map((v) => `${v.field}: ${v.rule}`);
};

describe("operation rules: the built-in default reproduces the fixed order", () => {
  it("one stage per type in UPGRADE_GROUP_ORDER: the update, its type's activation, the bring-up; the deployment's parallelism, no retry", () => {
    expect(DEFAULT_RULE.id).toBe(DEFAULT_RULE_ID);
    expect(ruleTypeOrder(DEFAULT_RULE)).toEqual([...UPGRADE_GROUP_ORDER]);
    for (const s of DEFAULT_RULE.stages) {
      expect(s.componentTypes.length).toBe(1);
      expect(s.maxParallel).toBe(0);
      expect(s.steps).toEqual([
        update,
        { action: TYPE_ACTIVATION[s.componentTypes[0]!], timeoutSeconds: 0, sleepSeconds: 0 },
        { action: "WAIT_BRING_UP", timeoutSeconds: 0, sleepSeconds: 0 },
      ]);
      // The bring-up reads the version back; the update passes a staged flash to it.
      expect([readBackStep(s.steps), activatedAfterUpdate(s.steps)]).toEqual([2, true]);
    }
    expect(typesWithoutStage(DEFAULT_RULE, ["CDU", "COMPUTE", "UMS"])).toEqual([]);
  });

  it("the activation each component type needs (docs/firmware-policy.md's table)", () => {
    expect(TYPE_ACTIVATION).toEqual({
      POWERSHELF: "RESET_BMC",
      NVSWITCH: "AC_CYCLE",
      COMPUTE: "AC_CYCLE",
      CDU: "RESET_BMC",
      UMS: "POWER_CYCLE_HOST",
      TORSWITCH: "POWER_CYCLE_HOST",
    });
  });
});

describe("operation rules: the read-back step", () => {
  const s = (...actions: RuleAction[]) => actions.map((action) => ({ action }));
  it.each([
    ["the update alone", s("UPDATE_FIRMWARE"), 0, false],
    ["update, verify", s("UPDATE_FIRMWARE", "VERIFY_VERSION", "SLEEP"), 0, false],
    ["update, AC cycle", s("UPDATE_FIRMWARE", "AC_CYCLE"), 1, true],
    [
      "update, reset, sleep, bring-up, verify",
      s("UPDATE_FIRMWARE", "RESET_BMC", "SLEEP", "WAIT_BRING_UP", "VERIFY_REACHABILITY"),
      3,
      true,
    ],
    ["a reset before the update only", s("RESET_BMC", "UPDATE_FIRMWARE"), 1, false],
    ["update, host power cycle", s("UPDATE_FIRMWARE", "POWER_CYCLE_HOST"), 1, true],
  ] as const)("%s: read back at step %i, activated after the update: %s", (_, steps, at, later) => {
    expect(readBackStep(steps)).toBe(at);
    expect(activatedAfterUpdate(steps)).toBe(later);
  });

  it("activation and bring-up steps take a timeout and a retry, and refuse sleep_seconds", () => {
    const steps = (["RESET_BMC", "POWER_CYCLE_HOST", "AC_CYCLE", "WAIT_BRING_UP"] as const).map((action) => ({
      action,
      timeoutSeconds: 600,
      sleepSeconds: 0,
      retry: { maxRetries: 1, intervalSeconds: 30, backoffRate: 1 },
    }));
    const valid = validateRule(rule({ stages: [stage({ steps: [update, ...steps] })] }));
    expect(
      valid.ok && valid.value.stages[0]?.steps.map((x) => [x.action, x.timeoutSeconds, x.retry?.maxRetries]),
    ).toEqual([
      ["UPDATE_FIRMWARE", 0, undefined],
      ["RESET_BMC", 600, 1],
      ["POWER_CYCLE_HOST", 600, 1],
      ["AC_CYCLE", 600, 1],
      ["WAIT_BRING_UP", 600, 1],
    ]);
    expect(
      violations(
        rule({
          stages: [stage({ steps: [update, { action: "AC_CYCLE", timeoutSeconds: -1, sleepSeconds: 5 }] })],
        }),
      ),
    ).toEqual([
      "stages[0].steps[1].sleep_seconds: only a SLEEP step sleeps (got 5)",
      "stages[0].steps[1].timeout_seconds: must be 0 (the deployment's timeout) or more whole seconds (got -1)",
    ]);
  });
});

describe("operation rules: validation", () => {
  it("a valid rule comes back trimmed, a zero-retry policy dropped", () => {
    expect(
      validateRule(
        rule({
          name: "  two stages ",
          stages: [
            stage({
              name: " compute ",
              maxParallel: 4,
              steps: [
                { action: "VERIFY_REACHABILITY", timeoutSeconds: 30, sleepSeconds: 0 },
                { ...update, retry: { maxRetries: 2, intervalSeconds: 5, backoffRate: 2 } },
                {
                  action: "VERIFY_VERSION",
                  timeoutSeconds: 0,
                  sleepSeconds: 0,
                  retry: { maxRetries: 0, intervalSeconds: 0, backoffRate: 1 },
                },
                { action: "SLEEP", timeoutSeconds: 0, sleepSeconds: 10 },
              ],
            }),
            stage({ name: "switches", componentTypes: ["NVSWITCH", "TORSWITCH"] }),
          ],
        }),
      ),
    ).toEqual({
      ok: true,
      value: {
        name: "two stages",
        description: "",
        readinessTimeoutSeconds: 0,
        stages: [
          {
            name: "compute",
            componentTypes: ["COMPUTE"],
            maxParallel: 4,
            steps: [
              { action: "VERIFY_REACHABILITY", timeoutSeconds: 30, sleepSeconds: 0 },
              { ...update, retry: { maxRetries: 2, intervalSeconds: 5, backoffRate: 2 } },
              { action: "VERIFY_VERSION", timeoutSeconds: 0, sleepSeconds: 0 },
              { action: "SLEEP", timeoutSeconds: 0, sleepSeconds: 10 },
            ],
          },
          { name: "switches", componentTypes: ["NVSWITCH", "TORSWITCH"], maxParallel: 0, steps: [update] },
        ],
      },
    });
  });

  it("an empty rule", () => {
    expect(violations(rule({ name: " ", stages: [] }))).toEqual([
      "name: a rule needs a name",
      "stages: a rule needs at least one stage",
    ]);
  });

  it("every violation at once, with its path: unknown and repeated types, max_parallel < 0, a backoff below 1, …", () => {
    expect(
      violations(
        rule({
          readinessTimeoutSeconds: -1,
          stages: [
            stage({ componentTypes: ["COMPUTE", "UNKNOWN", "COMPUTE"], maxParallel: -1 }),
            stage({
              componentTypes: ["COMPUTE"],
              steps: [{ ...update, retry: { maxRetries: 1, intervalSeconds: -2, backoffRate: 0.5 } }],
            }),
            stage({ componentTypes: [], steps: [{ action: "UNKNOWN", timeoutSeconds: 0, sleepSeconds: 0 }] }),
            stage({
              componentTypes: ["CDU"],
              maxParallel: 1.5,
              steps: [
                update,
                update,
                { action: "SLEEP", timeoutSeconds: 5, sleepSeconds: 0 },
                { action: "VERIFY_VERSION", timeoutSeconds: -5, sleepSeconds: 3 },
              ],
            }),
          ],
        }),
        "rule",
      ),
    ).toEqual([
      "rule.readiness_timeout_seconds: must be 0 (the deployment's readiness timeout) or more whole seconds (got -1)",
      "rule.stages[0].component_types[1]: unknown component type COMPONENT_TYPE_UNKNOWN",
      "rule.stages[0].component_types[2]: COMPUTE is listed twice",
      "rule.stages[0].max_parallel: must be 0 (the deployment's default) or more (got -1)",
      "rule.stages[1].component_types[0]: COMPUTE is already in stages[0]",
      "rule.stages[1].steps[0].retry.interval_seconds: must be 0 (retry at once) or more whole seconds (got -2)",
      "rule.stages[1].steps[0].retry.backoff_rate: must be 1 or more (got 0.5)",
      "rule.stages[2].component_types: a stage needs at least one component type",
      "rule.stages[2].steps: a stage needs exactly one UPDATE_FIRMWARE step (got 0)",
      "rule.stages[2].steps[0].action: must be one of UPDATE_FIRMWARE, VERIFY_VERSION, VERIFY_REACHABILITY, SLEEP, RESET_BMC, POWER_CYCLE_HOST, AC_CYCLE, WAIT_BRING_UP, CHECK_HEALTH",
      "rule.stages[3].max_parallel: must be 0 (the deployment's default) or more (got 1.5)",
      "rule.stages[3].steps: a stage needs exactly one UPDATE_FIRMWARE step (got 2)",
      "rule.stages[3].steps[2].sleep_seconds: a SLEEP step needs 1 or more whole seconds (got 0)",
      "rule.stages[3].steps[2]: a SLEEP step has no timeout or retry",
      "rule.stages[3].steps[3].sleep_seconds: only a SLEEP step sleeps (got 3)",
      "rule.stages[3].steps[3].timeout_seconds: must be 0 (the deployment's timeout) or more whole seconds (got -5)",
    ]);
  });

  it("sizes are bounded", () => {
    const long = "n".repeat(RULE_LIMITS.name + 1);
    const many = <T>(n: number, f: () => T) => Array.from({ length: n }, f);
    expect(
      violations(
        rule({
          name: long,
          description: "d".repeat(RULE_LIMITS.description + 1),
          readinessTimeoutSeconds: RULE_LIMITS.seconds + 1,
          stages: [
            stage({
              maxParallel: RULE_LIMITS.maxParallel + 1,
              steps: [
                {
                  ...update,
                  retry: {
                    maxRetries: RULE_LIMITS.retries + 1,
                    intervalSeconds: 1,
                    backoffRate: RULE_LIMITS.backoffRate + 1,
                  },
                },
                ...many(RULE_LIMITS.stepsPerStage, () => ({
                  action: "SLEEP" as const,
                  timeoutSeconds: 0,
                  sleepSeconds: RULE_LIMITS.seconds + 1,
                })),
              ],
            }),
            ...many(RULE_LIMITS.stages, () => stage({ componentTypes: [] })),
          ],
        }),
      ).filter(
        (v) => !v.includes("a stage needs at least one component type") && !v.includes("sleep_seconds"),
      ),
    ).toEqual([
      `name: must be at most ${RULE_LIMITS.name} characters (got ${long.length})`,
      `description: must be at most ${RULE_LIMITS.description} characters (got ${RULE_LIMITS.description + 1})`,
      `readiness_timeout_seconds: must be at most ${RULE_LIMITS.seconds} (one day; got ${RULE_LIMITS.seconds + 1})`,
      `stages: must have at most ${RULE_LIMITS.stages} entries (got ${RULE_LIMITS.stages + 1})`,
      `stages[0].max_parallel: must be at most ${RULE_LIMITS.maxParallel} (got ${RULE_LIMITS.maxParallel + 1})`,
      `stages[0].steps: must have at most ${RULE_LIMITS.stepsPerStage} entries (got ${RULE_LIMITS.stepsPerStage + 1})`,
      `stages[0].steps[0].retry.max_retries: must be a whole number from 0 to ${RULE_LIMITS.retries} (got ${RULE_LIMITS.retries + 1})`,
      `stages[0].steps[0].retry.backoff_rate: must be at most ${RULE_LIMITS.backoffRate} (got ${RULE_LIMITS.backoffRate + 1})`,
    ]);
    expect(
      violations(
        rule({
          stages: [
            stage({
              steps: [update, { action: "SLEEP", timeoutSeconds: 0, sleepSeconds: RULE_LIMITS.seconds + 1 }],
            }),
          ],
        }),
      ),
    ).toEqual([
      `stages[0].steps[1].sleep_seconds: must be at most ${RULE_LIMITS.seconds} (one day; got ${RULE_LIMITS.seconds + 1})`,
    ]);
  });
});

describe("operation rules: coverage and retries", () => {
  it("names the planned types no stage covers, in enum order", () => {
    const r = {
      stages: [{ name: "s", componentTypes: ["NVSWITCH" as const], maxParallel: 0, steps: [update] }],
    };
    expect(typesWithoutStage(r, ["CDU", "NVSWITCH", "COMPUTE", "CDU"])).toEqual(["COMPUTE", "CDU"]);
  });

  it.each([
    [1, 5],
    [2, 10],
    [3, 20],
  ])("retry %i waits interval · backoff^(n−1) = %i s", (attempt, seconds) => {
    expect(retryWaitSeconds({ maxRetries: 3, intervalSeconds: 5, backoffRate: 2 }, attempt)).toBe(seconds);
  });

  it("a retry at once still waits a second (a Wait of 0 is no pause for a BMC to recover)", () => {
    expect(retryWaitSeconds({ maxRetries: 1, intervalSeconds: 0, backoffRate: 1 }, 1)).toBe(1);
  });
});

describe("verify steps: the verdict on a BMC's answer", () => {
  const record = (status?: { version: string }) => ({
    componentId: "c-1",
    requestId: "q",
    taskId: "t",
    kind: "query" as const,
    sentAt: 0,
    deadline: 10,
    ...(status ? { status } : {}),
  });
  const version = { step: "verify-version" as const, expected: "2.0", timeoutSeconds: 60 };
  const reach = { step: "verify-reachability" as const, timeoutSeconds: 60 };

  it("an answer passes reachability; the target version passes verify-version", () => {
    expect(queryVerdict("c-1", "COMPUTE", record({ version: "1.0" }), reach, 10, 5)).toEqual({
      componentId: "c-1",
      ok: true,
      version: "1.0",
    });
    expect(queryVerdict("c-1", "COMPUTE", record({ version: "2.0" }), version, 10, 5)).toMatchObject({
      ok: true,
    });
  });

  it("another version fails verify-version; silence past the deadline fails either", () => {
    expect(queryVerdict("c-1", "COMPUTE", record({ version: "1.0" }), version, 10, 5)).toEqual({
      componentId: "c-1",
      ok: false,
      error: {
        Error: "VersionMismatch",
        Cause: "component c-1 (COMPUTE): verify-version: BMC runs 1.0, expected 2.0",
      },
    });
    expect(queryVerdict("c-1", "COMPUTE", record(), reach, 10, 5)).toBe("pending");
    expect(queryVerdict("c-1", "COMPUTE", undefined, reach, 10, 11)).toEqual({
      componentId: "c-1",
      ok: false,
      error: {
        Error: "BmcUnreachable",
        Cause: "component c-1 (COMPUTE): verify-reachability: BMC did not answer within 60 s (unreachable)",
      },
    });
  });

  it("query ids differ per stage, step and attempt, and repeat for the same ones", () => {
    const id = stepQueryRequestId("t", "c", 1, 2, 0);
    expect(id).toMatch(/^qry-t\.v1\.2\.0\.[0-9a-f]{12}$/);
    expect(stepQueryRequestId("t", "c", 1, 2, 0)).toBe(id);
    expect(
      new Set([
        stepQueryRequestId("t", "c", 0, 2, 0),
        stepQueryRequestId("t", "c", 1, 1, 0),
        stepQueryRequestId("t", "c", 1, 2, 1),
      ]).size,
    ).toBe(3);
  });
});

describe("operation rules: a whole-rack AC cycle (ac_scope)", () => {
  const acCycle = (acScope?: "TRAY" | "RACK" | "UNKNOWN") => ({
    action: "AC_CYCLE" as const,
    timeoutSeconds: 0,
    sleepSeconds: 0,
    ...(acScope === undefined ? {} : { acScope }),
  });
  const bringUp = { action: "WAIT_BRING_UP" as const, timeoutSeconds: 0, sleepSeconds: 0 };

  it("RACK is kept on an AC_CYCLE followed by WAIT_BRING_UP; TRAY (or none) is the tray, stored as nothing", () => {
    const steps = (result: ReturnType<typeof validateRule>) =>
      result.ok ? result.value.stages[0]?.steps.map((s) => s.acScope) : result.violations;
    expect(
      steps(validateRule(rule({ stages: [stage({ steps: [update, acCycle("RACK"), bringUp] })] }))),
    ).toEqual([undefined, "RACK", undefined]);
    expect(
      steps(validateRule(rule({ stages: [stage({ steps: [update, acCycle("TRAY"), bringUp] })] }))),
    ).toEqual([undefined, undefined, undefined]);
    expect(steps(validateRule(rule({ stages: [stage({ steps: [update, acCycle(), bringUp] })] })))).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });

  it("a scope on another action, an unknown scope, and a RACK cycle with no WAIT_BRING_UP after it are refused at their field", () => {
    expect(
      violations(
        rule({
          stages: [
            stage({
              steps: [
                update,
                { action: "RESET_BMC", timeoutSeconds: 0, sleepSeconds: 0, acScope: "RACK" },
                acCycle("UNKNOWN"),
                bringUp,
                acCycle("RACK"),
              ],
            }),
          ],
        }),
      ),
    ).toEqual([
      "stages[0].steps[1].ac_scope: only an AC_CYCLE step has a scope (got RESET_BMC)",
      "stages[0].steps[2].ac_scope: must be one of TRAY, RACK (got UNKNOWN)",
      "stages[0].steps[4].ac_scope: a RACK AC cycle is answered by the power shelf alone: a WAIT_BRING_UP step must follow it in its stage",
    ]);
  });
});
