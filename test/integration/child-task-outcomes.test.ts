/**
 * The real child-task ASL on aws-local-stepfunctions against moto, the aedes broker, the IoT shim
 * and the simulated fleet: one success and each fleet failure mode, end to end through the task
 * service's UpgradeFirmware.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FleetConfig } from "../../local/fleet-file.js";
import type { InventoryRack } from "../../src/domain/inventory.js";
import { parseReport } from "../../src/domain/task-report.js";
import {
  type Harness,
  HEALTHY_FLEET_SETTINGS,
  id,
  rack,
  startHarness,
  upgradeRequest,
  waitForTask,
} from "./child-task-harness.js";

const P = "c1000000";
const SHAPE = [
  { type: "COMPUTE" as const, count: 3 },
  { type: "NVSWITCH" as const, count: 2 },
  { type: "POWERSHELF" as const, count: 1 },
  { type: "TORSWITCH" as const, count: 1 },
];
// Rack 1 succeeds; racks 2..5 each have ONE misbehaving compute tray (component 2 = 2nd COMPUTE).
const racks: InventoryRack[] = [1, 2, 3, 4, 5, 6].map((n) => rack(P, n, SHAPE));
// Rack 1: its first COMPUTE is already at 2.0.0 (skipped by preflight).
racks[0]!.components[0]!.firmwareVersion = "2.0.0";
// Rack 6: one NVSWITCH is not in the fleet at all: no BMC answers its preflight query.
const ghost = id(P, 6, 4);

const bad = (n: number) => id(P, n, 2);
const fleet: FleetConfig = {
  defaults: { outcome: "succeed", updateMs: 40 },
  racks: {},
  components: {
    [bad(2)]: { outcome: "fail" },
    [bad(3)]: { outcome: "hang" },
    // Its 25 % comes 1.5 s after its ack, past FIRST_PROGRESS_AFTER_ACK_MS: stored whatever the batches.
    [bad(4)]: { outcome: "disconnect", updateMs: 6000 },
    [bad(5)]: { outcome: "wrong-version" },
  },
};

/** The racks whose test waits for a BMC timeout: a hung tray, a silent one, a ghost's preflight. */
const SILENT = [3, 4, 6];
const racksOf = (timesOut: boolean) => racks.filter((_, i) => SILENT.includes(i + 1) === timesOut);

/** The racks whose BMCs all answer: no BMC timeout may end their tasks (see HEALTHY_FLEET_SETTINGS). */
let healthy: Harness;
/**
 * The silent racks: the harness's short BMC timeouts (4 s), which their tests wait for. The hung
 * and the silent tray's healthy siblings share their wave, and so its 4 s.
 */
let silent: Harness;
beforeAll(async () => {
  healthy = await startHarness({
    label: "cto",
    racks: racksOf(false),
    fleet,
    settings: HEALTHY_FLEET_SETTINGS,
  });
  silent = await startHarness({ label: "ctos", racks: racksOf(true), fleet });
  // The fleet must not know rack 6's ghost: restart it without that component.
  await silent.fleet.stop();
  const { startBmcFleet } = await import("../../local/bmc-fleet.js");
  const fleetRacks = racksOf(true).map((r) => ({
    ...r,
    components: r.components.filter((c) => c.id !== ghost),
  }));
  silent.fleet = await startBmcFleet({ brokerUrl: silent.broker.url, racks: fleetRacks, config: fleet });
});
afterAll(async () => {
  await healthy?.close();
  await silent?.close();
});

const harnessOf = (n: number) => (SILENT.includes(n) ? silent : healthy);

async function runOn(n: number) {
  const h = harnessOf(n);
  const { taskIds } = await h.child.tasksApi.upgradeFirmware(upgradeRequest([id(P, n, 0)]));
  expect(taskIds).toHaveLength(1);
  const task = await waitForTask(h, taskIds[0]!);
  // The task is terminal as soon as its outcome is written; the rack lock is released just after,
  // by the same last step: wait for the execution to have ended before reading the lock.
  await h.child.idle();
  return task;
}

