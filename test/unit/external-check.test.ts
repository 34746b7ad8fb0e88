/**
 * External health checks, the pure parts: how the end of the task's wait becomes a verdict (every
 * answer and every error), the rule's fields and the deployment's names, and the run's pause for
 * an inconclusive verdict (who lifts it, and what it does not override).
 */
import { describe, expect, it } from "vitest";
import {
  type ExternalCheckVerdict,
  externalCheckFailure,
  judgeExternalCheck,
  parseExternalChecks,
} from "../../src/domain/external-check.js";
import type { Run } from "../../src/domain/model.js";
import { type RuleInput, unknownExternalChecks, validateRule } from "../../src/domain/operation-rules.js";
import { historyEvents } from "../../src/domain/run-history.js";
import { reduceRun } from "../../src/domain/run-machine.js";
import { externalCheckMessage } from "../../src/domain/run-messages.js";
import { runConfig } from "../support/domain-fixtures.js";

const VAGUE = { kind: "inconclusive" } as const;

/** A one-phase run of four targets, started at 100. */
const runFixture = (over: Pick<Run, "status" | "reason">): Run => ({
  id: "11111111-1111-4111-8111-111111111111",
  name: "rollout",
  description: "",
  config: runConfig(),
  statusMessage: "",
  phaseSizes: [4],
  currentPhaseIndex: 0,
  counters: [],
  inFlight: 1,
  createdAt: 0,
  updatedAt: 100,
  startedAt: 100,
  ...over,
});

describe("the verdict from how the wait ended", () => {
  it.each<[string, { answer?: unknown; error?: { Error?: string; Cause?: string } }, ExternalCheckVerdict]>([
    ["pass", { answer: { verdict: "pass" } }, { kind: "pass" }],
    ["pass, any case, a reason ignored", { answer: { verdict: "PASS", reason: "fine" } }, { kind: "pass" }],
    ["pass as JSON text", { answer: '{"verdict":"pass"}' }, { kind: "pass" }],
    [
      "fail with its reason",
      { answer: { verdict: "fail", reason: " GPU 5 failed " } },
      { kind: "fail", reason: "GPU 5 failed" },
    ],
    [
      "fail without a reason",
      { answer: { verdict: "fail" } },
      { kind: "fail", reason: "the check gave no reason" },
    ],
    [
      "inconclusive with its reason",
      { answer: { verdict: "inconclusive", reason: "host 3 down" } },
      { ...VAGUE, reason: "host 3 down" },
    ],
    [
      "an unknown verdict",
      { answer: { verdict: "maybe" } },
      { ...VAGUE, reason: 'the check answered no verdict (pass, fail or inconclusive): {"verdict":"maybe"}' },
    ],
    [
      "no verdict at all",
      { answer: null },
      { ...VAGUE, reason: "the check answered no verdict (pass, fail or inconclusive): null" },
    ],
    ["text that is not JSON", { answer: "ok!" }, { ...VAGUE, reason: "the check answered no verdict: ok!" }],
    [
      "the timeout",
      { error: { Error: "States.Timeout", Cause: "" } },
      { ...VAGUE, reason: "no verdict within 600 s" },
    ],
    [
      "a hand-over that failed",
      {
        error: { Error: "ExternalCheckUnavailable", Cause: "could not hand rack r to external check c: 503" },
      },
      { ...VAGUE, reason: "could not hand rack r to external check c: 503" },
    ],
    [
      "the Lambda service failing the wait",
      { error: { Error: "Lambda.ServiceException", Cause: "" } },
      { ...VAGUE, reason: "the wait for the check failed: Lambda.ServiceException" },
    ],
    [
      "the check's own SendTaskFailure",
      { error: { Error: "DiagFailed", Cause: "DiagFailed: GPU 5" } },
      { kind: "fail", reason: "DiagFailed: GPU 5" },
    ],
    [
      "a SendTaskFailure without a cause",
      { error: { Error: "DiagFailed" } },
      { kind: "fail", reason: "DiagFailed" },
    ],
  ])("%s", (_, ended, verdict) => {
    expect(judgeExternalCheck(ended, 600)).toEqual(verdict);
  });

  it("a long reason is cut to 1024 characters", () => {
    const verdict = judgeExternalCheck({ answer: { verdict: "fail", reason: "x".repeat(5000) } }, 60);
    expect(verdict.kind === "fail" && verdict.reason.length).toBe(1024);
    expect(externalCheckFailure("dcgm", "GPU 5")).toBe("external check dcgm failed: GPU 5");
  });
});

const rule = (steps: RuleInput["stages"][number]["steps"]): RuleInput => ({
  name: "r",
  description: "",
  readinessTimeoutSeconds: 0,
  stages: [{ name: "trays", componentTypes: ["COMPUTE"], maxParallel: 0, steps }],
});
const UPDATE = { action: "UPDATE_FIRMWARE" as const, timeoutSeconds: 0, sleepSeconds: 0 };
const health = (externalCheck?: string, externalCheckTimeoutSeconds?: number) => ({
  action: "CHECK_HEALTH" as const,
  timeoutSeconds: 0,
  sleepSeconds: 0,
  ...(externalCheck === undefined ? {} : { externalCheck }),
  ...(externalCheckTimeoutSeconds === undefined ? {} : { externalCheckTimeoutSeconds }),
});

