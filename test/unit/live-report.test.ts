/**
 * The live task report (src/domain/live-report.ts): a running task's update set folded into its
 * stored report, judged as the wave's check judges it, and the versions it verified.
 */
import { describe, expect, it } from "vitest";
import {
  type CommandEntry,
  type CommandSet,
  entryKey,
  updateAddress,
} from "../../src/domain/command-sets.js";
import { foldUpdates, newlyVerified, updateRetriesOf } from "../../src/domain/live-report.js";
import { DEFAULT_RULE, type RuleDefinition } from "../../src/domain/operation-rules.js";
import { initialReport, type TaskReport } from "../../src/domain/task-report.js";

const TASK = "0b7e0c4e-1a2b-4c3d-8e4f-5a6b7c8d9e0f";

function stored(): TaskReport {
  const r = initialReport(
    [
      { id: "p1", type: "POWERSHELF" },
      { id: "c1", type: "COMPUTE" },
      { id: "c2", type: "COMPUTE" },
      { id: "t1", type: "TORSWITCH" },
    ],
    "2.0.0",
    false,
  );
  return r;
}

/** An update set with `entries` by (component, attempt). */
function updates(entries: { id: string; attempt?: number; entry: Partial<CommandEntry> }[]): CommandSet {
  const set: CommandSet = { taskId: TASK, family: "u", entries: {} };
  for (const { id, attempt = 0, entry } of entries) {
    set.entries[entryKey(updateAddress(TASK, attempt), id)] = {
      sentAt: 1_000,
      deadline: 61_000,
      ...entry,
    };
  }
  return set;
}

const byId = (r: TaskReport) => Object.fromEntries(r.components.map((c) => [c.id, c]));

