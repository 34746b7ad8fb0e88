/**
 * Access control, enforced in one place: the unary wrapper (server.ts) asks `authorizeCall` after
 * decoding a request and before any use case runs. Without a policy the front is open (every call
 * allowed, as before); with one:
 *
 *   1. the caller's permission for the RPC (src/domain/permissions.ts), from its verified identity
 *      → UNAUTHENTICATED or PERMISSION_DENIED before anything is read;
 *   2. a call on a run or a task: its racks are read (src/app/access.ts) and must all lie in the
 *      scope of a binding with the permission; resuming a run a safety gate or a conflict timeout
 *      paused, and a request that sets override_readiness_check or override_version_check, need
 *      `override` too;
 *   3. a create or a firmware task: the racks are only known once the use case has planned them,
 *      so the answer carries `permitRacks`, which the use case calls with the racks it is about to
 *      freeze, before it writes anything.
 *
 * Every denial is one log line ("access denied", with the actor, the RPC, the code and the reason)
 * and one AccessDenied metric; a denial of a call on an existing run (pause, resume, advance,
 * cancel, approve), whether for want of an identity, a permission or a scope, is also an
 * ACCESS_DENIED event in that run's history, before the caller is answered.
 */
import type { AccessLookups } from "../../app/access.js";
import { errorText, type Logger, type Metrics } from "../../app/observability.js";
import type { AccessPolicy, Principal, RackPlace } from "../../domain/access-policy.js";
import type { Actor } from "../../domain/actor.js";
import { checkRacks, type Decision, decide, principalName } from "../../domain/authorization.js";
import { PermissionDeniedError, UnauthenticatedError } from "../../domain/errors.js";
import { RPC_PERMISSIONS, rpcName } from "../../domain/permissions.js";

export interface AccessControl {
  /** The policy in force now (a reload swaps it); undefined: the front is open. */
  policy(): AccessPolicy | undefined;
  lookups: AccessLookups;
  logger: Logger;
  metrics: Metrics;
}

/** Called by a create or a firmware task with the racks it plans; throws PermissionDenied. */
export type RackPermit = (racks: readonly RackPlace[]) => void;

/** Run reasons whose resume lifts a safety decision, and so needs `override`. */
const GATE_REASONS: ReadonlySet<string> = new Set(["SAFETY_GATE", "CONFLICT_RETRY_TIMEOUT"]);

/**
 * Allows the call (returning the rack check a create or a firmware task makes with its plan), or
 * throws UnauthenticatedError / PermissionDeniedError after logging and counting the denial.
 */
export async function authorizeCall(
  access: AccessControl,
  path: string,
  request: unknown,
  who: Principal,
  /** The caller as the run history records it (a denial on a run is recorded with it). */
  actor?: Actor,
): Promise<RackPermit | undefined> {
  const policy = access.policy();
  if (policy === undefined) return undefined;
  const entry = RPC_PERMISSIONS[path];
  const deny = (code: "UNAUTHENTICATED" | "PERMISSION_DENIED", message: string, runId?: string): never => {
    access.logger.warn("access denied", {
      actor: principalName(who),
      authenticated: who.authenticated,
      method: path,
      code,
      reason: message,
      ...(runId === undefined ? {} : { runId }),
      // The same name from two CAs is two callers: the issuer tells them apart.
      ...(who.issuer === undefined ? {} : { issuer: who.issuer }),
    });
    access.metrics.add("AccessDenied", 1);
    access.metrics.flush();
    throw code === "UNAUTHENTICATED" ? new UnauthenticatedError(message) : new PermissionDeniedError(message);
  };
  const allowedOrDeny = (decision: Decision, runId?: string) => {
    if (!decision.allowed) return deny(decision.code, decision.message, runId);
    return decision;
  };
  /** A denial of a call on a run: recorded in its history first (a failure to record is logged). */
  const denyOnRun = async (
    code: "UNAUTHENTICATED" | "PERMISSION_DENIED",
    message: string,
    runId: string,
  ): Promise<never> => {
    if (actor !== undefined) {
      try {
        await access.lookups.recordDenial(runId, actor, { rpc: rpcName(path), code, reason: message });
      } catch (error) {
        access.logger.warn("could not record an access denial in the run history", {
          runId,
          method: path,
          error: errorText(error),
        });
      }
    }
    return deny(code, message, runId);
  };

  if (entry?.target === "run") {
    // A call on a run: every denial is recorded in the run's history too.
    const runId = idOf(request, "id");
    const first = decide(policy, who, path, false);
    if (!first.allowed) {
      if (runId === undefined) return deny(first.code, first.message);
      return denyOnRun(first.code, first.message, runId);
    }
    const run = runId === undefined ? undefined : await access.lookups.runRacks(runId);
    // Unknown or malformed: the use case answers NotFound or InvalidArgument.
    if (run === undefined || runId === undefined) return undefined;
    const gateResume = entry.override === "gate-resume" && GATE_REASONS.has(run.reason);
    const decision = gateResume ? decide(policy, who, path, true) : first;
    if (!decision.allowed) return denyOnRun(decision.code, decision.message, runId);
    const outside = checkRacks(who, decision, run.racks);
    if (outside !== undefined) await denyOnRun("PERMISSION_DENIED", outside, runId);
    return undefined;
  }

  // The permission first: nothing is read for a caller who may not make the call at all.
  const base = allowedOrDeny(decide(policy, who, path, false));
  const overridesChecks = entry?.override === "checks" && setsOverride(request);
  switch (entry?.target) {
    case "task": {
      const taskId = idOf(request, "taskId");
      const racks = taskId === undefined ? undefined : await access.lookups.taskRacks(taskId);
      if (racks === undefined) return undefined;
      const outside = checkRacks(who, base, racks);
      if (outside !== undefined) deny("PERMISSION_DENIED", outside);
      return undefined;
    }
    case "planned-racks": {
      const decision = overridesChecks ? allowedOrDeny(decide(policy, who, path, true)) : base;
      return (racks) => {
        const outside = checkRacks(who, decision, racks);
        if (outside !== undefined) deny("PERMISSION_DENIED", outside);
      };
    }
    default:
      return undefined;
  }
}

/** `request[field].id` when it is a string (the UUID wrapper of the Flow API). */
function idOf(request: unknown, field: string): string | undefined {
  const wrapper = (request as Record<string, unknown> | null)?.[field] as { id?: unknown } | undefined;
  return typeof wrapper?.id === "string" && wrapper.id !== "" ? wrapper.id : undefined;
}

/**
 * Whether the request sets override_readiness_check or override_version_check: on an
 * UpgradeFirmwareRequest itself, or on the one a CreateOperationRunRequest's operation holds.
 */
function setsOverride(request: unknown): boolean {
  const r = request as {
    overrideReadinessCheck?: boolean;
    overrideVersionCheck?: boolean;
    configuration?: { operation?: { operation?: { $case: string; value: unknown } } };
  };
  const firmware = r.configuration?.operation?.operation?.value as typeof r | undefined;
  const flags = (x: typeof r | undefined) =>
    x?.overrideReadinessCheck === true || x?.overrideVersionCheck === true;
  return flags(r) || flags(firmware);
}
