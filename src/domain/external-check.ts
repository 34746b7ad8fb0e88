/**
 * External health checks: a site's own judgement of a rack after its firmware is active (a DCGM
 * diagnostic on its hosts, a burn-in), which a rule's CHECK_HEALTH step may name. The deployment
 * configures each check by name (a Lambda or an HTTPS endpoint in AWS, a command locally); the
 * child task hands it the rack and the components it upgraded with a Step Functions task token,
 * and the check sends its verdict back with that token (SendTaskSuccess), as JSON:
 *
 *   { "verdict": "pass" }
 *   { "verdict": "fail", "reason": "dcgmi diag -r 3: GPU 5 failed the memory test" }
 *   { "verdict": "inconclusive", "reason": "2 of 4 hosts unreachable" }
 *
 * What the task makes of it (`judgeExternalCheck`): pass goes on; fail ends the target FAILED
 * (HealthCheckFailed, with the check's reason); inconclusive completes the target and pauses its
 * run for a person (EXTERNAL_CHECK_INCONCLUSIVE). No verdict within the timeout is inconclusive,
 * and so is a check that could not be reached, or an answer that is no verdict: the task cannot
 * tell a broken rack from a broken check, so a person decides.
 */
import type { ComponentType } from "./model.js";

/** A check's name: what a rule names and the deployment configures. */
export const EXTERNAL_CHECK_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
export const EXTERNAL_CHECK_NAME_RULE =
  "must be 1 to 63 lowercase letters, digits, '-' and '_', starting with a letter or digit";

/** The default wait for a verdict when neither the rule nor the check's configuration says. */
export const DEFAULT_EXTERNAL_CHECK_TIMEOUT_SECONDS = 3600;

/** What the check is handed (the Lambda's event, the HTTPS body, the command's stdin). */
export interface ExternalCheckRequest {
  /** Send the verdict back with it: Step Functions SendTaskSuccess (SendTaskFailure: a fail). */
  taskToken: string;
  check: string;
  /** Stable for one task's one stage: a check handed the same id twice may answer once for both. */
  checkId: string;
  taskId: string;
  runId?: string;
  rackId: string;
  /** The rule's stage whose CHECK_HEALTH step hands it over. */
  stage: string;
  /** Every component the task has upgraded so far, with the version it now runs. */
  components: { id: string; type: ComponentType; version: string }[];
  /** The check answers within this many seconds or is taken as inconclusive. */
  timeoutSeconds: number;
  requestedAt: string;
}

export type ExternalCheckVerdict =
  | { kind: "pass" }
  | { kind: "fail"; reason: string }
  | { kind: "inconclusive"; reason: string };

/** The error the task's wait ends with when the check gave no verdict in time. */
export const CHECK_TIMEOUT_ERROR = "States.Timeout";
/** The error the task's hand-over raises when the check could not be reached. */
export const CHECK_UNAVAILABLE_ERROR = "ExternalCheckUnavailable";

const REASON_LIMIT = 1024;

const reasonOf = (value: unknown, otherwise: string): string => {
  const text = typeof value === "string" ? value.trim() : "";
  if (text === "") return otherwise;
  return text.length > REASON_LIMIT ? `${text.slice(0, REASON_LIMIT - 1)}…` : text;
};

/**
 * Errors of the wait itself, not the check's judgement: Step Functions' own (`States.*`), the
 * Lambda service's (`Lambda.*`), the hand-over's, a store outage's.
 */
const isWaitError = (name: string): boolean =>
  name.startsWith("States.") ||
  name.startsWith("Lambda.") ||
  name === CHECK_UNAVAILABLE_ERROR ||
  name === "StoreUnavailableError";

/**
 * The verdict from how the task's wait ended: `answer` the check's SendTaskSuccess output (an
 * object, or its JSON text), or `error` the wait's caught error (`{ Error, Cause }`, Cause as
 * text): the timeout, the hand-over or the wait failing (inconclusive), or the check's own
 * SendTaskFailure (a fail, its error and cause the reason).
 */
export function judgeExternalCheck(
  ended: { answer?: unknown; error?: { Error?: string; Cause?: string } },
  timeoutSeconds: number,
): ExternalCheckVerdict {
  const { error } = ended;
  if (error !== undefined) {
    if (error.Error === CHECK_TIMEOUT_ERROR)
      return { kind: "inconclusive", reason: `no verdict within ${timeoutSeconds} s` };
    const name = error.Error ?? "Error";
    if (isWaitError(name)) {
      return {
        kind: "inconclusive",
        reason: reasonOf(error.Cause, `the wait for the check failed: ${name}`),
      };
    }
    return { kind: "fail", reason: reasonOf(error.Cause, name) };
  }
  let answer = ended.answer;
  if (typeof answer === "string") {
    try {
      answer = JSON.parse(answer);
    } catch {
      return { kind: "inconclusive", reason: `the check answered no verdict: ${reasonOf(answer, "")}` };
    }
  }
  const said = (answer ?? {}) as { verdict?: unknown; reason?: unknown };
  switch (typeof said.verdict === "string" ? said.verdict.toLowerCase() : said.verdict) {
    case "pass":
      return { kind: "pass" };
    case "fail":
      return { kind: "fail", reason: reasonOf(said.reason, "the check gave no reason") };
    case "inconclusive":
      return { kind: "inconclusive", reason: reasonOf(said.reason, "the check gave no reason") };
    default:
      return {
        kind: "inconclusive",
        reason: `the check answered no verdict (pass, fail or inconclusive): ${reasonOf(JSON.stringify(answer ?? null), "")}`,
      };
  }
}

