/**
 * One BMC request as the child task tracks it (its record, its derived id), and the pure rules the
 * steps apply to it: a component's verdict from its record, how long to wait before the next poll,
 * which credential a BMC gets.
 */
import type { BmcError } from "./bmc-protocol.js";
import { commandRequestId, queryAddress, verifyAddress } from "./command-addresses.js";
import type { ComponentType, FirmwareAuthentication } from "./model.js";
import { type CaughtError, componentLabel, type StepErrorName } from "./step-errors.js";

/** One command's request record: what SendUpdate/SendQueries wrote and what the BMC reported. */
export interface BmcRequestRecord {
  componentId: string;
  requestId: string;
  taskId: string;
  kind: "update" | "query";
  sentAt: number;
  deadline: number;
  publishedAt?: number;
  ackedAt?: number;
  /** Highest progress percent reported. */
  progress?: number;
  /**
   * An update's result (the first one stored; later ones are ignored). `subTargets`: v2's flashed
   * parts; `pendingVersion`: v3's version flashed but staged until a reset.
   */
  result?: ({ ok: true; version: string } | { ok: false; version: string; error: BmcError }) & {
    subTargets?: string[];
    pendingVersion?: string;
  };
  /** When the result was stored: one after the deadline came too late and does not count. */
  resultAt?: number;
  /**
   * A query's answer; `ready: false` (with `reason`) when the BMC says it is not ready. v3: a
   * version still `pendingVersion` (staged), and a reset's `error` when the BMC could not do it.
   */
  status?: {
    version: string;
    ready?: boolean;
    reason?: string;
    pendingVersion?: string;
    error?: BmcError;
    health?: string;
    healthReason?: string;
  };
}

export interface ComponentResult {
  componentId: string;
  ok: boolean;
  version?: string;
  /** An update that passed staged: `version` is pending, active only once its stage activates it. */
  staged?: boolean;
  error?: CaughtError;
}

/**
 * Preflight query ids: like update ids, derived, so a retried step re-asks with the same id.
 * `attempt` > 0 asks again (a BMC that said it was not ready, re-asked while the task waits).
 * The id names the task's query record and the component's entry (command-sets.ts).
 */
export function queryRequestId(taskId: string, componentId: string, attempt = 0): string {
  return commandRequestId(queryAddress(taskId, attempt), componentId);
}

/** The query id of a rule's verify step, in the task's verify record (command-sets.ts). */
export function stepQueryRequestId(
  taskId: string,
  componentId: string,
  stage: number,
  step: number,
  attempt: number,
): string {
  return commandRequestId(verifyAddress(taskId, stage, step, attempt), componentId);
}

/**
 * A verify step's verdict on one component from its query record, or "pending" while it may still
 * answer. VERIFY_REACHABILITY: any answer passes. VERIFY_VERSION (`expected` set): the answer must
 * be the component's target version.
 *   no answer past the deadline → BmcUnreachable `component c-1 (COMPUTE): verify-reachability: BMC
 *     did not answer within 60 s (unreachable)`
 *   answer 1.9.0, expected 2.0.0 → VersionMismatch `component c-1 (COMPUTE): verify-version: BMC
 *     runs 1.9.0, expected 2.0.0`
 */
export function queryVerdict(
  componentId: string,
  type: ComponentType,
  record: BmcRequestRecord | undefined,
  check: { step: QueryStepName; expected?: string; timeoutSeconds: number },
  deadline: number,
  now: number,
): ComponentResult | "pending" {
  const label = `${componentLabel(componentId, type)}: ${check.step}`;
  const fail = (name: StepErrorName, message: string): ComponentResult => ({
    componentId,
    ok: false,
    error: { Error: name, Cause: `${label}: ${message}` },
  });
  const answer = record?.status;
  if (answer !== undefined) {
    if (answer.error !== undefined) {
      return fail(
        "ActivationFailed",
        `BMC reported ${answer.error.code}: ${answer.error.message} (running ${answer.version})`,
      );
    }
    if (check.step === "check-health" && answer.health !== undefined) {
      const why = answer.healthReason === undefined ? "" : `: ${answer.healthReason}`;
      return fail("HealthCheckFailed", `BMC reports health ${answer.health}${why}`);
    }
    if (check.expected !== undefined && answer.version !== check.expected) {
      if (answer.pendingVersion === check.expected) return fail("NotActivated", notActive(answer));
      return fail("VersionMismatch", `BMC runs ${answer.version}, expected ${check.expected}`);
    }
    return { componentId, ok: true, version: answer.version };
  }
  if (now < (record?.deadline ?? deadline)) return "pending";
  return fail("BmcUnreachable", `BMC did not answer within ${check.timeoutSeconds} s (unreachable)`);
}

