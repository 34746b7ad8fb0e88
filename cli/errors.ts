/**
 * Exit codes scripts can rely on, and error messages that say what to fix.
 *
 *   0        success (for `run watch`: the run COMPLETED)
 *   1        usage or local validation: a bad flag, an unreadable or invalid file; nothing was sent
 *   2        `run watch`: the run ended FAILED, COMPLETED_WITH_FAILURES or CANCELLED
 *   3        `run watch`: the run is PAUSED (safety gate, phase gate, operator, conflict timeout)
 *   4        an AWS call failed (`agent provision`: which step and what AWS said)
 *   10 + N   the service answered with gRPC status N: 13 INVALID_ARGUMENT, 15 NOT_FOUND,
 *            19 FAILED_PRECONDITION, 23 INTERNAL, 24 UNAVAILABLE (not reachable), 14 DEADLINE_EXCEEDED,
 *            18 RESOURCE_EXHAUSTED (busy), 26 UNAUTHENTICATED... (the table in docs/cli.md lists them all)
 *   130      interrupted (Ctrl-C)
 */
import { status as GrpcStatus, type ServiceError } from "@grpc/grpc-js";
import { errorDetailsForPeople } from "./phase-numbers.js";

export const EXIT = {
  OK: 0,
  USAGE: 1,
  RUN_ENDED_BADLY: 2,
  RUN_PAUSED: 3,
  AWS_FAILED: 4,
  GRPC_BASE: 10,
  INTERRUPTED: 130,
} as const;

/** A mistake on the command line or in a local file, found before anything was sent. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** A command's deliberate non-zero result (watch's verdict), with nothing more to print. */
export class ExitWith extends Error {
  constructor(readonly exitCode: number) {
    super(`exit ${exitCode}`);
    this.name = "ExitWith";
  }
}

export function isServiceError(err: unknown): err is ServiceError {
  return (
    err instanceof Error &&
    typeof (err as Partial<ServiceError>).code === "number" &&
    "details" in err &&
    "metadata" in err
  );
}

export function exitCodeForStatus(code: GrpcStatus): number {
  return EXIT.GRPC_BASE + code;
}

/** `INVALID_ARGUMENT` for 3: the name scripts and operators know the status by. */
export function statusName(code: GrpcStatus): string {
  return GrpcStatus[code] ?? `status ${code}`;
}

export interface ErrorContext {
  endpoint: string;
  /** Whether flowctl connected with TLS, to tell a TLS mismatch apart from a stopped service. */
  tls?: boolean;
  /** The RPC that failed, for messages such as UNIMPLEMENTED. */
  method?: string;
}

/**
 * Where to look up what the service did not find, by the kind its message names (the messages of
 * src/app/runs.ts, src/app/child-task/task-service.ts and the planner's target resolution).
 */
export function notFoundHint(details: string): string {
  if (/operation run not found/.test(details))
    return "check the run ID: `flowctl run list` shows existing runs";
  if (/^task not found/.test(details)) return "check the task ID: `flowctl task list` shows existing tasks";
  if (/\bcomponent .*not found/.test(details)) {
    return "check the component: `flowctl inventory list -o yaml` shows each rack's components with their IDs and external IDs";
  }
  if (/\b(rack|nvl domain) .*not found/.test(details)) {
    return "check the rack: `flowctl inventory list` shows each rack's ID, name, external ID and NVL domain";
  }
  return "check the ID: `flowctl run list`, `flowctl task list` and `flowctl inventory list` show existing ones";
}

/**
 * The lines to print for a service error. An INVALID_ARGUMENT lists each `field: rule` on its own
 * line (the service joins them with `; `); NOT_FOUND says which list shows what was not found;
 * UNAVAILABLE says how to start the local stack.
 */
export function describeServiceError(err: ServiceError, ctx: ErrorContext): string[] {
  const name = statusName(err.code);
  // grpc-js details can span lines and end in an empty "Resolution note": one tidy line instead.
  const details = errorDetailsForPeople(
    (err.details || err.message)
      .replace(/\.?\s*Resolution note:\s*$/, "")
      .replace(/\s+/g, " ")
      .trim(),
  );
  switch (err.code) {
    case GrpcStatus.INVALID_ARGUMENT: {
      const problems = details.split("; ").filter((p) => p.trim() !== "");
      return [`error: the service rejected the request (${name}):`, ...problems.map((p) => `  ${p}`)];
    }
    case GrpcStatus.NOT_FOUND:
      return [`error: ${details} (${name})`, `  ${notFoundHint(details)}`];
    case GrpcStatus.FAILED_PRECONDITION:
      return [
        `error: ${details} (${name})`,
        "  the current state does not allow this; `flowctl run get ID` shows the state and its message",
      ];
    case GrpcStatus.UNAVAILABLE:
      if (/SSL|TLS|certificate/i.test(details)) {
        return [
          `error: TLS with ${ctx.endpoint} failed (${name}: ${details})`,
          ctx.tls === true
            ? "  does the service speak TLS? Drop --tls/--ca/--cert/--key for a plaintext service (the local stack is plaintext); check --ca for a private CA"
            : "  the service may require TLS: add --tls (and --ca FILE for a private CA)",
        ];
      }
      return [
        `error: cannot reach the Flow service at ${ctx.endpoint} (${name}: ${details})`,
        "  is it running? Start the local stack with `npm start` (it listens on 127.0.0.1:50051),",
        "  or point flowctl at the service with --endpoint HOST:PORT or FLOW_ENDPOINT;",
        "  if the service speaks TLS, add --tls (and --ca FILE for a private CA)",
      ];
    case GrpcStatus.RESOURCE_EXHAUSTED:
      return [
        `error: ${details} (${name})`,
        "  the service is busy and did not start the call; try again in a moment",
      ];
    case GrpcStatus.DEADLINE_EXCEEDED:
      return [
        `error: no answer from ${ctx.endpoint} in time (${name})`,
        "  the service may be overloaded or unreachable; raise --timeout or try again",
      ];
    case GrpcStatus.UNIMPLEMENTED:
      return [
        `error: the service at ${ctx.endpoint} does not implement ${ctx.method ?? "this call"} (${name})`,
        "  it may be an older or a different Flow service (--dry-run needs the PlanOperationRun extension)",
      ];
    case GrpcStatus.UNAUTHENTICATED:
    case GrpcStatus.PERMISSION_DENIED:
      return [
        `error: ${details} (${name})`,
        "  check the client certificate (--cert, --key) and the CA (--ca)",
      ];
    case GrpcStatus.INTERNAL:
      if (details.includes("candidate scope exceeds target limit")) {
        return [
          `error: ${details} (${name})`,
          "  a run covers at most 100 candidate racks: narrow operation.upgradeFirmware.targets or operation.defaultScope",
        ];
      }
      return [`error: ${details} (${name})`, "  the service failed; its log has the detail"];
    default:
      return [`error: ${details} (${name})`];
  }
}