describe("a rule's external check", () => {
  it("a CHECK_HEALTH step names one, with its timeout (0: the check's configured one)", () => {
    const validated = validateRule(rule([UPDATE, health("dcgm-diag", 1800)]));
    expect(validated.ok && validated.value.stages[0]?.steps[1]).toEqual({
      action: "CHECK_HEALTH",
      timeoutSeconds: 0,
      sleepSeconds: 0,
      externalCheck: { name: "dcgm-diag", timeoutSeconds: 1800 },
    });
    const none = validateRule(rule([UPDATE, health("")]));
    expect(none.ok && none.value.stages[0]?.steps[1]).toEqual({
      action: "CHECK_HEALTH",
      timeoutSeconds: 0,
      sleepSeconds: 0,
    });
  });

  it("every misuse at once, each at its field", () => {
    const validated = validateRule(
      rule([
        { ...UPDATE, externalCheck: "dcgm" },
        health("DCGM Diag"),
        health("dcgm", 86_401),
        health(undefined, 60),
      ]),
    );
    expect(validated.ok ? [] : validated.violations).toEqual([
      {
        field: "stages[0].steps[0].external_check",
        rule: "only a CHECK_HEALTH step hands the rack to an external check (got UPDATE_FIRMWARE)",
      },
      {
        field: "stages[0].steps[1].external_check",
        rule: `must be 1 to 63 lowercase letters, digits, '-' and '_', starting with a letter or digit (got "DCGM Diag")`,
      },
      {
        field: "stages[0].steps[2].external_check_timeout_seconds",
        rule: "must be at most 86400 (one day; got 86401)",
      },
      {
        field: "stages[0].steps[3].external_check_timeout_seconds",
        rule: "only with external_check (got 60)",
      },
    ]);
  });

  it("a name the deployment does not configure is refused at its field, naming those it does", () => {
    const validated = validateRule(rule([UPDATE, health("dcgm-diag"), health("burn-in")]));
    if (!validated.ok) throw new Error("valid rule refused");
    expect(unknownExternalChecks(validated.value, ["dcgm-diag"])).toEqual([
      {
        field: "stages[0].steps[2].external_check",
        rule: 'unknown external check "burn-in" (configured: dcgm-diag)',
      },
    ]);
    expect(unknownExternalChecks(validated.value, [])).toEqual([
      {
        field: "stages[0].steps[1].external_check",
        rule: 'unknown external check "dcgm-diag" (none is configured)',
      },
      {
        field: "stages[0].steps[2].external_check",
        rule: 'unknown external check "burn-in" (none is configured)',
      },
    ]);
  });
});

describe("the run's pause for an inconclusive check", () => {
  const said = { check: "dcgm", targetId: "t-1", rackId: "rack-a01", reason: "host 3 down" };
  const event = { type: "externalCheckInconclusive" as const, ...said };
  const message =
    "external check dcgm inconclusive on rack rack-a01: host 3 down; look at the rack, then resume the run or report the rack failed";

  it("a running run pauses with its own reason and an event naming the check; a resume lifts it", () => {
    const run = runFixture({ status: "RUNNING", reason: "NONE" });
    const result = reduceRun(run, event, 1_000);
    if (!result.ok) throw result.error;
    expect(externalCheckMessage(said)).toBe(message);
    expect([result.write, result.run.status, result.run.reason, result.run.statusMessage]).toEqual([
      true,
      "PAUSED",
      "EXTERNAL_CHECK_INCONCLUSIVE",
      message,
    ]);
    const after = { ...result.run, updatedAt: 1_000 };
    expect(historyEvents(run, after, event, 1_000).map((e) => [e.kind, e.message, e.detail])).toEqual([
      ["EXTERNAL_CHECK_INCONCLUSIVE", message, { type: "externalCheck", ...said }],
    ]);
    const resumed = reduceRun(after, { type: "resume" }, 2_000);
    expect(resumed.ok && [resumed.run.status, resumed.run.reason]).toEqual(["RUNNING", "NONE"]);
  });

  it("an operator's pause or a phase gate gives way to it; a closed window, an approval wait and an ended run do not", () => {
    for (const reason of ["OPERATOR_PAUSED", "PHASE_GATE"] as const) {
      const r = reduceRun(runFixture({ status: "PAUSED", reason }), event, 1_000);
      expect(r.ok && [r.write, r.run.reason], reason).toEqual([true, "EXTERNAL_CHECK_INCONCLUSIVE"]);
    }
    for (const [status, reason] of [
      ["PAUSED", "MAINTENANCE_WINDOW"],
      ["PAUSED", "AWAITING_APPROVAL"],
      ["COMPLETED", "NONE"],
      ["CANCELLED", "NONE"],
    ] as const) {
      const r = reduceRun(runFixture({ status, reason }), event, 1_000);
      expect(r.ok && r.write, `${status}/${reason}`).toBe(false);
    }
  });

  it("the same verdict again (a retried step) changes nothing; another rack's pauses anew, with its own message", () => {
    const paused = {
      ...runFixture({ status: "PAUSED", reason: "EXTERNAL_CHECK_INCONCLUSIVE" }),
      statusMessage: message,
    };
    const again = reduceRun(paused, event, 1_000);
    expect(again.ok && again.write).toBe(false);
    const other = reduceRun(paused, { ...event, rackId: "rack-a02" }, 1_000);
    expect(other.ok && [other.write, other.run.statusMessage]).toEqual([
      true,
      message.replace("rack-a01", "rack-a02"),
    ]);
  });
});

