import { status as GrpcStatus } from "@grpc/grpc-js";
import { InvalidArgumentError } from "commander";
import { checkClientRequestId } from "../src/domain/client-request.js";
import type * as pb from "../src/gen/flow/v1/flow.js";
import type { Action } from "./context.js";
import { UsageError } from "./errors.js";
import { PHASE_FLAGS, PHASE_SCOPE_FLAGS } from "./names.js";

export type Act = <A extends unknown[]>(fn: Action<A>) => (...args: unknown[]) => Promise<void>;

// ---------------------------------------------------------------------------------------------
// Argument parsers (commander reports their errors as usage errors, exit 1)

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function uuidArg(what: string, value: string): string {
  if (!UUID_RE.test(value.trim())) {
    throw new UsageError(
      `${what}: expected a UUID such as 4f6f1a9e-0000-4000-8000-000000000001 (got ${JSON.stringify(value)})`,
    );
  }
  return value.trim().toLowerCase();
}

export function positiveInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n <= 0) {
    throw new InvalidArgumentError("expected a positive whole number");
  }
  return n;
}

export function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n)) {
    throw new InvalidArgumentError("expected a whole number, 0 or more");
  }
  return n;
}

/**
 * `--expect 2` → expected_phase_index 1: flowctl counts phases from 1, the wire from 0. Phase 1 is
 * never the next phase, and 0 on the wire would mean "no check", so 1 is refused.
 */
export function expectedPhase(value: string): number {
  const n = positiveInt(value);
  if (n < 2)
    throw new InvalidArgumentError("phase 1 is the first phase, never the next one: expected 2 or more");
  return n - 1;
}

/** The service's rule (src/domain/client-request.ts), checked before anything is sent. */
export function requestIdArg(value: string): string {
  const violation = checkClientRequestId(value);
  if (violation !== undefined) throw new InvalidArgumentError(violation.rule);
  return value;
}

/** Failures after which a create may or may not have happened. */
export const OUTCOME_UNKNOWN: ReadonlySet<GrpcStatus> = new Set([
  GrpcStatus.DEADLINE_EXCEEDED,
  GrpcStatus.UNAVAILABLE,
]);

export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

export function enumArg<E extends number>(names: {
  parse(t: string): E | undefined;
  names: readonly string[];
}) {
  return (value: string, previous: E[] | undefined): E[] => {
    const parsed = names.parse(value);
    if (parsed === undefined) {
      throw new InvalidArgumentError(`expected one of ${names.names.map((n) => n.toLowerCase()).join(", ")}`);
    }
    return [...(previous ?? []), parsed];
  };
}

export function pagination(o: { limit?: number; offset?: number }): pb.Pagination | undefined {
  return o.limit === undefined && o.offset === undefined
    ? undefined
    : { offset: o.offset ?? 0, limit: o.limit ?? 0 };
}

export function pageFooter(shown: number, offset: number, total: number, noun: string): string {
  if (total === 0) return `no ${noun}`;
  if (shown === 0) return `no ${noun} at offset ${offset} (${total} in all)`;
  return `${offset + 1}-${offset + shown} of ${total} ${noun}${offset + shown < total ? " (more with --offset)" : ""}`;
}

/** `--phase` (default all-visible), or the older `--phase-scope`; both at once is a mistake. */
export function phaseScopeOf(o: { phase?: string; phaseScope?: string }): pb.OperationRunTargetPhaseScope {
  if (o.phase !== undefined && o.phaseScope !== undefined) {
    throw new UsageError(
      "--phase and --phase-scope: give one (--phase-scope is the older spelling of --phase)",
    );
  }
  const [flag, names, value] =
    o.phaseScope === undefined
      ? (["--phase", PHASE_FLAGS, o.phase ?? "all-visible"] as const)
      : (["--phase-scope", PHASE_SCOPE_FLAGS, o.phaseScope] as const);
  const scope = names.parse(value);
  if (scope === undefined) {
    throw new UsageError(`${flag}: expected one of ${names.names.join(", ")} (got ${JSON.stringify(value)})`);
  }
  return scope;
}

export function short(id: string | undefined): string {
  return id ?? "";
}

// ---------------------------------------------------------------------------------------------
// run
