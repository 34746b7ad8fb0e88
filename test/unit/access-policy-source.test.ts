/**
 * The front's access policy from a file (src/adapters/grpc/access-policy-source.ts): a refused
 * reload is one log line and one AccessPolicyRejected metric, the old policy staying in force; a
 * polling source (the Fargate front's file) takes a changed file without being asked, and a broken
 * change is refused the same way.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { accessPolicySource } from "../../src/adapters/grpc/access-policy-source.js";
import { until } from "../support/poll.js";
import { recordedObservability } from "../support/recorded-observability.js";

const policy = (role: string) => `bindings:\n  - subjects: ["cn:alice"]\n    roles: [${role}]\n`;

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function policyFile(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), "flow-policy-"));
  dirs.push(dir);
  const file = join(dir, "policy.yaml");
  writeFileSync(file, text);
  return file;
}

const roles = (source: ReturnType<typeof accessPolicySource>) =>
  source.current().bindings.flatMap((b) => b.roles);

describe("access policy source", () => {
  it("a refused reload: one error line naming the file and the problem, one AccessPolicyRejected, the old policy in force", () => {
    const file = policyFile(policy("viewer"));
    const r = recordedObservability();
    const source = accessPolicySource(file, { logger: r.logger, metrics: r.meter });
    writeFileSync(file, policy("superuser"));
    expect(source.reload()).toBe(false);
    expect(roles(source)).toEqual(["viewer"]);
    expect(r.metrics).toEqual(["AccessPolicyRejected=1"]);
    expect(r.lines).toEqual([
      `error access policy reload refused; the previous policy stays in force ${JSON.stringify({
        file,
        problems: `${file}: bindings[0].roles[0]: unknown role "superuser" (roles: viewer, operator, approver, admin)`,
      })}`,
    ]);
    writeFileSync(file, policy("operator"));
    expect(source.reload()).toBe(true);
    expect(roles(source)).toEqual(["operator"]);
    expect(r.metrics).toEqual(["AccessPolicyRejected=1"]);
  });

  it("polling (the Fargate front): a changed file is in force without a reload call; a broken change is refused and counted", async () => {
    const file = policyFile(policy("viewer"));
    const r = recordedObservability();
    const source = accessPolicySource(file, { logger: r.logger, metrics: r.meter, pollMs: 5 });
    try {
      writeFileSync(file, policy("operator, approver"));
      await until("the changed policy in force", () => roles(source).includes("approver"));
      expect(r.lines).toEqual([`info access policy reloaded ${JSON.stringify({ file, bindings: 1 })}`]);
      writeFileSync(file, policy("operator, superuser"));
      await until("the broken change refused", () => r.metrics.length > 0);
      expect(r.metrics).toEqual(["AccessPolicyRejected=1"]);
      expect(roles(source)).toEqual(["operator", "approver"]);
    } finally {
      source.close();
    }
  });
});
