/**
 * The candidate racks of a retry and a rollback run (src/domain/follow-up-runs.ts), as tables:
 * which targets a retry takes with which components; which components a rollback takes back to
 * which version, and which it leaves alone with what reason.
 */
import { describe, expect, it } from "vitest";
import { nothingToRetry, retryRows, rollbackScope } from "../../src/domain/follow-up-runs.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import type { PriorVersion, Target, TargetStatus } from "../../src/domain/model.js";
import { type ComponentProgress, initialReport, type TaskReport } from "../../src/domain/task-report.js";

/** Rack r<n> with c<n>a (COMPUTE) and c<n>b (NVSWITCH), the inventory saying `versions`. */
function rack(n: number, versions: [string, string] = ["2.0", "2.0"]): InventoryRack {
  return {
    id: `r${n}`,
    name: `rack-${n}`,
    components: [
      { id: `c${n}a`, type: "COMPUTE", firmwareVersion: versions[0] },
      { id: `c${n}b`, type: "NVSWITCH", firmwareVersion: versions[1] },
    ],
  };
}

function target(n: number, status: TargetStatus, extra: Partial<Target> = {}): Target {
  return {
    id: `t${n}`,
    runId: "run",
    rackId: `r${n}`,
    sequenceIndex: n,
    phaseIndex: 0,
    status,
    message: "",
    componentsByType: [
      { type: "COMPUTE", componentIds: [`c${n}a`] },
      { type: "NVSWITCH", componentIds: [`c${n}b`] },
    ],
    createdAt: 0,
    updatedAt: 0,
    conflictAttempts: 0,
    ...extra,
  };
}

const priors = (n: number, a = "1.0", b = "1.1"): PriorVersion[] => [
  { componentId: `c${n}a`, type: "COMPUTE", version: a, targetVersion: "2.0" },
  { componentId: `c${n}b`, type: "NVSWITCH", version: b, targetVersion: "2.0" },
];

function report(n: number, a: ComponentProgress, b: ComponentProgress): TaskReport {
  const r = initialReport(
    [
      { id: `c${n}a`, type: "COMPUTE" },
      { id: `c${n}b`, type: "NVSWITCH" },
    ],
    "2.0",
    false,
  );
  for (const c of r.components) c.status = c.type === "COMPUTE" ? a : b;
  return r;
}

describe("retryRows", () => {
  const targets = [
    target(3, "FAILED"),
    target(1, "COMPLETED"),
    target(2, "TERMINATED"),
    target(0, "FAILED"),
    target(4, "SKIPPED"),
  ];
  const racks = [0, 1, 2, 3, 4].map((n) => rack(n));
  const rows: [string, { includeTerminated: boolean; includeSkipped: boolean }, string[]][] = [
    ["FAILED, in sequence order", { includeTerminated: false, includeSkipped: false }, ["r0", "r3"]],
    ["+ TERMINATED", { includeTerminated: true, includeSkipped: false }, ["r0", "r2", "r3"]],
    ["+ SKIPPED", { includeTerminated: false, includeSkipped: true }, ["r0", "r3", "r4"]],
    ["+ both", { includeTerminated: true, includeSkipped: true }, ["r0", "r2", "r3", "r4"]],
  ];
  it.each(rows)("%s → %j", (_, flags, expected) => {
    expect(retryRows(targets, flags, racks).map((r) => r.rackId)).toEqual(expected);
  });

  it("the frozen components only, as the inventory has them now; gone components left out, gone racks dropped", () => {
    const narrowed = target(0, "FAILED", { componentsByType: [{ type: "COMPUTE", componentIds: ["c0a"] }] });
    const rows = retryRows(
      [narrowed, target(1, "FAILED")],
      { includeTerminated: false, includeSkipped: false },
      [rack(0)],
    );
    expect(rows).toEqual([{ rackId: "r0", components: [rack(0).components[0]] }]);
  });

  it("a failed rack none of whose frozen components the inventory still has is dropped", () => {
    const emptied = { ...rack(0), components: [] };
    expect(
      retryRows([target(0, "FAILED")], { includeTerminated: false, includeSkipped: false }, [emptied]),
    ).toEqual([]);
  });

  it.each([
    [false, false, "no failed targets"],
    [true, false, "no failed or terminated targets"],
    [false, true, "no failed or skipped targets"],
    [true, true, "no failed, terminated or skipped targets"],
  ])("nothing to retry (terminated %s, skipped %s) → %j", (includeTerminated, includeSkipped, text) => {
    expect(nothingToRetry({ includeTerminated, includeSkipped })).toBe(text);
  });
});

