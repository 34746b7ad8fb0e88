/**
 * `npm start` (local/main.ts) refuses a configuration or an inventory file it cannot use before it
 * starts anything: exit 1, and on stderr every flag or variable at fault with its rule, or the
 * file, the JSON path and the rule. local/main.ts runs as the e2e project bundled it
 * (test/support/entry-bundles.ts): the same source `npm start` runs through tsx, started quicker.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { entryBundle } from "../support/entry-bundles.js";
import { type ProcessResult, runProcess } from "../support/run-process.js";

const ROOT = join(import.meta.dirname, "..", "..");
const dir = mkdtempSync(join(tmpdir(), "local-main-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function start(args: string[], env: Record<string, string> = {}): Promise<ProcessResult> {
  return runProcess(process.execPath, [entryBundle("local-main"), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
  });
}

describe("npm start --inventory", () => {
  it("a missing file: exit 1 naming the file", async () => {
    const file = join(dir, "absent.json");
    const r = await start(["--inventory", file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`flow local stack: ${file}: (root): cannot be read (ENOENT`);
  });

  it("an invalid file: exit 1 with the JSON path and rule", async () => {
    const file = join(dir, "bad.json");
    writeFileSync(file, JSON.stringify({ racks: [{ id: "x", name: "r", components: [] }] }));
    const r = await start(["--inventory", file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `flow local stack: ${file}: racks[0].id: must be a UUID like 4f6f1a9e-0000-4000-8000-000000000001 (got "x")`,
    );
  });
});

describe("npm start: flags and variables", () => {
  it("every invalid one at once, by the flag or the variable it came from: exit 1, then the usage", async () => {
    const r = await start(["--port", "abc"], { FLOW_TICK: "10", FLOW_CHILD_TASK_WAIT: "0s" });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      'flow local stack: --port: must be an integer from 0 to 65535 (got "abc"); ' +
        'FLOW_TICK: "10" is not a duration: write a number and a unit (ms, s, m, h), e.g. 200ms, 2s, 10s, 1m; ' +
        'FLOW_CHILD_TASK_WAIT: "0s" must be greater than zero\n',
    );
    expect(r.stderr).toContain("usage: npm start --");
  });
});

describe("npm start --authz-policy and TLS", () => {
  it("a bad policy file: exit 1 before anything starts, every problem named", async () => {
    const file = join(dir, "policy.yaml");
    writeFileSync(file, 'bindings:\n  - subjects: ["cn:"]\n    roles: [operater]\nscopes: {}\n');
    const r = await start(["--port", "0", "--authz-policy", file]);
    expect(r.code).toBe(1);
    expect(r.stderr.split("\n").slice(0, 3)).toEqual([
      `flow local stack: ${file}: scopes: unknown field (allowed: roles, bindings, allowDeclared, approval)`,
      `${file}: bindings[0].subjects[0]: must name a subject after "cn:" (got "cn:")`,
      `${file}: bindings[0].roles[0]: unknown role "operater" (roles: viewer, operator, approver, admin)`,
    ]);
  });

  it("a certificate without its key, or a client CA without TLS: exit 1 naming them", async () => {
    const r = await start(["--tls-cert", "s.crt", "--client-ca", "ca.crt"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      "--tls-key (FLOW_TLS_KEY): is required with --tls-cert (FLOW_TLS_CERT); --client-ca (FLOW_TLS_CLIENT_CA): needs --tls-cert (FLOW_TLS_CERT) and --tls-key (FLOW_TLS_KEY) (mutual TLS is TLS first)",
    );
  });
});
