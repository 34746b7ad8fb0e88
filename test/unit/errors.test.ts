import { describe, expect, it } from "vitest";
import {
  CandidateLimitError,
  DeadlineExceededError,
  FailedPreconditionError,
  formatViolation,
  InvalidArgumentError,
  NotFoundError,
  PermissionDeniedError,
  StoreUnavailableError,
  UnauthenticatedError,
  ValidationError,
} from "../../src/domain/errors.js";

describe("errors: names, codes and messages", () => {
  it("a violation reads `field: rule`, or the rule alone when it has no field", () => {
    expect(formatViolation({ field: "name", rule: "name is required" })).toBe("name: name is required");
    expect(formatViolation({ field: "", rule: "operation run ID is required" })).toBe(
      "operation run ID is required",
    );
  });

  it("a ValidationError lists every violation, joined by '; ', as INVALID_ARGUMENT", () => {
    const error = new ValidationError([
      { field: "name", rule: "name is required" },
      { field: "configuration", rule: "configuration is required" },
    ]);
    expect(error).toMatchObject({ name: "ValidationError", code: "INVALID_ARGUMENT" });
    expect(error.message).toBe("name: name is required; configuration: configuration is required");
  });

  it.each([
    [new InvalidArgumentError("x"), "InvalidArgumentError", "INVALID_ARGUMENT", "x"],
    [new NotFoundError("y"), "NotFoundError", "NOT_FOUND", "y"],
    [new FailedPreconditionError("z"), "FailedPreconditionError", "FAILED_PRECONDITION", "z"],
    [new DeadlineExceededError("late"), "DeadlineExceededError", "DEADLINE_EXCEEDED", "late"],
    [new UnauthenticatedError("who"), "UnauthenticatedError", "UNAUTHENTICATED", "who"],
    [new PermissionDeniedError("no"), "PermissionDeniedError", "PERMISSION_DENIED", "no"],
    [
      new CandidateLimitError(100),
      "CandidateLimitError",
      "CANDIDATE_LIMIT",
      "operation run candidate scope exceeds target limit 100",
    ],
    [
      new StoreUnavailableError("unreachable"),
      "StoreUnavailableError",
      "UNAVAILABLE",
      "the data store is unreachable; retry later",
    ],
    [
      new StoreUnavailableError("throttled"),
      "StoreUnavailableError",
      "UNAVAILABLE",
      "the data store is throttling requests; retry later",
    ],
  ])("%s has a stable name and code", (error, name, code, message) => {
    expect(error).toMatchObject({ name, code, message });
  });

  it("a StoreUnavailableError keeps what the adapter saw as its cause, for logs only", () => {
    const seen = new Error("connect ECONNREFUSED 127.0.0.1:5000");
    expect(new StoreUnavailableError("unreachable", { cause: seen }).cause).toBe(seen);
    expect(new StoreUnavailableError("unreachable").cause).toBeUndefined();
  });
});
