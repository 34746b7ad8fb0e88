/**
 * The access policy the front enforces, read from a file (YAML or JSON: YAML parses both) and
 * checked by the pure core (src/domain/access-policy.ts), with every problem named:
 *
 *   policy.yaml: bindings[0].roles[0]: unknown role "operater" (roles: viewer, operator, approver, admin)
 *   policy.yaml: bindings[1].subjects[0]: must not be empty
 *
 * At start a bad policy is an `InputFileError` (the process exits non-zero). `reload()` reads the
 * file again: a good policy replaces the one in force at once (the next call is decided under
 * it); a bad one is refused, the old one stays, and the refusal is one log line and one
 * AccessPolicyRejected metric. The local stack reloads on SIGHUP; a front given a file polls it
 * every `pollMs`. The front the CDK app deploys reads an SSM parameter instead, through the same
 * holder (src/adapters/ssm/access-policy-parameter.ts).
 */
import { readFileSync, statSync } from "node:fs";
import { parseDocument } from "yaml";
import type { Logger, Metrics } from "../../app/observability.js";
import { type AccessPolicy, checkAccessPolicy } from "../../domain/access-policy.js";
import { type FileProblem, InputFileError, unreadable } from "../../domain/input-file.js";

/** Reads and checks the policy file; InputFileError with every problem otherwise. */
export function readAccessPolicyFile(path: string): AccessPolicy {
  return parseAccessPolicy(path, readText(path));
}

/** The file's text once it is a good policy (the CDK app passes the text on); InputFileError otherwise. */
export function readAccessPolicyText(path: string): string {
  const text = readText(path);
  parseAccessPolicy(path, text);
  return text;
}

function readText(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    throw new InputFileError(path, [unreadable(err)]);
  }
}

/** The policy of a file's text; InputFileError naming the file and every problem otherwise. */
export function parseAccessPolicy(file: string, text: string): AccessPolicy {
  const document = parseDocument(text, { prettyErrors: false, uniqueKeys: true });
  if (document.errors.length > 0) {
    const problems: FileProblem[] = document.errors.map((e) => ({
      path: "(root)",
      rule: `is not valid YAML or JSON (${e.message.split("\n")[0]})`,
    }));
    throw new InputFileError(file, problems);
  }
  const checked = checkAccessPolicy(document.toJS());
  if (!checked.ok) throw new InputFileError(file, checked.problems);
  return checked.policy;
}

export interface AccessPolicySource {
  readonly file: string;
  /** The policy in force. */
  current(): AccessPolicy;
  /** Reads the file again; true when the new policy is in force, false when it was refused. */
  reload(): boolean;
  /** Stops polling (a no-op without it). */
  close(): void;
}

/**
 * The policy of `file`, reloadable. Throws InputFileError when the file is bad at start.
 * `pollMs`: reload when the file's modification time or size changes (0 or absent: never polls).
 */
export function accessPolicySource(
  file: string,
  deps: { logger: Logger; metrics: Metrics; pollMs?: number },
): AccessPolicySource {
  const held = policyHolder(readAccessPolicyFile(file), deps);
  const reload = (): boolean => held.offer({ file }, () => readAccessPolicyFile(file));
  let timer: NodeJS.Timeout | undefined;
  if (deps.pollMs !== undefined && deps.pollMs > 0) {
    let seen = stamp(file);
    timer = setInterval(() => {
      const now = stamp(file);
      if (now === seen) return;
      seen = now;
      reload();
    }, deps.pollMs);
    timer.unref();
  }
  return {
    file,
    current: held.current,
    reload,
    close: () => clearInterval(timer),
  };
}

/**
 * The policy in force and the one way a new document replaces it, whatever it was read from (a
 * file, an SSM parameter): a good one is in force at once (one info line), a bad one is refused
 * (one error line, one AccessPolicyRejected) and the previous one stays. `origin`: the log
 * fields naming where the document came from.
 */
export function policyHolder(
  initial: AccessPolicy,
  deps: { logger: Logger; metrics: Metrics },
): { current(): AccessPolicy; offer(origin: Record<string, unknown>, read: () => AccessPolicy): boolean } {
  let policy = initial;
  return {
    current: () => policy,
    offer(origin, read) {
      try {
        policy = read();
        deps.logger.info("access policy reloaded", { ...origin, bindings: policy.bindings.length });
        return true;
      } catch (err) {
        // One line whatever the count of problems: where it came from and every problem, joined.
        const problems = err instanceof InputFileError ? err.message.split("\n").join("; ") : String(err);
        deps.logger.error("access policy reload refused; the previous policy stays in force", {
          ...origin,
          problems,
        });
        deps.metrics.add("AccessPolicyRejected", 1);
        deps.metrics.flush();
        return false;
      }
    },
  };
}

/** A policy given as a document (an environment variable): checked once, never changes. */
export function fixedAccessPolicy(name: string, text: string): AccessPolicySource {
  const policy = parseAccessPolicy(name, text);
  return { file: name, current: () => policy, reload: () => true, close: () => {} };
}

function stamp(file: string): string {
  try {
    const s = statSync(file);
    return `${s.mtimeMs}:${s.size}`;
  } catch {
    return "missing";
  }
}