describe("child task: outcomes on the simulated fleet", () => {
  it("success: groups in order POWERSHELF → NVSWITCH → COMPUTE → TORSWITCH, the at-version tray skipped, inventory updated, lock released", async () => {
    const task = await runOn(1);
    expect(task.status).toBe("COMPLETED");
    expect(task.message).toBe("upgraded 6 components to 2.0.0 (1 already at 2.0.0)");
    const report = parseReport(task.report);
    expect(report.components.map((c) => [c.type, c.status])).toEqual([
      ["POWERSHELF", "COMPLETED"],
      ["NVSWITCH", "COMPLETED"],
      ["NVSWITCH", "COMPLETED"],
      ["COMPUTE", "SKIPPED"],
      ["COMPUTE", "COMPLETED"],
      ["COMPUTE", "COMPLETED"],
      ["TORSWITCH", "COMPLETED"],
    ]);
    // Each group started only after the previous one finished.
    const done = report.components.filter((c) => c.status === "COMPLETED");
    for (let i = 1; i < done.length; i++) {
      if (done[i]!.type !== done[i - 1]!.type)
        expect(done[i]!.startedAt!).toBeGreaterThanOrEqual(done[i - 1]!.finishedAt!);
    }
    expect(report.components.find((c) => c.status === "SKIPPED")?.versionBefore).toBe("2.0.0");
    const [inv] = await healthy.stores.inventory.getRacksByIds([id(P, 1, 0)]);
    expect(inv!.components.map((c) => c.firmwareVersion)).toEqual(Array(7).fill("2.0.0"));
    expect(await healthy.stores.locks.get(id(P, 1, 0))).toBeUndefined();
    expect(healthy.fleet.stats().flashesByTask[task.id]).toBe(6);
  });

  it.each([
    [
      2,
      "BmcUpdateFailed",
      `component ${bad(2)} (COMPUTE): BMC reported FLASH_FAILED: flashing 2.0.0 failed; still on 1.0.0 (running 1.0.0)`,
    ],
    [
      3,
      "BmcTimeout",
      `component ${bad(3)} (COMPUTE): BMC acknowledged the update but reported no progress and no result within 4 s (hung)`,
    ],
    [
      4,
      "BmcTimeout",
      `component ${bad(4)} (COMPUTE): BMC reported 25% progress, then fell silent: no result within 4 s (disconnected)`,
    ],
    [
      5,
      "VersionMismatch",
      `component ${bad(5)} (COMPUTE): BMC reported success but runs 1.0.0, expected 2.0.0`,
    ],
  ])(
    "rack %i: the task FAILS with %s naming the component and the cause, and the lock is released",
    async (n, name, message) => {
      const task = await runOn(n);
      expect(task.status).toBe("FAILED");
      expect(task.message).toBe(message);
      const report = parseReport(task.report);
      const failed = report.components.find((c) => c.id === bad(n));
      expect(failed).toMatchObject({ status: "FAILED", error: { name, message } });
      // Its siblings finished their flashes; the group after COMPUTE never started.
      expect(
        report.components.filter((c) => c.type === "COMPUTE" && c.id !== bad(n)).map((c) => c.status),
      ).toEqual(["COMPLETED", "COMPLETED"]);
      expect(report.components.find((c) => c.type === "TORSWITCH")?.status).toBe("NOT_ATTEMPTED");
      expect(await harnessOf(n).stores.locks.get(id(P, n, 0))).toBeUndefined();
      // Only verified versions reach inventory.
      const [inv] = await harnessOf(n).stores.inventory.getRacksByIds([id(P, n, 0)]);
      expect(inv!.components.find((c) => c.id === bad(n))?.firmwareVersion).toBe("1.0.0");
      expect(inv!.components.find((c) => c.type === "POWERSHELF")?.firmwareVersion).toBe("2.0.0");
    },
  );

  it("a BMC that never answers the preflight fails the task before anything is flashed", async () => {
    const task = await runOn(6);
    expect(task.status).toBe("FAILED");
    expect(task.message).toBe(
      `preflight: component ${ghost} (NVSWITCH) did not answer the version query within 4 s (BMC unreachable)`,
    );
    expect(parseReport(task.report).components.every((c) => c.status === "NOT_ATTEMPTED")).toBe(true);
    expect(silent.fleet.stats().flashesByTask[task.id]).toBeUndefined();
    expect(await silent.stores.locks.get(id(P, 6, 0))).toBeUndefined();
  });
});
