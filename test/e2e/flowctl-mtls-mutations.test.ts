/**
 * Every mutating flowctl command over mutual TLS, once each, as a caller the policy permits (an
 * operator scoped to the racks `dc1-*` for run commands, an admin for inventory, rules and
 * firmware), against the local stack (test/support/mtls-stack.ts). Together with
 * authz-mtls.test.ts (reads, baseline set and delete, task cancel refused) and approval-mtls.test.ts
 * (approve), flowctl's whole command set runs over TLS for a permitted caller (`agent provision`
 * talks to AWS IoT, not to the service).
 *
 * A command whose success needs a run in a state this suite does not drive a fleet to (advance at
 * a phase gate, rollback of a run with flashed racks, report-failure of a completed rack)
 * is expected to reach its use case and be answered by it: the precondition's own refusal, which
 * comes only after the call was authenticated and authorized (never 16 UNAUTHENTICATED or 17
 * PERMISSION_DENIED).
 */
import { writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inventoryOf, rackGroup } from "../support/fixtures-inventory.js";
import { type MtlsStack, startMtlsStack } from "../support/mtls-stack.js";
import { until } from "../support/poll.js";

const DC1 = rackGroup(3, { name: "dc1", count: 2 });

const POLICY = `
bindings:
  - subjects: ["uri:spiffe://example.org/ops/*"]
    roles: [operator]
    scope: { racks: ["dc1-*"] }
  - subjects: ["cn:admin-1"]
    roles: [admin]
`;

type Who = "operator" | "admin";
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;
/** What a command must answer: exit 0 and stdout containing `stdout`, or the use case's refusal. */
type Outcome = { code: 0; stdout: string } | { code: number; stderr: string };
const succeeds = (o: Outcome): o is { code: 0; stdout: string } => o.code === 0;

describe("flowctl over mutual TLS: every mutating command for a permitted caller", () => {
  let s: MtlsStack;
  let runId = "";
  let taskId = "";
  const file = (name: string, text: string): string => {
    const path = s.certs.file(name);
    writeFileSync(path, text);
    return path;
  };

  beforeAll(async () => {
    s = await startMtlsStack({
      label: "flowctl-mut",
      policy: POLICY,
      clients: {
        operator: { cn: "alice", san: "URI:spiffe://example.org/ops/alice" },
        admin: { cn: "admin-1" },
      },
      groups: [DC1],
    });
  });

  afterAll(async () => {
    await s?.stop();
  });

  /** Runs in this order: later rows use what earlier ones made (the run, the image). */
  const table: {
    name: string;
    who: Who;
    args: () => string[] | Promise<string[]>;
    outcome: () => Outcome;
  }[] = [
    {
      name: "inventory import",
      who: "admin",
      args: () => [
        "inventory",
        "import",
        "-f",
        file("inventory.json", JSON.stringify({ racks: inventoryOf([DC1]) })),
      ],
      outcome: () => ({ code: 0, stdout: "imported 2 racks" }),
    },
    {
      name: "inventory readiness",
      who: "admin",
      args: () => ["inventory", "readiness", DC1.racks[0]!.components[0]!.id, "ready"],
      outcome: () => ({ code: 0, stdout: `component ${DC1.racks[0]!.components[0]!.id} (COMPUTE): READY` }),
    },
    {
      name: "rule create",
      who: "admin",
      args: () => [
        "rule",
        "create",
        "-f",
        file(
          "rule.yaml",
          "name: mtls-rule\nstages:\n  - name: compute\n    componentTypes: [COMPUTE]\n    steps: [{ action: update-firmware }]\n",
        ),
      ],
      outcome: () => ({ code: 0, stdout: "mtls-rule" }),
    },
    {
      name: "firmware upload",
      who: "admin",
      args: () => [
        "firmware",
        "upload",
        "--type",
        "CDU",
        "--version",
        "9.9.9",
        file("cdu.bin", "cdu image 9.9.9"),
      ],
      outcome: () => ({ code: 0, stdout: "9.9.9" }),
    },
    {
      name: "firmware delete",
      who: "admin",
      args: () => ["firmware", "delete", "--type", "CDU", "--version", "9.9.9"],
      outcome: () => ({ code: 0, stdout: "9.9.9" }),
    },
    {
      name: "run create",
      who: "operator",
      args: () => [
        "run",
        "create",
        "-o",
        "json",
        "-f",
        file(
          "run.yaml",
          `name: mtls-run\nselector: { percentage: 100 }\noptions:\n  maxConcurrentTargets: 1\n  gates: [{ failureCount: 1 }]\noperation:\n  upgradeFirmware:\n    targetVersion: 2.0.0\n    targets:\n      racks: [${DC1.racks.map((r) => `{ externalId: ${r.externalId} }`).join(", ")}]\n`,
        ),
      ],
      outcome: () => ({ code: 0, stdout: '"id": {' }),
    },
    {
      name: "run pause",
      who: "operator",
      args: () => ["run", "pause", runId],
      outcome: () => ({ code: 0, stdout: runId }),
    },
    {
      name: "run advance (not at a phase gate: the use case refuses)",
      who: "operator",
      args: () => ["run", "advance", runId],
      outcome: () => ({ code: 19, stderr: `${runId} is not paused at a phase gate (FAILED_PRECONDITION)` }),
    },
    {
      name: "run resume",
      who: "operator",
      args: () => ["run", "resume", runId],
      outcome: () => ({ code: 0, stdout: runId }),
    },
    {
      name: "run report-failure (the rack has not completed: the use case refuses)",
      who: "operator",
      args: () => ["run", "report-failure", runId, DC1.racks[0]!.id, "--reason", "late fault"],
      outcome: () => ({
        code: 19,
        stderr: "only a completed target can be reported failed (FAILED_PRECONDITION)",
      }),
    },
    {
      name: "task cancel (the run's active task)",
      who: "operator",
      args: async () => {
        // The dispatcher submits a rack's task on its next tick: wait for it to be listed.
        taskId = await until("the run's task (one at a time: maxConcurrentTargets 1)", async () => {
          const listed = await s.flowctl("operator", "task", "list", "--active");
          return UUID.exec(listed.stdout.split("\n")[1] ?? "")?.[0];
        });
        return ["task", "cancel", taskId];
      },
      outcome: () => ({ code: 0, stdout: taskId }),
    },
    {
      name: "run cancel",
      who: "operator",
      args: () => ["run", "cancel", runId, "--reason", "mtls done"],
      outcome: () => ({ code: 0, stdout: runId }),
    },
    {
      name: "run retry of the cancelled run's skipped racks",
      who: "operator",
      args: () => ["run", "retry", runId, "--include-skipped", "--include-terminated"],
      outcome: () => ({ code: 0, stdout: `(retry of run ${runId})` }),
    },
    {
      name: "run rollback (nothing was flashed: the use case refuses)",
      who: "operator",
      args: () => ["run", "rollback", runId],
      outcome: () => ({ code: 13, stderr: "rollback.operation_run_id: nothing to roll back" }),
    },
  ];

  it.each(table.map((row) => [row.name, row] as const))("%s", async (_, row) => {
    const r = await s.flowctl(row.who, ...(await row.args()));
    const outcome = row.outcome();
    if (succeeds(outcome)) {
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
      expect(r.stdout).toContain(outcome.stdout);
    } else {
      expect(r.code).toBe(outcome.code);
      expect(r.stderr).toContain(outcome.stderr);
    }
    if (row.name === "run create") runId = (JSON.parse(r.stdout) as { id: { id: string } }).id.id;
  });
});
