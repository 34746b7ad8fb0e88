import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { status } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { grpcStatusFor, INTERNAL_ERROR_MESSAGE, toGrpcError } from "../../src/adapters/grpc/status.js";
import {
  CandidateLimitError,
  ERROR_CODES,
  type ErrorCode,
  FailedPreconditionError,
  FlowError,
  InvalidArgumentError,
  NotFoundError,
  StoreUnavailableError,
  ValidationError,
} from "../../src/domain/errors.js";

function recordingLogger() {
  const lines: { message: string; fields?: Record<string, unknown> }[] = [];
  return {
    lines,
    error: (message: string, fields?: Record<string, unknown>) => lines.push({ message, fields }),
  };
}

describe("grpc status: FlowError codes → gRPC statuses", () => {
  const TABLE: [ErrorCode, status][] = [
    ["INVALID_ARGUMENT", status.INVALID_ARGUMENT],
    ["NOT_FOUND", status.NOT_FOUND],
    ["FAILED_PRECONDITION", status.FAILED_PRECONDITION],
    ["ALREADY_EXISTS", status.ALREADY_EXISTS],
    ["CANDIDATE_LIMIT", status.INTERNAL],
    ["UNAVAILABLE", status.UNAVAILABLE],
    ["DEADLINE_EXCEEDED", status.DEADLINE_EXCEEDED],
    ["RESOURCE_EXHAUSTED", status.RESOURCE_EXHAUSTED],
    ["UNAUTHENTICATED", status.UNAUTHENTICATED],
    ["PERMISSION_DENIED", status.PERMISSION_DENIED],
    ["INTERNAL", status.INTERNAL],
  ];

  it("the table covers every error code", () => {
    expect(TABLE.map(([code]) => code).sort()).toEqual([...ERROR_CODES].sort());
  });

  it.each(TABLE)("%s → %i, message passed through unchanged", (code, expected) => {
    expect(grpcStatusFor(code)).toBe(expected);
    const logger = recordingLogger();
    expect(toGrpcError(new FlowError(code, `the ${code} text`), { method: "/v1.Flow/X", logger })).toEqual({
      code: expected,
      details: `the ${code} text`,
    });
    expect(logger.lines).toEqual([]);
  });

  it.each([
    [
      new ValidationError([{ field: "name", rule: "name is required" }]),
      status.INVALID_ARGUMENT,
      "name: name is required",
    ],
    [
      new InvalidArgumentError("operation run ID is required"),
      status.INVALID_ARGUMENT,
      "operation run ID is required",
    ],
    [new NotFoundError("operation run not found"), status.NOT_FOUND, "operation run not found"],
    [
      new FailedPreconditionError("operation run is terminal"),
      status.FAILED_PRECONDITION,
      "operation run is terminal",
    ],
    [new CandidateLimitError(100), status.INTERNAL, "operation run candidate scope exceeds target limit 100"],
    // The store adapter's typed error: retryable, and nothing of the SDK's text reaches the client.
    [
      new StoreUnavailableError("unreachable", { cause: new Error("connect ECONNREFUSED 127.0.0.1:5000") }),
      status.UNAVAILABLE,
      "the data store is unreachable; retry later",
    ],
    [
      new StoreUnavailableError("throttled"),
      status.UNAVAILABLE,
      "the data store is throttling requests; retry later",
    ],
  ])("%s → its status and its exact message", (err, code, details) => {
    expect(toGrpcError(err, { method: "m", logger: recordingLogger() })).toEqual({ code, details });
  });

  it("an unexpected error → INTERNAL 'internal error'; the detail is logged, not sent", () => {
    const logger = recordingLogger();
    const err = new TypeError("Cannot read properties of undefined (reading 'Item') at table flow-runs");
    const result = toGrpcError(err, { method: "/v1.Flow/GetOperationRun", logger });
    expect(result).toEqual({ code: status.INTERNAL, details: INTERNAL_ERROR_MESSAGE });
    expect(result.details).toBe("internal error");
    expect(logger.lines).toHaveLength(1);
    expect(logger.lines[0]?.message).toBe("unexpected error in gRPC handler");
    expect(logger.lines[0]?.fields).toMatchObject({
      method: "/v1.Flow/GetOperationRun",
      error: { name: "TypeError", message: err.message },
    });
  });

  it("a thrown non-Error value is logged as text and also becomes INTERNAL 'internal error'", () => {
    const logger = recordingLogger();
    expect(toGrpcError("just a string", { method: "m", logger })).toEqual({
      code: status.INTERNAL,
      details: "internal error",
    });
    expect(logger.lines[0]?.fields).toEqual({ method: "m", error: { value: "just a string" } });
  });

  it("an error that merely looks like a FlowError (code field, no class) is not trusted", () => {
    const impostor = Object.assign(new Error("ddb says no"), { code: "NOT_FOUND" });
    expect(toGrpcError(impostor, { method: "m", logger: recordingLogger() })).toEqual({
      code: status.INTERNAL,
      details: "internal error",
    });
  });
});

describe("grpc status: one status-mapping file", () => {
  it("no product file but status.ts names a gRPC status code (the rest throw FlowErrors)", () => {
    const files = execFileSync("git", ["ls-files", "src", "lambdas"], { encoding: "utf8" })
      .split("\n")
      .filter((f) => f.endsWith(".ts") && !f.startsWith("src/gen/") && f !== "src/adapters/grpc/status.ts");
    expect(files.length).toBeGreaterThan(50);
    const naming = files.filter((f) =>
      /\bstatus as \w+\b[^;]*from "@grpc\/grpc-js"|\b(grpc|GrpcStatus)\.status\b|\bGrpcStatus\.[A-Z_]+\b/.test(
        readFileSync(f, "utf8"),
      ),
    );
    expect(naming).toEqual([]);
  });
});