describe("the deployment's checks file (parseExternalChecks): every problem named, or the checks", () => {
  const LAMBDA = "arn:aws:lambda:us-east-1:111122223333:function:dcgm-diag";
  it.each([
    ["not JSON", "{", "must be a JSON object of checks by name: "],
    ["an array", "[]", "must be a JSON object of checks by name"],
    ["null", "null", "must be a JSON object of checks by name"],
    ["a bad name", `{"Bad Name": {"lambda": "${LAMBDA}"}}`, '"Bad Name": '],
    ["a check that is no object", '{"dcgm": 3}', "dcgm: must be an object with one of lambda, https"],
    [
      "an unknown field",
      `{"dcgm": {"lambda": "${LAMBDA}", "retries": 2}}`,
      "dcgm.retries: is not a known field",
    ],
    [
      "a command in AWS",
      `{"dcgm": {"lambda": "${LAMBDA}", "command": ["x"]}}`,
      "dcgm.command: a command check runs only in the local stack (in AWS: lambda or https)",
    ],
    ["no target", '{"dcgm": {"timeoutSeconds": 5}}', "dcgm: needs exactly one of lambda, https (got 0)"],
    [
      "two targets",
      `{"dcgm": {"lambda": "${LAMBDA}", "https": "https://x.example"}}`,
      "dcgm: needs exactly one of lambda, https (got 2)",
    ],
    [
      "a timeout out of range",
      `{"dcgm": {"lambda": "${LAMBDA}", "timeoutSeconds": 0}}`,
      "dcgm.timeoutSeconds: must be a whole number of seconds from 1 to 86400",
    ],
    ["not a Lambda ARN", '{"dcgm": {"lambda": "dcgm-diag"}}', "dcgm.lambda: must be a Lambda function ARN"],
    ["not a URL", '{"dcgm": {"https": "::"}}', "dcgm.https: must be an https:// URL without credentials"],
    [
      "a URL that is no text",
      '{"dcgm": {"https": 443}}',
      "dcgm.https: must be an https:// URL without credentials",
    ],
    ["plain http", '{"dcgm": {"https": "http://x.example"}}', "dcgm.https: must be an https:// URL"],
    [
      "a URL with credentials",
      '{"dcgm": {"https": "https://u:p@x.example"}}',
      "dcgm.https: must be an https:// URL without credentials",
    ],
  ])("AWS: %s is refused, named", (_what, text, problem) => {
    const parsed = parseExternalChecks(text, false);
    expect("problem" in parsed && parsed.problem).toContain(problem);
  });

  it.each([
    ["an empty command", '{"local": {"command": []}}'],
    ["an empty argument", '{"local": {"command": ["diag", ""]}}'],
    ["a command as text", '{"local": {"command": "diag --all"}}'],
  ])("local stack: %s is refused, named", (_what, text) => {
    expect(parseExternalChecks(text, true)).toEqual({
      problem:
        "local.command: must be a non-empty array of non-empty strings (the program, then its arguments)",
    });
  });

  it("every kind parses, the timeout defaulted where absent; in AWS a command is refused", () => {
    const text = JSON.stringify({
      dcgm: { lambda: LAMBDA },
      burnin: { https: "https://checks.example/burn-in", timeoutSeconds: 900 },
      local: { command: ["./check.sh", "--rack"] },
    });
    expect(parseExternalChecks(text, true)).toEqual({
      value: [
        { name: "dcgm", target: { kind: "lambda", functionArn: LAMBDA }, timeoutSeconds: 3600 },
        {
          name: "burnin",
          target: { kind: "https", url: "https://checks.example/burn-in" },
          timeoutSeconds: 900,
        },
        { name: "local", target: { kind: "command", argv: ["./check.sh", "--rack"] }, timeoutSeconds: 3600 },
      ],
    });
    expect(parseExternalChecks(text, false)).toMatchObject({
      problem: expect.stringContaining("local.command"),
    });
  });

  it("a wait that ended in an error with no name is the check's fail, its cause the reason", () => {
    expect(judgeExternalCheck({ error: { Cause: "GPU 3 missing" } }, 60)).toEqual({
      kind: "fail",
      reason: "GPU 3 missing",
    });
  });
});