/** The task's failure message for a check that failed the rack. */
export const externalCheckFailure = (check: string, reason: string): string =>
  `external check ${check} failed: ${reason}`;

// ---------------------------------------------------------------------------------------------
// The deployment's configuration of its checks

/** Where a check runs: a Lambda (invoked asynchronously), an HTTPS endpoint (POST), a command (local stack). */
export type ExternalCheckTarget =
  | { kind: "lambda"; functionArn: string }
  | { kind: "https"; url: string }
  | { kind: "command"; argv: string[] };

export interface ExternalCheckConfig {
  name: string;
  target: ExternalCheckTarget;
  /** How long a verdict may take when the rule does not say. */
  timeoutSeconds: number;
}

const LAMBDA_ARN =
  /^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9_$-]+)?$/;

/**
 * The checks a deployment configures, from JSON text (ENV `FLOW_EXTERNAL_CHECKS`; locally also
 * `--external-checks`), every problem at once, each naming its place:
 *
 *   { "dcgm-diag": { "lambda": "arn:aws:lambda:eu-west-1:123456789012:function:dcgm-diag", "timeoutSeconds": 3600 },
 *     "burn-in":   { "https": "https://checks.example.com/burn-in" },
 *     "local":     { "command": ["node", "check.js"] } }
 *
 * Exactly one of `lambda`, `https`, `command` per check; `command` only where `allowCommand`
 * (the local stack); `timeoutSeconds` 1 to 86400, default an hour.
 */
export function parseExternalChecks(
  text: string,
  allowCommand: boolean,
): { value: ExternalCheckConfig[] } | { problem: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return { problem: `must be a JSON object of checks by name: ${(error as Error).message}` };
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
    return { problem: "must be a JSON object of checks by name" };
  const problems: string[] = [];
  const checks: ExternalCheckConfig[] = [];
  const kinds = allowCommand ? ["lambda", "https", "command"] : ["lambda", "https"];
  for (const [name, spec] of Object.entries(parsed as Record<string, unknown>)) {
    const at = (f?: string) => (f === undefined ? name : `${name}.${f}`);
    if (!EXTERNAL_CHECK_NAME.test(name))
      problems.push(`${JSON.stringify(name)}: ${EXTERNAL_CHECK_NAME_RULE}`);
    if (spec === null || typeof spec !== "object" || Array.isArray(spec)) {
      problems.push(`${at()}: must be an object with one of ${kinds.join(", ")}`);
      continue;
    }
    const s = spec as Record<string, unknown>;
    for (const key of Object.keys(s)) {
      if (![...kinds, "timeoutSeconds"].includes(key)) {
        problems.push(
          key === "command"
            ? `${at(key)}: a command check runs only in the local stack (in AWS: lambda or https)`
            : `${at(key)}: is not a known field (known: ${kinds.join(", ")}, timeoutSeconds)`,
        );
      }
    }
    const given = kinds.filter((k) => s[k] !== undefined);
    if (given.length !== 1) {
      problems.push(`${at()}: needs exactly one of ${kinds.join(", ")} (got ${given.length})`);
      continue;
    }
    const timeout = s.timeoutSeconds ?? DEFAULT_EXTERNAL_CHECK_TIMEOUT_SECONDS;
    if (typeof timeout !== "number" || !Number.isInteger(timeout) || timeout < 1 || timeout > 86_400)
      problems.push(`${at("timeoutSeconds")}: must be a whole number of seconds from 1 to 86400`);
    let target: ExternalCheckTarget | undefined;
    if (s.lambda !== undefined) {
      if (typeof s.lambda === "string" && LAMBDA_ARN.test(s.lambda))
        target = { kind: "lambda", functionArn: s.lambda };
      else
        problems.push(
          `${at("lambda")}: must be a Lambda function ARN (arn:aws:lambda:<region>:<account>:function:<name>)`,
        );
    } else if (s.https !== undefined) {
      let url: URL | undefined;
      try {
        url = typeof s.https === "string" ? new URL(s.https) : undefined;
      } catch {
        url = undefined;
      }
      if (url?.protocol === "https:" && url.username === "" && url.password === "")
        target = { kind: "https", url: url.toString() };
      else problems.push(`${at("https")}: must be an https:// URL without credentials`);
    } else {
      const argv = s.command;
      if (Array.isArray(argv) && argv.length > 0 && argv.every((a) => typeof a === "string" && a !== ""))
        target = { kind: "command", argv: argv as string[] };
      else
        problems.push(
          `${at("command")}: must be a non-empty array of non-empty strings (the program, then its arguments)`,
        );
    }
    if (target !== undefined && typeof timeout === "number")
      checks.push({ name, target, timeoutSeconds: timeout });
  }
  return problems.length > 0 ? { problem: problems.join(", ") } : { value: checks };
}
