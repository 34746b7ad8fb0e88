/**
 * May this caller make this call? The pure decision, from the access policy (access-policy.ts)
 * and the permission table (permissions.ts); the gRPC adapter asks it before any use case runs
 * (src/adapters/grpc/authorize.ts) and then, for calls on racks, asks `checkRacks` with the racks.
 *
 *   no verified identity (and no declared name the policy allows) → UNAUTHENTICATED
 *     "CreateOperationRun needs a verified client certificate; the caller has none (declared name "alice" is not proof)"
 *   identity without the permission → PERMISSION_DENIED
 *     "auditor may not operate operation runs; roles with it: operator, admin"
 *   permission, but racks outside every binding's scope → PERMISSION_DENIED
 *     "ops may not operate operation runs: 3 of 40 racks outside its scope: r1, r2, r3"
 */
import {
  type AccessPolicy,
  type Binding,
  bindingsOf,
  describeOutside,
  mayBeGranted,
  type Principal,
  type RackPlace,
  racksOutside,
  rolesWith,
} from "./access-policy.js";
import { type Permission, RPC_PERMISSIONS, type RpcPermission, rpcName } from "./permissions.js";

export type Decision =
  | {
      allowed: true;
      /** The permissions this call needed (operate, and override when it escalates). */
      permissions: Permission[];
      /** The caller's bindings, for the rack checks. */
      bindings: Binding[];
      rpc: RpcPermission;
    }
  | {
      allowed: false;
      code: "UNAUTHENTICATED" | "PERMISSION_DENIED";
      /** What the client is told (and the log line's reason). */
      message: string;
      /** The permission refused; absent for UNAUTHENTICATED. */
      permission?: Permission;
    };

/** How a principal is named in a denial: its common name, else its first SAN, else its declared name. */
export function principalName(who: Principal): string {
  if (!who.authenticated) return who.declaredName ?? "anonymous caller";
  return who.commonName ?? who.subjectAltNames[0] ?? "certificate without a name";
}

/**
 * The decision for `path` (the gRPC method path). `override` says whether this request escalates
 * to the override permission (its table entry says when; the adapter knows the request).
 */
export function decide(policy: AccessPolicy, who: Principal, path: string, override: boolean): Decision {
  const rpc = RPC_PERMISSIONS[path];
  const name = rpcName(path);
  if (rpc === undefined) {
    // Fail closed: an RPC without an entry is never served under a policy.
    return { allowed: false, code: "PERMISSION_DENIED", message: `${name} has no permission defined` };
  }
  if (rpc.permission === "anyone") return { allowed: true, permissions: [], bindings: [], rpc };
  if (!mayBeGranted(policy, who)) {
    const declared =
      who.declaredName === undefined
        ? ""
        : ` (declared name ${JSON.stringify(who.declaredName)} is not proof)`;
    return {
      allowed: false,
      code: "UNAUTHENTICATED",
      message: `${name} needs a verified client certificate; the caller has none${declared}`,
    };
  }
  const permissions: Permission[] = override ? [rpc.permission, "override"] : [rpc.permission];
  const bindings = bindingsOf(policy, who);
  for (const permission of permissions) {
    if (!bindings.some((b) => b.permissions.has(permission))) {
      // Never empty: admin holds every permission.
      const roles = rolesWith(policy, permission);
      const what = permission === "override" ? overrideWhat(rpc) : rpc.what;
      return {
        allowed: false,
        code: "PERMISSION_DENIED",
        permission,
        message: `${principalName(who)} may not ${permission} ${what}; roles with it: ${roles.join(", ")}`,
      };
    }
  }
  return { allowed: true, permissions, bindings, rpc };
}

function overrideWhat(rpc: RpcPermission): string {
  return rpc.override === "gate-resume"
    ? "(resume an operation run a safety gate or a conflict timeout paused)"
    : "(set override_readiness_check or override_version_check)";
}

/**
 * The message refusing racks outside the caller's scope, or undefined when every rack is covered
 * for every permission the call needed.
 */
export function checkRacks(
  who: Principal,
  decision: Extract<Decision, { allowed: true }>,
  racks: readonly RackPlace[],
): string | undefined {
  const outside = racksOutside(decision.bindings, decision.permissions, racks);
  if (outside.length === 0) return undefined;
  const permission = decision.permissions.join(" and ");
  return `${principalName(who)} may not ${permission} ${decision.rpc.what}: ${describeOutside(outside, racks.length)}`;
}