/** The steps a query-answered command serves, as they name themselves in a verdict's message. */
export type QueryStepName =
  | "verify-version"
  | "verify-reachability"
  | "reset-bmc"
  | "power-cycle-host"
  | "ac-cycle"
  | "wait-bring-up"
  | "check-health";

/** Why a staged version is not an upgrade: what the BMC runs and what waits for a reset. */
const notActive = (seen: { version: string; pendingVersion?: string }): string =>
  `BMC runs ${seen.version} with ${seen.pendingVersion} pending: flashed but not active`;

/** pollSeconds · 2^polls, capped by maxPollSeconds and by what is left until the deadline; ≥ 1. */
export function nextWaitSeconds(
  settings: { pollSeconds: number; maxPollSeconds: number },
  polls: number,
  deadline: number,
  now: number,
): number {
  const backoff = Math.min(settings.maxPollSeconds, settings.pollSeconds * 2 ** Math.min(polls, 30));
  const remaining = Math.ceil((deadline - now) / 1000);
  return Math.max(1, Math.min(backoff, remaining));
}

/** A command of a wave still without a verdict, as far as its entry tells where it is. */
export interface PendingCommand {
  sentAt: number;
  /** The last progress percent stored, and when it was reported. */
  progress?: number;
  progressAt?: number;
}

/**
 * Seconds until the wave's next check: the backoff (`nextWaitSeconds`), but never before the wave
 * can be done. A wave is done when its slowest command is, and a command that reported p % of its
 * flash t ms after it was sent ends near sentAt + t · 100 / p; so once a pending command has
 * reported progress, the check waits until the latest such estimate plus one base poll interval
 * (for the result to reach its record), instead of polling a 10-minute flash a dozen times. An
 * estimate already behind the backoff changes nothing; none goes past the deadline (the check
 * there decides the timeouts).
 *   poll 10 s, sent at 0, 25 % reported at 152 s, checked at 190 s: 608 + 10 − 190 → 428 s.
 */
export function nextCheckWaitSeconds(
  settings: { pollSeconds: number; maxPollSeconds: number },
  polls: number,
  deadline: number,
  now: number,
  pending: readonly PendingCommand[],
): number {
  const backoff = nextWaitSeconds(settings, polls, deadline, now);
  let done = Number.NEGATIVE_INFINITY;
  for (const c of pending) {
    if (c.progress === undefined || c.progressAt === undefined || c.progress <= 0) continue;
    done = Math.max(done, c.sentAt + ((c.progressAt - c.sentAt) * 100) / c.progress);
  }
  const untilDone = Math.ceil((done + settings.pollSeconds * 1000 - now) / 1000);
  const remaining = Math.ceil((deadline - now) / 1000);
  return Math.max(backoff, Math.min(untilDone, remaining));
}

/** A wave's wait for its wake-up lasts at least this many of the longest polls (it only guards a lost one). */
export const AWAIT_SAFETY_NET_POLLS = 5;

/**
 * AwaitWave's heartbeat (HeartbeatSecondsPath; in executions of the definitions before, its
 * timeout): how long it waits with nothing heard from the wave's BMCs before its check runs
 * anyway. The receiver wakes it when the wave's last result is stored and sends a heartbeat when
 * it stores an acknowledgement or progress, so this is only the net under a lost wake-up or a
 * silent wave: the check's own wait (`waitSeconds`), but at least AWAIT_SAFETY_NET_POLLS ×
 * maxPollSeconds, and never past the deadline (the check there decides the timeouts).
 *   poll 10 s, max 60 s, deadline in 1,800 s, check's wait 20 s → 300 s; deadline in 45 s → 45 s.
 */
export function awaitSeconds(
  settings: { maxPollSeconds: number },
  waitSeconds: number,
  deadline: number,
  now: number,
): number {
  const remaining = Math.ceil((deadline - now) / 1000);
  const net = Math.max(waitSeconds, settings.maxPollSeconds * AWAIT_SAFETY_NET_POLLS);
  return Math.max(1, Math.min(net, remaining));
}

/**
 * AwaitWave's timeout (TimeoutSecondsPath) in the definition with heartbeats: the wave's deadline,
 * so a wave its BMCs keep reporting on waits for its wake-up until then, and its check runs there
 * at the latest to decide the timeouts. Always longer than the heartbeat (`heartbeatSeconds`,
 * `awaitSeconds`), as Step Functions requires: when the deadline is nearer than the net (the
 * heartbeat is then the deadline), one second more.
 *   deadline in 1,800 s, heartbeat 300 s → 1,800 s; deadline in 45 s, heartbeat 45 s → 46 s.
 */
export function awaitTimeoutSeconds(heartbeatSeconds: number, deadline: number, now: number): number {
  const remaining = Math.ceil((deadline - now) / 1000);
  return Math.max(heartbeatSeconds + 1, remaining);
}

