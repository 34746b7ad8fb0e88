/**
 * The audit line of a call that changes something: every RPC whose permission is not `read` (or
 * `anyone`) in the permission table (src/domain/permissions.ts) is logged once it is answered,
 * with who called, how the caller was known, the RPC, the status code it got and the run or task
 * it named:
 *
 *   audit actor=ops authenticated=true source=CLIENT_CERTIFICATE method=/v1.Flow/CancelTask code=OK taskId=…
 *
 * Runs also record their callers in their history; tasks, inventory, baselines, readiness, rules
 * and images have this line (and the image catalog its uploader). A caller that cannot be
 * identified (a malformed x-flow-actor) is logged as such; nothing here fails a call.
 */
import type { Logger } from "../../app/observability.js";
import type { Actor } from "../../domain/actor.js";
import { RPC_PERMISSIONS } from "../../domain/permissions.js";

/** Whether `path` changes something: its permission is operate, override, approve or administer. */
export function mutates(path: string): boolean {
  const permission = RPC_PERMISSIONS[path]?.permission;
  return permission !== undefined && permission !== "read" && permission !== "anyone";
}

/** `request.id.id` or `request.taskId.id`, when the request names a run or a task. */
function subjectOf(request: unknown): Record<string, string> {
  const r = request as { id?: { id?: unknown }; taskId?: { id?: unknown } } | null;
  if (typeof r?.id?.id === "string" && r.id.id !== "") return { runId: r.id.id };
  if (typeof r?.taskId?.id === "string" && r.taskId.id !== "") return { taskId: r.taskId.id };
  return {};
}

export function auditCall(
  logger: Pick<Logger, "info">,
  path: string,
  request: unknown,
  who: () => Actor,
  /** The call's outcome by name (status.ts `statusName`). */
  outcome: string,
): void {
  if (!mutates(path)) return;
  let caller: Record<string, unknown>;
  try {
    const actor = who();
    caller = {
      actor: actor.name === "" ? "anonymous" : actor.name,
      authenticated: actor.authenticated,
      source: actor.source,
      ...(actor.declaredName === undefined ? {} : { declaredName: actor.declaredName }),
      ...(actor.issuer === undefined ? {} : { issuer: actor.issuer }),
    };
  } catch {
    caller = { actor: "unidentifiable", authenticated: false };
  }
  logger.info("audit", { ...caller, method: path, code: outcome, ...subjectOf(request) });
}
