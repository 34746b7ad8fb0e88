/**
 * flowctl end to end against the real local stack (`local/main.ts --port 0 --tick 200ms`, bundled:
 * test/support/entry-bundles.ts) loaded
 * with a twenty-rack inventory, one rack of which always fails its update. The commands run in this
 * process (`runCli`, what the bin shim runs, with the environment, stdout and stderr it would get),
 * except where the test is about the process itself: its exit code, a stdout that is not a terminal,
 * and the live view, captured in a pseudo-terminal with util-linux `script` (or, where it is
 * missing, with FLOWCTL_TTY=1 forcing the terminal mode); those run `node cli/bin/flowctl.js`.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { entryBundle } from "../support/entry-bundles.js";
import { flowctlInProcess } from "../support/flowctl.js";
import { runProcess } from "../support/run-process.js";

const ROOT = join(import.meta.dirname, "..", "..");
const FLOWCTL = join(ROOT, "cli", "bin", "flowctl.js");
const ESC = "\x1b";
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;
const START_TIMEOUT_MS = 90_000;

const rackId = (n: number) => `4f6f1a9e-0000-4000-8000-${String(n).padStart(12, "0")}`;
const componentId = (n: number, k: number) =>
  `5a6f1a9e-0000-4000-8000-${String(n * 10 + k).padStart(12, "0")}`;
const ext = (n: number) => `EXT-A${String(n).padStart(2, "0")}`;
const rackName = (n: number) => `rack-a${String(n).padStart(2, "0")}`;
const RACKS = 20;
const FAILING_RACK = 20;

const INVENTORY = {
  racks: Array.from({ length: RACKS }, (_, i) => {
    const n = i + 1;
    return {
      id: rackId(n),
      name: rackName(n),
      externalId: ext(n),
      location: { datacenter: "dc1", row: "A", position: n },
      components: [
        { id: componentId(n, 1), type: "COMPUTE", externalId: `SN-${n}-1`, firmwareVersion: "1.0.0" },
        { id: componentId(n, 2), type: "NVSWITCH", externalId: `SN-${n}-2`, firmwareVersion: "1.0.0" },
      ],
    };
  }),
};
const FLEET = {
  defaults: { updateMs: 300, outcome: "succeed" },
  racks: { [rackId(FAILING_RACK)]: { outcome: "fail" } },
};

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

let dir: string;
let stack: ChildProcess | undefined;
let stackOutput = "";
let endpoint = "";

/**
 * Runs flowctl's commands in this process against the stack (unless the arguments name another
 * endpoint), with the environment, stdout and stderr the bin shim would give them.
 */
function flowctl(args: string[], env: Record<string, string> = {}): Promise<Result> {
  return flowctlInProcess(args, { ...process.env, FLOW_ENDPOINT: endpoint, NO_COLOR: "1", ...env });
}

/** Runs `node cli/bin/flowctl.js` as a child process: for what is about the process itself. */
function flowctlProcess(args: string[], env: Record<string, string> = {}): Promise<Result> {
  return runProcess(process.execPath, [FLOWCTL, ...args], {
    cwd: ROOT,
    env: { ...process.env, FLOW_ENDPOINT: endpoint, NO_COLOR: "1", ...env },
  });
}

