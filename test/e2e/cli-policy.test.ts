/**
 * flowctl's firmware policy commands against the real local stack over gRPC (the CLI's own
 * `runCli`, in process: the same code the bin shim runs, without a child process per command).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../cli/program.js";
import { FAST_SUCCESS, rackGroup } from "../support/fixtures-inventory.js";
import { startTestStack, type TestStack } from "../support/stack.js";

const RACKS = rackGroup(80, { name: "cli", count: 2, types: ["COMPUTE", "NVSWITCH"] });
RACKS.racks[1]!.components[0]!.model = "GB200";

let s: TestStack;
let dir: string;

beforeAll(async () => {
  s = await startTestStack({ label: "cli-policy", groups: [RACKS], defaults: FAST_SUCCESS });
  dir = mkdtempSync(join(tmpdir(), "flowctl-policy-"));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await s?.stop();
});

async function flowctl(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, {
    stdout: { write: (t: string) => out.push(t) },
    stderr: { write: (t: string) => err.push(t) },
    env: { FLOW_ENDPOINT: s.address, NO_COLOR: "1" },
    interrupted: new Promise(() => {}),
  });
  return { code, stdout: out.join(""), stderr: err.join("") };
}

describe("flowctl baseline and inventory drift", () => {
  it("baseline set / list / delete", async () => {
    expect(await flowctl("baseline", "set", "compute", "2.0.0")).toMatchObject({ code: 0 });
    const set = await flowctl("baseline", "set", "COMPUTE", "2.1.0", "--model", "GB200");
    expect(set.stdout).toBe(
      [
        "TYPE     MODEL  VENDOR  VERSION",
        "COMPUTE  *      *       2.0.0",
        "COMPUTE  GB200  *       2.1.0",
        "",
      ].join("\n"),
    );
    const listed = await flowctl("baseline", "list", "-o", "json");
    expect(JSON.parse(listed.stdout)).toEqual({
      baselines: [
        { componentType: "COMPONENT_TYPE_COMPUTE", version: "2.0.0" },
        { componentType: "COMPONENT_TYPE_COMPUTE", model: "GB200", version: "2.1.0" },
      ],
    });
    const bad = await flowctl("baseline", "set", "gpu", "1");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(
      'component type: expected one of COMPUTE, NVSWITCH, POWERSHELF, TORSWITCH, UMS, CDU (got "gpu")',
    );
    const missing = await flowctl("baseline", "delete", "cdu");
    expect(missing.code).toBe(15);
    expect(missing.stderr).toContain("no firmware baseline for CDU");
  });

  it("inventory drift: per rack and type, and per component; what no baseline covers is counted", async () => {
    const drift = await flowctl("inventory", "drift");
    expect(drift.code).toBe(0);
    expect(drift.stdout).toBe(
      [
        "RACK   TYPE     NOT AT BASELINE  CURRENT → BASELINE",
        "cli-0  COMPUTE  1                1.0.0 → 2.0.0",
        "cli-1  COMPUTE  1                1.0.0 → 2.1.0",
        "",
        "2 components not at baseline, 0 at baseline, 2 without a baseline (NVSWITCH)",
        "",
      ].join("\n"),
    );
    const perComponent = await flowctl("inventory", "drift", "--components");
    expect(perComponent.stdout.split("\n")[0]).toBe(
      "RACK   TYPE     COMPONENT                             MODEL  VENDOR  CURRENT  BASELINE",
    );
    expect(perComponent.stdout).toContain(
      `cli-1  COMPUTE  ${RACKS.racks[1]!.components[0]!.id}  GB200          1.0.0    2.1.0`,
    );
  });

  it("inventory import takes the file's baselines too", async () => {
    const file = join(dir, "inventory.json");
    writeFileSync(
      file,
      JSON.stringify({ racks: [], baselines: [{ componentType: "NVSWITCH", version: "1.0.0" }] }),
    );
    const imported = await flowctl("inventory", "import", "-f", file);
    expect(imported.stdout).toBe(`imported 0 racks and 0 components and 1 firmware baselines from ${file}\n`);
    const drift = await flowctl("inventory", "drift");
    expect(drift.stdout).toContain("2 components not at baseline, 2 at baseline\n");
    expect((await flowctl("baseline", "delete", "nvswitch")).code).toBe(0);
  });
});

describe("flowctl inventory readiness", () => {
  it("sets, shows and clears a component's readiness; a bad state is a usage error", async () => {
    const component = RACKS.racks[0]!.components[0]!.id;
    const set = await flowctl("inventory", "readiness", component, "maintenance", "--reason", "PSU swap");
    expect(set).toEqual({
      code: 0,
      stdout: `component ${component} (COMPUTE): MAINTENANCE: PSU swap\n`,
      stderr: "",
    });
    const listed = await flowctl("inventory", "list");
    expect(listed.stdout.split("\n")[0]).toContain("NOT READY");
    expect(listed.stdout.split("\n")[1]).toMatch(/ 1$/);
    const noReason = await flowctl("inventory", "readiness", component, "not-ready");
    expect(noReason.code).toBe(13);
    expect(noReason.stderr).toContain("readiness.reason: a NOT_READY component needs a reason");
    const bad = await flowctl("inventory", "readiness", component, "broken");
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('state: expected ready, not-ready or maintenance (got "broken")');
    expect((await flowctl("inventory", "readiness", component, "ready")).stdout).toBe(
      `component ${component} (COMPUTE): READY\n`,
    );
  });
});

describe("flowctl rule", () => {
  it("create from a rule file, a new version with --id, get and list", async () => {
    const file = join(dir, "rule.yaml");
    writeFileSync(
      file,
      [
        "name: compute-first",
        "readinessTimeout: 2m",
        "stages:",
        "  - name: compute",
        "    componentTypes: [compute]",
        "    maxParallel: 9",
        "    steps:",
        "      - action: verify-reachability",
        "      - { action: update-firmware, timeout: 20m, retry: { maxRetries: 2, interval: 30s, backoffRate: 2 } }",
        "      - action: sleep",
        "        duration: 1m",
        "  - name: switches",
        "    componentTypes: [NVSWITCH]",
        "    steps: [{ action: update-firmware }]",
      ].join("\n"),
    );
    const created = await flowctl("rule", "create", "-f", file, "-o", "json");
    expect(created.code).toBe(0);
    const rule = JSON.parse(created.stdout);
    expect([rule.version, rule.name, rule.readinessTimeoutSeconds]).toEqual([1, "compute-first", 120]);
    const v2 = await flowctl("rule", "create", "-f", file, "--id", rule.id.id, "--expect-version", "1");
    expect(v2.stdout.split("\n")).toEqual([
      `rule ${rule.id.id} v2: compute-first`,
      "  readiness timeout 2m",
      "STAGE       TYPES     MAX PARALLEL  STEPS",
      "1 compute   COMPUTE   9             verify-reachability → update-firmware (timeout 20m) (retry ×2, 30s ×2) → sleep 1m",
      "2 switches  NVSWITCH  default       update-firmware",
      "",
    ]);
    expect((await flowctl("rule", "get", rule.id.id, "--version", "1")).stdout).toContain(
      `rule ${rule.id.id} v1`,
    );
    const listed = await flowctl("rule", "list");
    expect(
      listed.stdout
        .split("\n")
        .slice(1, 3)
        .map((l) => l.replace(/\s+/g, " ")),
    ).toEqual([
      "00000000-0000-4000-8000-000000000001 1 default (built in) POWERSHELF → NVSWITCH → COMPUTE → CDU → UMS → TORSWITCH",
      `${rule.id.id} 2 compute-first COMPUTE → NVSWITCH`,
    ]);
  });

  it("the example rule file is a valid rule", async () => {
    const example = join(import.meta.dirname, "..", "..", "examples", "rule-compute-first.yaml");
    const created = await flowctl("rule", "create", "-f", example, "-o", "json");
    expect(created.code, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout).stages.map((x: { name: string }) => x.name)).toEqual([
      "compute",
      "switches",
      "the rest",
    ]);
  });

  it("a rule file's mistakes are reported with their key paths; the service's rules come back all at once", async () => {
    const file = join(dir, "bad-rule.yaml");
    writeFileSync(
      file,
      "name: bad\nstages:\n  - componentTypes: [GPU]\n    steps: [{ action: flash, timeout: 1.5s }]\n    extra: 1\n",
    );
    const local = await flowctl("rule", "create", "-f", file);
    expect(local.code).toBe(1);
    expect(local.stderr).toBe(
      [
        `error: ${file} is not a valid rule file:`,
        `${file}: stages[0].extra: unknown key (expected one of name, componentTypes, maxParallel, steps)`,
        `${file}: stages[0].componentTypes[0]: must be one of COMPUTE, NVSWITCH, POWERSHELF, TORSWITCH, UMS, CDU (got "GPU")`,
        `${file}: stages[0].steps[0].action: must be one of update-firmware, verify-version, verify-reachability, sleep, reset-bmc, power-cycle-host, ac-cycle, wait-bring-up, check-health (got "flash")`,
        `${file}: stages[0].steps[0].timeout: must be whole seconds (got "1.5s")`,
        "",
      ].join("\n"),
    );
    writeFileSync(
      file,
      "name: bad\nstages:\n  - componentTypes: [CDU]\n    maxParallel: -1\n    steps: []\n",
    );
    const remote = await flowctl("rule", "create", "-f", file);
    expect(remote.code).toBe(13);
    expect(remote.stderr).toContain(
      "stages[0].max_parallel: must be 0 (the deployment's default) or more (got -1)",
    );
    expect(remote.stderr).toContain(
      "stages[0].steps: a stage needs exactly one UPDATE_FIRMWARE step (got 0)",
    );
  });

  it("a step's externalCheck reaches the service: a check this deployment does not configure is refused at its field", async () => {
    const file = join(dir, "checked-rule.yaml");
    writeFileSync(
      file,
      [
        "name: burn-in",
        "stages:",
        "  - componentTypes: [COMPUTE]",
        "    steps:",
        "      - action: update-firmware",
        "      - action: check-health",
        "        externalCheck: dcgm-diag",
        "        externalCheckTimeout: 30m",
        "",
      ].join("\n"),
    );
    const refused = await flowctl("rule", "create", "-f", file);
    expect(refused.code).toBe(13);
    expect(refused.stderr).toContain(
      'stages[0].steps[1].external_check: unknown external check "dcgm-diag" (none is configured)',
    );
  });
});

describe("flowctl run create --dry-run without targetVersion", () => {
  it("shows the versions each rack's components would be frozen with", async () => {
    expect((await flowctl("baseline", "set", "nvswitch", "4.0")).code).toBe(0);
    const file = join(dir, "run.yaml");
    writeFileSync(
      file,
      [
        "name: by-baseline",
        "selector: { percentage: 100, seed: s }",
        "options: { maxConcurrentTargets: 1, gates: [{ failureCount: 1 }], ordering: { random: { seed: o } } }",
        "operation:",
        "  upgradeFirmware:",
        `    targets: { racks: [${RACKS.racks.map((r) => r.name).join(", ")}] }`,
      ].join("\n"),
    );
    const dry = await flowctl("run", "create", "-f", file, "--dry-run");
    expect(dry.code, dry.stderr).toBe(0);
    const rows = dry.stdout.split("\n").filter((l) => l.includes("EXT-cli-"));
    expect(
      rows
        .map((l) =>
          l
            .trim()
            .split(/\s{2,}/)
            .at(-1),
        )
        .sort(),
    ).toEqual(["2.0.0×1 4.0×1", "2.1.0×1 4.0×1"]);
    expect(dry.stdout).toContain("VERSIONS");
  });
});
