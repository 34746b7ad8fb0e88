/**
 * Typed errors with a stable `name` and `code`. `instanceof` does not survive Lambda → Step
 * Functions → gRPC, and Step Functions matches Retry/Catch on the error name, so the names are part
 * of the contract. `src/adapters/grpc/status.ts` maps `code` to a gRPC status in one switch.
 */

export const ERROR_CODES = [
  "INVALID_ARGUMENT",
  "NOT_FOUND",
  "FAILED_PRECONDITION",
  "ALREADY_EXISTS",
  "CANDIDATE_LIMIT",
  "UNAVAILABLE",
  "DEADLINE_EXCEEDED",
  "RESOURCE_EXHAUSTED",
  "UNAUTHENTICATED",
  "PERMISSION_DENIED",
  "INTERNAL",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export interface FieldViolation {
  /** Proto field path, e.g. `configuration.selector.percentage.percentage`. */
  field: string;
  /** The rule, as a sentence fragment: `must be between 1 and 100 (got 0)`. */
  rule: string;
}

/** A validated value, or every rule it breaks (all at once, each with its field path). */
export type Validated<T> = { ok: true; value: T } | { ok: false; violations: FieldViolation[] };

export class FlowError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "FlowError";
  }
}

/** Bad input. The message lists every violation as `field: rule`, joined by `; `. */
export class ValidationError extends FlowError {
  constructor(readonly violations: readonly FieldViolation[]) {
    super("INVALID_ARGUMENT", violations.map(formatViolation).join("; "));
    this.name = "ValidationError";
  }
}

/** An argument error whose message is fixed by the reference (e.g. an empty target plan). */
export class InvalidArgumentError extends FlowError {
  constructor(message: string) {
    super("INVALID_ARGUMENT", message);
    this.name = "InvalidArgumentError";
  }
}

export class NotFoundError extends FlowError {
  constructor(message: string) {
    super("NOT_FOUND", message);
    this.name = "NotFoundError";
  }
}

export class FailedPreconditionError extends FlowError {
  constructor(message: string) {
    super("FAILED_PRECONDITION", message);
    this.name = "FailedPreconditionError";
  }
}

/** The 100-target candidate limit; the reference returns gRPC Internal for it. */
export class CandidateLimitError extends FlowError {
  constructor(readonly limit: number) {
    super("CANDIDATE_LIMIT", `operation run candidate scope exceeds target limit ${limit}`);
    this.name = "CandidateLimitError";
  }
}

/**
 * The caller's deadline passed (or it went away) before the work was committed, so nothing was:
 * a create checks right before its commit and abandons the run rather than write one nobody hears of.
 */
export class DeadlineExceededError extends FlowError {
  constructor(message: string) {
    super("DEADLINE_EXCEEDED", message);
    this.name = "DeadlineExceededError";
  }
}

/**
 * The service is at the most work it admits at once and did not start the call: retryable with
 * backoff, answered RESOURCE_EXHAUSTED.
 */
export class OverloadedError extends FlowError {
  constructor(message: string) {
    super("RESOURCE_EXHAUSTED", message);
    this.name = "OverloadedError";
  }
}

/** The call needs a verified identity (a client certificate) and came without one. */
export class UnauthenticatedError extends FlowError {
  constructor(message: string) {
    super("UNAUTHENTICATED", message);
    this.name = "UnauthenticatedError";
  }
}

/** The caller is known but may not do this (src/domain/authorization.ts words the message). */
export class PermissionDeniedError extends FlowError {
  constructor(message: string) {
    super("PERMISSION_DENIED", message);
    this.name = "PermissionDeniedError";
  }
}

export function formatViolation(v: FieldViolation): string {
  return v.field ? `${v.field}: ${v.rule}` : v.rule;
}

/**
 * The data store cannot be reached, or keeps throttling after the client's own retries: raised at
 * the store adapter's boundary (src/adapters/dynamodb/db.ts), answered UNAVAILABLE (retryable),
 * never INTERNAL. The message is fixed (no endpoint, table or SDK text reaches a client); the
 * adapter's error is the `cause`, for logs.
 */
export class StoreUnavailableError extends FlowError {
  constructor(
    readonly reason: "unreachable" | "throttled",
    options?: { cause?: unknown },
  ) {
    super(
      "UNAVAILABLE",
      reason === "unreachable"
        ? "the data store is unreachable; retry later"
        : "the data store is throttling requests; retry later",
    );
    this.name = "StoreUnavailableError";
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}