/** Runs flowctl in a pseudo-terminal; returns everything the terminal received. */
function flowctlInTerminal(args: string[]): Promise<Result> {
  const hasScript = (() => {
    try {
      execFileSync("script", ["--version"], { stdio: "ignore" });
      return true;
    } catch {
      return false;
    }
  })();
  if (!hasScript) return flowctlProcess(args, { FLOWCTL_TTY: "1" });
  const quoted = [process.execPath, FLOWCTL, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
  // -e: exit with the child's code; -f: flush at once; -q: no "Script started" banner.
  return runProcess("script", ["-qefc", quoted, "/dev/null"], {
    cwd: ROOT,
    env: { ...process.env, FLOW_ENDPOINT: endpoint, COLUMNS: "160", TERM: "xterm" },
  });
}

function writeFile(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

function runFile(body: string): string {
  return writeFile(`run-${randomUUID()}.yaml`, body);
}

/** A run over the given racks, by external id. */
function racksRun(name: string, racks: number[], options: string): string {
  return runFile(`name: ${name}
selector: { percentage: 100 }
options:
${options}
operation:
  upgradeFirmware:
    targetVersion: 2.0.0
    targets:
      racks: [${racks.map((n) => `{ externalId: ${ext(n)} }`).join(", ")}]
`);
}

async function createRun(file: string): Promise<string> {
  const r = await flowctl(["run", "create", "-f", file, "-o", "json"]);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout) as { id: { id: string } }).id.id;
}

async function runCount(): Promise<number> {
  const r = await flowctl(["run", "list", "-o", "json"]);
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout) as { total?: number }).total ?? 0;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "flowctl-e2e-"));
  const inventory = writeFile("inventory.json", JSON.stringify(INVENTORY));
  const fleet = writeFile("fleet.json", JSON.stringify(FLEET));
  const child = spawn(
    process.execPath,
    [entryBundle("local-main"), "--port", "0", "--tick", "200ms", "--inventory", inventory, "--fleet", fleet],
    { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env: process.env },
  );
  stack = child;
  endpoint = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`local stack did not print "listening on" in time:\n${stackOutput}`)),
      START_TIMEOUT_MS,
    );
    const onData = (d: Buffer) => {
      stackOutput += d.toString();
      const m = /listening on (127\.0\.0\.1:\d+)/.exec(stackOutput);
      if (m !== null) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`local stack exited with ${code} before serving:\n${stackOutput}`));
    });
  });
}, START_TIMEOUT_MS + 5_000);