describe("foldUpdates", () => {
  it("pending → UPDATING with its progress; passed → COMPLETED with versionAfter; no entry → as stored", () => {
    const set = updates([
      { id: "p1", entry: { ackedAt: 1_100, result: { ok: true, version: "2.0.0" }, resultAt: 9_000 } },
      { id: "c1", entry: { ackedAt: 1_100, progress: 40, progressAt: 5_000 } },
    ]);
    const c = byId(foldUpdates(stored(), TASK, set, 10_000));
    expect(c.p1).toMatchObject({
      status: "COMPLETED",
      versionAfter: "2.0.0",
      startedAt: 1_000,
      finishedAt: 9_000,
    });
    expect(c.p1?.requestId).toMatch(new RegExp(`^upd-${TASK}\\.u0\\.[0-9a-f]{12}$`));
    expect(c.c1).toMatchObject({ status: "UPDATING", progress: 40, startedAt: 1_000 });
    expect(c.c2).toEqual({ id: "c2", type: "COMPUTE", status: "PENDING" });
  });

  it("a failure without retries left → FAILED with the verdict's error; with one left → PENDING with it", () => {
    const set = updates([
      {
        id: "c1",
        entry: {
          ackedAt: 1_100,
          result: { ok: false, version: "1.0.0", error: { code: "FLASH_ERROR", message: "bad image" } },
          resultAt: 4_000,
        },
      },
    ]);
    const failed = byId(foldUpdates(stored(), TASK, set, 10_000)).c1;
    expect(failed).toMatchObject({
      status: "FAILED",
      finishedAt: 4_000,
      error: {
        name: "BmcUpdateFailed",
        message: "component c1 (COMPUTE): BMC reported FLASH_ERROR: bad image (running 1.0.0)",
      },
    });
    const rule: RuleDefinition = structuredClone(DEFAULT_RULE);
    const compute = rule.stages.find((s) => s.componentTypes.includes("COMPUTE"));
    compute!.steps[0]!.retry = { maxRetries: 1, intervalSeconds: 5, backoffRate: 2 };
    const retried = byId(foldUpdates(stored(), TASK, set, 10_000, updateRetriesOf(rule))).c1;
    expect(retried).toMatchObject({ status: "PENDING", error: { name: "BmcUpdateFailed" } });
    expect(retried?.finishedAt).toBeUndefined();
  });

  it("the latest attempt counts: attempt 1's result over attempt 0's failure", () => {
    const set = updates([
      {
        id: "c1",
        entry: {
          result: { ok: false, version: "1.0.0", error: { code: "E", message: "m" } },
          resultAt: 3_000,
        },
      },
      {
        id: "c1",
        attempt: 1,
        entry: { sentAt: 20_000, deadline: 80_000, result: { ok: true, version: "2.0.0" }, resultAt: 25_000 },
      },
    ]);
    const c1 = byId(foldUpdates(stored(), TASK, set, 30_000)).c1;
    expect(c1).toMatchObject({
      status: "COMPLETED",
      startedAt: 20_000,
      finishedAt: 25_000,
      versionAfter: "2.0.0",
    });
    expect(c1?.error).toBeUndefined();
    expect(c1?.requestId).toContain(".u1.");
  });

  it("a result stored after the deadline counts for nothing: the component timed out, as its check said", () => {
    const set = updates([
      {
        id: "c1",
        entry: {
          ackedAt: 1_100,
          progress: 90,
          progressAt: 50_000,
          result: { ok: true, version: "2.0.0" },
          resultAt: 61_001,
        },
      },
    ]);
    expect(byId(foldUpdates(stored(), TASK, set, 70_000)).c1).toMatchObject({
      status: "FAILED",
      error: { name: "BmcTimeout" },
      finishedAt: 61_000,
    });
    // Without any result: failed at its deadline, as the check judged it.
    const silent = updates([{ id: "c1", entry: { ackedAt: 1_100 } }]);
    expect(byId(foldUpdates(stored(), TASK, silent, 70_000)).c1).toMatchObject({
      status: "FAILED",
      error: { name: "BmcTimeout" },
      finishedAt: 61_000,
    });
    // Before the deadline the same entry, without its late result, is still in flight.
    const early = updates([{ id: "c1", entry: { ackedAt: 1_100, progress: 90, progressAt: 50_000 } }]);
    expect(byId(foldUpdates(stored(), TASK, early, 60_000)).c1).toMatchObject({
      status: "UPDATING",
      progress: 90,
    });
  });

  it("components the task settled stay as stored (a verify step's FAILED stands over its update's result)", () => {
    const report = stored();
    report.components[1]!.status = "FAILED";
    report.components[1]!.error = { name: "VersionMismatch", message: "verify-version: runs 1.9.0" };
    report.components[2]!.status = "SKIPPED";
    const set = updates([
      { id: "c1", entry: { result: { ok: true, version: "2.0.0" }, resultAt: 2_000 } },
      { id: "c2", entry: { result: { ok: true, version: "2.0.0" }, resultAt: 2_000 } },
    ]);
    const c = byId(foldUpdates(report, TASK, set, 10_000));
    expect(c.c1).toEqual(report.components[1]);
    expect(c.c2).toEqual(report.components[2]);
  });

  it("no update set: the report as stored (the same object)", () => {
    const report = stored();
    expect(foldUpdates(report, TASK, undefined, 10_000)).toBe(report);
  });
});

describe("newlyVerified", () => {
  it("the components the fold completed, with their versions; those completed before are not repeated", () => {
    const before = stored();
    before.components[0]!.status = "COMPLETED";
    before.components[0]!.versionAfter = "2.0.0";
    const set = updates([
      { id: "c1", entry: { result: { ok: true, version: "2.0.0" }, resultAt: 2_000 } },
      { id: "c2", entry: { ackedAt: 1_500 } },
    ]);
    expect(newlyVerified(before, foldUpdates(before, TASK, set, 10_000))).toEqual([
      { componentId: "c1", version: "2.0.0" },
    ]);
  });
});
