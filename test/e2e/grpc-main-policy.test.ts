/**
 * The Fargate front's process (src/service/grpc-main.ts) given an access policy parameter it
 * cannot read (moto's SSM has no such parameter): it does not start, exit 1 and one log line
 * naming the parameter; secure by default.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type ProcessResult, runProcess } from "../support/run-process.js";
import { testEndpoint } from "../support/test-endpoint.js";

const ROOT = join(import.meta.dirname, "..", "..");

function startFront(env: Record<string, string>): Promise<ProcessResult> {
  return runProcess(process.execPath, ["--import", "tsx", "src/service/grpc-main.ts"], {
    cwd: ROOT,
    env: { ...process.env, ...env },
  });
}

describe("the Fargate front without a readable access policy parameter", () => {
  it("exits 1 with one line: the front failed to start, the parameter cannot be read", async () => {
    const parameter = `/flow-test-${process.pid}/absent-policy`;
    const r = await startFront({
      AWS_ENDPOINT_URL: testEndpoint(),
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "test",
      AWS_SECRET_ACCESS_KEY: "test",
      FLOW_TABLE_PREFIX: "absent-policy-",
      FLOW_CHILD_TASK_STATE_MACHINE_ARN: "arn:aws:states:us-east-1:123456789012:stateMachine:c",
      FLOW_IMAGE_BUCKET: "flow-images",
      FLOW_PORT: "0",
      FLOW_AUTHZ_POLICY_PARAMETER: parameter,
    });
    expect(r.code).toBe(1);
    // Powertools writes errors to stderr; nothing else is written.
    expect(r.stdout).toBe("");
    const lines = r.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? "")).toMatchObject({
      level: "ERROR",
      message: "flow gRPC front failed to start",
      error: `access policy parameter ${parameter} cannot be read: Parameter ${parameter} not found.`,
    });
  });
});