afterAll(async () => {
  if (stack !== undefined && stack.exitCode === null) {
    const exited = new Promise((resolve) => stack?.once("exit", resolve));
    stack.kill("SIGTERM");
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    if (stack.exitCode === null) stack.kill("SIGKILL");
  }
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

describe("flowctl run create", () => {
  const canary = () =>
    runFile(`name: cli-canary
selector: { percentage: 100%, seed: cli-seed }
options:
  maxConcurrentTargets: 2
  phases: { count: [1, 2] }
  gates:
    - failureCount: 1
      scope: cumulativeRun
operation:
  upgradeFirmware:
    targetVersion: 2.0.0
    targets:
      racks: [{ externalId: EXT-A01 }, { externalId: EXT-A02 }, { externalId: EXT-A03 }, { externalId: EXT-A04 }]
`);

  it("--dry-run prints each phase with its racks by external id, and creates nothing", async () => {
    const before = await runCount();
    const r = await flowctl(["run", "create", "-f", canary(), "--dry-run"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      'dry run: nothing was created. The service would freeze this plan for run "cli-canary":',
    );
    expect(r.stdout).toContain("4 candidate racks, 4 selected, 3 phases");
    expect(r.stdout).toContain("phase 1 (1 rack):");
    expect(r.stdout).toContain("phase 2 (2 racks):");
    expect(r.stdout).toContain("phase 3 (1 rack):");
    for (const n of [1, 2, 3, 4]) expect(r.stdout).toContain(ext(n));
    // The effective configuration, in run-file form, with the seed it was given.
    expect(r.stdout).toContain("seed: cli-seed");
    expect(await runCount()).toBe(before);
  });

  it("--dry-run -o json is the PlanOperationRun response: targets in phase order", async () => {
    const r = await flowctl(["run", "create", "-f", canary(), "--dry-run", "-o", "json"]);
    expect(r.code).toBe(0);
    const plan = JSON.parse(r.stdout) as {
      totalPhases: number;
      targets: { phaseIndex?: number; rackExternalId: string }[];
    };
    expect(plan.totalPhases).toBe(3);
    expect(plan.targets.map((t) => t.phaseIndex ?? 0)).toEqual([0, 1, 1, 2]);
    expect(plan.targets.map((t) => t.rackExternalId).sort()).toEqual([
      "EXT-A01",
      "EXT-A02",
      "EXT-A03",
      "EXT-A04",
    ]);
  });

  it("creates a run from YAML; run get and run list show it", async () => {
    const before = await runCount();
    const r = await flowctl(["run", "create", "-f", canary()]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const id = UUID.exec(r.stdout)?.[0];
    expect(r.stdout).toBe(`created run ${id}\nwatch it: flowctl run watch ${id}\n`);
    expect(await runCount()).toBe(before + 1);

    const get = await flowctl(["run", "get", id!, "--stats"]);
    expect(get.code).toBe(0);
    expect(get.stdout).toMatch(new RegExp(`^ID:\\s+${id}$`, "m"));
    expect(get.stdout).toMatch(/^Name:\s+cli-canary$/m);
    expect(get.stdout).toMatch(/^Phase:\s+\d of 3$/m);
    expect(get.stdout).toContain("Configuration (run-file form):");

    const list = await flowctl(["run", "list", "--name", "cli-canary"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain(id);
    // Cancel it so it leaves the fleet alone for the watch tests.
    const cancel = await flowctl(["run", "cancel", id!, "--reason", "test done"]);
    expect(cancel.code).toBe(0);
    expect(cancel.stdout).toContain(`run ${id}: CANCELLED`);
    expect(cancel.stdout).toContain("operation run cancelled: test done");
  });

  it("a JSON run file works the same as YAML", async () => {
    const file = writeFile(
      "run.json",
      JSON.stringify({
        name: "cli-json",
        selector: { percentage: 100 },
        options: { maxConcurrentTargets: 1, gates: [{ failureRate: "50%" }] },
        operation: {
          upgradeFirmware: { targetVersion: "2.0.0", targets: { racks: [{ name: rackName(5) }] } },
        },
      }),
    );
    const r = await flowctl(["run", "create", "-f", file, "--dry-run"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("EXT-A05");
  });

  it("an operation without targetVersion needs a firmware baseline for every planned type", async () => {
    const file = writeFile(
      "no-version.json",
      JSON.stringify({
        name: "cli-no-version",
        selector: { percentage: 100 },
        options: { maxConcurrentTargets: 1, gates: [{ failureCount: 1 }] },
        operation: { upgradeFirmware: { targets: { racks: [{ name: rackName(5) }] } } },
      }),
    );
    const r = await flowctl(["run", "create", "-f", file, "--dry-run"]);
    expect(r.code).toBe(13);
    expect(r.stderr).toContain(
      "configuration.operation.upgrade_firmware.target_version: target_version is not set and no firmware baseline covers COMPUTE, NVSWITCH",
    );
  });
});

describe("flowctl and maintenance windows", () => {
  it("the run file's start time and windows: dry run, create, get (Window), a queue warning, cancel → SKIPPED", async () => {
    // Tomorrow 12:00 UTC, with a window at 02:00-03:00 daily: it opens the day after at 02:00.
    const start = new Date();
    start.setUTCDate(start.getUTCDate() + 1);
    start.setUTCHours(12, 0, 0, 0);
    const opens = new Date(start.getTime() + 14 * 3_600_000).toISOString().replace(".000Z", "Z");
    const file = runFile(`name: cli-window
selector: { percentage: 100 }
options:
  maxConcurrentTargets: 1
  gates: [{ failureCount: 1 }]
  maintenanceWindows: [{ cron: "0 2 * * *", duration: 1h }]
operation:
  upgradeFirmware:
    targetVersion: 2.0.0
    queue: { strategy: queue, timeout: 10m }
    startTime: ${start.toISOString()}
    targets: { racks: [{ externalId: ${ext(6)} }] }
`);
    const warning =
      "operation.upgradeFirmware.queue is ignored in a run: its child tasks always use the reject strategy (a busy rack blocks its target, retried per options.conflictRetry)";
    const dry = await flowctl(["run", "create", "-f", file, "--dry-run"]);
    expect(dry.code).toBe(0);
    expect(dry.stderr).toBe(`warning: ${file}: ${warning}\n`);
    expect(dry.stdout).toContain(`maintenance window: not open yet: opens at ${opens}`);
    expect(dry.stdout).toMatch(new RegExp(`^next openings: ${opens}, \\S+T02:00:00Z, `, "m"));
    expect(dry.stdout).toContain("- cron: 0 2 * * *");

    const created = await flowctl(["run", "create", "-f", file, "-o", "json"]);
    expect(created.code).toBe(0);
    expect(created.stderr).toBe(`warning: ${file}: ${warning}\n`);
    const id = (JSON.parse(created.stdout) as { id: { id: string } }).id.id;
    // The first dispatch pass (a 200 ms tick) says why the run waits.
    let get: Result;
    const deadline = Date.now() + 20_000;
    do {
      get = await flowctl(["run", "get", id]);
      expect(get.code).toBe(0);
    } while (!get.stdout.includes("waiting for maintenance window") && Date.now() < deadline);
    expect(get.stdout).toMatch(/^Status:\s+PENDING$/m);
    expect(get.stdout).toMatch(
      new RegExp(`^Message:\\s+waiting for maintenance window: opens at ${opens}$`, "m"),
    );
    expect(get.stdout).toMatch(new RegExp(`^Window:\\s+not open yet: opens at ${opens}$`, "m"));

    const cancel = await flowctl(["run", "cancel", id]);
    expect(cancel.code).toBe(0);
    const targets = await flowctl(["run", "targets", id, "-o", "json"]);
    const listed = JSON.parse(targets.stdout) as { targets: { status: string; message: string }[] };
    expect(listed.targets).toEqual([
      expect.objectContaining({
        status: "OPERATION_RUN_TARGET_STATUS_SKIPPED",
        message: "not started: operation run cancelled",
      }),
    ]);
  });
});

describe("flowctl run watch", () => {
  it("in a terminal: redraws bars in place and ends with COMPLETED, exit 0", async () => {
    const id = await createRun(
      racksRun(
        "cli-watch-ok",
        [5, 6, 7, 8, 9, 10],
        "  maxConcurrentTargets: 2\n  phases: { equal: 2 }\n  autoAdvance: true\n  gates: [{ failureCount: 1 }]",
      ),
    );
    const r = await flowctlInTerminal(["run", "watch", id, "--interval", "200ms"]);
    const out = r.stdout;
    expect(r.code).toBe(0);
    // Hides the cursor, moves back up over the previous frame at least once, shows the cursor again.
    expect(out).toContain("\x1b[?25l");
    expect(out).toMatch(new RegExp(`${ESC}\\[\\d+F`));
    expect(out).toContain("\x1b[?25h");
    // The last frame: both phases full, every target completed.
    const lastFrame = out.slice(out.lastIndexOf("cli-watch-ok"));
    expect(lastFrame).toMatch(/phase 1 +\S*█{30}\S* +3\/3 +3 completed/);
    expect(lastFrame).toMatch(/phase 2 +\S*█{30}\S* +3\/3 +3 completed/);
    expect(lastFrame).toMatch(/gates +failureCount ≥ 1 \(current phase\): 0\/1 failed/);
    expect(lastFrame).toContain("legend");
    expect(out).toMatch(
      new RegExp(
        `run ${id} COMPLETED after \\d+s: 6 completed, 0 failed, 0 terminated — operation run completed\\r?\\n`,
      ),
    );

    // The finished run's targets: both phases by default, each rack by its external id.
    const targets = await flowctl(["run", "targets", id]);
    expect(targets.stderr).toBe("");
    expect(targets.code).toBe(0);
    const rows = targets.stdout.trimEnd().split("\n");
    expect(rows.at(-1)).toBe("1-6 of 6 targets");
    const cells = rows.slice(1, -1).map((r) => r.split(/\s+/));
    expect(cells.map((c) => c[0])).toEqual(["1", "1", "1", "2", "2", "2"]);
    // Each rack's versions before the run and what it flashed them to, as its preflight read them.
    expect(rows[0]).toContain("VERSIONS (BEFORE→TO)");
    for (const row of rows.slice(1, -1)) expect(row).toMatch(/ \S+→\S+×\d+ /);
    for (const c of cells) {
      expect(c[2]).toMatch(/^EXT-A(05|06|07|08|09|10)$/);
      expect(c[3]).toBe("COMPLETED");
    }
    // One phase at a time, the footer says what the listing left out.
    const current = await flowctl(["run", "targets", id, "--phase", "current"]);
    expect(current.code).toBe(0);
    expect(current.stdout.trimEnd().split("\n").slice(-2)).toEqual([
      "1-3 of 3 targets",
      "completed phase 1 holds 3 targets: --phase all-visible lists them",
    ]);
    const json = await flowctl(["run", "targets", id, "-o", "json"]);
    expect((JSON.parse(json.stdout) as { total: number }).total).toBe(6);
  });

  it("without a terminal: plain lines, and exit 2 when the run ends FAILED", async () => {
    const id = await createRun(
      racksRun("cli-watch-fail", [FAILING_RACK], "  maxConcurrentTargets: 1\n  gates: [{ failureCount: 5 }]"),
    );
    const r = await flowctlProcess(["run", "watch", id, "--interval", "200ms"]);
    expect(r.code).toBe(2);
    expect(r.stdout).not.toContain("\x1b[");
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines.at(-2)).toMatch(
      /^\d\d:\d\d:\d\d FAILED phase 1\/1 \| p1 1\/1 \| 1 failed, 0 terminated, 0 in flight, 0 pending \| gates ok/,
    );
    expect(lines.at(-1)).toMatch(
      new RegExp(`^run ${id} FAILED after \\d+s: 0 completed, 1 failed, 0 terminated`),
    );

    // Its failed rack, again: the retry's dry run plans exactly it and creates nothing.
    const retry = await flowctl(["run", "retry", id, "--dry-run"]);
    expect([retry.code, retry.stderr]).toEqual([0, ""]);
    expect(retry.stdout).toContain(
      `dry run: nothing was created. A retry of run ${id} would freeze 1 rack in 1 phase:`,
    );
    expect(retry.stdout).toContain(ext(FAILING_RACK));
    // Its flash failed and the rack still runs what it ran before: nothing to roll back.
    const rollback = await flowctl(["run", "rollback", id, "--dry-run"]);
    expect(rollback.code).toBe(13);
    expect(rollback.stderr).toContain("rollback.operation_run_id: nothing to roll back: rack");
    expect(rollback.stderr).toContain("already at its prior version");
  });

  it("a tripped safety gate pauses the run: exit 3, the gate shown TRIPPED, and the next step named", async () => {
    // The failing rack must come first, or the others could all finish and end the run instead of
    // pausing it: find an ordering seed that puts it first, by asking for dry runs.
    const racks = [FAILING_RACK, 11, 12, 13, 14];
    const fileWith = (seed: string) =>
      racksRun(
        "cli-watch-gate",
        racks,
        `  maxConcurrentTargets: 1\n  ordering: { random: { seed: ${seed} } }\n  gates: [{ failureCount: 1 }]`,
      );
    let file: string | undefined;
    for (let i = 0; i < 40 && file === undefined; i++) {
      const candidate = fileWith(`order-${i}`);
      const plan = await flowctl(["run", "create", "-f", candidate, "--dry-run", "-o", "json"]);
      expect(plan.code).toBe(0);
      const first = (JSON.parse(plan.stdout) as { targets: { rackExternalId: string }[] }).targets[0];
      if (first?.rackExternalId === ext(FAILING_RACK)) file = candidate;
    }
    expect(file).toBeDefined();
    const id = await createRun(file!);
    const r = await flowctlInTerminal(["run", "watch", id, "--interval", "200ms"]);
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(/failureCount ≥ 1 \(current phase\): 1\/1 failed +\S*TRIPPED/);
    expect(r.stdout).toContain(`run ${id} PAUSED (SAFETY_GATE)`);
    expect(r.stdout).toContain(
      `next: flowctl run targets ${id} --status failed, then flowctl run resume ${id}`,
    );

    const next = await flowctl(["run", "targets", id, "--status", "failed"]);
    expect(next.code).toBe(0);
    expect(next.stdout).toContain(ext(FAILING_RACK));
    expect(next.stdout).toContain("1-1 of 1 targets");

    // The older spelling of --phase still works.

    const failed = await flowctl([
      "run",
      "targets",
      id,
      "--phase-scope",
      "current-and-completed",
      "--status",
      "failed",
    ]);
    expect(failed.code).toBe(0);
    expect(failed.stdout).toContain(ext(FAILING_RACK));
    expect(failed.stdout).toContain("FAILED");
    expect(failed.stdout).toContain("1-1 of 1 targets");

    expect((await flowctl(["run", "cancel", id])).code).toBe(0);
  });

  it("a phase gate: watch exits 3, run advance --expect 2 opens phase 2, watch again exits 0", async () => {
    const id = await createRun(
      racksRun(
        "cli-watch-phases",
        [15, 16],
        "  maxConcurrentTargets: 2\n  phases: { count: [1] }\n  gates: [{ failureCount: 1 }]",
      ),
    );
    const first = await flowctl(["run", "watch", id, "--interval", "200ms"]);
    expect(first.code).toBe(3);
    expect(first.stdout).toContain(`PAUSED (PHASE_GATE)`);
    expect(first.stdout).toContain(`next: flowctl run advance ${id}`);

    // Paused at the gate: phase 2 is frozen but not listed, and the footer says so.
    const gated = await flowctl(["run", "targets", id]);
    expect(gated.code).toBe(0);
    expect(gated.stdout.trimEnd().split("\n").slice(-2)).toEqual([
      "1-1 of 1 targets",
      "phase 2 has not opened yet: its 1 target is listed once it opens",
    ]);

    const wrongPhase = await flowctl(["run", "advance", id, "--expect", "3"]);
    expect(wrongPhase.code).toBe(19);
    expect(wrongPhase.stderr).toContain("(FAILED_PRECONDITION)");

    const advance = await flowctl(["run", "advance", id, "--expect", "2"]);
    expect(advance.stderr).toBe("");
    expect(advance.code).toBe(0);
    expect(advance.stdout).toContain(`run ${id}: RUNNING, phase 2/2`);

    const second = await flowctl(["run", "watch", id, "--interval", "200ms"]);
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(new RegExp(`run ${id} COMPLETED after \\d+s: 2 completed`));

    const tasks = await flowctl(["task", "list", "--rack", rackId(15)]);
    expect(tasks.code).toBe(0);
    expect(tasks.stdout).toContain("COMPLETED");
    // The rack by its external id, as run targets shows it.
    expect(tasks.stdout.split("\n")[1]).toMatch(new RegExp(`^\\S+ +${ext(15)} +COMPLETED `));
    expect(tasks.stdout).not.toContain(rackId(15));
    const taskId = UUID.exec(tasks.stdout.split("\n")[1] ?? "")?.[0];
    const task = await flowctl(["task", "get", taskId!, "-o", "yaml"]);
    expect(task.code).toBe(0);
    expect(task.stdout).toContain(`id: ${taskId}`);
  });
});

describe("flowctl errors say what to fix, and exit non-zero", () => {
  it("an invalid run file: exit 1, each problem with the file and key, nothing sent", async () => {
    const before = await runCount();
    const file = runFile(`name: bad
selector: { percentage: 0 }
options:
  maxConcurrentTargets: 0
  gates: [{ failureCount: 1 }]
operation:
  upgradeFirmware: {}
`);
    const r = await flowctl(["run", "create", "-f", file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      `error: ${file} is not a valid run file:\n` +
        `${file}: selector.percentage: must be a whole percentage from 1 to 100, e.g. 30 or 30% (got 0)\n` +
        `${file}: options.maxConcurrentTargets: must be a positive integer (got 0)\n`,
    );
    expect(await runCount()).toBe(before);
  });

  it("a missing run file: exit 1 naming the file", async () => {
    const r = await flowctl(["run", "create", "-f", join(dir, "absent.yaml")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${join(dir, "absent.yaml")}: (root): cannot be read: file not found`);
  });

  it("INVALID_ARGUMENT from the service: exit 13, each field and rule on its own line", async () => {
    const long = "x".repeat(300);
    const file = runFile(`name: ${long}
selector: { percentage: 100, seed: ${long} }
options: { maxConcurrentTargets: 1, gates: [{ failureCount: 1 }] }
operation: { upgradeFirmware: {} }
`);
    const r = await flowctl(["run", "create", "-f", file]);
    expect(r.code).toBe(13);
    expect(r.stderr.split("\n")).toEqual([
      "error: the service rejected the request (INVALID_ARGUMENT):",
      "  name: must be at most 256 characters (got 300)",
      "  configuration.selector.percentage.seed: must be at most 256 characters (got 300)",
      "",
    ]);
  });

  it("a phase that would get no rack: exit 13 with the service's message", async () => {
    const file = racksRun(
      "cli-empty-phase",
      [1, 2],
      "  maxConcurrentTargets: 1\n  phases: { equal: 3 }\n  gates: [{ failureCount: 1 }]",
    );
    const r = await flowctl(["run", "create", "-f", file, "--dry-run"]);
    expect(r.code).toBe(13);
    expect(r.stderr).toBe(
      "error: the service rejected the request (INVALID_ARGUMENT):\n  equal phase 3 resolves to zero targets for 2 selected targets\n",
    );
  });

  it("an unknown run, task or rack: exit 15 (NOT_FOUND) and the list that shows what exists", async () => {
    const missing = "0a6f1a9e-0000-4000-8000-00000000beef";
    const run = await flowctl(["run", "get", missing]);
    expect(run.code).toBe(15);
    expect(run.stderr).toBe(
      `error: operation run not found: ${missing} (NOT_FOUND)\n  check the run ID: \`flowctl run list\` shows existing runs\n`,
    );
    const task = await flowctl(["task", "cancel", missing]);
    expect(task.code).toBe(15);
    expect(task.stderr).toBe(
      `error: task not found: ${missing} (NOT_FOUND)\n  check the task ID: \`flowctl task list\` shows existing tasks\n`,
    );
    const rack = await flowctl([
      "run",
      "create",
      "-f",
      racksRun("cli-no-rack", [99], "  maxConcurrentTargets: 1\n  gates: [{ failureCount: 1 }]"),
      "--dry-run",
    ]);
    expect(rack.code).toBe(15);
    expect(rack.stderr).toBe(
      "error: rack target 0: rack with external id EXT-A99 is not found (NOT_FOUND)\n" +
        "  check the rack: `flowctl inventory list` shows each rack's ID, name, external ID and NVL domain\n",
    );
  });

  it("a control the run's state does not allow: exit 19 (FAILED_PRECONDITION)", async () => {
    const id = await createRun(
      racksRun("cli-precondition", [17], "  maxConcurrentTargets: 1\n  gates: [{ failureCount: 1 }]"),
    );
    expect((await flowctl(["run", "watch", id, "--interval", "200ms"])).code).toBe(0);
    const r = await flowctl(["run", "resume", id]);
    expect(r.code).toBe(19);
    expect(r.stderr).toMatch(/^error: .+ \(FAILED_PRECONDITION\)\n {2}the current state does not allow this/);
  });

  it("no service at the endpoint: exit 24 (UNAVAILABLE) and how to start the local stack", async () => {
    const r = await flowctlProcess(["run", "list", "--endpoint", "127.0.0.1:1"]);
    expect(r.code).toBe(24);
    expect(r.stderr).toContain("error: cannot reach the Flow service at 127.0.0.1:1 (UNAVAILABLE");
    expect(r.stderr).toContain("Start the local stack with `npm start`");
  });

  it("usage mistakes: exit 1 before anything is sent", async () => {
    const badId = await flowctlProcess(["run", "get", "run-7"]);
    expect(badId.code).toBe(1);
    expect(badId.stderr).toBe(
      'error: run ID: expected a UUID such as 4f6f1a9e-0000-4000-8000-000000000001 (got "run-7")\n',
    );
    const badPhase = await flowctl(["run", "targets", rackId(1), "--phase", "future"]);
    expect(badPhase.code).toBe(1);
    expect(badPhase.stderr).toBe(
      'error: --phase: expected one of current, completed, all-visible (got "future")\n',
    );
    const badScope = await flowctl(["run", "targets", rackId(1), "--phase-scope", "future"]);
    expect(badScope.code).toBe(1);
    expect(badScope.stderr).toContain(
      "--phase-scope: expected one of current, completed, current-and-completed",
    );
    const both = await flowctl([
      "run",
      "targets",
      rackId(1),
      "--phase",
      "current",
      "--phase-scope",
      "current",
    ]);
    expect(both.code).toBe(1);
    expect(both.stderr).toBe(
      "error: --phase and --phase-scope: give one (--phase-scope is the older spelling of --phase)\n",
    );
    const badEndpoint = await flowctl(["run", "list", "--endpoint", "localhost"]);
    expect(badEndpoint.code).toBe(1);
    expect(badEndpoint.stderr).toContain("--endpoint: expected HOST:PORT");
    const noFile = await flowctl(["run", "create"]);
    expect(noFile.code).toBe(1);
    expect(noFile.stderr).toContain("required option '-f, --file <path>' not specified");
  });
});

describe("flowctl inventory", () => {
  it("imports an inventory file and lists the racks", async () => {
    const file = writeFile(
      "extra-inventory.json",
      JSON.stringify({
        racks: [
          {
            id: rackId(RACKS + 1),
            name: "rack-b01",
            externalId: "EXT-B01",
            components: [{ id: componentId(RACKS + 1, 1), type: "CDU" }],
          },
        ],
      }),
    );
    const r = await flowctl(["inventory", "import", "-f", file]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`imported 1 racks and 1 components from ${file}\n`);
    const list = await flowctl(["inventory", "list"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/rack-b01 +EXT-B01 .*CDU×1/);
    expect(list.stdout).toContain(`of ${RACKS + 1} racks`);
  });

  it("an invalid inventory file: exit 1 with the JSON path and rule", async () => {
    const file = writeFile(
      "bad-inventory.json",
      JSON.stringify({
        racks: [
          { id: rackId(RACKS + 2), name: "r", components: [{ id: componentId(RACKS + 2, 1), type: "GPU" }] },
        ],
      }),
    );
    const r = await flowctl(["inventory", "import", "-f", file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `${file}: racks[0].components[0].type: must be one of COMPUTE, NVSWITCH, POWERSHELF, TORSWITCH, UMS, CDU (got "GPU")`,
    );
  });

  it("a missing inventory file: exit 1 naming the file", async () => {
    const file = join(dir, "absent-inventory.json");
    const r = await flowctl(["inventory", "import", "-f", file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `${file} is not a valid inventory file:\n${file}: (root): cannot be read (ENOENT`,
    );
  });
});