describe("rollbackScope", () => {
  it("each component whose flash ended goes back to its prior version; the rest are left alone, with why", () => {
    const targets = [
      target(0, "COMPLETED", { taskId: "k0", priorVersions: priors(0) }),
      target(1, "FAILED", { taskId: "k1", priorVersions: priors(1) }),
      target(2, "TERMINATED", { taskId: "k2", priorVersions: priors(2, "1.0", "2.0") }),
      target(3, "FAILED", { taskId: "k3" }),
      target(4, "SKIPPED"),
    ];
    const reports = new Map([
      ["k0", report(0, "COMPLETED", "COMPLETED")],
      ["k1", report(1, "FAILED", "NOT_ATTEMPTED")],
      ["k2", report(2, "TERMINATED", "SKIPPED")],
      ["k3", report(3, "COMPLETED", "COMPLETED")],
    ]);
    // Rack 1's COMPUTE failed its flash and still runs 1.0 (its prior version).
    const racks = [rack(0), rack(1, ["1.0", "1.1"]), rack(2, ["2.0", "2.0"]), rack(3), rack(4)];
    const scope = rollbackScope(targets, reports, racks);
    expect(scope.rows.map((r) => [r.rackId, r.components.map((c) => c.id)])).toEqual([
      ["r0", ["c0b", "c0a"]],
      ["r2", ["c2a"]],
    ]);
    expect(Object.fromEntries(scope.versions)).toEqual({
      r0: [
        { version: "1.1", componentIds: ["c0b"] },
        { version: "1.0", componentIds: ["c0a"] },
      ],
      r2: [{ version: "1.0", componentIds: ["c2a"] }],
    });
    expect(Object.fromEntries(scope.skipped)).toEqual({
      r0: [],
      r1: [
        { componentId: "c1b", type: "NVSWITCH", reason: "never flashed" },
        { componentId: "c1a", type: "COMPUTE", reason: "already at its prior version 1.0" },
      ],
      r2: [{ componentId: "c2b", type: "NVSWITCH", reason: "never flashed" }],
      r3: [
        { componentId: "c3b", type: "NVSWITCH", reason: "no prior version recorded" },
        { componentId: "c3a", type: "COMPUTE", reason: "no prior version recorded" },
      ],
    });
  });

  it("a component no longer in inventory is left alone", () => {
    const scope = rollbackScope(
      [target(0, "COMPLETED", { taskId: "k0", priorVersions: priors(0) })],
      new Map([["k0", report(0, "COMPLETED", "COMPLETED")]]),
      [{ ...rack(0), components: [rack(0).components[0]!] }],
    );
    expect(scope.skipped.get("r0")).toEqual([
      { componentId: "c0b", type: "NVSWITCH", reason: "no longer in inventory" },
    ]);
    expect(scope.rows.map((r) => r.rackId)).toEqual(["r0"]);
  });

  it("a target never submitted (no task) or whose task has no report flashed nothing: not in the plan, nothing listed", () => {
    const scope = rollbackScope(
      [target(0, "SKIPPED"), target(1, "FAILED", { taskId: "k-unknown", priorVersions: priors(1) })],
      new Map(),
      [rack(0), rack(1)],
    );
    expect(scope).toEqual({ rows: [], versions: new Map(), skipped: new Map() });
  });

  it("a rack gone from the inventory: every component it flashed is left alone as no longer in inventory", () => {
    const scope = rollbackScope(
      [target(0, "COMPLETED", { taskId: "k0", priorVersions: priors(0) })],
      new Map([["k0", report(0, "COMPLETED", "COMPLETED")]]),
      [],
    );
    expect(scope.rows).toEqual([]);
    const skipped = [...(scope.skipped.get("r0") ?? [])].sort((a, b) =>
      a.componentId.localeCompare(b.componentId),
    );
    expect(skipped).toEqual([
      { componentId: "c0a", type: "COMPUTE", reason: "no longer in inventory" },
      { componentId: "c0b", type: "NVSWITCH", reason: "no longer in inventory" },
    ]);
  });
});
