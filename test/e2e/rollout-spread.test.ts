/**
 * The failure-domain spread on the local stack (dispatcher, stream wake-ups, the child-task ASL,
 * MQTT and the simulated BMC fleet), with 4 more dispatchers racing the stack's own over the same
 * run (5 in all), and its bad input over gRPC.
 *
 * 12 racks in 3 rows of 4 (dc1/A, dc1/B, dc1/C), 6 at a time, 1 per row. Read back from the child
 * tasks' timestamps (each created after its target's claim and finished before its slot's release):
 * within a row, each task starts only after the previous one finished.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../cli/program.js";
import { systemClock } from "../../src/adapters/system-clock.js";
import { createDispatcher } from "../../src/app/dispatcher.js";
import {
  OperationRunFailureDomainSpread_Domain as Domain,
  OperationRunStatus,
  type OperationRunTarget,
  OperationRunTargetStatus,
} from "../../src/gen/flow/v1/flow.js";
import { FAST_SUCCESS, rackGroup } from "../support/fixtures-inventory.js";
import {
  createRun,
  failure,
  listTargets,
  type RunSpec,
  runRequest,
  startTestStack,
  type TestStack,
  waitForStatus,
} from "../support/stack.js";

const ROWS = ["A", "B", "C"];
const RACKS = rackGroup(53, { name: "spread", count: 12, types: ["COMPUTE"] });
RACKS.racks.forEach((rack, n) => {
  rack.location = { datacenter: "dc1", row: ROWS[n % 3] as string, position: n };
});
const UNPLACED = rackGroup(54, { name: "unplaced", count: 2, types: ["COMPUTE"] });

const SPEC: RunSpec = {
  rackIds: RACKS.ids,
  seed: "spread-selection",
  orderingSeed: "spread-order",
  maxConcurrent: 6,
  failureDomainSpread: { domain: Domain.DOMAIN_ROW, attribute: "", maxInFlight: 1 },
};

let s: TestStack;
let dir = "";
let runId = "";
let targets: OperationRunTarget[] = [];

beforeAll(async () => {
  s = await startTestStack({
    label: "spread",
    groups: [RACKS, UNPLACED],
    defaults: FAST_SUCCESS,
    tickMs: 150,
  });
  dir = mkdtempSync(join(tmpdir(), "flowctl-spread-"));
  runId = await createRun(s.flow, runRequest(SPEC));
  // Four more dispatchers race the stack's own over the run until it finishes.
  const racers = Array.from({ length: 4 }, async () => {
    const dispatcher = createDispatcher({
      runs: s.local.stores.runs,
      submitter: s.local.childTasks.submitter,
      clock: systemClock,
    });
    for (;;) {
      const result = await dispatcher.dispatchRun(runId);
      if (result.decision === "finished" || result.decision === "inactive") return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  });
  await Promise.all([
    ...racers,
    waitForStatus(s.flow, runId, [OperationRunStatus.OPERATION_RUN_STATUS_COMPLETED], 100_000),
  ]);
  targets = await listTargets(s.flow, runId);
}, 150_000);

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await s?.stop();
});

describe("a spread of 1 per row with 5 racing dispatchers", () => {
  it("every target carries its row and completed", () => {
    expect(targets).toHaveLength(12);
    expect(new Set(targets.map((t) => t.failureDomain))).toEqual(new Set(["dc1/A", "dc1/B", "dc1/C"]));
    expect(
      targets.every((t) => t.status === OperationRunTargetStatus.OPERATION_RUN_TARGET_STATUS_COMPLETED),
    ).toBe(true);
  });

  it("within a row, each child task starts after the previous one finished (never two of a row in flight)", async () => {
    const taskIds = targets.map((t) => t.taskId?.id ?? "");
    const { tasks } = await s.flow.getTasksByIDs({ taskIds: taskIds.map((id) => ({ id })) });
    const byRow = new Map<string, { start: number; end: number }[]>();
    for (const t of targets) {
      const task = tasks.find((x) => x.id?.id === t.taskId?.id);
      const spans = byRow.get(t.failureDomain) ?? [];
      spans.push({ start: task?.createdAt?.getTime() ?? 0, end: task?.finishedAt?.getTime() ?? 0 });
      byRow.set(t.failureDomain, spans);
    }
    for (const [row, spans] of byRow) {
      spans.sort((a, b) => a.start - b.start);
      expect(spans, row).toHaveLength(4);
      for (let i = 1; i < spans.length; i++) {
        expect(
          spans[i]?.start,
          `${row}: task ${i} started before task ${i - 1} finished`,
        ).toBeGreaterThanOrEqual(spans[i - 1]?.end ?? Number.POSITIVE_INFINITY);
      }
    }
  });

  it("the run's per-row counters are back at 0", async () => {
    expect((await s.local.stores.runs.getRun(runId))?.domainInFlight).toEqual({
      "dc1/A": 0,
      "dc1/B": 0,
      "dc1/C": 0,
    });
  });
});

describe("the spread's plan preview and bad input", () => {
  it("flowctl run create --dry-run shows each rack's DOMAIN", async () => {
    const file = join(dir, "spread.yaml");
    writeFileSync(
      file,
      [
        "name: spread",
        "selector: { percentage: 100%, seed: s }",
        "options:",
        "  maxConcurrentTargets: 6",
        "  gates: [{ failureCount: 1 }]",
        "  failureDomainSpread: { domain: row, maxInFlight: 1 }",
        "operation:",
        "  upgradeFirmware:",
        "    targetVersion: 2.0.0",
        `    targets: { racks: [${RACKS.racks
          .slice(0, 3)
          .map((r) => r.name)
          .join(", ")}] }`,
      ].join("\n"),
    );
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(["run", "create", "-f", file, "--dry-run"], {
      stdout: { write: (t: string) => out.push(t) },
      stderr: { write: (t: string) => err.push(t) },
      env: { FLOW_ENDPOINT: s.address, NO_COLOR: "1" },
      interrupted: new Promise(() => {}),
    });
    expect(code, err.join("")).toBe(0);
    const stdout = out.join("");
    expect(stdout).toContain("DOMAIN");
    const rows = stdout.split("\n").filter((l) => l.includes("EXT-spread-"));
    expect(rows.map((l) => /dc1\/[ABC]/.exec(l)?.[0]).sort()).toEqual(["dc1/A", "dc1/B", "dc1/C"]);
  });

  it("an unknown attribute is InvalidArgument naming it; max_in_flight 0 too", async () => {
    const bad = (failureDomainSpread: RunSpec["failureDomainSpread"]) =>
      failure(s.flow.createOperationRun(runRequest({ ...SPEC, failureDomainSpread })));
    expect(await bad({ domain: Domain.DOMAIN_ATTRIBUTE, attribute: "power_feed", maxInFlight: 1 })).toEqual({
      code: "INVALID_ARGUMENT",
      details:
        'configuration.options.failure_domain_spread.attribute: unknown failure-domain attribute "power_feed": the inventory carries datacenter',
    });
    expect(await bad({ domain: Domain.DOMAIN_ROW, attribute: "", maxInFlight: 0 })).toEqual({
      code: "INVALID_ARGUMENT",
      details:
        "configuration.options.failure_domain_spread.max_in_flight: failure_domain_spread.max_in_flight must be at least 1",
    });
  });

  it("racks the inventory places in no row are refused by name, on plan and on create", async () => {
    const request = runRequest({ ...SPEC, rackIds: [...UNPLACED.ids, RACKS.ids[0] as string] });
    const expected = {
      code: "INVALID_ARGUMENT",
      details:
        "configuration.options.failure_domain_spread: the inventory places no row for 2 planned racks: unplaced-0, unplaced-1",
    };
    expect(await failure(s.flow.planOperationRun(request))).toEqual(expected);
    expect(await failure(s.flow.createOperationRun(request))).toEqual(expected);
  });
});
