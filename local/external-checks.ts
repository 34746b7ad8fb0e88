/**
 * The local stack's external health checks (src/domain/external-check.ts): a command, started
 * per check request with the request as JSON on its stdin (`taskToken`, `rackId`, `components`…).
 * Its verdict is the last line of its stdout that is a JSON object with a `verdict`:
 *
 *   {"verdict": "pass"}
 *   {"verdict": "fail", "reason": "dcgmi diag: GPU 5 failed the memory test"}
 *   {"verdict": "inconclusive", "reason": "host 3 unreachable"}
 *
 * sent to the waiting task as the local SendTaskSuccess. A command that exits without one is
 * inconclusive (its exit code and the end of its stderr are the reason); one still running a second
 * after the check's timeout is killed (KILL_GRACE_MS: the task's wait, armed just after the command
 * started, has ended as inconclusive by then, so the kill's own verdict reaches no one). HTTPS checks go
 * through the product's runner (src/adapters/external-checks/runner.ts); a Lambda check needs AWS.
 */
import { spawn } from "node:child_process";
import type { ExternalCheckRunner } from "../src/app/ports.js";
import type { ExternalCheckConfig, ExternalCheckRequest } from "../src/domain/external-check.js";

const OUTPUT_LIMIT = 64 * 1024;
/**
 * How long past the check's timeout a command may run before it is killed. The task's wait times
 * out on its own timer, armed after the command was spawned: a kill at the timeout itself could
 * come first on a busy machine, and the wait would end with "ended (SIGKILL) without a verdict"
 * instead of "no verdict within N s".
 */
const KILL_GRACE_MS = 1_000;

export interface LocalTaskTokens {
  sendTaskSuccess(token: string, output: unknown): Promise<void>;
}

export class LocalCommandChecks implements ExternalCheckRunner {
  constructor(
    private readonly tokens: LocalTaskTokens,
    private readonly others: ExternalCheckRunner | undefined,
    private readonly log: (line: string) => void = () => {},
  ) {}

  async start(check: ExternalCheckConfig, request: ExternalCheckRequest): Promise<void> {
    const target = check.target;
    if (target.kind !== "command") {
      if (this.others === undefined) throw new Error(`a ${target.kind} check needs AWS`);
      return this.others.start(check, request);
    }
    const [program, ...args] = target.argv as [string, ...string[]];
    const child = spawn(program, args, { stdio: ["pipe", "pipe", "pipe"] });
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", reject);
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      if (stdout.length < OUTPUT_LIMIT) stdout += chunk.toString("utf8");
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString("utf8")).slice(-OUTPUT_LIMIT);
    });
    child.stdin.on("error", () => {}); // a command that does not read its stdin
    child.stdin.end(`${JSON.stringify(request)}\n`);
    const timer = setTimeout(() => child.kill("SIGKILL"), request.timeoutSeconds * 1000 + KILL_GRACE_MS);
    timer.unref();
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      const verdict = verdictOf(stdout) ?? {
        verdict: "inconclusive",
        reason: `check command ${program} ended (${signal ?? `exit ${code}`}) without a verdict${tail(stderr)}`,
      };
      this.log(`external check ${check.name} on rack ${request.rackId}: ${JSON.stringify(verdict)}`);
      void this.tokens.sendTaskSuccess(request.taskToken, verdict);
    });
  }
}

/** The last stdout line that is a JSON object with a `verdict`. */
function verdictOf(stdout: string): Record<string, unknown> | undefined {
  const lines = stdout.split("\n").reverse();
  for (const line of lines) {
    const text = line.trim();
    if (!text.startsWith("{")) continue;
    try {
      const parsed = JSON.parse(text) as Record<string, unknown>;
      if (parsed !== null && typeof parsed === "object" && "verdict" in parsed) return parsed;
    } catch {
      // not JSON: the command's own output
    }
  }
  return undefined;
}

const tail = (stderr: string): string => {
  const last = stderr.trim().split("\n").at(-1)?.trim() ?? "";
  return last === "" ? "" : `: ${last.slice(0, 300)}`;
};