function sameParts(flashed: readonly string[] | undefined, asked: readonly string[]): boolean {
  return flashed !== undefined && flashed.length === asked.length && asked.every((p) => flashed.includes(p));
}

/** Which credential a component's BMC gets: the shared one, or its type's own. */
export function secretFor(auth: FirmwareAuthentication | undefined, type: ComponentType): string | undefined {
  if (auth === undefined) return undefined;
  if (auth.kind === "shared") return auth.secret;
  switch (type) {
    case "COMPUTE":
      return auth.compute;
    case "NVSWITCH":
      return auth.nvswitch;
    case "POWERSHELF":
      return auth.powershelf;
    default:
      return undefined;
  }
}

/**
 * One component's verdict from its update record, or "pending" while it may still report. A result
 * stored by the deadline decides at once (a later one came too late and counts for nothing);
 * without one, the component is pending until its deadline (the record's, else the wave's) and
 * then fails with what the record shows of the BMC:
 *   never acked → BmcUnreachable; acked, no progress → BmcTimeout (hung);
 *   some progress → BmcTimeout (disconnected).
 * e.g. a result `{ ok: true, version: "1.9.0" }` for target 2.0.0 → VersionMismatch,
 *   `component c-1 (COMPUTE): BMC reported success but runs 1.9.0, expected 2.0.0`.
 * With `subTargets` (protocol v2) a success must confirm exactly those parts: a BMC that flashed
 * others, or did not say (a v1 BMC that ignored them), fails the component with BmcUpdateFailed.
 * A success that staged the target (v3 `pendingVersion`, the old version still running) passes
 * only when `activatedLater` (its stage has an activation step that reads the version back):
 * else NotActivated `component c-1 (COMPUTE): BMC runs 1.0.0 with 2.0.0 pending: flashed but not
 * active (no activation step follows)`.
 */
export function verdict(
  componentId: string,
  type: ComponentType,
  record: BmcRequestRecord | undefined,
  targetVersion: string,
  settings: { updateTimeoutSeconds: number },
  deadline: number,
  now: number,
  subTargets?: readonly string[],
  activatedLater = false,
): ComponentResult | "pending" {
  const label = componentLabel(componentId, type);
  const fail = (name: StepErrorName, message: string): ComponentResult => ({
    componentId,
    ok: false,
    error: { Error: name, Cause: `${label}: ${message}` },
  });
  // A result counts if it was stored by the deadline: the check at the deadline and every later
  // reader of the record (the live report, the task's end: src/domain/live-report.ts) then agree.
  const deadlineAt = record?.deadline ?? deadline;
  const result = (record?.resultAt ?? Number.NEGATIVE_INFINITY) <= deadlineAt ? record?.result : undefined;
  if (result !== undefined) {
    if (!result.ok) {
      return fail(
        "BmcUpdateFailed",
        `BMC reported ${result.error.code}: ${result.error.message} (running ${result.version})`,
      );
    }
    if (result.version !== targetVersion && result.pendingVersion === targetVersion) {
      // Staged: passes only when a step of its stage activates it and reads the version back.
      if (!activatedLater) return fail("NotActivated", `${notActive(result)} (no activation step follows)`);
      return { componentId, ok: true, version: targetVersion, staged: true };
    }
    if (result.version !== targetVersion) {
      return fail(
        "VersionMismatch",
        `BMC reported success but runs ${result.version}, expected ${targetVersion}`,
      );
    }
    if (subTargets !== undefined && !sameParts(result.subTargets, subTargets)) {
      const flashed =
        result.subTargets === undefined
          ? "did not say which parts it flashed"
          : `flashed ${result.subTargets.join(", ")}`;
      return fail("BmcUpdateFailed", `BMC ${flashed}, asked for sub-targets ${subTargets.join(", ")}`);
    }
    return { componentId, ok: true, version: result.version };
  }
  if (now < deadlineAt) return "pending";
  const seconds = settings.updateTimeoutSeconds;
  if (record?.ackedAt === undefined) {
    // A BMC that speaks only protocol v1 refuses a command with sub-targets (v2) and stays silent.
    const hint =
      subTargets === undefined ? "" : "; sub-targets need BMC protocol v2, which a v1-only BMC ignores";
    return fail(
      "BmcUnreachable",
      `BMC never acknowledged the update command within ${seconds} s (unreachable${hint})`,
    );
  }
  if (record.progress === undefined) {
    return fail(
      "BmcTimeout",
      `BMC acknowledged the update but reported no progress and no result within ${seconds} s (hung)`,
    );
  }
  return fail(
    "BmcTimeout",
    `BMC reported ${record.progress}% progress, then fell silent: no result within ${seconds} s (disconnected)`,
  );
}
